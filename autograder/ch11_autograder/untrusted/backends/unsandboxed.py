"""No sandbox at all: runtime scripts as plain subprocesses, for trusted runs only.

``CH11_SANDBOX=none`` chooses it (CI grading the reference solutions, the tests here, a
developer's machine). It applies the rlimits of :func:`~..launch.rlimit_setter` and
isolates nothing, and it says so on stderr at every spawn.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from ..backend import Backend, LaunchSettings
from ..launch import RUNTIME_DIR, Limits, rlimit_setter

__all__ = ["BACKEND", "UnsandboxedLauncher"]


@dataclass
class UnsandboxedLauncher:
    """Runs runtime scripts as plain subprocesses: for trusted code only.

    This is the explicit opt-out (CI grading the reference solutions, or a
    developer's machine). It applies rlimits but isolates nothing: student code
    started this way can read and write everything the grader can. Every
    spawn writes a warning to stderr so that the choice is never silent.
    """

    name: str = "unsandboxed"
    backend: ClassVar[Backend]  # BACKEND, below
    python: str = sys.executable
    quiet: bool = False

    def spawn(
        self,
        script: str,
        args: Sequence[str],
        *,
        scratch: Path,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        stdin: int | IO[bytes] | None = subprocess.PIPE,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = subprocess.PIPE,
        writeback: Sequence[str] = (),
    ) -> subprocess.Popen[bytes]:
        if not self.quiet:
            print(f"WARNING: running {script} UNSANDBOXED in {scratch} (trusted-run opt-out)", file=sys.stderr)
        child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch), "MPLBACKEND": "Agg"}
        child_env.update(env or {})
        return subprocess.Popen(
            [self.python, "-I", str(RUNTIME_DIR / script), *args],
            cwd=scratch,
            env=child_env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=rlimit_setter(limits),
        )



def _launcher(settings: LaunchSettings) -> UnsandboxedLauncher:
    return UnsandboxedLauncher()


#: The opt-out: nothing isolated, so nothing to keep apart either; its runs start sessions of their own.
BACKEND = Backend("none", _launcher, sandboxed=False)
UnsandboxedLauncher.backend = BACKEND
