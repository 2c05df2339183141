"""No test leaves a process running: the per-test check that ``tests/conftest.py`` runs.

:func:`snapshot` is taken when a test's own fixtures start (after the module's and session's,
which pytest sets up first: their servers, clusters and hubs are not the test's);
:func:`left_running` after the test and all of its teardown. A process counts as the test's
when it started in between (a pid absent from the snapshot, or present with another start time)
and either

* descends from the test process with no older process in between (a Dask worker, a
  fork server, a kernel, a hub or proxy the test started, however it detached from its
  session), or
* has no older ancestor but init (it was orphaned: a double fork, a killed parent) and its
  working directory or command line lies in the session's temporary folder (``basetemp``).

Processes started by older ones (a module fixture's Dask worker forking its fork servers) are
those processes' business, and ended by their fixtures. Processes of the session's background
work, while its thread lives (:data:`BACKGROUND_WORK`: the image build, the batch's font list),
are not a test's.

Each process still running after a short grace (:data:`GRACE_SECONDS`: it may be exiting) is
named, then killed with its descendants, so one leak does not spill into the next test.

Cost: one listing of ``/proc`` and one read of ``/proc/PID/stat`` per process at the snapshot;
at the end the same listing and reads only for the processes new since then. A few
milliseconds per test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ["GRACE_SECONDS", "Descendants", "Leftover", "Snapshot", "left_running", "report", "snapshot",
           "still_running"]

#: Seconds a test's processes have to end after its teardown before they count as left running.
GRACE_SECONDS = 3.0
#: Work of the whole session that runs in a background thread of the test process, past the test that started it:
#: thread name -> what the command line of the process it starts (and so of its whole subtree) holds. The grading
#: image's build (tests/conftest.py) and the batch's font list (batch/fonts.py: one per process and sandbox, built
#: once; killing it would change the later tests' sandboxes).
BACKGROUND_WORK = {"grading-image-build": ("docker", "debootstrap"), "ch11-font-list": ("font_list.py",)}


@dataclass(frozen=True)
class Snapshot:
    """The processes running when a test's own fixtures started: pid -> start time (clock ticks after boot)."""

    started: dict[int, int]
    test_pid: int
    basetemp: str  # the session's temporary folder, with a trailing slash


@dataclass(frozen=True)
class Leftover:
    """A process a test left running."""

    pid: int
    command: str
    cwd: str
    why: str  # "child of the test process" or "in the test's temporary folder"

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.why}): {self.command!r} in {self.cwd}"


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of ``pid`` from ``/proc/PID/stat``; ``None`` when it has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2:].split()
    return int(fields[1]), int(fields[19]), fields[0].decode()


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def snapshot(basetemp: Path) -> Snapshot:
    """The processes running now (see the module)."""
    started = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None:
            started[pid] = stat[1]
    return Snapshot(started, os.getpid(), str(basetemp).rstrip("/") + "/")


def _command(pid: int) -> list[str]:
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    return []


def _cwd(pid: int) -> str:
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/{pid}/cwd")
    return "?"


def _background_marks() -> tuple[str, ...]:
    """What marks the processes of the session's background work under way (:data:`BACKGROUND_WORK`)."""
    alive = {thread.name for thread in threading.enumerate() if thread.is_alive()}
    return tuple(mark for name, marks in BACKGROUND_WORK.items() if name in alive for mark in marks)


def _new_processes(before: Snapshot) -> dict[int, tuple[int, int, str]]:
    """pid -> (parent, start time, state) of every process started since ``before`` and not a zombie."""
    new = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is None or before.started.get(pid) == stat[1] or stat[2] in ("Z", "X"):
            continue
        new[pid] = stat
    return new


def _theirs(before: Snapshot, new: dict[int, tuple[int, int, str]]) -> list[Leftover]:
    """The new processes that are the test's (see the module)."""
    found = []
    marks = _background_marks()
    for pid in new:
        top, ancestor = pid, new[pid][0]
        while ancestor in new:  # up to the nearest process older than the test
            top, ancestor = ancestor, new[ancestor][0]
        command = _command(pid)
        if marks and ancestor == before.test_pid and any(mark in part for part in _command(top) for mark in marks):
            continue  # the session's background work, started by this test's first use of it
        cwd = _cwd(pid)
        if ancestor == before.test_pid:
            why = "child of the test process"
        elif ancestor == 1 and ((cwd + "/").startswith(before.basetemp)
                                or any(before.basetemp in part + "/" for part in command)):
            why = "in the test's temporary folder"
        else:
            continue
        found.append(Leftover(pid, " ".join(command)[:300] or "?", cwd, why))
    return found


def left_running(before: Snapshot, grace: float = GRACE_SECONDS, *, kill: bool = True) -> list[Leftover]:
    """The test's processes still running ``grace`` seconds after its end (polled: those that end sooner are not
    counted); with ``kill``, each is then SIGKILLed, with whatever it started. Without it they are left alone:
    a pool a test starts and later tests reuse (the suites' grading processes) would break them if killed."""
    deadline = time.monotonic() + grace
    while True:
        new = _new_processes(before)
        left = _theirs(before, new) if new else []
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for leftover in left if kill else ():
        with contextlib.suppress(OSError):
            os.kill(leftover.pid, signal.SIGKILL)
    return left


def report(nodeid: str, left: list[Leftover], *, killed: bool = True) -> str:
    """The failure message naming the test and each process it left."""
    then = "killed now" if killed else "left running"
    lines = [f"{nodeid} left {len(left)} process(es) running {GRACE_SECONDS:g} s after its end ({then}):"]
    lines += [f"  {leftover}" for leftover in left]
    return "\n".join(lines)


class Descendants:
    """Every process ever seen below ``roots`` while it watches (polled every 0.1 s: fork servers, nbgrader,
    sandboxes, kernels), so that those started and gone between two looks at the end are accounted for too.
    A test stopping a grader with a signal checks with :func:`still_running` that all of them ended."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.seen: dict[int, psutil.Process] = {}
        self.commands: dict[int, str] = {}  # pid -> command line when first seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def look(self) -> None:
        for root in self.roots:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(root).children(recursive=True):
                    if child.pid not in self.seen:
                        self.seen[child.pid] = child
                        with contextlib.suppress(psutil.Error):
                            self.commands[child.pid] = " ".join(child.cmdline())

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            self.look()

    def stop(self) -> None:
        """Stop watching and SIGKILL what still runs of what was seen (a test's clean-up)."""
        self._stop.set()
        self._thread.join(timeout=10)
        for proc in self.seen.values():
            with contextlib.suppress(psutil.Error):
                proc.kill()


def _alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` (the same process: psutil checks its start time) still runs (a zombie has ended)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def still_running(procs: list[psutil.Process], within: float, *, reap: list | None = None) -> list[str]:
    """Waits up to ``within`` seconds for every process of ``procs`` to end; the ones still running then,
    described (pid and command line). ``reap``: ``subprocess.Popen`` objects polled meanwhile (this process's
    children, whose end is seen once they are reaped)."""
    deadline = time.monotonic() + within
    while any(_alive(proc) for proc in procs) and time.monotonic() < deadline:
        for popen in reap or []:
            popen.poll()
        time.sleep(0.1)
    left = []
    for proc in procs:
        if _alive(proc):
            with contextlib.suppress(psutil.Error):
                left.append(f"{proc.pid} {' '.join(proc.cmdline())[:160]}")
    return left
