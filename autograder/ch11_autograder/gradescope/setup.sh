#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image
# (/autograder/source holds the unzipped autograder). It mirrors
# autograder/Dockerfile: the grading environment comes only from the bundled,
# hash-pinned wheelhouse (pip --no-index --require-hashes never contacts PyPI).
#
# What it needs from the base image: bash, coreutils, util-linux (setpriv,
# useradd) and Python 3.11 with venv. Gradescope's default base (Ubuntu 22.04)
# lacks Python 3.11, so it is installed with apt-get from the base image's own
# Ubuntu mirror (python3.11 and python3.11-venv are in jammy's universe);
# nothing else is fetched.
set -euo pipefail

SRC=/autograder/source
HERE="$SRC/ch11"
HOUSE="$HERE/wheelhouse"

PY="$(command -v python3.11 || true)"
if [ -z "$PY" ] || ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "setup.sh: installing Python 3.11 with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends python3.11 python3.11-venv \
        || { apt-get update && apt-get install -y --no-install-recommends python3.11 python3.11-venv; }
    PY="$(command -v python3.11)"
fi
command -v setpriv >/dev/null || { echo "setup.sh: setpriv (util-linux) is missing" >&2; exit 1; }

PIP_FLAGS=(--no-index --no-cache-dir --disable-pip-version-check --find-links "$HOUSE" --require-hashes)
"$PY" -m venv /opt/ch11/venv
/opt/ch11/venv/bin/pip install "${PIP_FLAGS[@]}" -r "$HOUSE/image-requirements.txt"
# Trusted code (reference solutions, hidden suites, the grader) goes to a root-only
# directory, so a student's interpreter can never import it.
/opt/ch11/venv/bin/pip install "${PIP_FLAGS[@]}" --no-deps --target /opt/ch11/trusted \
    -r "$HOUSE/trusted-requirements.txt"
mkdir -p /opt/ch11/untrusted/runtime
cp /opt/ch11/trusted/ch11_autograder/untrusted/runtime/*.py /opt/ch11/untrusted/runtime/
mkdir -p /opt/ch11/protocol
cp /opt/ch11/trusted/ch11_autograder/protocol/*.py /opt/ch11/protocol/
chmod 0700 /opt/ch11/trusted
chmod -R a+rX /opt/ch11/venv /opt/ch11/untrusted /opt/ch11/protocol

# One unprivileged user per grading slot runs student code.
for n in 0 1 2 3 4 5 6 7; do
    uid=$((20000 + n))
    if ! getent passwd "ch11s$n" >/dev/null; then
        if command -v useradd >/dev/null; then
            groupadd --gid "$uid" "ch11s$n"
            useradd --uid "$uid" --gid "$uid" --no-create-home --home-dir /nonexistent \
                --shell /usr/sbin/nologin "ch11s$n"
        else
            echo "ch11s$n:x:$uid:$uid::/nonexistent:/usr/sbin/nologin" >> /etc/passwd
            echo "ch11s$n:x:$uid:" >> /etc/group
        fi
    fi
done

# Student code must not read the autograder (source notebooks hold the solutions).
chmod 0700 "$SRC"

export PATH="/opt/ch11/venv/bin:$PATH" PYTHONPATH=/opt/ch11/trusted \
    CH11_RUNTIME_DIR=/opt/ch11/untrusted/runtime CH11_SANDBOX=container-user \
    MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1
/opt/ch11/venv/bin/python -m ch11_autograder.cli gradescope prepare --root /autograder
echo "setup.sh: done"
