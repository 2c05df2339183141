"""What a batch checks before it grades anything: one batch per course, a usable sandbox, private paths.

Each guard raises :class:`~.records.BatchError` with the remedy in its message,
before any submission is graded.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from .records import BatchError

__all__ = ["BatchLock", "check_private", "check_sandbox", "reachable_by_others"]


class BatchLock:
    """An exclusive lock on the course's batch state; released by the kernel if the process dies.

    Raises:
        BatchError: another process holds it (the message names its pid).
    """

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(self.fd, 32, 0).decode(errors="replace").strip()
            os.close(self.fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise BatchError(f"another batch is grading this course (pid {holder or '?'}); wait for it "
                                 "or stop it first") from exc
            raise
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        os.close(self.fd)


def reachable_by_others(path: Path) -> bool:
    """Whether a user outside ``path``'s owner and group could read it: every directory on the way is
    searchable by "others" and ``path`` itself is readable (a file) or searchable (a directory) by them."""
    path = path.resolve()
    for directory in reversed(path.parents):
        if not directory.stat().st_mode & stat.S_IXOTH:
            return False
    mode = path.stat().st_mode
    return bool(mode & (stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH))


def check_private(sandbox: str, paths: list[Path]) -> None:
    """A backend whose student code runs as other uids on this machine (container-user): they must not reach these
    paths."""
    from ..untrusted.choose import backend_for

    if not backend_for(sandbox).other_users:
        return
    for path in paths:
        if path.exists() and reachable_by_others(path):
            raise BatchError(f"{path} is reachable by the unprivileged users that run student code: put it below a "
                             "directory of mode 0700 (the --docker mode and the Gradescope autograder do)")


def check_sandbox(name: str, workers: int) -> None:
    """The backend ``name`` can run here with ``workers`` slots, or :class:`BatchError` saying why not.

    A usable backend then starts building what every grader of this process shares: its font
    list (:mod:`.fonts`).
    """
    from ..untrusted.choose import backend_for, choose_launcher
    from ..untrusted.launch import SandboxUnavailable
    from . import fonts

    try:
        slots = backend_for(name).max_slots
    except ValueError as exc:
        raise BatchError(str(exc)) from exc
    if slots is not None and workers > slots:
        raise BatchError(f"the {name} backend has {slots} slots: use --workers {slots} or fewer")
    try:
        launcher = choose_launcher(name)
    except SandboxUnavailable as exc:
        raise BatchError(f"sandbox {name!r} unavailable: {exc}") from exc
    except ValueError as exc:
        raise BatchError(str(exc)) from exc
    fonts.start(name, launcher)
