"""The batch's records: what happened to each submission, the batch's outcome, progress events.

Plain data (and how a score reads in them), shared by the orchestrator
(:mod:`.orchestrate`), the reports (:mod:`.report`) and the Gradescope
autograder; this module imports nothing else of the batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BatchError",
    "BatchReport",
    "EarlierGrades",
    "ExecutionUse",
    "ProgressEvent",
    "SubmissionRecord",
    "format_score",
]


def format_score(value: float | None) -> str:
    """``31.5``, ``40``, ``35.96``; empty for ``None``. Rounded to 6 decimals first (float sums)."""
    return "" if value is None else format(round(value, 6), "g")


class BatchError(RuntimeError):
    """The batch cannot start or finish (course unusable, another batch running, sandbox missing)."""


@dataclass(frozen=True)
class EarlierGrades:
    """Grades of a student that the instructor's gradebook still holds after this run's error.

    A submission that cannot be graded is never merged, so whatever the gradebook
    held for the student before stays there (nothing is lost); the record says so.

    Attributes:
        sha256: input digest of the submission those grades belong to (from the
            ledger), ``""`` when the ledger has no graded entry for the student
            (grades entered outside this batch, e.g. by ``nbgrader autograde``).
        graded_at: when the batch merged them (ledger time, ISO 8601 UTC), or ``None``.
        score, max_score: autograded points then, from the ledger (``None`` when unknown).
    """

    sha256: str
    graded_at: str | None
    score: float | None
    max_score: float | None

    def describe(self, sha256_now: str) -> str:
        """``gradebook keeps the grades of the earlier submission 1a2b3c4d5e6f graded 2026-11-20 12:00:00
        UTC, 4/40 autograded`` (``this same submission`` when ``sha256_now`` is the same digest)."""
        if not self.sha256:
            return "gradebook keeps grades of an earlier submission that this batch did not merge (its ledger has " \
                   "no graded entry; e.g. an earlier nbgrader autograde)"
        what = "this same submission" if self.sha256 == sha256_now else f"the earlier submission {self.sha256[:12]}"
        text = f"gradebook keeps the grades of {what} graded {_utc_text(self.graded_at)}"
        if self.score is not None and self.max_score is not None:
            text += f", {format_score(self.score)}/{format_score(self.max_score)} autograded"
        return text


def _utc_text(iso: str | None) -> str:
    """``2026-11-20T12:00:00+00:00`` -> ``2026-11-20 12:00:00 UTC``; ``at an unknown time`` for ``None``."""
    if not iso:
        return "at an unknown time"
    return iso.replace("T", " ").removesuffix("+00:00") + " UTC"


@dataclass(frozen=True)
class ExecutionUse:
    """How much of its notebook-execution budget a submission used (``SandboxedExecute.submission_wall_seconds``).

    Attributes:
        budget_seconds: wall seconds all its notebooks together may run.
        used_seconds: wall seconds they ran (the sandboxed runs, not the verdict suites).
        not_run: notebooks left unexecuted because the budget was spent.
        cut: notebooks whose run the budget stopped.
    """

    budget_seconds: float
    used_seconds: float
    not_run: tuple[str, ...] = ()
    cut: tuple[str, ...] = ()

    @property
    def exhausted(self) -> bool:
        return bool(self.not_run or self.cut)

    def describe(self) -> str:
        """``notebook execution stopped at the submission's budget of 600 s: ex3 cut short; ex4, ex5 not run``."""
        parts = []
        if self.cut:
            parts.append(f"{', '.join(self.cut)} cut short")
        if self.not_run:
            parts.append(f"{', '.join(self.not_run)} not run")
        return f"notebook execution stopped at the submission's budget of {self.budget_seconds:g} s: " + "; ".join(
            parts
        )


@dataclass
class SubmissionRecord:
    """What happened to one student's submission in a batch.

    Attributes:
        student: nbgrader student id (sanitized).
        status: ``"graded"`` (merged now), ``"error"`` (not merged; ``error``
            says why) or ``"skipped_resume"`` (merged by an earlier run of the
            same batch from identical inputs).
        error: the cause, naming the file when there is one, or ``None``.
        score: autograded points (``None`` for errors).
        max_score: autograded points possible.
        per_notebook: notebook name -> autograded points.
        sha256: digest of the inputs (notebooks and timestamp), ``""`` when intake failed.
        seconds: wall time spent grading it in this run (0 when skipped or refused at intake).
        notes: non-fatal remarks (ignored files, missing notebooks, sanitized id).
        origin: where the submission came from in the source.
        log: path of nbgrader's log for it, when it ran.
        earlier: for an ``"error"`` whose student the gradebook already held: the grades it
            still holds (``error`` then ends with ``(gradebook keeps the grades of ...)``).
        lms_late: the LMS download marked the submission late (Canvas ``LATE``). The download
            carries no submission time, so nbgrader computes no lateness from it: no late
            penalty follows from this flag (the CSV and the summary say so).
        execution: its notebook-execution budget and what it used, when nbgrader ran and
            reported it (``None`` otherwise); an exhausted budget also adds a note.
    """

    student: str
    status: str
    error: str | None
    score: float | None
    max_score: float
    per_notebook: dict[str, float] = field(default_factory=dict)
    sha256: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    origin: str = ""
    log: str | None = None
    earlier: EarlierGrades | None = None
    lms_late: bool = False
    execution: ExecutionUse | None = None


@dataclass
class BatchReport:
    """The outcome of :func:`.orchestrate.grade_class`.

    Attributes:
        records: one per student found in the source, sorted by student id.
        csv_path: per-student grade CSV (deterministic for identical input).
        summary_path: human-readable summary (counts, scores, slowest, errors).
        feedback_dir: ``<course>/feedback`` (``<student>/ch11/*.html``).
        elapsed_seconds: wall time of the whole batch.
        problems: batch-level steps that failed (feedback, export), empty when none.
    """

    records: list[SubmissionRecord]
    csv_path: Path
    summary_path: Path
    feedback_dir: Path
    elapsed_seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProgressEvent:
    """Reported after each submission finishes (and once with ``record=None`` per batch step).

    Attributes:
        done, total: submissions finished so far, and in the batch.
        record: the submission just finished, or ``None`` for a step message.
        message: the step (``"intake: 200 submissions, 3 refused"``) or ``""``.
        elapsed_seconds: since the batch started.
        eta_seconds: estimated time to the last submission, from this run's
            throughput; ``None`` until one submission has been graded.
    """

    done: int
    total: int
    record: SubmissionRecord | None
    message: str
    elapsed_seconds: float
    eta_seconds: float | None
