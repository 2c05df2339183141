"""Which cells of a submission are code to run, which are tests, and what is hidden.

nbgrader marks cells in ``metadata.nbgrader``. For grading:

* an *autograded test cell* is a code cell with ``grade: true`` and
  ``solution: false``. Its outputs decide its score in nbgrader, so the
  grader replaces them with the trusted verdict; its source is never run by
  the verdict worker.
* *submission code* is every other code cell, in notebook order: the
  student's solution cells, instructor setup cells (locked cells are restored
  from the gradebook by ``OverwriteCells`` before we see them), manually
  graded code answers and any cells the student added.
* a *hidden test region* runs from a line containing ``BEGIN HIDDEN TESTS``
  to a line containing ``END HIDDEN TESTS`` (nbgrader's markers). In this
  course the region only holds a fail-closed ``raise``; the real tests are the
  suites. An unterminated region extends to the end of the cell.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = [
    "BEGIN_HIDDEN",
    "END_HIDDEN",
    "autograded_test_cells",
    "is_autograded_test",
    "strip_hidden_tests",
    "submission_code_cells",
]

BEGIN_HIDDEN = "BEGIN HIDDEN TESTS"
END_HIDDEN = "END HIDDEN TESTS"


def _nbgrader(cell: Any) -> dict[str, Any]:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_autograded_test(cell: Any) -> bool:
    """A code cell that nbgrader scores from its outputs: ``grade`` and not ``solution``."""
    meta = _nbgrader(cell)
    return cell.get("cell_type") == "code" and meta.get("grade") is True and not meta.get("solution", False)


def autograded_test_cells(nb: Any) -> list[tuple[int, Any]]:
    """``(index, cell)`` of every autograded test cell, in notebook order."""
    return [(i, cell) for i, cell in enumerate(nb.get("cells", [])) if is_autograded_test(cell)]


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def submission_code_cells(nb: Any, skip: Collection[str] = ()) -> list[str]:
    """Sources of every code cell except autograded test cells, in notebook order.

    Cells whose ``grade_id`` is in ``skip`` are left out too: the course skips
    its figure cells, which only draw (the notebook execution still runs them
    for the figure) and can take longer than everything else together.
    """
    return [
        _source(cell)
        for cell in nb.get("cells", [])
        if cell.get("cell_type") == "code"
        and not is_autograded_test(cell)
        and _nbgrader(cell).get("grade_id") not in skip
    ]


def strip_hidden_tests(source: str, begin: str = BEGIN_HIDDEN, end: str = END_HIDDEN) -> tuple[str, bool]:
    """``source`` without its hidden test regions (marker lines included), and whether any was found.

    Fail-closed: a region without its end marker is removed to the end of
    the source; an end marker without a begin is dropped.
    """
    kept: list[str] = []
    inside = False
    found = False
    for line in source.split("\n"):
        if begin in line:
            inside = True
            found = True
            continue
        if end in line:
            inside = False
            found = True
            continue
        if not inside:
            kept.append(line)
    return "\n".join(kept), found
