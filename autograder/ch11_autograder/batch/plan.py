"""One batch's settings, checked and resolved, and where its files are (:class:`BatchPlan`).

Shared by the orchestrator (:mod:`.orchestrate`) and the runners that grade its
submissions (:mod:`.runners`, :mod:`.cluster`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .course import REPORTS_DIR, STATE_DIR
from .intake import IntakeLimits
from .records import ProgressEvent

__all__ = ["BatchPlan"]


@dataclass(frozen=True)
class BatchPlan:
    """One batch's settings: :func:`grade_class`'s arguments, checked and resolved.

    Attributes:
        source: the folder or zip to grade (resolved).
        course: the instructor's course directory (resolved).
        workers: submissions graded at the same time (slots ``0 .. workers - 1``).
        sandbox: backend name for student code (lower case, ``$CH11_SANDBOX`` already applied).
        timeout: wall-time limit per submission, seconds.
        limits: intake caps (``None``: intake's defaults).
        regrade: grade everything again, ignoring the ledger.
        assignment: nbgrader assignment name.
        keep_work: keep the isolated course directories.
        feedback: run ``nbgrader generate_feedback`` and ``export`` at the end.
        progress: called in the orchestrating thread after each finished submission and at each step.
        started: ``time.monotonic()`` when the batch started (elapsed times and ETAs count from it).
        cluster: where the submissions are graded: ``None`` for this machine's worker pool
            (:class:`.runners.LocalPool`), else a Dask scheduler address or ``"local"``
            (:class:`.cluster.DaskRunner`).
        fork_nbgrader: the local pool starts each submission's nbgrader as a fork of a
            pre-imported one per slot (:mod:`.nbgrader_fork`); False starts a fresh process each time.
    """

    source: Path
    course: Path
    workers: int
    sandbox: str
    timeout: float
    limits: IntakeLimits | None
    regrade: bool
    assignment: str
    keep_work: bool
    feedback: bool
    progress: Callable[[ProgressEvent], None] | None
    started: float
    cluster: str | None = None
    fork_nbgrader: bool = True

    @property
    def state(self) -> Path:
        """The batch's own files in the course (mode 0700): ledger, logs, staging, work dirs, lock."""
        return self.course / STATE_DIR

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def work_root(self) -> Path:
        """Where the isolated courses are made (emptied at the start of each run)."""
        return self.state / "work"

    @property
    def template(self) -> Path:
        """The gradebook copy every isolated course starts from (:func:`.course.make_template`)."""
        return self.state / "template.db"

    @property
    def ledger(self) -> Path:
        return self.state / "ledger.jsonl"

    @property
    def reports(self) -> Path:
        return self.course / REPORTS_DIR

    @property
    def source_inside_course(self) -> bool:
        """The source is the course or lies in it: nbgrader's ``submitted/`` is already where it belongs."""
        return self.source == self.course or self.course in self.source.parents

    def log_for(self, student: str) -> Path:
        """The student's nbgrader log of this run."""
        return self.logs / f"{student}.log"
