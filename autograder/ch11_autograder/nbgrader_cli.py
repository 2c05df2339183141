"""Running the real nbgrader command line from this environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["nbgrader_argv", "nbgrader_env", "run_nbgrader"]

BIN_DIR = Path(sys.executable).parent


def nbgrader_argv(*args: str) -> list[str]:
    """``nbgrader *args`` with this interpreter, through :mod:`ch11_autograder.nbgrader_main`
    (the same application, started about a second faster)."""
    # -P: the working directory (a course, holding submitted files) must not go on sys.path.
    return [sys.executable, "-P", "-m", "ch11_autograder.nbgrader_main", *args]


def nbgrader_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The current environment with this interpreter's bin directory first on PATH.

    nbgrader shells out to ``alembic`` (and kernels to ``python``) through
    PATH; without this, a venv used without activation finds neither.
    """
    env = os.environ.copy()
    env["PATH"] = os.pathsep.join([str(BIN_DIR), env.get("PATH", "")])
    env.update(extra or {})
    return env


def run_nbgrader(course: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """``nbgrader *args`` in ``course``; keyword arguments go to :func:`subprocess.run`."""
    env = nbgrader_env(kwargs.pop("env", None))
    return subprocess.run(nbgrader_argv(*args), cwd=course, env=env, **kwargs)
