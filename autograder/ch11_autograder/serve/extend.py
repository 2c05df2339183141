"""Per-student extensions, written into nbgrader's own gradebook: ``ch11-grade extend``.

    ch11-grade extend ASSIGNMENT --course DIR --student ID (--by DURATION | --until MOMENT | --remove)
    ch11-grade extend ASSIGNMENT --course DIR --list

nbgrader keeps a student's extension on their submission row (``SubmittedAssignment.extension``)
and computes lateness from ``duedate + extension`` (``total_seconds_late``, read by its late
penalty), but no nbgrader command sets it. This one does, through nbgrader's ``Gradebook`` API
(``update_or_create_submission``, as ``autograde`` itself calls it): where the student has no
submission row yet, it creates one holding only the extension, which ``autograde`` (and
``ch11-grade batch``) later fill in and keep. Extensions do not stack, as in nbgrader's
``grant_extension``: a new one replaces the old.

``--by`` takes a duration (``2d``, ``36h``, ``90m``, ``1w``, or sums such as ``1d12h``);
``--until`` a moment read as nbgrader reads a due date (:func:`nbgrader.utils.parse_utc`: no zone
means UTC; ``2026-12-16 18:00 Europe/Berlin`` or an ISO offset are converted). The grading
service (:mod:`.deadline`) reads the same column: a student's practice grading stops at their own
due date, which their status pages show.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.utils import parse_utc
from sqlalchemy.exc import SAWarning

from ..batch.gradebook import open_gradebook
from ..course_layout import GRADEBOOK
from .deadline import format_due

__all__ = ["ExtendError", "Extension", "format_extension", "grant", "list_extensions", "parse_duration",
           "set_extension"]

_UNITS = {"w": timedelta(weeks=1), "d": timedelta(days=1), "h": timedelta(hours=1), "m": timedelta(minutes=1)}
_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhm])")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[wdhm])+")


class ExtendError(ValueError):
    """An extension that cannot be written: the message names what is wrong and where."""


@dataclass(frozen=True)
class Extension:
    """One student's extension as the gradebook holds it.

    Attributes:
        student: the nbgrader student id.
        extension: the extension, or ``None`` (none).
        duedate: the assignment's due date (naive UTC).
        due: the student's own due date (naive UTC): ``duedate + extension``.
    """

    student: str
    extension: timedelta | None
    duedate: datetime
    due: datetime

    def line(self) -> str:
        """``alice  ch11 due 2026-12-16 17:00 UTC (extension 2d)``."""
        extra = "no extension" if self.extension is None else f"extension {format_extension(self.extension)}"
        return f"{self.student}  due {format_due(self.due)} ({extra}; the class's {format_due(self.duedate)})"


def parse_duration(text: str) -> timedelta:
    """``2d``, ``36h``, ``90m``, ``1w``, ``1d12h`` as a positive :class:`timedelta`.

    Raises:
        ExtendError: not such a duration, or zero.
    """
    spec = text.strip().lower()
    if not _DURATION.fullmatch(spec):
        raise ExtendError(f"--by {text!r}: not a duration; write a number and a unit, e.g. 2d, 36h, 90m, 1w "
                          "(or sums such as 1d12h)")
    total = sum((float(n) * _UNITS[unit] for n, unit in _PART.findall(spec)), timedelta())
    if total <= timedelta():
        raise ExtendError(f"--by {text!r}: an extension must be longer than 0 (to take one back: --remove)")
    return total


def format_extension(extension: timedelta) -> str:
    """``2d``, ``1d 12h``, ``90m`` -> ``1h 30m``: days, hours, minutes (seconds when there are any)."""
    seconds = int(extension.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return " ".join(parts) or "0m"


def _gradebook(course: Path) -> Path:
    path = course.resolve() / GRADEBOOK
    if not path.is_file():
        raise ExtendError(f"{course}: no {GRADEBOOK} (nbgrader's gradebook) in this folder; give the course directory "
                          "with --course, after `nbgrader generate_assignment` or `nbgrader db assignment add` there")
    return path


def _duedate(gb: Gradebook, assignment: str, path: Path) -> datetime:
    try:
        row = gb.find_assignment(assignment)
    except MissingEntry:
        known = ", ".join(a.name for a in gb.assignments) or "none"
        raise ExtendError(f"assignment {assignment!r} is not in {path} (its assignments: {known})") from None
    if row.duedate is None:
        raise ExtendError(f"assignment {assignment!r} has no due date in {path}: nothing to extend; set one with "
                          f"`nbgrader db assignment add {assignment} --duedate=...`")
    return row.duedate


def set_extension(gradebook: Path, assignment: str, student: str, extension: timedelta | None) -> None:
    """Write ``student``'s ``extension`` (``None``: none) of ``assignment`` into nbgrader's ``gradebook``, creating
    the submission row nbgrader needs when there is none.

    Raises:
        ExtendError: no such assignment (or it has no due date), or no such student.
    """
    with warnings.catch_warnings(), open_gradebook(gradebook) as gb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission, autoflushing its new row
        _duedate(gb, assignment, gradebook)
        try:
            gb.find_student(student)
        except MissingEntry:
            raise ExtendError(f"student {student!r} is not in {gradebook}; check the id (the hub login), or add "
                              f"them first: `nbgrader db student add {student}`") from None
        gb.update_or_create_submission(assignment, student, extension=extension)


def grant(course: Path, assignment: str, student: str, *, by: timedelta | None = None, until: str | None = None,
          remove: bool = False) -> Extension:
    """Give ``student`` an extension of ``assignment`` in ``course``'s gradebook: ``by`` a duration, ``until`` a
    moment (nbgrader's date rules), or none (``remove``); returns it as written (read back).

    Raises:
        ExtendError: see :func:`set_extension`; ``until`` unreadable or not after the assignment's due date.
    """
    path = _gradebook(course)
    with open_gradebook(path) as gb:
        duedate = _duedate(gb, assignment, path)
    extension = by
    if until is not None:
        try:
            moment = parse_utc(until)
        except (ValueError, OverflowError):
            raise ExtendError(f"--until {until!r}: not a date and time; write e.g. '2026-12-16 17:00' (UTC) or "
                              "'2026-12-16 18:00 Europe/Berlin'") from None
        if moment <= duedate:
            raise ExtendError(f"--until {format_due(moment)} is not after the due date of {assignment!r}, "
                              f"{format_due(duedate)}")
        extension = moment - duedate
    if remove:
        extension = None
    set_extension(path, assignment, student, extension)
    (written,) = [e for e in list_extensions(course, assignment, every=True) if e.student == student]
    return written


def list_extensions(course: Path, assignment: str, *, every: bool = False) -> list[Extension]:
    """The students of ``assignment`` with an extension (``every``: every submission row), by student id."""
    path = _gradebook(course)
    with open_gradebook(path) as gb:
        duedate = _duedate(gb, assignment, path)
        rows = [(s.student.id, s.extension, s.duedate) for s in gb.assignment_submissions(assignment)]
    return sorted((Extension(student, extension, duedate, due) for student, extension, due in rows
                   if every or extension is not None), key=lambda e: e.student)
