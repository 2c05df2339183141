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

The installed machine (:func:`installed_image`): a fresh machine after the page's install steps,
committed to a local image ``ch11-page-installed:<suite>-<key>`` so that the hub term
(``tests/page/test_hub_term.py``) does not repeat a 20-minute install at every run. The key is a
digest of the install steps as the page writes them (after substitution) and of the checkout's
files outside ``docs/``, ``tests/``, ``bench/`` and ``*.md`` (what the steps install from): editing an install step on
the page, the package or a lock makes a new image, editing the page's later steps does not. The
image's label ``ch11.install-seconds`` keeps how long its install took, for the term's
fresh-container-to-feedback time. ``docker image rm`` of it (or ``docker image prune``) forces a
fresh install.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from support import batch_support, page_runner
from support.page_runner import PageStep
from support.paths import REPO_ROOT

__all__ = ["CHECKOUT", "HOST_CA", "PYTHONS", "InstalledImage", "fresh_machine", "host_env", "installed_image",
           "machine_of"]

#: Debian suite -> the Python its ``python3`` is.
PYTHONS = {"bookworm": (3, 11), "trixie": (3, 13)}
#: Where the container holds the checkout: the page's ``<checkout>``.
CHECKOUT = "/opt/ch11/checkout"
#: Where the host's CA bundle lands in the container, when the host names one.
HOST_CA = "/usr/local/share/ch11-host-ca.pem"
#: The local image repository of installed machines, and the label holding the install's seconds.
INSTALLED_REPO = "ch11-page-installed"
SECONDS_LABEL = "ch11.install-seconds"
#: Checkout folders the install steps do not install from (a change there keeps the installed image).
NOT_INSTALLED = ("docs/", "tests/", "bench/")


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
def machine_of(image: str, label: str, *docker_args: str) -> Iterator[str]:
    """A running container of ``image`` (``sleep infinity``, host network, ``docker_args`` added); its name.
    Removed on exit."""
    name = f"ch11-page-{label}-{os.getpid()}"
    _docker("run", "--detach", "--rm", "--network", "host", *docker_args, "--name", name, image, "sleep", "infinity")
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)


@dataclass(frozen=True)
class InstalledImage:
    """A machine after the page's install steps: its image tag, the install's seconds, and whether it was made now."""

    tag: str
    install_seconds: float
    made_now: bool


def _install_key(suite: str, steps: Sequence[PageStep]) -> str:
    digest = hashlib.sha256(suite.encode())
    for step in steps:
        digest.update(f"\0{step.name}\0{step.user}\0{step.script}".encode())
    for name in sorted(_checkout_files()):
        if not name.startswith(NOT_INSTALLED) and not name.endswith(".md"):
            digest.update(f"\0{name}\0".encode() + (REPO_ROOT / name).read_bytes())
    return digest.hexdigest()[:16]


def installed_image(suite: str, steps: Sequence[PageStep], log: Path) -> InstalledImage:
    """The image of a fresh machine of ``suite`` after ``steps`` (the page's install steps, run as root under
    umask 077 as ``tests/page/test_install_steps.py`` runs them): the cached one when its key matches, else
    made now (``docker commit``; see the module docstring).

    Raises:
        PageStepError: an install step failed (named, with its output's tail; the full output in ``log``).
    """
    tag = f"{INSTALLED_REPO}:{suite}-{_install_key(suite, steps)}"
    seen = subprocess.run(["docker", "image", "inspect", "--format",
                           "{{index .Config.Labels \"" + SECONDS_LABEL + "\"}}", tag], capture_output=True, text=True)
    if seen.returncode == 0:
        return InstalledImage(tag, float(seen.stdout.strip() or "nan"), made_now=False)
    start = time.monotonic()
    with fresh_machine(suite) as machine:
        page_runner.run_steps(steps, page_runner.DockerTarget(machine, env=host_env(), umask="077"), log=log)
        seconds = time.monotonic() - start
        _docker("commit", "--change", f"LABEL {SECONDS_LABEL}={seconds:.0f}", machine, tag)
    return InstalledImage(tag, seconds, made_now=True)


@contextlib.contextmanager
def fresh_machine(suite: str) -> Iterator[str]:
    """A running container of Debian ``suite``'s base with the checkout at :data:`CHECKOUT`; its name.

    The copy is left as root's umask 077 would leave a clone (no access for group and others), so
    the page's own ``chmod`` is what makes it readable. The container is removed on exit.
    """
    base = batch_support.base_image(suite)
    with machine_of(base, suite) as name:
        _docker("exec", name, "mkdir", "-p", CHECKOUT)
        archive = subprocess.run(["tar", "-C", str(REPO_ROOT), "--null", "-T", "-", "-c", "--owner=0", "--group=0"],
                                 input="\0".join(_checkout_files()).encode(), check=True, capture_output=True).stdout
        _docker("exec", "-i", name, "tar", "-x", "-C", CHECKOUT, stdin=archive)
        _docker("exec", name, "chmod", "-R", "go-rwx", CHECKOUT)
        ca = _host_ca()
        if ca is not None:
            _docker("exec", "-i", name, "sh", "-c", f"cat > {HOST_CA}", stdin=ca.read_bytes())
        yield name
