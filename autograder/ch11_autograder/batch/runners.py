"""Runners: where a batch's submissions are graded. The orchestrator merges what they yield.

A runner grades the submissions handed to it (:meth:`Runner.submit`, one at a time, while
:meth:`Runner.free` says a slot is free) and hands back one :class:`~.isolated.Outcome` per
submission as each finishes (:meth:`Runner.wait`); whoever drives it (:func:`stream` for
:func:`.orchestrate.grade_class`, :class:`.session.GradingSession` for the grade-on-submit
service) merges each outcome into the course, writes the ledger and reports progress, the
same for every runner. A runner is started once (:meth:`Runner.start`) and grades any number
of submissions until :meth:`Runner.close`; :meth:`Runner.cancel` kills what is still running.

* :class:`LocalPool` (the default): ``workers`` threads on this machine, each
  driving one isolated ``nbgrader autograde`` (:func:`.isolated.grade_isolated`)
  with a slot of its own; each slot forks its nbgrader runs from one pre-imported
  process (:mod:`.nbgrader_fork`) unless the plan says not to. The fork servers live
  as long as the pool: the slots the expected submissions use are warmed when it starts
  (slot 0's may be handed over, started before the command's own imports), any other on its
  first submission; all are closed with the pool.
* :class:`.cluster.DaskRunner`: the same isolated run on the workers of a Dask
  cluster (imported only when asked for: Dask is an optional extra).
"""

from __future__ import annotations

import os
import queue
from collections.abc import Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from ..course_layout import CONFIG
from .intake_records import StudentSubmission
from .isolated import Outcome, RunningGraders, grade_isolated, kill_slot
from .merge import PriorSubmission
from .nbgrader_fork import SlotServers
from .plan import BatchPlan

__all__ = ["LocalPool", "Runner", "stream"]


class Runner(Protocol):
    """Grades submissions handed to it one at a time and hands back their outcomes as they finish.

    Every outcome's ``work`` is a directory under the plan's ``work_root`` holding
    ``autograded/<student>/<assignment>/`` and ``submitted/<student>/<assignment>/``;
    the student's nbgrader log is at ``plan.log_for(student)``. One student has at most one
    submission in flight (the log is named for the student).
    """

    def start(self, expected: int | None = None) -> None:
        """Get ready to grade (a cluster is connected and its workers checked here).

        ``expected``: how many submissions are about to be handed over (``None``: not known, as in a
        session waiting for them); a runner may get ready for only that many at first.

        Raises:
            BatchError: the runner cannot grade (nothing was graded).
        """
        ...

    def free(self) -> int:
        """How many more submissions :meth:`submit` takes now (at least 1 when nothing is in flight)."""
        ...

    def submit(self, sub: StudentSubmission, prior: PriorSubmission | None) -> None:
        """Start grading ``sub`` (``prior``: the student's submission row in the course, see
        :func:`.merge.read_prior`)."""
        ...

    def in_flight(self) -> int:
        """Submissions submitted whose outcome :meth:`wait` has not handed back yet."""
        ...

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        """The outcomes finished since the last call (sorted by student), waiting up to ``timeout``
        seconds (``None``: until one finishes) when there are none yet; ``[]`` after the timeout or
        with nothing in flight."""
        ...

    def close(self) -> None:
        """Release what :meth:`start` set up, after every submission in flight has finished."""
        ...

    def cancel(self) -> None:
        """Kill every grading in flight and release what :meth:`start` set up (their outcomes are lost)."""
        ...


def stream(runner: Runner, jobs: list[StudentSubmission],
           priors: dict[str, PriorSubmission]) -> Generator[Outcome, None, None]:
    """Grade ``jobs`` on ``runner`` (started and closed here), yielding each outcome as it finishes.

    Closing the generator early (an exception or Ctrl-C in the caller) cancels what is still running."""
    waiting = list(jobs)
    finished: list[Outcome] = []
    try:
        runner.start(len(jobs))
        while True:
            while waiting and runner.free() > 0:
                sub = waiting.pop(0)
                runner.submit(sub, priors.get(sub.student))
            yield from finished  # merged by the caller while the slots they freed grade the next ones
            if not waiting and not runner.in_flight():
                break
            finished = runner.wait(None if not waiting else REFILL_SECONDS)
    except BaseException:  # GeneratorExit too: the orchestrator stopped early
        runner.cancel()
        raise
    runner.close()


