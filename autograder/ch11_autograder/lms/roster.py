"""Reading an LMS gradebook export (the roster) and finding its login and assignment columns.

A roster is read as the LMS wrote it: UTF-8 with or without a byte-order mark, a header
row, and (Canvas) rows about the columns right under it, before the first student: the
"Points Possible" row, whose first cell is ``Points Possible`` with leading spaces, and,
where an assignment has a manual posting policy, a row with an empty first cell that says
``Manual Posting`` under it. They are kept, in order, as the preamble. Rows that name no login (Canvas's "Student, Test"
has an empty ``SIS Login ID``) are kept in the output as they are and reported.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FORMATS", "LmsFormat", "Roster", "RosterError", "find_assignment_column", "read_roster"]


class RosterError(ValueError):
    """The roster cannot be used; the message names the file, the row or column, and what is wrong."""


@dataclass(frozen=True)
class LmsFormat:
    """What one LMS's gradebook export and import look like.

    Attributes:
        name: ``canvas`` or ``moodle``.
        login_column: the roster column matched against nbgrader student ids (default of ``--login-column``).
        identity_columns: the columns that identify a student in the import file, in order. With
            ``all_required`` every one must be in the roster; otherwise those present are kept.
        all_required: see ``identity_columns``.
    """

    name: str
    login_column: str
    identity_columns: tuple[str, ...]
    all_required: bool


#: Canvas's import takes the identity columns of its own export; Moodle's import maps any one
#: identifier column (the login here) to a user field, so only the columns present are kept.
FORMATS: dict[str, LmsFormat] = {
    "canvas": LmsFormat("canvas", "SIS Login ID", ("Student", "ID", "SIS User ID", "SIS Login ID", "Section"), True),
    "moodle": LmsFormat("moodle", "Username", ("First name", "Last name", "ID number", "Institution", "Department",
                                               "Email address", "Username"), False),
}

POINTS_POSSIBLE = "Points Possible"


@dataclass
class Roster:
    """An LMS export as read: header, the optional "Points Possible" row, the student rows.

    ``rows`` are dicts keyed by header name, each with the 1-based line number it came from
    in ``lines`` (same order). ``preamble`` holds the rows about the columns between the
    header and the first student, the "Points Possible" row (also ``points_row``) among them.
    """

    path: Path
    header: list[str]
    rows: list[dict[str, str]]
    lines: list[int]
    points_row: dict[str, str] | None = None
    preamble: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_roster(path: Path) -> Roster:
    """Read ``path`` as an LMS gradebook export.

    Raises:
        RosterError: the file cannot be read as UTF-8 CSV, has no header, repeats a column
            name, or a row has more cells than the header.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot read the roster ({type(exc).__name__}: {exc})") from None
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader)
    except StopIteration:
        raise RosterError(f"{path}: empty file, expected the LMS's gradebook export with a header row") from None
    except csv.Error as exc:
        raise RosterError(f"{path}, line 1: not CSV ({exc})") from None
    header = [h.strip() for h in header]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise RosterError(f"{path}, line 1: column names repeated: {', '.join(map(repr, repeated))}")
    roster = Roster(path, header, [], [])
    try:
        for number, cells in enumerate(reader, start=2):
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(header):
                raise RosterError(f"{path}, line {number}: {len(cells)} cells but the header has {len(header)}")
            row = dict(zip(header, [*cells, *[""] * (len(header) - len(cells))], strict=True))
            if not roster.rows and (cells[0].strip() in ("", POINTS_POSSIBLE)):
                roster.preamble.append(row)
                if cells[0].strip() == POINTS_POSSIBLE and roster.points_row is None:
                    roster.points_row = row
                continue
            roster.rows.append(row)
            roster.lines.append(number)
    except csv.Error as exc:
        raise RosterError(f"{path}, line {reader.line_num}: not CSV ({exc})") from None
    return roster


_CANVAS_ID = re.compile(r"^(?P<name>.*?) \(\d+\)$")  # "ch11 (123456)"
_MOODLE_ITEM = re.compile(r"^[^:]+: (?P<name>.*?) \([^()]*\)$")  # "Assignment: ch11 (Real)"


def _assignment_name(column: str) -> str:
    for pattern in (_MOODLE_ITEM, _CANVAS_ID):
        match = pattern.match(column)
        if match:
            return match["name"].strip()
    return column.strip()


def find_assignment_column(roster: Roster, assignment: str, column: str | None = None) -> str:
    """The roster column the assignment's scores go in.

    ``column`` names it exactly; otherwise the one column whose name is ``assignment``,
    ``assignment (<Canvas id>)`` or ``<item type>: assignment (<Moodle grade type>)``.

    Raises:
        RosterError: ``column`` is not a column, or no column or several columns name the assignment.
    """
    if column is not None:
        if column not in roster.header:
            raise RosterError(f"{roster.path}: no column {column!r}; its columns are: "
                              + ", ".join(map(repr, roster.header)))
        return column
    found = [h for h in roster.header if _assignment_name(h) == assignment]
    if len(found) == 1:
        return found[0]
    if not found:
        raise RosterError(f"{roster.path}: no column for assignment {assignment!r} (create the assignment in the LMS "
                          "and export the gradebook again, or name the column with --column); its columns are: "
                          + ", ".join(map(repr, roster.header)))
    raise RosterError(f"{roster.path}: several columns name assignment {assignment!r}: "
                      + ", ".join(map(repr, found)) + "; choose one with --column")
