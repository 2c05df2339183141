"""Each student's due date, and whether a submission came after it: nbgrader's rules, read from its gradebook.

nbgrader keeps the assignment's ``duedate`` (naive UTC) on the assignment row and a student's
``extension`` (an interval) on that student's submission row (``SubmittedAssignment``); a student's
due date is ``duedate + extension`` (``SubmittedAssignment.duedate``, and the batch's
:meth:`..batch.merge.PriorSubmission.due`). A submission's time is its ``timestamp.txt`` as
``nbgrader submit`` wrote it (local time with a zone name or offset, depending on the exchange's
``timezone`` and ``timestamp_format``), read with nbgrader's own :func:`nbgrader.utils.parse_utc`;
it is late when nbgrader's ``total_seconds_late`` is above 0. So the service calls a submission
late exactly when ``nbgrader autograde`` will flag it late.

The instructor's gradebook is read through nbgrader's models on a read-only SQLite connection: the
service never writes it. A missing gradebook means no due date; one that cannot be read raises
:class:`DeadlinesUnreadable` (the service then takes no submission until it can: it cannot tell
which are late).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nbgrader.api import Assignment, Student, SubmittedAssignment
from nbgrader.utils import parse_utc
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import SAWarning, SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from ..batch.gradebook import forget_compiled_statements
from ..batch.merge import PriorSubmission

__all__ = ["DeadlineReader", "Deadlines", "DeadlinesUnreadable", "format_due", "read_deadlines", "submitted_at"]


class DeadlinesUnreadable(OSError):
    """The gradebook exists but its due dates cannot be read (not a gradebook, corrupt, locked too long)."""


@dataclass(frozen=True)
class Deadlines:
    """One assignment's due dates as a gradebook held them when read.

    Attributes:
        duedate: the assignment's due date (naive UTC), or ``None`` when it has none (then nothing is late).
        extensions: student id -> that student's extension (only students with one).
    """

    duedate: datetime | None = None
    extensions: Mapping[str, timedelta] = field(default_factory=dict)

    def due(self, student: str) -> datetime | None:
        """``student``'s due date (naive UTC): the assignment's plus their extension, as nbgrader computes it."""
        return PriorSubmission(extension=self.extensions.get(student)).due(self.duedate)

    def seconds_late(self, student: str, submitted: datetime) -> float:
        """How late ``submitted`` (naive UTC) is for ``student``: nbgrader's ``total_seconds_late`` of a submission
        row with that timestamp and the student's extension (0: on time, or no due date)."""
        assignment = Assignment(name="", duedate=self.duedate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)  # a transient row, never added to a session
            row = SubmittedAssignment(assignment=assignment, timestamp=submitted,
                                      extension=self.extensions.get(student))
        return float(row.total_seconds_late)


class DeadlineReader:
    """Reads one gradebook's due dates of one assignment, again and again (the service, at every scan).

    One SQLAlchemy engine for the reader's life, so the queries are compiled once (a fresh engine per read
    compiles them again: most of a read's cost); no connection is pooled, so each read opens the file as it is
    then, whether it was replaced or created since.
    """

    def __init__(self, gradebook: Path, assignment: str) -> None:
        self.gradebook = gradebook
        self.assignment = assignment
        self._engine: Engine | None = None

    def read(self) -> Deadlines:
        """The due dates now. No gradebook, or no such assignment: no due date (``Deadlines()``).

        Raises:
            DeadlinesUnreadable: the gradebook is there and cannot be read (the message names it and why).
        """
        if not self.gradebook.is_file():
            return Deadlines()
        if self._engine is None:
            self._engine = create_engine(f"sqlite:///file:{self.gradebook.resolve()}?mode=ro&uri=true",
                                         poolclass=NullPool)
        try:
            with Session(self._engine) as db:
                row = db.query(Assignment).filter(Assignment.name == self.assignment).one_or_none()
                if row is None or row.duedate is None:
                    return Deadlines()
                extended = (db.query(Student.id, SubmittedAssignment.extension)
                            .join(SubmittedAssignment, SubmittedAssignment.student_id == Student.id)
                            .filter(SubmittedAssignment.assignment_id == row.id,
                                    SubmittedAssignment.extension.is_not(None)))
                return Deadlines(row.duedate, {student: extension for student, extension in extended})
        except SQLAlchemyError as exc:
            cause = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise DeadlinesUnreadable(f"{self.gradebook}: its due dates cannot be read ({cause})") from exc

    def close(self) -> None:
        """Drop the engine and the statements compiled for it (see :mod:`..batch.gradebook`)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
            forget_compiled_statements()


def read_deadlines(gradebook: Path, assignment: str) -> Deadlines:
    """The due dates of ``assignment`` in nbgrader's ``gradebook`` once (:meth:`DeadlineReader.read`).

    Raises:
        DeadlinesUnreadable: the gradebook is there and cannot be read.
    """
    reader = DeadlineReader(gradebook, assignment)
    try:
        return reader.read()
    finally:
        reader.close()


def submitted_at(timestamp: str | None, arrived: float) -> datetime:
    """A submission's time (naive UTC): its ``timestamp.txt`` read as nbgrader reads it, or, when there is none or
    nbgrader cannot parse it, the moment its folder arrived (``arrived``, the kernel's ctime, which the student does
    not set): a submission without a readable time is never taken as earlier than it came."""
    if timestamp:
        try:
            moment = parse_utc(timestamp)
        except (ValueError, OverflowError):
            moment = None
        if moment is not None:
            return moment
    return datetime.fromtimestamp(arrived, UTC).replace(tzinfo=None)


def format_due(moment: datetime | None) -> str | None:
    """``2026-12-14 17:00 UTC`` (seconds shown when not 0) for a naive-UTC moment, or ``None``."""
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if moment.second else "%Y-%m-%d %H:%M UTC")