#: Seconds between looks at the runner's free slots while submissions wait (a cluster's workers may join).
REFILL_SECONDS = 5


class LocalPool:
    """The plan's ``workers`` threads on this machine, slot ``k`` of ``0 .. workers - 1`` each (``CH11_SLOT``)."""

    def __init__(self, plan: BatchPlan) -> None:
        self.plan = plan
        self.running = RunningGraders()
        self._slots: queue.Queue[int] = queue.Queue()
        for slot in range(plan.options.workers):
            self._slots.put(slot)
        #: The slots' fork servers, kept for the pool's life (``servers.started`` counts their starts).
        self.servers = SlotServers(plan.course / CONFIG, enabled=plan.options.fork_nbgrader)
        # The threads live as long as the pool: a fork server dies with the thread that started it.
        self._pool = ThreadPoolExecutor(max_workers=plan.options.workers, thread_name_prefix="ch11-grade")
        self._pending: set[Future[Outcome]] = set()

    def start(self, expected: int | None = None) -> None:
        # Each slot's fork server starts now, on the pool's threads (it dies with the thread that started it),
        # ahead of the first submission: a session that waits for submissions has it warm for the first one.
        # Only the slots the expected submissions will use: a server nobody uses would only take CPU from the
        # start of the ones that are (a single submission takes slot 0; a later slot starts on first use).
        # A submission may then start on a free thread while its slot is still warming: SlotServers.for_slot
        # makes it wait for that start instead of starting a second server.
        warm = self.plan.options.workers if expected is None else min(self.plan.options.workers, expected)
        for slot in range(warm):
            self._pool.submit(self.servers.for_slot, slot)

    def free(self) -> int:
        return max(0, self.plan.options.workers - len(self._pending))

    def in_flight(self) -> int:
        return len(self._pending)

    def submit(self, sub: StudentSubmission, prior: PriorSubmission | None) -> None:
        self._pending.add(self._pool.submit(self._task, sub, prior))

    def _task(self, sub: StudentSubmission, prior: PriorSubmission | None) -> Outcome:
        plan = self.plan
        slot = self._slots.get()
        # The suites go ahead of execution only with a core to spare beyond one per busy slot (this one included):
        # a submission graded alone finishes sooner, and a full pool does not pay the second zygote's start.
        spare = plan.options.workers - self._slots.qsize() < len(os.sched_getaffinity(0))
        try:
            return grade_isolated(sub, course=plan.course, template=plan.template, work_root=plan.work_root,
                                  log_path=plan.log_for(sub.student), slot=slot, sandbox=plan.sandbox,
                                  timeout=plan.options.timeout, assignment=plan.options.assignment,
                                  running=self.running, prior=prior, forks=self.servers.for_slot(slot),
                                  spare_core=spare)
        finally:
            self._slots.put(slot)

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        if not self._pending:
            return []
        finished, self._pending = wait(self._pending, timeout=timeout, return_when=FIRST_COMPLETED)
        return sorted((future.result() for future in finished), key=lambda outcome: outcome.sub.student)

    def close(self) -> None:
        # A slot still warming has no submission (those in flight hold a ready server): its imports are not waited for.
        self.servers.close_starting()
        self._pool.shutdown(wait=True)
        self.servers.close()

    def cancel(self) -> None:
        self.running.kill_all()
        # The servers end before the threads are waited for, those still starting too: a thread warming a slot would
        # otherwise hold the cancel until that server's imports are done (seconds). For good: a thread that was about
        # to start a submission gets no server (its grading is cancelled anyway).
        self.servers.close(final=True)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for slot in range(self.plan.options.workers):
            kill_slot(self.plan.sandbox, slot)
