"""Grading a whole class: isolated per-submission autograding, trusted merging, resumable.

:func:`grade_class` is the pipeline (docs/batch.md has the TA's view):

1. **Course** (:mod:`.course`). ``course`` is the instructor's nbgrader course
   directory; when it has no ``nbgrader_config.py`` it is created from the
   repository's course config and ``source/`` (:func:`.course.init_course`).
   ``nbgrader generate_assignment`` runs once, when the gradebook does not know
   the assignment yet. The guards (:mod:`.guards`) run first: one batch per
   course, a usable sandbox, paths private from the slot users.
2. **Intake** (:mod:`.intake`): the source folder or zip becomes one staged
   submission per student; unusable ones become error records right away.
   Before grading, each submission's nbgrader cell metadata is compared with the
   released notebooks (:mod:`.cellcheck`): a renamed, copied or re-flagged grade
   cell, which nbgrader fails on with a message naming no cell, becomes an error
   record that names the notebook, the cell and what to do.
3. **Resume.** The ledger (:mod:`.ledger`) names the submissions already merged
   with the same input digest; they are skipped (``skipped_resume``).
4. **Isolated grading** (:mod:`.isolated`), ``workers`` at a time: per submission
   a fresh course directory holding the course config, ``source/``, a copy of the
   gradebook with only the assignment (no students but this one's own submission
   row, extension and hand scores when the course has them, so that nbgrader's
   late penalty is the real course's) and the one submission; the real
   ``nbgrader autograde ch11 --student <id>`` runs there with ``CH11_SLOT``
   set to the worker's slot (the container-user backend gives each slot its
   own uid), under a wall-time limit. Student code never sees the instructor's
   gradebook or any other submission.
5. **Merge**, by this process alone, one submission at a time, as results
   arrive (:mod:`.merge`): scores set in the instructor's gradebook, autograded
   and submitted notebooks renamed into place, then a ledger entry.
6. **Reports**: ``nbgrader generate_feedback`` and ``nbgrader export`` on the
   instructor's course, then the CSV, the summary and ``records.json``
   (:mod:`.report`).

A broken or hostile submission costs only its own record: every failure
(intake, a timeout, an nbgrader error) is recorded with its cause and the batch
goes on. A batch killed at any moment and run again ends with the same
gradebook as an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..paths import ASSIGNMENT
from ..untrusted.choose import resolve_backend
from . import report
from .cellcheck import check_submission, load_released
from .course import course_step, ensure_assignment, init_course, make_template
from .gradebook import open_gradebook
from .guards import BatchLock, check_private, check_sandbox
from .intake import IntakeError, IntakeLimits, StudentSubmission, read_source
from .isolated import Outcome, kill_slot
from .ledger import Ledger, LedgerEntry
from .merge import autograded_cells, install_files, merge_result, read_prior
from .plan import BatchPlan
from .records import BatchError, BatchReport, EarlierGrades, ProgressEvent, SubmissionRecord
from .runners import LocalPool, Runner

__all__ = ["DEFAULT_TIMEOUT", "BatchPlan", "grade_class"]

#: Wall-time limit per submission, seconds.
DEFAULT_TIMEOUT = 1800.0


def grade_class(
    source: Path,
    course: Path,
    *,
    workers: int = 2,
    sandbox: str | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    limits: IntakeLimits | None = None,
    regrade: bool = False,
    assignment: str = ASSIGNMENT,
    keep_work: bool = False,
    feedback: bool = True,
    cluster: str | None = None,
    fork_nbgrader: bool = True,
) -> BatchReport:
    """Grade every submission in ``source`` into the nbgrader course ``course``.

    Args:
        source: a folder in nbgrader layout or an LMS zip (see :mod:`.intake`).
        course: the instructor's course directory (created when absent, see
            :func:`.course.init_course`). The batch keeps its files in ``<course>/.ch11-batch/``
            and its reports in ``<course>/reports/``.
        workers: submissions graded at the same time (each an ``nbgrader``
            process with its own ``CH11_SLOT``).
        sandbox: backend name for student code (``bwrap``, ``container-user``,
            ``none``); ``None`` reads ``$CH11_SANDBOX`` (default ``bwrap``). It is
            checked before anything is graded.
        progress: called in this thread after each finished submission and at
            each batch step.
        timeout: wall-time limit per submission, seconds.
        limits: intake caps.
        regrade: grade everything again, ignoring the ledger.
        keep_work: keep the isolated course directories (for debugging).
        feedback: run ``nbgrader generate_feedback`` and ``export`` at the end
            (the Gradescope autograder, which reports through results.json, does not).
        cluster: ``None`` grades on this machine (``workers`` threads); a Dask scheduler's
            address (``tcp://HOST:8786``, ``tls://...``) or ``"local"`` (a ``LocalCluster`` of
            ``workers`` processes on 127.0.0.1) grades on that cluster's workers instead
            (:mod:`.cluster`; needs the ``dask`` extra). Everything else is the same.

    Raises:
        BatchError: the course, the sandbox or the lock is unusable, or a cluster is asked for without
            Dask installed, or its scheduler cannot be reached, or one of its workers cannot grade
            (:mod:`.cluster`); nothing was graded.
        IntakeError: the source is refused as a whole.
    """
    started = time.monotonic()
    if workers < 1:
        raise BatchError("workers must be at least 1")
    if cluster is not None:
        from .cluster import require_dask

        require_dask()
    try:
        sandbox = resolve_backend(sandbox)
    except ValueError as exc:
        raise BatchError(str(exc)) from exc
    source = Path(source).resolve()
    course = Path(course).resolve()
    if not source.exists():
        raise IntakeError(f"{source}: no such folder or zip file")
    if cluster is None or cluster == "local":
        check_sandbox(sandbox, workers)  # a remote cluster's workers check their own (.cluster.check_worker)
    init_course(course, assignment=assignment)
    check_private(sandbox, [source, course])
    plan = BatchPlan(source, course, workers=workers, sandbox=sandbox, timeout=timeout, limits=limits,
                     regrade=regrade, assignment=assignment, keep_work=keep_work, feedback=feedback,
                     progress=progress, started=started, cluster=cluster, fork_nbgrader=fork_nbgrader)
    plan.state.mkdir(mode=0o700, exist_ok=True)
    lock = BatchLock(plan.state / "lock")
    try:
        return _run(plan)
    finally:
        lock.release()


def _run(plan: BatchPlan) -> BatchReport:
    course, assignment, logs = plan.course, plan.assignment, plan.logs
    logs.mkdir(exist_ok=True)
    if plan.work_root.exists():
        shutil.rmtree(plan.work_root)  # left by a killed run
    plan.work_root.mkdir()
    for slot in range(plan.workers):
        kill_slot(plan.sandbox, slot)

    def emit(done: int, total: int, record: SubmissionRecord | None, message: str = "",
             eta: float | None = None) -> None:
        if plan.progress is not None:
            plan.progress(ProgressEvent(done, total, record, message, time.monotonic() - plan.started, eta))

    ensure_assignment(course, assignment, logs / "generate_assignment.log")
    notebooks = sorted(p.name for p in (course / "source" / assignment).glob("*.ipynb"))
    try:
        released = load_released(course / "source" / assignment, notebooks)
    except ValueError as exc:
        raise BatchError(f"cannot read the assignment's notebooks: {exc}") from exc
    intake = read_source(plan.source, plan.state / "staging", notebooks, assignment=assignment, limits=plan.limits)
    max_score = _max_score(course, assignment)
    ledger = Ledger(plan.ledger)
    latest = {} if plan.regrade else ledger.latest()
    last_graded = ledger.latest_graded()  # read even with regrade: the gradebook keeps those grades either way
    duedate, priors = read_prior(course, assignment)
    merged = set(priors)
    graded_before = {student for student, prior in priors.items() if prior.has_grades}

    def due(student: str) -> str | None:
        return _iso(priors[student].due(duedate) if student in priors else duedate)
    total = len(intake.submissions)
    refused = sum(1 for s in intake.submissions if s.error)
    emit(0, total, None, f"intake ({intake.kind}): {total} submissions, {refused} refused at intake")

    records: dict[str, SubmissionRecord] = {}
    jobs: list[StudentSubmission] = []
    done = 0
    for sub in intake.submissions:
        entry = latest.get(sub.student)
        resumable = sub.error is None and _resumable(entry, sub, course, merged, assignment, due(sub.student))
        if sub.error is None and not resumable:
            # Before nbgrader, which fails on tampered cell metadata without naming the cell.
            try:
                sub.error = check_submission(sub.files, released)
            except Exception as exc:  # a bug of the check must not stop the batch: nbgrader then judges the cells
                sub.notes.append(f"cell metadata check failed ({type(exc).__name__}: {str(exc)[:200]}); "
                                 "graded by nbgrader as submitted")
        if sub.error:
            record = _error_record(sub, sub.error, max_score, _earlier(sub.student, graded_before, last_graded), 0.0,
                                   None)
            ledger.append(_error_entry(record))
        elif resumable:
            assert entry is not None
            record = SubmissionRecord(sub.student, "skipped_resume", None, entry.score, max_score,
                                      dict(entry.per_notebook), sub.sha256, 0.0, list(sub.notes),
                                      sub.origin, str(plan.log_for(sub.student)), lms_late=sub.late)
        else:
            jobs.append(sub)
            continue
        records[sub.student] = record
        done += 1
        emit(done, total, record)

    if jobs:
        make_template(course, plan.template, assignment)
        grading_started = time.monotonic()
        finished_jobs = 0
        with contextlib.closing(_runner(plan, lambda message: emit(done, total, None, message))
                                .outcomes(jobs, priors)) as outcomes:
            for outcome in outcomes:
                record = _finish(outcome, plan, max_score, ledger,
                                 _earlier(outcome.sub.student, graded_before, last_graded),
                                 due(outcome.sub.student))
                if not plan.keep_work:
                    shutil.rmtree(outcome.work, ignore_errors=True)
                records[record.student] = record
                done += 1
                finished_jobs += 1
                rate = (time.monotonic() - grading_started) / finished_jobs
                emit(done, total, record, eta=rate * (len(jobs) - finished_jobs))

    problems: list[str] = []
    ordered = [records[s.student] for s in intake.submissions]
    reports = plan.reports
    reports.mkdir(exist_ok=True)
    if plan.feedback and any(r.status != "error" for r in ordered):
        emit(done, total, None, "nbgrader generate_feedback")
        problems += course_step(course, logs / "generate_feedback.log", "generate_feedback", assignment, "--force")
    if plan.feedback:
        emit(done, total, None, "nbgrader export")
        problems += course_step(course, logs / "export.log", "export", "--to",
                                str(reports / f"{assignment}-nbgrader-export.csv"))
    csv_path = reports / f"{assignment}-grades.csv"
    rows = report.grade_rows(course, assignment, ordered)
    report.write_csv(csv_path, rows)
    elapsed = time.monotonic() - plan.started
    summary_path = reports / f"{assignment}-summary.txt"
    report.write_atomically(summary_path, report.summary_text(
        ordered, elapsed_seconds=elapsed, workers=plan.workers, sandbox=plan.sandbox, source=str(plan.source),
        intake_notes=intake.notes, batch_problems=problems))
    report.write_atomically(reports / f"{assignment}-records.json", report.records_json(ordered))
    return BatchReport(ordered, csv_path, summary_path, course / "feedback", elapsed, problems)


def _runner(plan: BatchPlan, say: Callable[[str], None]) -> Runner:
    """The plan's runner: this machine's pool, or a Dask cluster (imported only then: an optional extra)."""
    if plan.cluster is None:
        return LocalPool(plan)
    from .cluster import DaskRunner

    return DaskRunner(plan, say)


def _resumable(
    entry: LedgerEntry | None, sub: StudentSubmission, course: Path, merged: set[str], assignment: str,
    due: str | None,
) -> bool:
    """Merged by an earlier run from the same inputs against the same due date (a changed due date or extension
    changes nbgrader's late penalty, so the submission is graded again)."""
    return (
        entry is not None
        and entry.event == "graded"
        and entry.sha256 == sub.sha256
        and entry.due == due
        and sub.student in merged
        and (course / "autograded" / sub.student / assignment).is_dir()
    )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _max_score(course: Path, assignment: str) -> float:
    with open_gradebook(course / "gradebook.db") as gb:
        return round(sum(p for cells in autograded_cells(gb, assignment).values() for p in cells.values()), 6)


def _earlier(student: str, graded_before: set[str], last_graded: dict[str, LedgerEntry]) -> EarlierGrades | None:
    """What the gradebook holds for ``student`` from before this run, or ``None`` when it holds no grades."""
    if student not in graded_before:
        return None
    entry = last_graded.get(student)
    if entry is None:
        return EarlierGrades("", None, None, None)
    return EarlierGrades(entry.sha256, entry.at, entry.score, entry.max_score)


def _error_record(
    sub: StudentSubmission,
    cause: str,
    max_score: float,
    earlier: EarlierGrades | None,
    seconds: float,
    log: str | None,
) -> SubmissionRecord:
    """An ``error`` record; when the gradebook still holds earlier grades of the student, the error says so."""
    error = cause if earlier is None else f"{cause} ({earlier.describe(sub.sha256)})"
    return SubmissionRecord(sub.student, "error", error, None, max_score, sha256=sub.sha256, seconds=round(seconds, 3),
                            notes=list(sub.notes), origin=sub.origin, log=log, earlier=earlier, lms_late=sub.late)


def _error_entry(record: SubmissionRecord) -> LedgerEntry:
    """The ledger's line for an ``error`` record."""
    return LedgerEntry("error", record.student, record.sha256, score=None, max_score=record.max_score,
                       per_notebook={}, error=record.error, seconds=record.seconds)


def _notes(outcome: Outcome) -> list[str]:
    """The submission's intake notes, plus one when its notebook-execution budget ran out."""
    notes = list(outcome.sub.notes)
    if outcome.execution is not None and outcome.execution.exhausted:
        notes.append(outcome.execution.describe())
    return notes


def _finish(
    outcome: Outcome,
    plan: BatchPlan,
    max_score: float,
    ledger: Ledger,
    earlier: EarlierGrades | None = None,
    due: str | None = None,
) -> SubmissionRecord:
    """Merge one finished isolated grading into the course (this thread only), then write the ledger.

    ``earlier``: what the gradebook held for the student before this run (named in an error record).
    ``due``: the student's due date the grading used (ISO, naive UTC), kept in the ledger for resuming.
    """
    sub, result = outcome.sub, outcome.result
    course, assignment = plan.course, plan.assignment
    log = str(plan.log_for(sub.student))

    def failed(cause: str, earlier: EarlierGrades | None) -> SubmissionRecord:
        record = _error_record(sub, cause, max_score, earlier, outcome.seconds, log)
        record.execution = outcome.execution
        record.notes = _notes(outcome)
        ledger.append(_error_entry(record))
        return record

    if isinstance(result, str):
        return failed(result, earlier)
    try:
        merge_result(course, assignment, result)
        # The grades are committed: should installing the files fail, the gradebook holds these grades.
        earlier = EarlierGrades(sub.sha256, datetime.now(UTC).isoformat(timespec="seconds"), result.score, max_score)
        install_files(outcome.work / "autograded" / sub.student / assignment,
                      course / "autograded" / sub.student / assignment)
        if not plan.source_inside_course:
            install_files(outcome.work / "submitted" / sub.student / assignment,
                          course / "submitted" / sub.student / assignment)
    except Exception as exc:  # recorded; the rerun regrades and merges again (merging only sets values)
        return failed(f"merging into the course failed: {type(exc).__name__}: {str(exc)[:300]}", earlier)
    record = SubmissionRecord(sub.student, "graded", None, result.score, max_score, dict(result.per_notebook),
                              sub.sha256, round(outcome.seconds, 3), _notes(outcome), sub.origin, log,
                              lms_late=sub.late, execution=outcome.execution)
    ledger.append(LedgerEntry("graded", sub.student, sub.sha256, score=record.score, max_score=max_score,
                              per_notebook=record.per_notebook, error=None, seconds=record.seconds, due=due))
    return record
