"""What a sandbox backend says about itself: :class:`Backend`, declared by each backend's own module.

The grader asks a backend's descriptor instead of comparing its name: which directories a
zygote puts back after every run, how an exit status names a signal, how many grading slots
it has and what a slot leaves behind, whether its runs reach this machine's other users,
whether two sandboxes of one submission are kept apart, whether it isolates anything at
all. :mod:`.backends.registry` lists the descriptors; adding a backend is its own module and one line
there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .launch import Launcher, SandboxUnavailable

__all__ = ["Backend", "LaunchSettings", "fatal_signal"]


@dataclass(frozen=True)
class LaunchSettings:
    """What the process's environment says for a launcher (read by ``untrusted.choose``, the one reader).

    Attributes:
        slot: this process's grading slot (``$CH11_SLOT``).
        font_list_file: a font list built already (``$CH11_FONT_LIST``), or ``None``.
        hidden_modules: top-level modules hidden inside the sandbox besides the engine and the
            chapter's reference library: the package of another course's exercises
            (``$CH11_EXERCISES``), which holds its reference solutions.
    """

    slot: int = 0
    font_list_file: str | None = None
    hidden_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Backend:
    """One sandbox backend, as the rest of the grader needs to know it.

    Attributes:
        name: as ``$CH11_SANDBOX``, ``--sandbox`` and the ``sandbox`` traits spell it.
        make: builds a checked launcher (raising ``SandboxUnavailable`` when it cannot run
            here); ``None``: not a backend of one grading process, see ``refusal``.
        refusal: why ``make`` is ``None``, and what to use instead.
        private_dirs: directories private to one sandbox, which a zygote puts back after every
            run besides its working directory (bwrap's own ``/tmp`` and ``/dev/shm``).
        signal_base: an exit status ``signal_base + N`` (N in 1..64) means the run was killed
            by signal N inside the sandbox (bwrap reports it so); ``None``: only a negative status.
        max_slots: how many grading slots it has (one uid each for container-user); ``None``: no limit.
        release_slot: kills what a slot's run may have left running (container-user: every
            process of the slot's uid, which outlives a killed nbgrader); ``None``: nothing to do.
        other_users: student code runs as other users of this machine, so the grader's own
            files must not be reachable by them.
        keeps_runs_apart: two sandboxes of one submission cannot signal each other or see each
            other's files (so work may run beside a notebook's execution).
        sandboxed: it isolates student code at all (``none`` does not: its runs start sessions
            of their own, which killing nbgrader's process group misses).
    """

    name: str
    make: Callable[[LaunchSettings], Launcher] | None
    refusal: str = ""
    private_dirs: tuple[str, ...] = ()
    signal_base: int | None = None
    max_slots: int | None = None
    release_slot: Callable[[int], Any] | None = None
    other_users: bool = False
    keeps_runs_apart: bool = True
    sandboxed: bool = True

    @property
    def per_process(self) -> bool:
        """Whether a grading process can launch runs with it (docker cannot: it is a whole batch in the image)."""
        return self.make is not None

    def launcher(self, settings: LaunchSettings) -> Launcher:
        """A checked launcher of this backend; ``SandboxUnavailable`` saying why not."""
        if self.make is None:
            raise SandboxUnavailable(self.refusal)
        return self.make(settings)

    def fatal_signal(self, returncode: int | None) -> int | None:
        """The signal that ended a run with exit status ``returncode``, or ``None``."""
        if returncode is None:
            return None
        if returncode < 0:
            return -returncode
        if self.signal_base is not None and self.signal_base < returncode < self.signal_base + 65:
            return returncode - self.signal_base
        return None


def fatal_signal(launcher: object, returncode: int | None) -> int | None:
    """The signal that ended a run of ``launcher`` with exit status ``returncode``, or ``None``.

    Decoded by the launcher's backend (its ``backend`` attribute); a launcher without one
    (a test's) is read as a plain process: only a negative status names a signal.
    """
    backend = getattr(launcher, "backend", None)
    if isinstance(backend, Backend):
        return backend.fatal_signal(returncode)
    return -returncode if returncode is not None and returncode < 0 else None
