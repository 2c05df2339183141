"""Student code as an unprivileged user: the backend inside the grading container.

Inside one container (the Docker backend, a Gradescope run) user namespaces
are often unavailable, so bubblewrap cannot build a sandbox there. The
separation is then by user, on top of what the container itself gives
(``--network none``, its own pid namespace and resource caps):

* the trusted orchestrator runs as root and owns the reference library, the
  suites and the results (``/opt/ch11/trusted`` and the course directory are
  mode 0700);
* each grading slot has its own uid (``ch11s0`` ... ``ch11s7``, uids 20000+),
  so parallel submissions cannot touch each other's scratch directories or
  signal each other's processes;
* the script runs through ``setpriv`` with no capabilities, no supplementary
  groups and ``no_new_privs``, under rlimits on CPU, address space, file size
  and process count. RLIMIT_NPROC binds here (unlike under root), because it
  counts the processes of the slot's uid.

After a run, :meth:`UserProcess.kill_tree` kills every process of the slot's
uid, including ones that left the process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from ..backend import Backend, LaunchSettings
from ..launch import RUNTIME_DIR, Limits, SandboxUnavailable, rlimit_setter

__all__ = ["BACKEND", "FIRST_SLOT_UID", "ContainerUserLauncher", "UserProcess", "kill_uid"]

#: uid of slot 0; the image creates users ch11s0..ch11s7 from here on.
FIRST_SLOT_UID = 20000
SLOTS = 8


def kill_uid(uid: int) -> int:
    """SIGKILL every process whose real uid is ``uid``; returns how many were signalled."""
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                for line in status:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            os.kill(int(entry), signal.SIGKILL)
                            killed += 1
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return killed


class UserProcess(subprocess.Popen):
    """A Popen whose :meth:`kill_tree` reaches every process of the slot's uid."""

    slot_uid: int

    def kill_tree(self) -> None:
        # Repeat: a fork bomb may create processes between two scans.
        for _ in range(20):
            if kill_uid(self.slot_uid) == 0:
                break
        if self.poll() is None:
            self.kill()


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    os.chmod(root, 0o700)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


@dataclass
class ContainerUserLauncher:
    """Runs runtime scripts as the unprivileged uid of one grading slot.

    Attributes:
        slot: 0..7; selects uid ``FIRST_SLOT_UID + slot``. Give parallel
            workers distinct slots.
        python: interpreter of the student-visible environment.
        runtime_dir: directory holding the runtime scripts (``$CH11_RUNTIME_DIR``
            in the image); it must be readable by the slot's user.

    Raises:
        SandboxUnavailable: from :meth:`check`, when not running as root or
            ``setpriv`` is missing: separation by user is then impossible.
    """

    slot: int = 0
    python: str = sys.executable
    runtime_dir: Path = Path(os.environ.get("CH11_RUNTIME_DIR", str(RUNTIME_DIR)))
    name: str = "container-user"
    backend: ClassVar[Backend]  # BACKEND, below

    @property
    def uid(self) -> int:
        return FIRST_SLOT_UID + self.slot

    def check(self) -> None:
        if not 0 <= self.slot < SLOTS:
            raise SandboxUnavailable(f"slot must be in 0..{SLOTS - 1}, got {self.slot}")
        if os.geteuid() != 0:
            raise SandboxUnavailable("the container-user backend must run as root inside the grading image")
        if shutil.which("setpriv") is None:
            raise SandboxUnavailable("setpriv (util-linux) is missing: the container-user backend needs it")

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
    ) -> UserProcess:
        self.check()
        _chown_tree(scratch, self.uid)
        # TMPDIR too: the image closes /tmp to slot users, so temporary files land in the slot's
        # size-capped scratch filesystem like everything else the submission writes.
        child_env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": str(scratch), "MPLBACKEND": "Agg",
                     "PYTHONDONTWRITEBYTECODE": "1"}
        child_env.update(env or {})
        argv = [
            "setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
            "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--",
            self.python, "-I", str(self.runtime_dir / script), *args,
        ]

        proc = UserProcess(argv, cwd=scratch, env=child_env, stdin=stdin, stdout=stdout, stderr=stderr,
                           preexec_fn=rlimit_setter(limits, processes=True))
        proc.slot_uid = self.uid
        return proc


def _launcher(settings: LaunchSettings) -> ContainerUserLauncher:
    launcher = ContainerUserLauncher(slot=settings.slot)
    launcher.check()
    return launcher


def _release_slot(slot: int) -> None:
    """Kill whatever the slot's uid still runs (it outlives a killed nbgrader); only root can."""
    if os.geteuid() == 0:
        for _ in range(20):
            if kill_uid(FIRST_SLOT_UID + slot) == 0:
                break


#: Inside the grading container: one uid per slot, whose runs reach each other (one uid) and whose uids are this
#: machine's other users.
BACKEND = Backend("container-user", _launcher, max_slots=SLOTS, release_slot=_release_slot, other_users=True,
                  keeps_runs_apart=False)
ContainerUserLauncher.backend = BACKEND
