"""A batch's options (:class:`BatchOptions`), and one batch's plan: those options checked and
resolved, and where its files are (:class:`BatchPlan`).

:class:`BatchOptions` is the one record of the settings a batch takes: the command line
(``ch11-grade batch``), the Gradescope autograder and the grade-on-submit service each build one
and pass it to :func:`.orchestrate.grade_class` or :class:`.session.GradingSession`, which check it
into a :class:`BatchPlan`. The plan is shared by the orchestrator (:mod:`.orchestrate`) and the
runners that grade its submissions (:mod:`.runners`, :mod:`.cluster`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..paths import ASSIGNMENT
from .course import REPORTS_DIR, STATE_DIR
from .defaults import DEFAULT_TIMEOUT, DEFAULT_WORKERS
from .intake import IntakeLimits
from .records import ProgressEvent

__all__ = ["DEFAULT_OPTIONS", "DEFAULT_TIMEOUT", "BatchOptions", "BatchPlan"]


@dataclass(frozen=True)
class BatchOptions:
    """How a batch grades (the defaults are ``ch11-grade batch``'s without options).

    Attributes:
        workers: submissions graded at the same time (slots ``0 .. workers - 1``, each an ``nbgrader``
            process with its own ``CH11_SLOT``); at least 1.
        sandbox: backend name for student code (``bwrap``, ``container-user``, ``none``); ``None`` reads
            ``$CH11_SANDBOX`` (default ``bwrap``). Checked before anything is graded; a plan holds it
            resolved (lower case, never ``None``).
        timeout: wall-time limit per submission, seconds.
        limits: intake caps (``None``: intake's defaults).
        regrade: grade everything again, ignoring the ledger.
        assignment: nbgrader assignment name.
        keep_work: keep the isolated course directories (for debugging).
        feedback: run ``nbgrader generate_feedback`` and ``export`` at the end (the Gradescope
            autograder, which reports through results.json, does not; a grading session never does).
        cluster: ``None`` grades on this machine (:class:`.runners.LocalPool`, ``workers`` threads); a
            Dask scheduler's address (``tcp://HOST:8786``, ``tls://...``) or ``"local"`` (a
            ``LocalCluster`` of ``workers`` processes on 127.0.0.1) grades on that cluster's workers
            instead (:class:`.cluster.DaskRunner`; needs the ``dask`` extra). Everything else is the same.
        fork_nbgrader: each slot forks its ``nbgrader`` runs from one pre-imported process
            (:mod:`.nbgrader_fork`); ``False`` starts each run afresh.
    """

    workers: int = DEFAULT_WORKERS
    sandbox: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    limits: IntakeLimits | None = None
    regrade: bool = False
    assignment: str = ASSIGNMENT
    keep_work: bool = False
    feedback: bool = True
    cluster: str | None = None
    fork_nbgrader: bool = True


#: The options of ``ch11-grade batch`` without flags (frozen: a default argument that cannot change).
DEFAULT_OPTIONS = BatchOptions()


@dataclass(frozen=True)
class BatchPlan:
    """One batch's plan: its options checked and resolved (:func:`.orchestrate.open_plan`).

    Attributes:
        source: the folder or zip to grade (resolved).
        course: the instructor's course directory (resolved).
        options: the batch's options, the sandbox resolved (:attr:`sandbox`).
        progress: called in the orchestrating thread after each finished submission and at each step.
        started: ``time.monotonic()`` when the batch started (elapsed times and ETAs count from it).

    Raises:
        ValueError: ``options.sandbox`` is not resolved (``None``).
    """

    source: Path
    course: Path
    options: BatchOptions
    progress: Callable[[ProgressEvent], None] | None
    started: float

    def __post_init__(self) -> None:
        if self.options.sandbox is None:
            raise ValueError("a batch plan needs its sandbox resolved (ch11_autograder.untrusted.choose)")

    @property
    def sandbox(self) -> str:
        """The backend name for student code, resolved (lower case, ``$CH11_SANDBOX`` already applied)."""
        assert self.options.sandbox is not None  # checked in __post_init__
        return self.options.sandbox

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
