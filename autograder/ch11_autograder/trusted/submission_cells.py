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
* the *visible checks* of an autograded test cell are its source with the
  hidden region removed: the asserts a student sees and runs. The verdict
  worker runs them verbatim, in notebook order between the submission's code
  cells (:func:`worker_cells`), so a submission that fails its own notebook's
  checks can never score full marks in that cell.
* a *hidden test region* runs from a line containing ``BEGIN HIDDEN TESTS``
  to a line containing ``END HIDDEN TESTS`` (nbgrader's markers). In this
  course the region only holds a fail-closed ``raise``; the real tests are the
  suites. An unterminated region extends to the end of the cell.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "BEGIN_HIDDEN",
    "END_HIDDEN",
    "WorkerCells",
    "autograded_test_cells",
    "graded_code_cells",
    "is_autograded_test",
    "strip_hidden_tests",
    "submission_code_cells",
    "worker_cells",
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
    return [source for _grade_id, source in graded_code_cells(nb, skip)]


def graded_code_cells(nb: Any, skip: Collection[str] = ()) -> list[tuple[str, str]]:
    """:func:`submission_code_cells` with each cell's ``grade_id`` (``""`` for a cell without one):
    the code the verdict worker runs, in its order, so that a tool reading the graded definition of a
    function (the last one this order runs) reads what grading ran."""
    out = []
    for cell in nb.get("cells", []):
        grade_id = _nbgrader(cell).get("grade_id")
        if cell.get("cell_type") == "code" and not is_autograded_test(cell) and grade_id not in skip:
            out.append((grade_id if isinstance(grade_id, str) else "", _source(cell)))
    return out


@dataclass(frozen=True)
class WorkerCells:
    """The cells the verdict worker executes, in notebook order.

    Attributes:
        sources: submission code cells and visible checks, interleaved as in the notebook.
        checks: grade_id of an autograded test cell -> index in ``sources`` of its visible
            checks (test cells with nothing but blank or comment lines outside the hidden
            region have none).
    """

    sources: tuple[str, ...]
    checks: Mapping[str, int]

    def visible_outcome(self, grade_id: str, report: Sequence[Any]) -> Any:
        """How the worker ran ``grade_id``'s visible checks (a ``CellOutcome`` of ``report``), or ``None``.

        ``None`` when the cell has no visible checks or ``report`` (the worker's cell report,
        one outcome per source) does not reach them, e.g. because the worker never started.
        """
        index = self.checks.get(grade_id)
        return report[index] if index is not None and index < len(report) else None


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in source.splitlines())


def worker_cells(nb: Any, skip: Collection[str] = ()) -> WorkerCells:
    """:func:`submission_code_cells`, with each autograded test cell's visible checks where it stands.

    The visible checks are the cell's source with hidden regions removed
    (:func:`strip_hidden_tests`), run as written, as the notebook runs them.
    """
    sources: list[str] = []
    checks: dict[str, int] = {}
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        grade_id = _nbgrader(cell).get("grade_id")
        if is_autograded_test(cell):
            visible, _ = strip_hidden_tests(_source(cell))
            if _has_code(visible) and isinstance(grade_id, str):
                checks[grade_id] = len(sources)
                sources.append(visible)
        elif grade_id not in skip:
            sources.append(_source(cell))
    return WorkerCells(tuple(sources), MappingProxyType(checks))


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
