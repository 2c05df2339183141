"""How untrusted scripts are started: the launcher interface and its limits.

A launcher runs one script of ``runtime/`` with the Python interpreter of the
grading environment, with its working directory set to a scratch directory
that holds a copy of one submission. Script arguments are always paths
*relative to the scratch directory*, so the same call works whether the
launcher is a sandbox (which mounts the scratch directory somewhere of its own)
or the explicit unsandboxed opt-out.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"

#: The wire-format package the verdict worker speaks (``ch11_autograder/protocol/``).
#: It imports only the standard library, numpy and (lazily) trainable_harness, so it
#: may be shown to untrusted code. Runtime scripts load it from
#: ``<their own directory>/../../protocol/``; see :data:`RUNTIME_READONLY_PATHS`.
PROTOCOL_DIR = RUNTIME_DIR.parent.parent / "protocol"


def course_packages() -> tuple[str, ...]:
    """The top-level package of the exercises ``$CH11_EXERCISES`` names (``()`` when unset or blank), hidden
    inside the sandbox beside :data:`HIDDEN_MODULES`.

    ``exercises.course_exercises`` refuses a registry whose reference solutions live outside
    these, so hiding them hides every reference.
    """
    name = os.environ.get(EXERCISES_ENV, "").strip()
    return (name.split(".")[0],) if name else ()


def protocol_files(directory: Path = PROTOCOL_DIR) -> tuple[Path, ...]:
    """The wire-format package's source files, each a sandbox shows (its ``__pycache__`` it does not)."""
    return tuple(sorted(directory.glob("*.py")))


#: Everything of ch11_autograder a sandboxed process may see, read-only. A launcher
#: must expose exactly these, keeping their relative position (simplest: bind each
#: at its own host path), and nothing else of the package: suites, the reference
#: library and the course directory stay invisible. Of ``protocol/``, the ``.py`` files
#: (:func:`protocol_files`) suffice.
RUNTIME_READONLY_PATHS: tuple[Path, ...] = (RUNTIME_DIR, PROTOCOL_DIR)

#: Environment variable naming the sandbox backend: ``bwrap`` (default), ``container-user``,
#: ``docker``, or ``none`` (the explicit, loud opt-out for trusted runs); read only by
#: ``choose.resolve_backend``.
SANDBOX_ENV = "CH11_SANDBOX"
DEFAULT_SANDBOX = "bwrap"
#: Environment variable naming the file where an nbgrader process reports how much of each
#: submission's notebook-execution budget it used (JSON, see ``trusted.budget``); set by the
#: batch grader for its isolated runs, unset otherwise (nothing is written then).
EXECUTION_REPORT_ENV = "CH11_EXECUTION_REPORT"
#: Environment variable holding this process's grading slot (0..7) for the container-user
#: backend; the batch grader sets it per worker, ``choose.slot_from_env`` reads it.
SLOT_ENV = "CH11_SLOT"
#: Environment variable naming the package of the exercises a course grades (``exercises.course_exercises``);
#: ``choose.choose_launcher`` hides its top-level package inside the sandbox, with its reference solutions.
EXERCISES_ENV = "CH11_EXERCISES"
#: Never importable inside a sandbox: the chapter's reference library and the engine (suites, catalogue).
HIDDEN_MODULES = ("ch11_solutions", "ch11_autograder")

__all__ = [
    "DEFAULT_SANDBOX",
    "EXECUTION_REPORT_ENV",
    "EXERCISES_ENV",
    "HIDDEN_MODULES",
    "PROTOCOL_DIR",
    "RUNTIME_DIR",
    "RUNTIME_READONLY_PATHS",
    "SANDBOX_ENV",
    "SLOT_ENV",
    "Launcher",
    "Limits",
    "SandboxUnavailable",
    "course_packages",
    "protocol_files",
    "rlimit_setter",
    "scratch_seed",
]


class SandboxUnavailable(RuntimeError):
    """No sandbox backend can run here; the message says what is missing and how to get it."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one untrusted process tree.

    Attributes:
        cpu_seconds: CPU time of the process (RLIMIT_CPU), seconds.
        wall_seconds: wall-clock limit enforced by the caller that waits, seconds.
        memory_bytes: address-space / memory limit, bytes.
        max_processes: processes or threads the tree may hold at once.
        max_file_bytes: largest file the tree may write (RLIMIT_FSIZE), bytes.
        max_output_bytes: bytes of stdout/stderr the trusted side reads; the rest is dropped.
        scratch_bytes: size of the scratch filesystem, bytes, where the backend gives the run
            one of its own (bwrap: a tmpfs at ``/scratch``; the grading image: a tmpfs per
            worker slot). Files are each bounded by ``max_file_bytes``; this bounds them all.
    """

    cpu_seconds: int = 120
    wall_seconds: float = 180.0
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 256
    max_file_bytes: int = 64 * 1024**2
    max_output_bytes: int = 4 * 1024**2
    scratch_bytes: int = 256 * 1024**2


