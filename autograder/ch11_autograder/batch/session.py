"""A long-lived grading session: the batch's set-up done once, then submissions graded as they come.

:func:`.orchestrate.grade_class` sets a batch up (the guards, the course and its assignment,
the template gradebook, a runner with its fork servers or Dask client), grades a folder
of submissions and tears all of that down. The grade-on-submit service (``ch11-grade
serve``) grades one submission at a time, for hours: :class:`GradingSession` keeps that
set-up for its life and takes each submission when a slot is free.

* **Opening** (:class:`GradingSession` itself) is :func:`.orchestrate.grade_class`'s own set-up,
  once: the same checks (:func:`.orchestrate.open_plan`: workers, Dask, the sandbox, the course
  created when absent, private paths), the course's batch lock (held until :meth:`close`), the
  assignment generated when the gradebook lacks it and the released notebooks read
  (:func:`.orchestrate.prepare`), the template gradebook, and the runner started
  (:func:`.orchestrate.runner`): the local pool keeps one nbgrader fork server per slot,
  started with its slot's first submission; a Dask runner keeps its client (and the
  ``LocalCluster`` or batch-system cluster it started).
* **Submitting** (:meth:`GradingSession.submit`): a folder in nbgrader layout, read by the
  batch's intake (:func:`.intake.read_source`) into a staging folder of its own; each
  submission is triaged as the batch does (:func:`.orchestrate.triage`: refused at intake,
  tampered cells, or already merged from the same inputs) against the student's row read
  now (:func:`.merge.read_prior` for that student, the ledger as it stands), and the rest
  handed to the runner.
* **Finishing** (:meth:`GradingSession.wait`): each outcome is merged into the course and the
  ledger by the batch's own :func:`.orchestrate.finish`, in the calling thread, one at a time.
* **Closing** (:meth:`GradingSession.close`): gradings still in flight are killed, the fork servers
  end, the Dask client closes, the lock is released.

No report is written (no ``nbgrader export``, CSV or summary: the caller publishes each record);
otherwise a submission graded here ends in the course and the ledger exactly as in a batch.
Not thread-safe: one thread drives a session.

What is set up once stays as it was when the session opened: the template gradebook (and with
it the assignment's due date that the isolated gradings compute lateness from), the released
notebooks, the course config the fork servers loaded. Change those in the course, then open a
new session (restart ``ch11-grade serve``).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from .course import make_template
from .guards import BatchLock
from .intake import read_source
from .ledger import Ledger
from .merge import read_prior
from .nbgrader_fork import NbgraderForkServer
from .orchestrate import due_date, earlier_grades, finish, open_plan, prepare, runner, triage
from .plan import DEFAULT_OPTIONS, BatchOptions, BatchPlan
from .records import EarlierGrades, SubmissionRecord
from .runners import LocalPool, Runner

__all__ = ["GradingSession"]


@dataclass(frozen=True)
class _InFlight:
    """A submission handed to the runner: what :func:`.orchestrate.finish` needs once it is graded."""

    plan: BatchPlan  # the session's plan with the submission's own folder as its source
    earlier: EarlierGrades | None
    due: str | None
    staging: Path


class GradingSession:
    """The batch grader kept open on ``course`` (see the module). A context manager: leaving it closes it.

    ``options``: how to grade, as :func:`.orchestrate.grade_class` takes them (``workers`` slots; ``cluster``:
    ``None``, ``"local"``, a batch system or a scheduler address); a session never regrades what the ledger
    holds or writes the course-wide feedback and export, so its plan has ``regrade`` and ``feedback`` off.
    ``say`` reports a runner's steps and warnings.

    Raises:
        BatchError: the course, the sandbox, the lock or the cluster is unusable (as
            :func:`.orchestrate.grade_class`); nothing is left open.
    """

    def __init__(
        self,
        course: Path,
        options: BatchOptions = DEFAULT_OPTIONS,
        *,
        say: Callable[[str], None] | None = None,
    ) -> None:
        options = replace(options, regrade=False, feedback=False)
        self.plan = open_plan(None, course, options, None)
        self._lock = BatchLock(self.plan.state / "lock")
        self._in_flight: dict[str, _InFlight] = {}
        self._seq = itertools.count(1)
        self._staging = self.plan.state / "staging"
        self._closed = False
        try:
            self.released = prepare(self.plan)
            shutil.rmtree(self._staging, ignore_errors=True)  # left by a killed batch or session
            self._staging.mkdir()
            make_template(self.plan.course, self.plan.template, options.assignment)
            self.ledger = Ledger(self.plan.ledger)
            self.runner: Runner = runner(self.plan, say or (lambda _line: None))
            self.runner.start()
        except BaseException:
            if hasattr(self, "runner"):
                self.runner.cancel()
            self._lock.release()
            self._closed = True
            raise

    # ------------------------------------------------------------------ state

    def free(self) -> int:
        """How many more submissions :meth:`submit` can start grading now."""
        return self.runner.free()

    def in_flight(self) -> set[str]:
        """The students whose submission is being graded."""
        return set(self._in_flight)

    @property
    def fork_servers_started(self) -> int:
        """How many nbgrader fork servers the local pool has started (0 on a Dask cluster)."""
        return self.runner.servers.started if isinstance(self.runner, LocalPool) else 0

    def course_server(self) -> NbgraderForkServer | None:
        """A fork server of this session's course for a course-wide nbgrader step (a student's feedback pages):
        slot 0's, which the pool keeps for the session's life (started now if it is not); ``None`` on a Dask cluster
        or without fork servers, where the step starts nbgrader afresh. Its forks run beside the slot's gradings."""
        return self.runner.servers.for_slot(0) if isinstance(self.runner, LocalPool) else None

    # ------------------------------------------------------------------ grading

    def submit(self, folder: Path) -> list[SubmissionRecord]:
        """Start grading the submissions in ``folder`` (nbgrader layout ``<student>/<assignment>/``, or a zip;
        read at once: the folder may go when this returns).

        Returns the records of those not graded (refused, or merged before from the same inputs: as the batch
        records them, the refusals in the ledger); the others are handed back by :meth:`wait`. Submissions beyond
        :meth:`free` wait for a slot.

        Raises:
            ValueError: a student of ``folder`` has a submission in flight (finish it first).
            IntakeError: the folder is refused as a whole.
        """
        plan = replace(self.plan, source=Path(folder).resolve())
        staging = self._staging / str(next(self._seq))
        intake = read_source(plan.source, staging, self.released.notebooks, assignment=plan.options.assignment,
                             limits=plan.options.limits)
        busy = sorted(s.student for s in intake.submissions if s.student in self._in_flight)
        if busy:
            shutil.rmtree(staging, ignore_errors=True)
            raise ValueError(f"already being graded: {', '.join(busy)}")
        latest, last_graded = self.ledger.latest(), self.ledger.latest_graded()
        records: list[SubmissionRecord] = []
        for sub in intake.submissions:
            # Read now, for this student alone: an earlier submission of theirs merged since changes their row.
            duedate, priors = read_prior(plan.course, plan.options.assignment, sub.student)
            prior = priors.get(sub.student)
            due = due_date(duedate, prior)
            earlier = earlier_grades(prior, last_graded.get(sub.student))
            record = triage(sub, plan, self.released, self.ledger, latest.get(sub.student), prior, due, earlier)
            if record is not None:
                records.append(record)
                continue
            self.runner.submit(sub, prior)
            self._in_flight[sub.student] = _InFlight(plan, earlier, due, staging)
        if not any(job.staging == staging for job in self._in_flight.values()):
            shutil.rmtree(staging, ignore_errors=True)
        return records

    def wait(self, timeout: float | None = None) -> list[SubmissionRecord]:
        """The records of the submissions finished since the last call, each merged into the course and the
        ledger (by :func:`.orchestrate.finish`, in this thread); waits up to ``timeout`` seconds (``None``: until
        one finishes) when none has yet. ``[]`` after the timeout or with nothing in flight."""
        records = []
        for outcome in self.runner.wait(timeout):
            job = self._in_flight.pop(outcome.sub.student)
            records.append(finish(outcome, job.plan, self.released.max_score, self.ledger, job.earlier, job.due))
            if not self.plan.options.keep_work:
                shutil.rmtree(outcome.work, ignore_errors=True)
            if not any(other.staging == job.staging for other in self._in_flight.values()):
                shutil.rmtree(job.staging, ignore_errors=True)
        return records

    def compact_ledger(self) -> tuple[int, int]:
        """Compact the course's ledger (:meth:`.ledger.Ledger.compact`) under the lock this session holds; returns
        the entries before and after. Call it from the thread that drives the session, between :meth:`submit` and
        :meth:`wait` calls: only those append to the ledger, so no entry can arrive while it is rewritten."""
        if self._closed:
            raise ValueError("the session is closed: its lock no longer guards the ledger")
        return self.ledger.compact()

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Kill the gradings in flight (their submissions are not merged), end the fork servers or the Dask client,
        release the course. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._in_flight:
                self.runner.cancel()
            else:
                self.runner.close()
            self._in_flight.clear()
            shutil.rmtree(self._staging, ignore_errors=True)
        finally:
            self._lock.release()

    def __enter__(self) -> GradingSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
