"""Build submissions from the released notebooks: complete, blank, partial, or with a named wrong answer.

These are the demo class and the fixtures of the project's tests. A
submission is the released notebook with some answer cells filled in, as a
student would: the solution region of the source notebook (markers removed),
optionally followed by a catalogue entry that redefines one function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbformat.notebooknode import NotebookNode

if TYPE_CHECKING:  # the catalogue imports the suite API (hypothesis); the release needs neither
    from ..exercises.catalogue import WrongAnswer

__all__ = ["answer_sources", "fill", "strip_solution_markers"]

_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)

#: What a diligent student writes in a manually graded cell of the demo class.
DEMO_PROSE = "My answer: see the derivation and the figure above; the reasoning follows the chapter's section 11.3."


def strip_solution_markers(source: str) -> str:
    """The source notebook's cell as a student who solved it would have it."""
    return _MARKER.sub("", source)


def answer_sources(source_notebook: NotebookNode) -> dict[str, str]:
    """grade_id -> solved source, for every answer cell (code or manual) of a source notebook."""
    out = {}
    for cell in source_notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            text = strip_solution_markers(cell.source)
            out[meta["grade_id"]] = DEMO_PROSE if cell.cell_type == "markdown" else text
    return out


def fill(
    released: NotebookNode,
    answers: Mapping[str, str],
    *,
    wrong: Iterable[WrongAnswer] = (),
) -> NotebookNode:
    """A copy of ``released`` with the answer cells named in ``answers`` replaced.

    Each entry of ``wrong`` is appended to its answer cell (which must be
    among ``answers``), so the wrong definition overrides the right one, as
    when a student rewrites a function below the first attempt.

    Raises:
        KeyError: an entry of ``wrong`` targets a cell that is not answered.
    """
    nb = nbformat.from_dict(nbformat.reads(nbformat.writes(released), as_version=4))
    extra: dict[str, list[str]] = {}
    for entry in wrong:
        if entry.answer_cell not in answers:
            raise KeyError(f"{entry.name} targets {entry.answer_cell}, which this submission does not answer")
        extra.setdefault(entry.answer_cell, []).append(entry.source)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = "\n\n\n".join([answers[grade_id].rstrip(), *extra.get(grade_id, [])])
    return nb


def read(path: Path) -> NotebookNode:
    return nbformat.read(path, as_version=4)
