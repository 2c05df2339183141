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
6. **Reports**: ``nbgrader generate_feedback`` (in lanes of students over the cores,
   :mod:`.feedback`) and ``nbgrader export`` on the instructor's course, then the CSV,
   the summary and ``records.json`` (:mod:`.report`).

The set-up (:func:`open_plan`, :func:`prepare`, the template, :func:`runner`) and the steps of
one submission (:func:`triage` before grading, :func:`finish` after) are also those of
:class:`.session.GradingSession`, which keeps them open to grade submissions one at a time
(``ch11-grade serve``).

A broken or hostile submission costs only its own record: every failure
(intake, a timeout, an nbgrader error) is recorded with its cause and the batch
goes on. A batch killed at any moment and run again ends with the same
gradebook as an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..course_layout import AUTOGRADED, CONFIG, FEEDBACK, GRADEBOOK, SUBMITTED, assignment_source, student_folder
from ..untrusted.choose import resolve_backend
from . import report
from .cellcheck import check_submission, load_released
from .course import course_step, ensure_assignment, init_course, make_template
from .feedback import generate_feedback
from .gradebook import open_gradebook
from .guards import BatchLock, check_private, check_sandbox
from .intake import read_source
from .intake_records import IntakeError, StudentSubmission
from .isolated import Outcome, kill_slot
from .ledger import Ledger, LedgerEntry
from .merge import PriorSubmission, autograded_cells, install_files, merge_result, read_prior
from .nbgrader_fork import ForkServerGone, NbgraderForkServer
from .plan import DEFAULT_OPTIONS, DEFAULT_TIMEOUT, BatchOptions, BatchPlan
from .records import BatchError, BatchReport, EarlierGrades, ProgressEvent, SubmissionRecord
from .runners import LocalPool, Runner, stream

__all__ = ["DEFAULT_OPTIONS", "DEFAULT_TIMEOUT", "BatchOptions", "BatchPlan", "Released", "due_date", "earlier_grades",
           "finish", "grade_class", "open_plan", "prepare", "runner", "triage"]

log = logging.getLogger(__name__)


def grade_class(
    source: Path,
    course: Path,
    options: BatchOptions = DEFAULT_OPTIONS,
    *,
    progress: Callable[[ProgressEvent], None] | None = None,
    first_server: NbgraderForkServer | None = None,
) -> BatchReport:
    """Grade every submission in ``source`` into the nbgrader course ``course``, as ``options`` say.

    Args:
        source: a folder in nbgrader layout or an LMS zip (see :mod:`.intake`).
        course: the instructor's course directory (created when absent, see
            :func:`.course.init_course`). The batch keeps its files in ``<course>/.ch11-batch/``
            and its reports in ``<course>/reports/``.
        options: how to grade (:class:`.plan.BatchOptions`: workers, sandbox, timeout, cluster, ...).
        progress: called in this thread after each finished submission and at
            each batch step.
        first_server: a fork server already started (by this thread, or one that outlives the
            batch) for ``<course>/nbgrader_config.py``, e.g. by ``ch11-grade batch`` before its own
            imports: the local pool uses it as slot 0's. Closed when the batch ends, used or not.

    Raises:
        BatchError: the course, the sandbox or the lock is unusable, or a cluster is asked for without
            Dask installed, or its scheduler cannot be reached, or one of its workers cannot grade
            (:mod:`.cluster`); nothing was graded.
        IntakeError: the source is refused as a whole.
    """
    try:
        plan = open_plan(source, course, options, progress)
        lock = BatchLock(plan.state / "lock")
        try:
            return _run(plan, first_server)
        finally:
            lock.release()
    finally:
        if first_server is not None:
            first_server.close()


def open_plan(
    source: Path | None,
    course: Path,
    options: BatchOptions,
    progress: Callable[[ProgressEvent], None] | None,
) -> BatchPlan:
    """The checks before anything is graded, and the plan (arguments as :func:`grade_class`'s; the course is
    created when absent and its state folder made). ``source`` ``None``: submissions come one at a time
    (:class:`.session.GradingSession`); the plan's source is then the course.

    Raises:
        BatchError, IntakeError: as :func:`grade_class`.
    """
    started = time.monotonic()
    if options.workers < 1:
        raise BatchError("workers must be at least 1")
    if options.cluster is not None:
        from .cluster import require_dask

        require_dask()
    try:
        options = replace(options, sandbox=resolve_backend(options.sandbox))
    except ValueError as exc:
        raise BatchError(str(exc)) from exc
    course = Path(course).resolve()
    if source is not None:
        source = Path(source).resolve()
        if not source.exists():
            raise IntakeError(f"{source}: no such folder or zip file")
    plan = BatchPlan(source if source is not None else course, course, options, progress, started)
    if options.cluster is None or options.cluster == "local":  # a remote cluster's workers check their own
        check_sandbox(plan.sandbox, options.workers)  # (.cluster.check_worker)
    init_course(course, assignment=options.assignment)
    check_private(plan.sandbox, [plan.source, course])
    plan.state.mkdir(mode=0o700, exist_ok=True)
    return plan


