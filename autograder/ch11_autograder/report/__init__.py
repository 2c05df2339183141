"""The class report: what the instructor reads after a batch (``ch11-grade report``, docs/batch.md).

    from ch11_autograder.report import build_report
    files = build_report(Path("course"))      # reports/ch11-report.html, .md, PNGs

Modules: :mod:`.data` (the numbers, from the gradebook, the verdict records in the
autograded notebooks and the batch's ledger and records: no plotting), :mod:`.figures`
(matplotlib, grayscale-readable, one takeaway each), :mod:`.render` (Markdown and
self-contained HTML from one list of blocks).

The package imports them when first asked for (:func:`build_report`, or the names below read from the
package): :mod:`.data` imports nbgrader, seconds of CPU, which a process needing one module of the report
does not pay (a similarity pass's fingerprinting process, started fresh, imports :mod:`.fingerprints` only).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import ASSIGNMENT

if TYPE_CHECKING:
    from .data import ClassReport, collect
    from .render import ReportFiles

__all__ = ["ClassReport", "ReportFiles", "build_report", "collect"]


def build_report(course: Path, assignment: str = ASSIGNMENT) -> ReportFiles:
    """Collect the class's data from ``course`` and write the report into ``<course>/reports/``.

    Raises:
        FileNotFoundError: ``course`` has no gradebook.
        MissingEntry: the gradebook does not know ``assignment``.
    """
    from .data import collect
    from .render import write_report

    return write_report(course, assignment, collect(course, assignment))


def __getattr__(name: str) -> Any:
    """``ClassReport``, ``collect`` (:mod:`.data`) and ``ReportFiles`` (:mod:`.render`), imported when read."""
    if name in ("ClassReport", "collect"):
        from . import data

        return getattr(data, name)
    if name == "ReportFiles":
        from . import render

        return render.ReportFiles
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
