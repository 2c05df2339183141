"""Reading one isolated grading result and merging it into the instructor's course.

Only the trusted orchestrator calls :func:`merge_result`, one submission at a
time. Merging is idempotent: it *sets* the autograded values of existing
gradebook rows (creating the student and the submission rows when absent, as
``nbgrader autograde`` does) and never adds to a score, so merging the same
result twice leaves the gradebook as merging it once. Manual scores an
instructor already entered are kept; as in ``nbgrader autograde``, such a
cell is flagged for review again.

A merge is all or nothing: nbgrader's ``Gradebook`` methods commit after each
change (the student row, the submission row with its empty grades), so
:func:`merge_result` runs them in one database transaction
(:func:`_one_transaction`) and commits once at the end; a merge that fails
anywhere rolls back, and the gradebook is as it was before, byte for byte.

Files go into the course with atomic renames: each autograded notebook is
written beside its destination and ``os.replace``-d over it, so a reader (or a
kill) sees either the old file or the new one, never half of one.

Lateness: nbgrader's ``AssignLatePenalties`` computes a notebook's penalty while
autograding, from the submission row (``timestamp``, the student's
``extension``), the assignment's ``duedate`` and the notebook's score at that
moment (hand-entered scores included). The isolated course starts from a
gradebook without students, so :func:`read_prior` reads those rows from the
instructor's gradebook and :func:`seed_prior` puts the student's own into the
isolated copy before ``nbgrader autograde`` runs there: the penalty merged is
the one nbgrader computes in the real course.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from ..course_layout import GRADEBOOK
from .gradebook import open_gradebook

__all__ = [
    "GradeValue",
    "PriorSubmission",
    "SubmissionResult",
    "autograded_cells",
    "gradebook_snapshot",
    "install_files",
    "merge_result",
    "read_prior",
    "read_result",
    "seed_prior",
]


def _db_url(course: Path) -> str:
    return f"sqlite:///{course / GRADEBOOK}"


@dataclass(frozen=True)
class GradeValue:
    """One grade row of a submission, as autograding left it."""

    notebook: str
    cell: str
    auto_score: float | None
    needs_manual_grade: bool
    max_score: float
    autograded: bool


@dataclass
class SubmissionResult:
    """What ``nbgrader autograde`` recorded for one student in an isolated course.

    Attributes:
        per_notebook: notebook name -> autograded score (sum over autograded cells).
        score, max_score: autograded total and its maximum.
        manual_pending: points of cells that still need manual grading.
    """

    student: str
    timestamp: datetime | None
    grades: list[GradeValue] = field(default_factory=list)
    comments: list[tuple[str, str, str | None]] = field(default_factory=list)
    penalties: dict[str, float | None] = field(default_factory=dict)
    per_notebook: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    max_score: float = 0.0
    manual_pending: float = 0.0


@dataclass(frozen=True)
class PriorSubmission:
    """What the instructor's gradebook holds for a student's submission before it is graded (again).

    Attributes:
        timestamp: the submission time nbgrader recorded (naive UTC, as nbgrader stores it), or ``None``.
        extension: the student's extension for the assignment (nbgrader keeps it on the
            submission row: ``Gradebook.grant_extension``), or ``None``.
        hand_scores: (notebook, cell) -> (manual_score, extra_credit), for grades where either is set.
        has_grades: some grade has an autograded or manual score (the row is more than one made
            to hold an extension before the student submitted).
    """

    timestamp: datetime | None = None
    extension: timedelta | None = None
    hand_scores: dict[tuple[str, str], tuple[float | None, float | None]] = field(default_factory=dict)
    has_grades: bool = False

    def due(self, duedate: datetime | None) -> datetime | None:
        """The student's due date as nbgrader computes it: the assignment's plus the extension."""
        if duedate is None or self.extension is None:
            return duedate
        return duedate + self.extension


def read_prior(course: Path, assignment: str,
               student: str | None = None) -> tuple[datetime | None, dict[str, PriorSubmission]]:
    """The assignment's due date (naive UTC or ``None``) and, per student with a submission row, its prior state
    (``student``: that student's only, read alone)."""
    with open_gradebook(_db_url(course)) as gb:
        duedate = gb.find_assignment(assignment).duedate
        out: dict[str, PriorSubmission] = {}
        if student is None:
            subs = gb.assignment_submissions(assignment)
        else:
            try:
                subs = [gb.find_submission(assignment, student)]
            except MissingEntry:
                subs = []
        for sub in subs:
            hand: dict[tuple[str, str], tuple[float | None, float | None]] = {}
            has_grades = False
            for nb in sub.notebooks:
                for grade in nb.grades:
                    if grade.manual_score is not None or grade.extra_credit is not None:
                        hand[(nb.name, grade.name)] = (grade.manual_score, grade.extra_credit)
                    has_grades = has_grades or grade.auto_score is not None or grade.manual_score is not None
            out[sub.student.id] = PriorSubmission(sub.timestamp, sub.extension, hand, has_grades)
    return duedate, out


def seed_prior(work_course: Path, assignment: str, student: str, prior: PriorSubmission) -> None:
    """Give the isolated course's gradebook ``student``'s submission row and hand scores, as the real course has them.

    ``nbgrader autograde`` then updates that row (a ``timestamp.txt`` replaces the
    timestamp; none keeps it, as in the real course) and computes the late penalty
    from the same timestamp, extension and score the real course would use.
    """
    with warnings.catch_warnings(), open_gradebook(_db_url(work_course)) as gb:
        warnings.simplefilter("ignore", SAWarning)
        gb.update_or_create_student(student)
        gb.add_submission(assignment, student, timestamp=prior.timestamp, extension=prior.extension)
        for (notebook, cell), (manual, extra) in sorted(prior.hand_scores.items()):
            try:
                grade = gb.find_grade(cell, notebook, assignment, student)
            except MissingEntry:  # the cell left the assignment since: nothing to carry
                continue
            grade.manual_score = manual
            grade.extra_credit = extra
        gb.db.commit()


def autograded_cells(gb: Gradebook, assignment: str) -> dict[str, dict[str, float]]:
    """Notebook -> {autograded test cell -> points}: code grade cells that are not answers."""
    out: dict[str, dict[str, float]] = {}
    for nb in gb.find_assignment(assignment).notebooks:
        answers = {c.name for c in nb.solution_cells}
        out[nb.name] = {
            c.name: float(c.max_score) for c in nb.grade_cells if c.cell_type == "code" and c.name not in answers
        }
    return out


def _total(values) -> float:
    return round(sum(values), 6)


def read_result(work_course: Path, assignment: str, student: str) -> SubmissionResult:
    """Read the isolated course's gradebook after ``nbgrader autograde`` for ``student``.

    Raises:
        MissingEntry: autograde recorded no submission for the student.
    """
    with open_gradebook(_db_url(work_course)) as gb:
        auto = autograded_cells(gb, assignment)
        sub = gb.find_submission(assignment, student)
        result = SubmissionResult(student=student, timestamp=sub.timestamp)
        for nb in sorted(sub.notebooks, key=lambda n: n.name):
            cells = auto.get(nb.name, {})
            result.penalties[nb.name] = nb.late_submission_penalty
            scores = []
            for grade in sorted(nb.grades, key=lambda g: g.name):
                is_auto = grade.name in cells
                result.grades.append(
                    GradeValue(nb.name, grade.name, grade.auto_score, bool(grade.needs_manual_grade),
                               float(grade.max_score), is_auto)
                )
                if is_auto:
                    scores.append(float(grade.auto_score or 0.0))
                if grade.needs_manual_grade:
                    result.manual_pending += float(grade.max_score)
            for comment in sorted(nb.comments, key=lambda c: c.name):
                result.comments.append((nb.name, comment.name, comment.auto_comment))
            result.per_notebook[nb.name] = _total(scores)
        result.score = _total(result.per_notebook.values())
        result.max_score = _total(p for cells in auto.values() for p in cells.values())
        result.manual_pending = round(result.manual_pending, 6)
    return result


class _FlushOnCommit:
    """A gradebook session whose ``commit()`` only flushes: nbgrader's methods, which commit after each
    change, then write into the transaction that is already open instead of ending it."""

    def __init__(self, session) -> None:
        self._session = session

    def commit(self) -> None:
        self._session.flush()

    def __getattr__(self, name: str):
        return getattr(self._session, name)


@contextlib.contextmanager
def _one_transaction(gb: Gradebook) -> Iterator[None]:
    """Everything ``gb`` changes inside the block is committed once at its end, or rolled back on any exception.

    SQLite holds the changes in one transaction (begun by the first write, ended only by the real
    commit or rollback), so no reader, and no crash, ever sees part of them.
    """
    session = gb.db
    gb.db = _FlushOnCommit(session)
    try:
        yield
    except BaseException:
        gb.db = session
        session.rollback()
        raise
    gb.db = session
    session.commit()


def merge_result(course: Path, assignment: str, result: SubmissionResult) -> None:
    """Set ``result``'s values in ``course``'s gradebook (see the module docstring), in one transaction.

    Raises whatever the gradebook raises (e.g. ``MissingEntry`` for a cell the course does not
    have, ``sqlite3.OperationalError`` wrapped by SQLAlchemy); the gradebook is then unchanged.
    """
    with warnings.catch_warnings(), open_gradebook(_db_url(course)) as gb, _one_transaction(gb):
        # nbgrader's add_submission builds rows in a way SQLAlchemy 2 warns about; the rows are right.
        warnings.simplefilter("ignore", SAWarning)
        _apply(gb, assignment, result)


def _apply(gb: Gradebook, assignment: str, result: SubmissionResult) -> None:
    """The merge's changes through nbgrader's API (each of its calls commits unless inside :func:`_one_transaction`)."""
    gb.update_or_create_student(result.student)
    try:
        gb.find_submission(assignment, result.student)
        exists = True
    except MissingEntry:
        exists = False
    if result.timestamp is not None:
        gb.update_or_create_submission(assignment, result.student, timestamp=result.timestamp)
    elif not exists:
        gb.add_submission(assignment, result.student)
    for value in result.grades:
        grade = gb.find_grade(value.cell, value.notebook, assignment, result.student)
        grade.auto_score = value.auto_score
        grade.needs_manual_grade = value.needs_manual_grade or grade.manual_score is not None
    for notebook, cell, text in result.comments:
        gb.find_comment(cell, notebook, assignment, result.student).auto_comment = text
    for notebook, penalty in result.penalties.items():
        gb.find_submission_notebook(notebook, assignment, result.student).late_submission_penalty = penalty


def install_files(source_dir: Path, dest_dir: Path) -> list[str]:
    """Make ``dest_dir`` hold exactly the regular files of ``source_dir`` (one level), atomically per file.

    Each file is copied to a temporary name in ``dest_dir`` and renamed over
    its destination; files in ``dest_dir`` that ``source_dir`` lacks are then
    removed. Links and anything not a regular file in ``source_dir`` are
    skipped. Returns the names installed, sorted.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for path in sorted(source_dir.iterdir()):
        if not stat.S_ISREG(path.lstat().st_mode):
            continue
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=dest_dir)
        try:
            with os.fdopen(fd, "wb") as out, path.open("rb") as src:
                shutil.copyfileobj(src, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest_dir / path.name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        names.append(path.name)
    for stale in dest_dir.iterdir():
        if stale.name not in names:
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    return names


def gradebook_snapshot(course: Path, assignment: str) -> dict[str, dict[tuple[str, str], tuple]]:
    """Student -> {(notebook, cell) -> (auto_score, manual_score, needs_manual_grade)} of every grade row.

    The gradebook's contents as far as grading goes; two courses graded from
    the same submissions compare equal on it.
    """
    out: dict[str, dict[tuple[str, str], tuple]] = {}
    with open_gradebook(_db_url(course)) as gb:
        for sub in gb.assignment_submissions(assignment):
            rows = {}
            for nb in sub.notebooks:
                for grade in nb.grades:
                    rows[(nb.name, grade.name)] = (grade.auto_score, grade.manual_score, bool(grade.needs_manual_grade))
            out[sub.student.id] = rows
    return out
