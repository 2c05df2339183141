"""From a mistake group to a draft catalogue entry (``ch11-grade catalogue draft``).

The instructor picks a group of ``reports/<assignment>-mistakes.json`` (its ``index`` or ``id``);
:func:`draft_entry` writes, in the format of ``exercises/<key>/wrong_answers.py``, an entry whose
function is the group's representative answer (the representative student's definition of the
function the group's first failing property checks, read from their autograded notebook, comments
dropped), whose ``loses`` are the group's cells, with placeholders for the name, title and advice,
and a header listing the properties it fails with the representative counterexample.

The function is student code: the instructor reads it before pasting it into the catalogue, whose
entries run in the grading process (docs/authoring.md, "From a mistake group to named feedback").
Every line of the header is escaped (``textsafe.escape``): a student id or a value cannot start a line
of code.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat

from ..course_layout import AUTOGRADED, student_folder
from ..exercises import exercise as _exercise
from ..textsafe import escape
from .mistakes import exercise_of, read_mistakes

__all__ = ["DraftError", "draft_entry", "pick_group"]

#: Largest autograded notebook read, bytes.
MAX_NOTEBOOK_BYTES = 64 * 1024**2


class DraftError(ValueError):
    """The draft cannot be written; the message says what is missing and where."""


def pick_group(path: Path, which: str) -> dict[str, Any]:
    """The group of ``path`` (a mistakes JSON) whose ``index`` (digits) or ``id`` is ``which``."""
    groups = read_mistakes(path)
    for group in groups:
        if str(group.get("index")) == which or group.get("id") == which:
            return group
    raise DraftError(f"{path}: no group with index or id {which!r} (it has {len(groups)} groups)")


def _function_of(exercise: str, grade_id: str, prop: str) -> str:
    """The graded function whose contract clauses the property checks."""
    contract = importlib.import_module(f"{_exercise(exercise).package}.contract")
    for clause in getattr(contract, "CONTRACT", ()):
        if f"{grade_id}/{prop}" in clause.checked_by:
            return str(clause.function)
    raise DraftError(f"{exercise}: no contract clause is checked by {grade_id}/{prop}")


def _answer(notebook: Path, function: str) -> tuple[str, ast.FunctionDef, list[str]]:
    """(answer cell's grade_id, the last top-level definition of ``function`` in a solution cell, the other
    functions that cell defines)."""
    if not notebook.is_file() or notebook.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise DraftError(f"{notebook}: no autograded notebook to read the answer from")
    nb = nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4)
    found: tuple[str, ast.FunctionDef, list[str]] | None = None
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or not meta.get("solution"):
            continue
        try:
            tree = ast.parse(cell.get("source", ""))
        except SyntaxError:
            continue
        defs = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        for node in defs:
            if node.name == function:
                found = (str(meta.get("grade_id", "")), node, [d.name for d in defs if d.name != function])
    if found is None:
        raise DraftError(f"{notebook}: no answer cell defines {function}()")
    return found


def draft_entry(course: Path, assignment: str, group: Mapping[str, Any]) -> str:
    """The draft catalogue entry for ``group`` (one element of the mistakes JSON), as Python source."""
    rep = group["representative"]
    notebooks = group.get("notebooks") or []
    keys = exercise_of()
    if not notebooks or notebooks[0] not in keys:
        raise DraftError(f"group {group.get('id')}: no notebook of this assignment's exercises")
    exercise = keys[notebooks[0]]
    function = _function_of(exercise, str(rep["cell"]), str(rep["property"]))
    student = str(rep["student"])
    path = student_folder(course, AUTOGRADED, student, assignment) / f"{notebooks[0]}.ipynb"
    answer_cell, node, helpers = _answer(path, function)
    node = ast.fix_missing_locations(node)
    node.decorator_list = []
    name = f"draft_{group['id']}"
    node.name = name
    cells = tuple(str(cell) for cell in group["cells"])
    header = [
        f"Draft catalogue entry from mistake group {group['id']} of reports/{assignment}-mistakes.json:",
        f"{len(group['students'])} student(s), the representative is {student}. Its properties fail:",
        *(f"  {p['cell']}: {p['property']} ({p['outcome']})" for p in group["properties"]),
        f"Representative counterexample ({rep['cell']}: {rep['property']}):",
        f"  input:    {rep['input']}",
        f"  expected: {rep['expected']}",
        f"  obtained: {rep['obtained']}",
        f"The function is {student}'s {function}() as graded, comments dropped. It is student code: read it",
        "before adding it. Then name it (name, title, advice), add it to "
        f"exercises/{exercise}/wrong_answers.py and run make release.",
    ]
    if helpers:
        header.append(f"The answer cell also defines {', '.join(helpers)}: an entry is one function, inline them.")
    if group.get("catalogue"):
        header.append(f"This group is already the catalogue entry {group['catalogue']}.")
    comment = "\n".join("# " + escape(line, limit=400) for line in header)
    decorator = (
        "@wrong_answer(\n"
        f"    exercise={exercise!r},\n"
        '    name="TODO_name",  # an identifier, unique in the exercise\n'
        '    title="TODO: the mistake as a student would name it",\n'
        '    advice="TODO: one or two sentences: what to reconsider, and how.",\n'
        f"    answer_cell={answer_cell!r},\n"
        f"    replaces={function!r},\n"
        f"    loses={cells!r},\n"
        ")\n"
    )
    return f"{comment}\n\n\n{decorator}{ast.unparse(node)}\n"
