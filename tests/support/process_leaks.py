"""No test leaves a process running: the per-test check that ``tests/conftest.py`` runs.

:func:`snapshot` is taken when a test's own fixtures start (after the module's and session's,
which pytest sets up first: their servers, clusters, hubs and pools are not the test's);
:func:`left_running` after the test and all of its teardown. A process counts as the test's
when it started in between (a pid absent from the snapshot, or present with another start time)
and either

* descends from the test process with no older process in between (a Dask worker, a
  fork server, a kernel, a hub or proxy the test started, however it detached from its
  session), or
* has no older ancestor but init (it was orphaned: a double fork, a killed parent) and its
  working directory or command line lies in the session's temporary folder (``basetemp``).

Processes started by older ones (a module fixture's Dask worker forking its fork servers) are
those processes' business, and ended by their fixtures. Processes that a thread of the session's
background work started (:data:`BACKGROUND_THREADS`: the image build, the batch's font list),
with everything below them, are not a test's, whichever test ran when they started
(:func:`watch_background_work` notes their command lines).

A test's process still there when the check looks may be on its way out (its teardown ended
it, or its parent): the check waits for it to end, for at most :data:`GRACE_SECONDS`. Each one
still running then is named, then killed with its descendants, so one leak does not spill into
the next test.

Cost: one listing of ``/proc`` and one read of ``/proc/PID/stat`` per process at the snapshot;
at the end the same listing and reads only for the processes new since then. A few
milliseconds per test that leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

__all__ = ["BACKGROUND_THREADS", "GRACE_SECONDS", "Descendants", "Leftover", "Snapshot", "left_running", "report",
           "snapshot", "still_running", "watch_background_work"]

#: Wall seconds a test's processes have, after its teardown, to end before they count as left running.
#: What is still there when the check looks is at most ending: a teardown waits for what it stops, so what
#: remains is a descendant dying with it, or an interpreter at its exit ending its own children. The grader's
#: stop paths end their processes within 10 s (docs/batch.md, "Stopping"; a zygote's close waits as long for
#: its sandbox), and a machine at a load average of 10 on 2 cores gives a process about a fifth of a core, so
#: the same exit can take several times as long in wall time: three times that. The wait ends as soon as the
#: processes have ended, so it costs a test that leaves nothing no time; it only delays the failure of a test
#: that really leaves one.
GRACE_SECONDS = 30.0
#: Threads of the session's work that runs in the background of the test process, past the test that started
#: it: the grading image's build and the page tier's Debian 13 base (tests/conftest.py), the batch's font list
#: (batch/fonts.py: one per process and sandbox, built once; killing it would change the later tests'
#: sandboxes). The processes they start are the session's (:func:`watch_background_work`).
BACKGROUND_THREADS = frozenset({"grading-image-build", "trixie-base-build", "ch11-font-list"})
#: Command lines (as ``/proc`` shows them) of the processes threads of :data:`BACKGROUND_THREADS` started.
_BACKGROUND_COMMANDS: set[tuple[str, ...]] = set()
_WATCHING = False


def _note_background_process(event: str, args: tuple[Any, ...]) -> None:
    """Audit hook: the command line of a process a background-work thread starts (``subprocess.Popen``'s
    event, raised in the thread that starts the process, with the argv it executes)."""
    if event != "subprocess.Popen" or threading.current_thread().name not in BACKGROUND_THREADS:
        return
    with contextlib.suppress(Exception):  # raised here, it would fail the Popen: what cannot be read is not noted
        _BACKGROUND_COMMANDS.add(tuple(part for part in map(os.fsdecode, args[1]) if part))


def watch_background_work() -> None:
    """From now on, note the command line of each process the session's background work starts (an audit
    hook, added once per process: hooks cannot be removed)."""
    global _WATCHING
    if not _WATCHING:
        sys.addaudithook(_note_background_process)
        _WATCHING = True


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
    started: int = 0  # its start time (clock ticks after boot): the pid names this process while it is this

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
    for pid in new:
        top, ancestor = pid, new[pid][0]
        while ancestor in new:  # up to the nearest process older than the test
            top, ancestor = ancestor, new[ancestor][0]
        if ancestor == before.test_pid and _is_background(tuple(_command(top))):
            continue  # the session's background work, started while this test ran
        command = _command(pid)
        cwd = _cwd(pid)
        if ancestor == before.test_pid:
            why = "child of the test process"
        elif ancestor == 1 and ((cwd + "/").startswith(before.basetemp)
                                or any(before.basetemp in part + "/" for part in command)):
            why = "in the test's temporary folder"
        else:
            continue
        found.append(Leftover(pid, " ".join(command)[:300] or "?", cwd, why, new[pid][1]))
    return found


def _is_background(command: tuple[str, ...]) -> bool:
    """Whether ``command`` (as ``/proc`` shows it) is one the session's background work started. A script
    started by its own name (``debootstrap``, a ``#!/bin/sh`` script) shows in ``/proc`` as its interpreter,
    the script's path, then the arguments: ``('/bin/sh', '/usr/sbin/debootstrap', '--variant=minbase', ...)``
    for the ``('debootstrap', '--variant=minbase', ...)`` that was started."""
    for started in _BACKGROUND_COMMANDS:
        if command == started:
            return True
        shift = len(command) - len(started)
        if started and shift in (1, 2) and command[shift + 1:] == started[1:] and (
                os.path.basename(command[shift]) == os.path.basename(started[0])):
            return True
    return False


def _running(leftover: Leftover) -> bool:
    """Whether ``leftover`` has not ended (the same process: its start time is checked; a zombie has ended)."""
    stat = _stat(leftover.pid)
    return stat is not None and stat[1] == leftover.started and stat[2] not in ("Z", "X")


def left_running(before: Snapshot, grace: float = GRACE_SECONDS, *, kill: bool = True) -> list[Leftover]:
    """The test's processes still running after waiting up to ``grace`` seconds for them to end: each one
    found is waited for (one that ends is not counted), then ``/proc`` is looked at again for any they started
    meanwhile. With ``kill``, each still running at the end is SIGKILLed, with whatever it started; without,
    they are left alone (``CH11_PROCESS_LEAKS=report``).

    The wait reads ``/proc`` rather than using ``psutil.wait_procs``, which reaps a process that is this one's
    child: the ``Popen`` that started it would never learn its exit status."""
    deadline = time.monotonic() + grace
    while True:
        new = _new_processes(before)
        left = _theirs(before, new) if new else []
        if not left or time.monotonic() >= deadline:
            break
        pause = 0.02
        while any(_running(leftover) for leftover in left) and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(2 * pause, 0.5)
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
        # The poller thread adds to these while a test reads them: every read goes through a copy under the lock.
        self._lock = threading.Lock()
        self._seen: dict[int, psutil.Process] = {}
        self._commands: dict[int, str] = {}  # pid -> command line when first seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    @property
    def seen(self) -> dict[int, psutil.Process]:
        """A copy of what was seen so far, pid to process (safe to iterate while the poller runs)."""
        with self._lock:
            return dict(self._seen)

    @property
    def commands(self) -> dict[int, str]:
        """A copy of each seen process's command line when first seen, by pid."""
        with self._lock:
            return dict(self._commands)

    def look(self) -> None:
        for root in self.roots:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(root).children(recursive=True):
                    with self._lock:
                        if child.pid in self._seen:
                            continue
                        self._seen[child.pid] = child
                    with contextlib.suppress(psutil.Error):
                        command = " ".join(child.cmdline())
                        with self._lock:
                            self._commands[child.pid] = command

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
