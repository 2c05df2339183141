"""The graded students' autograded notebooks, each read once for the whole class report.

A notebook serves two readers: its test cells' verdict records (:mod:`.data`) and its answer cells'
sources (:mod:`.similarity`). Reading it is most of what either costs per notebook, so the report reads
``autograded/<student>/<assignment>/<notebook>.ipynb`` once, as plain JSON (nbgrader wrote it, after
LimitOutput; no validation, which the report does not need), and hands the same JSON to both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..course_layout import AUTOGRADED, student_folder

__all__ = ["MAX_NOTEBOOK_BYTES", "autograded_notebooks", "read_notebook"]

#: Largest autograded notebook read, bytes.
MAX_NOTEBOOK_BYTES = 64 * 1024**2


def read_notebook(path: Path) -> Any | None:
    """The JSON of the notebook at ``path``, or ``None`` when it is no file, larger than
    :data:`MAX_NOTEBOOK_BYTES`, or not UTF-8 JSON. What the JSON holds is for the caller to check."""
    if not path.is_file() or path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def autograded_notebooks(course: Path, assignment: str, students: Iterable[str],
                         notebooks: Iterable[str]) -> Iterator[tuple[str, str, Any | None]]:
    """``(student, notebook, JSON or None)`` of every autograded notebook of ``students`` (in their order) named in
    ``notebooks`` (sorted) that exists, read by :func:`read_notebook`; one at a time, never all held."""
    names = sorted(set(notebooks))
    for student in students:
        folder = student_folder(course, AUTOGRADED, student, assignment)
        for notebook in names:
            path = folder / f"{notebook}.ipynb"
            if path.exists():
                yield student, notebook, read_notebook(path)
