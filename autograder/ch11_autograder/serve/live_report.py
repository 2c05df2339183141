"""The practice course's class report, kept current while the service grades (docs/course.md, "The class
report during the week").

After every ``ServePolicy.report_every`` finished submissions, or once ``report_minutes`` have passed since
the last refresh with at least one submission finished since, :class:`LiveReport` runs ``ch11-grade report
--course <practice>`` in a child process: the same report, sections and similarity JSON as the official run
after the due date writes (``ch11-grade batch`` or ``ch11-grade report`` on the course). A child, not a
call: the service may not import the report (the tools are one layer of independent modules), a failure or
a hang of the report never reaches the grading loop, and the child runs at a lower priority (nice 10) so
that students waiting for feedback keep the cores. One refresh at a time; the report writes each file to a
temporary name and renames it into place, so the instructor's open page is always a whole report, the last
one or the new one. Its output goes to ``.ch11-serve/logs/report.log``; the service says one line per
refresh (``report   refreshed ...`` or ``report   failed ...``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["LiveReport", "due"]

#: The child: the report command at a lower priority than grading.
_CHILD = ("import os, sys; os.nice(10); from ch11_autograder.cli import main; "
          "sys.exit(main(['report', '--course', sys.argv[1]]))")


def due(finished: int, since_last: float, *, every: int, minutes: float) -> bool:
    """Whether a refresh is due: ``finished`` submissions since the last refresh, ``since_last`` seconds ago.

    Nothing new, nothing to refresh; otherwise ``every`` finished (0: never by count) or ``minutes`` passed
    (0: never by time)."""
    if finished < 1:
        return False
    return (every > 0 and finished >= every) or (minutes > 0 and since_last >= minutes * 60)


class LiveReport:
    """Refreshes the report of ``practice`` (see the module); the service calls :meth:`finished` after each
    submission it finishes, :meth:`poll` from its loop, and :meth:`close` when it stops."""

    def __init__(self, practice: Path, *, every: int, minutes: float, log: Path, say: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.practice = practice
        self.every = every
        self.minutes = minutes
        self.log = log
        self.say = say
        self.clock = clock
        #: Submissions finished since the last refresh started.
        self.pending = 0
        self._last = clock()
        self._child: subprocess.Popen[bytes] | None = None
        self._started = 0.0
        #: Submissions the refresh in flight shows that the last one did not.
        self._finished_at_start = 0

    @property
    def enabled(self) -> bool:
        return self.every > 0 or self.minutes > 0

    def finished(self) -> None:
        """One more submission finished; refresh when due."""
        self.pending += 1
        self.poll()

    def poll(self) -> None:
        """Collect a refresh that ended (its line), then start the next one when due and none is running."""
        if self._child is not None:
            code = self._child.poll()
            if code is None:
                return
            self._ended(code)
        if self.enabled and due(self.pending, self.clock() - self._last, every=self.every, minutes=self.minutes):
            self._start()

    def flush(self, timeout: float = 600.0) -> None:
        """Refresh now if anything finished since the last refresh, and wait for it (``ch11-grade serve --once``)."""
        if self._child is not None:
            self._wait(timeout)
        if self.enabled and self.pending:
            self._start()
            self._wait(timeout)

    def close(self) -> None:
        """Stop a refresh in flight (the report files keep their last whole version)."""
        child, self._child = self._child, None
        if child is None or child.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):  # its group may have ended by itself
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()

    def _start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self._child = subprocess.Popen([sys.executable, "-c", _CHILD, str(self.practice)], stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._last = self._started = self.clock()
        self._finished_at_start = self.pending
        self.pending = 0

    def _wait(self, timeout: float) -> None:
        assert self._child is not None
        try:
            code = self._child.wait(timeout)
        except subprocess.TimeoutExpired:
            self.close()
            self.say(f"report   failed: not written within {timeout:g} s (stopped); see {self.log}")
            return
        self._ended(code)

    def _ended(self, code: int) -> None:
        self._child = None
        seconds = self.clock() - self._started
        if code == 0:
            self.say(f"report   refreshed {self.practice / 'reports'} ({self._finished_at_start} submissions "
                     f"finished since the last, {seconds:.1f} s)")
        else:
            self.say(f"report   failed (exit status {code}); see {self.log}; tried again after the next submission")
            # Due again at the next finished submission (or, with some pending, the next period), never at once:
            # a report that keeps failing must not run in a loop.
            self.pending = max(self.pending, self.every - 1)
