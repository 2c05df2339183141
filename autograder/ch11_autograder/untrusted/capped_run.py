"""Running one untrusted script with every limit enforced, and reading what it left behind.

* :func:`run_limited` starts a script through any launcher, feeds it its
  input, drains stdout and stderr with a cap, enforces the wall-time limit and
  kills the whole process tree when it runs out; it reports what happened in
  a :class:`RunResult`.
* :class:`Deadline` lets another thread bring a run's wall-time limit forward
  while it runs (a run started ahead of its turn gets its turn's limit).
* :func:`read_untrusted_file` reads a file a sandboxed run left in its
  scratch directory without following links planted there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .backend import fatal_signal
from .launch import Launcher, Limits

__all__ = ["Deadline", "RunResult", "read_untrusted_file", "run_limited"]


@dataclass(frozen=True)
class RunResult:
    """What one limited run produced. Every byte in it is untrusted data.

    Attributes:
        returncode: the launcher process's exit status. For bwrap, a script
            killed by signal N inside the sandbox gives ``128 + N``; a launcher
            process killed by signal N gives ``-N`` (as after a wall-time kill).
        stdout, stderr: at most ``limits.max_output_bytes`` bytes each (the first
            ones); the rest was read and dropped.
        timed_out: the wall-time limit expired and the tree was killed.
        killed_reason: why the run was cut short, or ``None``: ``"wall_time"``,
            ``"memory"`` (an OOM kill in the run's cgroup), ``"cpu_time"``
            (SIGXCPU), ``"file_size"`` (SIGXFSZ), or ``"signal:NAME"`` for any
            other fatal signal (SIGKILL from the CPU hard limit looks like this).
            Limits that make a system call fail instead of killing (RLIMIT_AS,
            RLIMIT_FSIZE under Python, which ignores SIGXFSZ, the process limit)
            show up as errors in the script's own output and in ``limit_events``.
        stdout_truncated, stderr_truncated: output was dropped.
        elapsed_seconds: wall time from spawn to reaping.
        limit_events: cgroup counters of the run when the launcher has them
            (``oom_kill``, ``memory_peak_bytes``, ``pids_max_hits``, ``pids_peak``).
    """

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    killed_reason: str | None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    elapsed_seconds: float = 0.0
    limit_events: Mapping[str, int] = field(default_factory=dict)


class Deadline:
    """A run's wall-time limit that another thread may lower while the run goes on.

    :func:`run_limited` starts it (:meth:`start`: the run's spawn time and its own
    ``limits.wall_seconds``) and looks at it at least every :data:`POLL_SECONDS`;
    :meth:`limit_to` lowers the limit, counted from that start, never raises it. A
    limit lowered below the time already run kills the run at the next look.
    All times are ``time.monotonic()`` seconds.
    """

    #: Longest time between two looks of a run at its deadline, seconds.
    POLL_SECONDS = 0.2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self._limit = float("inf")
        #: The limit (seconds from the start) in force when the run was killed for time, else ``None``.
        self.fired_limit: float | None = None

    def start(self, at: float, wall_seconds: float) -> None:
        with self._lock:
            self._started = at
            self._limit = min(self._limit, wall_seconds)

    def limit_to(self, seconds: float) -> None:
        """Allow the run at most ``seconds`` from its start (a lower limit than now only)."""
        with self._lock:
            self._limit = min(self._limit, max(0.0, seconds))

    @property
    def limit(self) -> float:
        """The limit in force, seconds from the start."""
        return self._limit

    def at(self) -> float:
        """The absolute deadline (``inf`` before :meth:`start`)."""
        with self._lock:
            return float("inf") if self._started is None else self._started + self._limit


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    kill_tree = getattr(proc, "kill_tree", None)
    if callable(kill_tree):
        kill_tree()
    elif proc.poll() is None:
        # Launchers start their process as a process-group leader (launch.Launcher contract).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def run_limited(
    launcher: Launcher,
    script: str,
    args: Sequence[str],
    scratch: Path,
    limits: Limits,
    input_bytes: bytes | None = None,
    *,
    env: Mapping[str, str] | None = None,
    kill_grace_seconds: float = 5.0,
    writeback: Sequence[str] = (),
    deadline: Deadline | None = None,
) -> RunResult:
    """Run ``script`` under ``launcher`` to completion or to ``limits.wall_seconds``.

    Input is written while output is read (no pipe deadlock); stdin is closed
    after ``input_bytes`` (``None``: stdin is /dev/null). stdout and stderr are
    each kept up to ``limits.max_output_bytes`` and drained beyond that so the
    script never blocks on a full pipe. When the wall time runs out, the whole
    tree is killed (``kill_tree()`` of a sandbox process, else SIGKILL to the
    process group), and draining continues for at most ``kill_grace_seconds``.

    ``writeback`` names the files of ``scratch`` the caller reads afterwards (see
    ``Launcher.spawn``): under a sandbox with its own scratch filesystem, the only
    writes that reach ``scratch``.

    ``deadline``: started here with the spawn time and ``limits.wall_seconds``; another
    thread may lower it while the run goes on (:meth:`Deadline.limit_to`), and a run it
    stops is timed out like one that ran out of ``limits.wall_seconds``.

    Call it from a thread that outlives the run: bwrap's ``--die-with-parent``
    fires when the *thread* that spawned it exits.
    """
    cap = limits.max_output_bytes
    start = time.monotonic()
    proc = launcher.spawn(
        script,
        args,
        scratch=scratch,
        limits=limits,
        env=env,
        stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        writeback=writeback,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    kept = dict.fromkeys(chunks, 0)
    truncated = dict.fromkeys(chunks, False)
    pending = memoryview(input_bytes or b"")
    timed_out = False
    if deadline is None:
        deadline = Deadline()
        poll = 1.0
    else:
        poll = Deadline.POLL_SECONDS
    deadline.start(start, limits.wall_seconds)
    grace_end = float("inf")

    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if pending:
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while sel.get_map():
            remaining = (grace_end if timed_out else deadline.at()) - time.monotonic()
            if remaining <= 0:
                if timed_out:
                    break  # the grace period after the kill is over too
                timed_out = True
                deadline.fired_limit = deadline.limit
                _kill_tree(proc)
                grace_end = time.monotonic() + kill_grace_seconds
                continue
            for key, _ in sel.select(timeout=min(remaining, poll)):
                fd = key.fd
                if fd in chunks:
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not data:
                        sel.unregister(fd)
                        continue
                    room = cap - kept[fd]
                    if len(data) > room:
                        truncated[fd] = True
                        data = data[: max(room, 0)]
                    if data:
                        chunks[fd].append(data)
                        kept[fd] += len(data)
                else:
                    try:
                        pending = pending[os.write(fd, pending[: 1 << 16]) :]
                    except BlockingIOError:
                        continue
                    except OSError as exc:  # the script closed its stdin: not our problem
                        if exc.errno not in (errno.EPIPE, errno.EINVAL):
                            raise
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        assert proc.stdin is not None
                        proc.stdin.close()
    # Output is closed (or we stopped listening): the process may still run.
    try:
        if timed_out:
            proc.wait(timeout=kill_grace_seconds)
        else:
            # Output closed: wait for the exit in steps, so a deadline lowered meanwhile still applies.
            while True:
                left = deadline.at() - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(script, limits.wall_seconds)
                try:
                    proc.wait(timeout=min(left, poll))
                    break
                except subprocess.TimeoutExpired:
                    continue
    except subprocess.TimeoutExpired:
        if not timed_out:
            timed_out = True
            deadline.fired_limit = deadline.limit
        _kill_tree(proc)
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    elapsed = time.monotonic() - start

    events: Mapping[str, int] = dict(getattr(proc, "limit_events", {}) or {})
    reason: str | None = None
    sig = fatal_signal(launcher, proc.returncode)
    if timed_out:
        reason = "wall_time"
    elif events.get("oom_kill", 0) > 0:
        reason = "memory"
    elif sig == signal.SIGXCPU:
        reason = "cpu_time"
    elif sig == signal.SIGXFSZ:
        reason = "file_size"
    elif sig is not None:
        try:
            reason = f"signal:{signal.Signals(sig).name}"
        except ValueError:
            reason = f"signal:{sig}"
    return RunResult(
        returncode=proc.returncode,
        stdout=b"".join(chunks[out_fd]),
        stderr=b"".join(chunks[err_fd]),
        timed_out=timed_out,
        killed_reason=reason,
        stdout_truncated=truncated[out_fd],
        stderr_truncated=truncated[err_fd],
        elapsed_seconds=elapsed,
        limit_events=events,
    )


def read_untrusted_file(scratch: Path, relpath: str, max_bytes: int) -> bytes:
    """Read ``scratch/relpath`` as a sandboxed run left it, without trusting its shape.

    Every path component is opened with ``O_NOFOLLOW`` (a symlink planted in
    scratch pointing at, say, the gradebook is refused rather than followed),
    the target must be a regular file (a FIFO would block the grader), and it
    must hold at most ``max_bytes`` bytes.

    Raises:
        ValueError: absolute path, ``..`` component, or a file over ``max_bytes``.
        OSError: missing file, a symlink anywhere on the path (``ELOOP`` or
            ``ENOTDIR``), or not a regular file (``EINVAL``).
    """
    parts = Path(relpath).parts
    if not parts or Path(relpath).is_absolute() or ".." in parts:
        raise ValueError(f"{relpath!r} is not a plain path relative to the scratch directory")
    dir_fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{relpath} is not a regular file")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{relpath} is larger than {max_bytes} bytes")
    return data