@dataclass(frozen=True)
class Released:
    """The assignment as the course has it, read once per batch (:func:`prepare`).

    Attributes:
        notebooks: its notebook file names, sorted.
        cells: the released notebooks' nbgrader cell metadata (:func:`.cellcheck.load_released`).
        max_score: its autograded points possible.
    """

    notebooks: list[str]
    cells: Any
    max_score: float


def prepare(plan: BatchPlan) -> Released:
    """A batch's set-up before its first submission: empty work folder, slots' leftovers killed, the assignment
    generated when the gradebook lacks it (:func:`.course.ensure_assignment`), the released notebooks read.

    Raises:
        BatchError: the assignment cannot be generated or its notebooks read.
    """
    course, assignment, logs = plan.course, plan.options.assignment, plan.logs
    logs.mkdir(exist_ok=True)
    if plan.work_root.exists():
        shutil.rmtree(plan.work_root)  # left by a killed run
    plan.work_root.mkdir()
    for slot in range(plan.options.workers):
        kill_slot(plan.sandbox, slot)
    ensure_assignment(course, assignment, logs / "generate_assignment.log")
    notebooks = sorted(p.name for p in assignment_source(course, assignment).glob("*.ipynb"))
    try:
        cells = load_released(assignment_source(course, assignment), notebooks)
    except ValueError as exc:
        raise BatchError(f"cannot read the assignment's notebooks: {exc}") from exc
    return Released(notebooks, cells, _max_score(course, assignment))


def _run(plan: BatchPlan, first_server: NbgraderForkServer | None = None) -> BatchReport:
    released = prepare(plan)
    # The local pool grades slot 0 on the server started first, which outlives the pool: the course-wide
    # steps fork from it at the end, and no second server imports nbgrader beside the first submissions.
    shared = first_server is not None and plan.options.cluster is None and plan.options.fork_nbgrader
    steps = first_server if shared else course_server(plan)
    try:
        return _grade_and_report(plan, released, steps, first_server)
    finally:
        if steps is not None:
            steps.close()


def course_server(plan: BatchPlan) -> NbgraderForkServer | None:
    """A fork server for the course-wide steps at the end, importing while the batch grades; ``None``: none.

    Started only when the plan runs those steps and forks nbgrader; one that cannot start
    leaves the steps to start nbgrader afresh.
    """
    if not (plan.options.feedback and plan.options.fork_nbgrader):
        return None
    try:
        return NbgraderForkServer(plan.course / CONFIG, wait=False)
    except ForkServerGone as exc:
        log.warning("the course-wide steps start nbgrader afresh: %s", exc)
        return None


def _grade_and_report(plan: BatchPlan, released: Released, steps: NbgraderForkServer | None,
                      first_server: NbgraderForkServer | None = None) -> BatchReport:
    course, assignment, logs = plan.course, plan.options.assignment, plan.logs

    def emit(done: int, total: int, record: SubmissionRecord | None, message: str = "",
             eta: float | None = None) -> None:
        if plan.progress is not None:
            plan.progress(ProgressEvent(done, total, record, message, time.monotonic() - plan.started, eta))

    max_score = released.max_score
    intake = read_source(plan.source, plan.state / "staging", released.notebooks, assignment=assignment,
                         limits=plan.options.limits)
    ledger = Ledger(plan.ledger)
    latest = {} if plan.options.regrade else ledger.latest()
    last_graded = ledger.latest_graded()  # read even with regrade: the gradebook keeps those grades either way
    duedate, priors = read_prior(course, assignment)

    def due(student: str) -> str | None:
        return due_date(duedate, priors.get(student))
    total = len(intake.submissions)
    refused = sum(1 for s in intake.submissions if s.error)
    emit(0, total, None, f"intake ({intake.kind}): {total} submissions, {refused} refused at intake")

    records: dict[str, SubmissionRecord] = {}
    jobs: list[StudentSubmission] = []
    done = 0
    for sub in intake.submissions:
        prior = priors.get(sub.student)
        record = triage(sub, plan, released, ledger, latest.get(sub.student), prior, due(sub.student),
                        earlier_grades(prior, last_graded.get(sub.student)))
        if record is None:
            jobs.append(sub)
            continue
        records[sub.student] = record
        done += 1
        emit(done, total, record)

    if jobs:
        make_template(course, plan.template, assignment)
        grading_started = time.monotonic()
        finished_jobs = 0
        pool = runner(plan, lambda message: emit(done, total, None, message))
        if first_server is not None and isinstance(pool, LocalPool):
            # The first submission takes slot 0. When it is also the course-wide steps' server, they fork from
            # it after the pool closes: the pool only borrows it.
            pool.servers.adopt(0, first_server, owned=steps is not first_server)
        with contextlib.closing(stream(pool, jobs, priors)) as outcomes:
            for outcome in outcomes:
                student = outcome.sub.student
                record = finish(outcome, plan, max_score, ledger,
                                earlier_grades(priors.get(student), last_graded.get(student)), due(student))
                if not plan.options.keep_work:
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
    if plan.options.feedback and any(r.status != "error" for r in ordered):
        emit(done, total, None, "nbgrader generate_feedback")
        problems += generate_feedback(course, logs / "generate_feedback.log", assignment, forks=steps)
    if plan.options.feedback:
        emit(done, total, None, "nbgrader export")
        problems += course_step(course, logs / "export.log", "export", "--to",
                                str(reports / f"{assignment}-nbgrader-export.csv"), forks=steps)
    csv_path = reports / f"{assignment}-grades.csv"
    rows = report.grade_rows(course, assignment, ordered)
    report.write_csv(csv_path, rows)
    elapsed = time.monotonic() - plan.started
    summary_path = reports / f"{assignment}-summary.txt"
    report.write_atomically(summary_path, report.summary_text(
        ordered, elapsed_seconds=elapsed, workers=plan.options.workers, sandbox=plan.sandbox,
        source=str(plan.source), intake_notes=intake.notes, batch_problems=problems))
    report.write_atomically(reports / f"{assignment}-records.json", report.records_json(ordered))
    return BatchReport(ordered, csv_path, summary_path, course / FEEDBACK, elapsed, problems)