class Launcher(Protocol):
    """Starts a runtime script as an untrusted process.

    Implementations: the modules of ``backends/`` (bwrap, container-user, and
    the unsandboxed opt-out for trusted code).
    """

    #: short name shown in logs and reports, e.g. "bwrap", "docker", "unsandboxed".
    name: str

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
        """Start ``python runtime/<script> *args`` with cwd = ``scratch``.

        ``scratch`` is the only writable place the process sees. It starts as a
        copy of the caller's directory; ``writeback`` names the files (paths
        relative to it) whose content the caller reads back afterwards. A backend
        may give the run a scratch filesystem of its own (bwrap does, capped at
        ``limits.scratch_bytes``): then only the ``writeback`` files reach the
        caller's directory, rewritten in place (they cannot be renamed or
        removed inside), and everything else written there vanishes with the
        run. Backends that run in the caller's directory itself ignore it. The caller
        owns the returned process: it enforces ``limits.wall_seconds`` and
        kills the process group when done, with ``os.killpg(proc.pid, SIGKILL)``;
        so the started process must lead its own process group (``os.setsid``).
        The script must find :data:`PROTOCOL_DIR` at ``../../protocol/``
        relative to itself (see :data:`RUNTIME_READONLY_PATHS`).
        """
        ...


def rlimit_setter(limits: Limits, *, setsid: bool = True, address_space: bool = True, processes: bool = False,
                  join: Sequence[int] = ()) -> Callable[[], None]:
    """A ``preexec_fn`` applying ``limits`` as rlimits that the whole process tree inherits.

    It runs between fork and exec, so it only makes system calls on values prepared here.
    Always: RLIMIT_CPU (soft ``cpu_seconds``, hard one second later: SIGXCPU, then SIGKILL),
    RLIMIT_FSIZE (``max_file_bytes``) and no core files.

    Args:
        setsid: start a new session (the caller kills the tree by process group).
        address_space: also RLIMIT_AS = ``memory_bytes`` (off where a memory cgroup limits
            the tree instead: RLIMIT_AS on a Jupyter kernel breaks numpy's allocations early).
        processes: also RLIMIT_NPROC = ``max_processes`` (binds per uid, never root's).
        join: open ``cgroup.procs`` fds to write ``0`` to first, so the child joins those
            cgroups before it can fork.
    """
    cpu = (limits.cpu_seconds, limits.cpu_seconds + 1)
    fsize = (limits.max_file_bytes, limits.max_file_bytes)
    memory = (limits.memory_bytes, limits.memory_bytes)
    nproc = (limits.max_processes, limits.max_processes)
    fds = tuple(join)

    def apply() -> None:
        for fd in fds:
            os.write(fd, b"0")
        if setsid:
            os.setsid()
        resource.setrlimit(resource.RLIMIT_CPU, cpu)
        resource.setrlimit(resource.RLIMIT_FSIZE, fsize)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, memory)
        if processes:
            resource.setrlimit(resource.RLIMIT_NPROC, nproc)

    return apply


def scratch_seed(scratch: Path, *, skip: Sequence[str] = ()) -> list[tuple[str, int | None]]:
    """What a sandboxed run's working directory starts with: a copy of ``scratch`` (the caller's files).

    Returns ``(relative path, fd)`` per regular file (an fd open for reading, which the caller
    copies in, bwrap with ``--file`` and a zygote over its socket, and must close) and
    ``(relative path, None)`` per directory, parents before children, sorted. Symbolic links and special files are
    left out (the trusted side writes only plain files there); ``skip`` names files not to copy.

    Raises:
        OSError: a file cannot be opened (the fds opened so far are closed).
    """
    seed: list[tuple[str, int | None]] = []
    try:
        for dirpath, dirnames, filenames in os.walk(scratch):
            dirnames.sort()
            base = Path(dirpath).relative_to(scratch)
            for name in dirnames:
                if not os.path.islink(os.path.join(dirpath, name)):
                    seed.append(((base / name).as_posix(), None))
            for name in sorted(filenames):
                rel = (base / name).as_posix()
                path = os.path.join(dirpath, name)
                if rel in skip or os.path.islink(path) or not os.path.isfile(path):
                    continue
                seed.append((rel, os.open(path, os.O_RDONLY | os.O_NOFOLLOW)))
    except BaseException:
        for _, fd in seed:
            if fd is not None:
                os.close(fd)
        raise
    return seed
