"""Runners: where a batch's submissions are graded. The orchestrator merges what they yield.

A runner takes the submissions to grade and yields one :class:`~.isolated.Outcome`
per submission as each finishes; the orchestrator (:mod:`.orchestrate`) merges
each outcome into the course, writes the ledger and reports progress, the same
for every runner. Closing the generator early (an exception or Ctrl-C in the
orchestrator) cancels what is still running.

* :class:`LocalPool` (the default): ``workers`` threads on this machine, each
  driving one isolated ``nbgrader autograde`` (:func:`.isolated.grade_isolated`)
  with a slot of its own; each slot forks its nbgrader runs from one pre-imported
  process (:mod:`.nbgrader_fork`) unless the plan says not to.
* :class:`.cluster.DaskRunner`: the same isolated run on the workers of a Dask
  cluster (imported only when asked for: Dask is an optional extra).
"""

from __future__ import annotations

import queue
from collections.abc import Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from .intake import StudentSubmission
from .isolated import Outcome, RunningGraders, grade_isolated, kill_slot
from .merge import PriorSubmission
from .nbgrader_fork import SlotServers
from .plan import BatchPlan

__all__ = ["LocalPool", "Runner"]


class Runner(Protocol):
    """Grades submissions and yields their outcomes as they finish (any order; each submission once)."""

    def outcomes(
        self, jobs: list[StudentSubmission], priors: dict[str, PriorSubmission]
    ) -> Generator[Outcome, None, None]:
        """Grade ``jobs`` (``priors``: the students' submission rows in the course, see :func:`.merge.read_prior`).

        Every outcome's ``work`` is a directory under the plan's ``work_root`` holding
        ``autograded/<student>/<assignment>/`` and ``submitted/<student>/<assignment>/``;
        the student's nbgrader log is at ``plan.log_for(student)``.
        """
        ...


class LocalPool:
    """``plan.workers`` threads on this machine, slot ``k`` of ``0 .. workers - 1`` each (``CH11_SLOT``)."""

    def __init__(self, plan: BatchPlan) -> None:
        self.plan = plan

    def outcomes(
        self, jobs: list[StudentSubmission], priors: dict[str, PriorSubmission]
    ) -> Generator[Outcome, None, None]:
        plan = self.plan
        running = RunningGraders()
        slots: queue.Queue[int] = queue.Queue()
        for slot in range(plan.workers):
            slots.put(slot)

        servers = SlotServers(plan.course / "nbgrader_config.py", enabled=plan.fork_nbgrader)

        def task(sub: StudentSubmission) -> Outcome:
            slot = slots.get()
            try:
                return grade_isolated(sub, course=plan.course, template=plan.template, work_root=plan.work_root,
                                      log_path=plan.log_for(sub.student), slot=slot, sandbox=plan.sandbox,
                                      timeout=plan.timeout, assignment=plan.assignment, running=running,
                                      prior=priors.get(sub.student), forks=servers.for_slot(slot))
            finally:
                slots.put(slot)

        pool = ThreadPoolExecutor(max_workers=plan.workers, thread_name_prefix="ch11-grade")
        pending: set[Future[Outcome]] = set()
        try:
            pending = {pool.submit(task, sub) for sub in jobs}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: f.result().sub.student):
                    yield future.result()
        except BaseException:  # GeneratorExit too: the orchestrator stopped early
            running.kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
            for slot in range(plan.workers):
                kill_slot(plan.sandbox, slot)
            servers.close()
            raise
        pool.shutdown(wait=True)
        servers.close()