def runner(plan: BatchPlan, say: Callable[[str], None]) -> Runner:
    """The plan's runner: this machine's pool, or a Dask cluster (imported only then: an optional extra)."""
    if plan.options.cluster is None:
        return LocalPool(plan)
    from .cluster import DaskRunner

    return DaskRunner(plan, say)


def triage(
    sub: StudentSubmission, plan: BatchPlan, released: Released, ledger: Ledger, entry: LedgerEntry | None,
    prior: PriorSubmission | None, due: str | None, earlier: EarlierGrades | None,
) -> SubmissionRecord | None:
    """The record of a submission that is not graded (refused at intake or by the cell check: an ``error``
    record, in the ledger; merged before from the same inputs: ``skipped_resume``), or ``None``: grade it.

    ``entry``: the student's latest ledger entry (``None`` to regrade); ``prior``: the student's submission
    row in the course; ``due``: the student's due date (ISO); ``earlier``: see :func:`earlier_grades`.
    """
    merged = {sub.student} if prior is not None else set()
    resumable = sub.error is None and _resumable(entry, sub, plan.course, merged, plan.options.assignment, due)
    if sub.error is None and not resumable:
        # Before nbgrader, which fails on tampered cell metadata without naming the cell.
        try:
            sub.error = check_submission(sub.files, released.cells)
        except Exception as exc:  # a bug of the check must not stop the batch: nbgrader then judges the cells
            sub.notes.append(f"cell metadata check failed ({type(exc).__name__}: {str(exc)[:200]}); "
                             "graded by nbgrader as submitted")
    if sub.error:
        record = _error_record(sub, sub.error, released.max_score, earlier, 0.0, None)
        ledger.append(_error_entry(record))
        return record
    if resumable:
        assert entry is not None
        return SubmissionRecord(sub.student, "skipped_resume", None, entry.score, released.max_score,
                                dict(entry.per_notebook), sub.sha256, 0.0, list(sub.notes),
                                sub.origin, str(plan.log_for(sub.student)), lms_late=sub.late)
    return None


def due_date(duedate: datetime | None, prior: PriorSubmission | None) -> str | None:
    """The student's due date (ISO, naive UTC; ``None`` without one): the assignment's plus the extension of the
    student's submission row ``prior``."""
    return _iso(prior.due(duedate) if prior is not None else duedate)


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
        and student_folder(course, AUTOGRADED, sub.student, assignment).is_dir()
    )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _max_score(course: Path, assignment: str) -> float:
    with open_gradebook(course / GRADEBOOK) as gb:
        return round(sum(p for cells in autograded_cells(gb, assignment).values() for p in cells.values()), 6)


def earlier_grades(prior: PriorSubmission | None, entry: LedgerEntry | None) -> EarlierGrades | None:
    """What the gradebook holds for a student from before this run (``prior``: their submission row; ``entry``:
    their latest ``graded`` ledger entry), or ``None`` when it holds no grades."""
    if prior is None or not prior.has_grades:
        return None
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


def finish(
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
    course, assignment = plan.course, plan.options.assignment
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
        install_files(student_folder(outcome.work, AUTOGRADED, sub.student, assignment),
                      student_folder(course, AUTOGRADED, sub.student, assignment))
        if not plan.source_inside_course:
            install_files(student_folder(outcome.work, SUBMITTED, sub.student, assignment),
                          student_folder(course, SUBMITTED, sub.student, assignment))
    except Exception as exc:  # recorded; the rerun regrades and merges again (merging only sets values)
        return failed(f"merging into the course failed: {type(exc).__name__}: {str(exc)[:300]}", earlier)
    record = SubmissionRecord(sub.student, "graded", None, result.score, max_score, dict(result.per_notebook),
                              sub.sha256, round(outcome.seconds, 3), _notes(outcome), sub.origin, log,
                              lms_late=sub.late, execution=outcome.execution)
    ledger.append(LedgerEntry("graded", sub.student, sub.sha256, score=record.score, max_score=max_score,
                              per_notebook=record.per_notebook, error=None, seconds=record.seconds, due=due))
    return record
