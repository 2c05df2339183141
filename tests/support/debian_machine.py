"""A fresh Debian machine for the page tier: a container of the debootstrap base, the checkout copied in.

The base is the grading image's (``batch_support.base_image``, one implementation,
``ch11_autograder.image.build_base``), per Debian suite: bookworm (Python 3.11) and trixie
(Python 3.13). The container runs ``sleep infinity``; the page's steps then run in it with
``docker exec`` (``page_runner.DockerTarget``). Nothing of the host's /etc, /home or users changes.

What the container takes from the host, all of it here:

* the network (``--network host``): Debian's mirror and PyPI as this machine reaches them;
* the host's TLS trust: where this machine reaches HTTPS through an intercepting proxy with its
  own certificate authority, named by ``$PIP_CERT`` (or ``$SSL_CERT_FILE``), that bundle is
  copied to :data:`HOST_CA` and the steps run with ``PIP_CERT`` pointing at it
  (:func:`host_env`). Without either variable nothing is copied: pip uses its own trust.

Nothing else: no pip or apt configuration of the host (indexes, find-links, constraints) reaches
the container, so the page's steps install from PyPI and Debian's mirror as a new machine would.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from support import batch_support
from support.paths import REPO_ROOT

__all__ = ["CHECKOUT", "HOST_CA", "PYTHONS", "fresh_machine", "host_env"]

#: Debian suite -> the Python its ``python3`` is.
PYTHONS = {"bookworm": (3, 11), "trixie": (3, 13)}
#: Where the container holds the checkout: the page's ``<checkout>``.
CHECKOUT = "/opt/ch11/checkout"
#: Where the host's CA bundle lands in the container, when the host names one.
HOST_CA = "/usr/local/share/ch11-host-ca.pem"


def _host_ca() -> Path | None:
    for name in ("PIP_CERT", "SSL_CERT_FILE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return None


def host_env() -> dict[str, str]:
    """The environment the page's steps need from the host (see the module docstring)."""
    return {"PIP_CERT": HOST_CA} if _host_ca() is not None else {}


def _checkout_files() -> list[str]:
    """The checkout's files as a clone would have them: tracked or new, not ignored (no .venv, build, dist)."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True).stdout
    return [name for name in listed.decode().split("\0") if name and (REPO_ROOT / name).is_file()]


def _docker(*argv: str, stdin: bytes | None = None) -> None:
    done = subprocess.run(["docker", *argv], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(argv[:3])} failed: {done.stderr.decode(errors='replace')[-2000:]}")


@contextlib.contextmanager
def fresh_machine(suite: str) -> Iterator[str]:
    """A running container of Debian ``suite``'s base with the checkout at :data:`CHECKOUT`; its name.

    The copy is left as root's umask 077 would leave a clone (no access for group and others), so
    the page's own ``chmod`` is what makes it readable. The container is removed on exit.
    """
    base = batch_support.base_image(suite)
    name = f"ch11-page-{suite}-{os.getpid()}"
    _docker("run", "--detach", "--rm", "--network", "host", "--name", name, base, "sleep", "infinity")
    try:
        _docker("exec", name, "mkdir", "-p", CHECKOUT)
        archive = subprocess.run(["tar", "-C", str(REPO_ROOT), "--null", "-T", "-", "-c", "--owner=0", "--group=0"],
                                 input="\0".join(_checkout_files()).encode(), check=True, capture_output=True).stdout
        _docker("exec", "-i", name, "tar", "-x", "-C", CHECKOUT, stdin=archive)
        _docker("exec", name, "chmod", "-R", "go-rwx", CHECKOUT)
        ca = _host_ca()
        if ca is not None:
            _docker("exec", "-i", name, "sh", "-c", f"cat > {HOST_CA}", stdin=ca.read_bytes())
        yield name
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
