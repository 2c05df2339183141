"""The class report: what the instructor reads after a batch (``ch11-grade report``, docs/batch.md).

    from ch11_autograder.report import build_report
    files = build_report(Path("course"))      # reports/ch11-report.html, .md, PNGs

Modules: :mod:`.data` (the numbers, from the gradebook, the verdict records in the
autograded notebooks and the batch's ledger and records: no plotting), :mod:`.figures`
(matplotlib, grayscale-readable, one takeaway each), :mod:`.render` (Markdown and
self-contained HTML from one list of blocks).
"""

from __future__ import annotations

from pathlib import Path

from ..paths import ASSIGNMENT
from .data import ClassReport, collect
from .render import ReportFiles, write_report

__all__ = ["ClassReport", "ReportFiles", "build_report", "collect"]


def build_report(course: Path, assignment: str = ASSIGNMENT) -> ReportFiles:
    """Collect the class's data from ``course`` and write the report into ``<course>/reports/``.

    Raises:
        FileNotFoundError: ``course`` has no gradebook.
        MissingEntry: the gradebook does not know ``assignment``.
    """
    return write_report(course, assignment, collect(course, assignment))
