"""Grades from the nbgrader gradebook to an LMS gradebook import file (Canvas, Moodle).

    ch11-grade lms-export --course DIR --roster canvas_roster.csv --out canvas_import.csv
    ch11-grade lms-export --format moodle --course DIR --roster moodle_grades.csv --out moodle_import.csv

The roster is the LMS's own gradebook export: Canvas's "Export Entire Gradebook"
(columns Student, ID, SIS User ID, SIS Login ID, Section, then one column per
assignment such as ``ch11 (123456)``, a "Points Possible" row under the header, and
read-only totals after the assignments), or Moodle's "Export grades to plain text
file" with the Username field added. The import file keeps the roster's students,
rows and identity columns in the roster's order, and one assignment column, named
as in the roster, filled from the gradebook (:mod:`.scores`). Students are matched
by login (Canvas: ``SIS Login ID``; Moodle: ``Username``), which on a JupyterHub
is the student's unix name and nbgrader student id (:mod:`.roster`, :mod:`.export`).

Nothing is dropped silently: a roster student without a submission gets an empty
cell (never a zero: the LMS shows "not submitted", not a grade), and every gradebook
student the roster does not list is reported as unmatched (the command exits 1 so a
script notices, after writing the file).
"""

from __future__ import annotations

from .export import ExportResult, export_grades
from .roster import FORMATS, LmsFormat, Roster, RosterError, read_roster
from .scores import StudentScore, read_scores

__all__ = [
    "FORMATS",
    "ExportResult",
    "LmsFormat",
    "Roster",
    "RosterError",
    "StudentScore",
    "export_grades",
    "read_roster",
    "read_scores",
]
