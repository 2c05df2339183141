"""Filling the roster's assignment column from the gradebook and writing the LMS import file."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from .roster import FORMATS, Roster, RosterError, find_assignment_column, read_roster
from .scores import StudentScore, read_scores

__all__ = ["ExportResult", "export_grades", "format_points"]


@dataclass
class ExportResult:
    """What an export wrote and what it could not place.

    Attributes:
        out: the import file written.
        column: the roster's assignment column that was filled.
        scored: roster login -> the score written.
        no_submission: roster logins whose cell was left empty (no submission in the gradebook,
            or not in the gradebook at all), in roster order.
        unmatched: gradebook students that no roster row names (not in the file), with their scores.
        without_login: roster line numbers of rows without a login (kept in the file, cell empty).
        pending_manual: roster login -> cells still waiting for a manual grade (scored 0 so far).
        warnings: anything else the instructor must read before uploading.
    """

    out: Path
    column: str
    scored: dict[str, float] = field(default_factory=dict)
    no_submission: list[str] = field(default_factory=list)
    unmatched: list[StudentScore] = field(default_factory=list)
    without_login: list[int] = field(default_factory=list)
    pending_manual: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def format_points(points: float) -> str:
    """Points as the LMS shows them: at most two decimals, no trailing zeros (``48.5``, ``65``)."""
    text = f"{points:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _identity_columns(roster: Roster, fmt_name: str, login_column: str) -> list[str]:
    fmt = FORMATS[fmt_name]
    if fmt.all_required:
        missing = [c for c in fmt.identity_columns if c not in roster.header]
        if missing:
            raise RosterError(f"{roster.path}: not a {fmt.name} gradebook export: columns missing: "
                              + ", ".join(map(repr, missing)))
        columns = list(fmt.identity_columns)
    else:
        columns = [c for c in roster.header if c in fmt.identity_columns]
    if login_column not in roster.header:
        raise RosterError(f"{roster.path}: no login column {login_column!r} (the students' hub logins; choose "
                          "another with --login-column); its columns are: " + ", ".join(map(repr, roster.header)))
    if login_column not in columns:
        columns.append(login_column)
    return columns


def export_grades(
    course: Path,
    roster_path: Path,
    out: Path,
    *,
    assignment: str,
    fmt: str = "canvas",
    column: str | None = None,
    login_column: str | None = None,
) -> ExportResult:
    """Write ``out``: the roster's rows and identity columns with the assignment's scores from ``course``.

    Logins match nbgrader student ids case-insensitively (hub logins are lower case; LMS
    exports keep whatever case the SIS has). The file is written even when some gradebook
    students are unmatched; the result lists them.

    Raises:
        RosterError: unusable roster (see :func:`.roster.read_roster`), missing columns, or two
            roster rows with one login.
        FileNotFoundError, KeyError: from :func:`.scores.read_scores`.
        ValueError: ``fmt`` is not one of :data:`.roster.FORMATS`.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown LMS format {fmt!r}; one of {', '.join(FORMATS)}")
    login_column = login_column or FORMATS[fmt].login_column
    roster = read_roster(roster_path)
    target = find_assignment_column(roster, assignment, column)
    columns = [*_identity_columns(roster, fmt, login_column), target]
    scores = {student.lower(): score for student, score in read_scores(course, assignment).items()}
    result = ExportResult(out, target)

    seen: dict[str, int] = {}
    rows: list[list[str]] = []
    for row, line in zip(roster.rows, roster.lines, strict=True):
        login = row[login_column].strip()
        key = login.lower()
        cell = ""
        if not login:
            result.without_login.append(line)
        elif key in seen:
            raise RosterError(f"{roster.path}, lines {seen[key]} and {line}: two rows for login {login!r}")
        else:
            seen[key] = line
            found = scores.get(key)
            if found is None or not found.submitted or found.score is None:
                result.no_submission.append(login)
            else:
                cell = format_points(found.score)
                result.scored[login] = found.score
                if found.needs_manual_grade:
                    result.pending_manual[login] = found.needs_manual_grade
        rows.append([*(row[c] for c in columns[:-1]), cell])
    result.unmatched = [s for key, s in sorted(scores.items()) if key not in seen]

    if roster.points_row is not None:
        possible = roster.points_row.get(target, "").strip()
        max_score = next(iter(scores.values())).max_score if scores else None
        if possible and max_score is not None:
            try:
                differs = abs(float(possible) - max_score) > 1e-9
            except ValueError:
                differs = True
            if differs:
                result.warnings.append(f"the LMS gives {target!r} {possible} points possible, the gradebook "
                                       f"{format_points(max_score)}: the LMS will show these scores out of {possible}")

    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows([row.get(c, "") for c in columns] for row in roster.preamble)
        writer.writerows(rows)
    return result
