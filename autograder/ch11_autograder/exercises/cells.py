"""Constructors for nbgrader cells, one per role a cell can play.

Every cell gets a stable id (nbformat 4.5) and the nbgrader metadata of its
role (schema version 3), so that the generated notebooks are byte-stable and
nbgrader's checksums do not change between builds.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence

import nbformat
from nbformat.notebooknode import NotebookNode

__all__ = [
    "HIDDEN_MARKER",
    "answer",
    "manual_answer",
    "prose",
    "readonly_code",
    "solution_from",
    "tests",
]

#: The hidden part of every autograded test cell. Grading happens outside the
#: kernel; if these cells are ever run by plain nbgrader (without the trusted
#: preprocessors) they fail, so they can never award marks by themselves.
HIDDEN_MARKER = (
    "### BEGIN HIDDEN TESTS\n"
    'raise AssertionError("hidden checks run outside this notebook, by the course grader")\n'
    "### END HIDDEN TESTS"
)


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def prose(cell_id: str, text: str) -> NotebookNode:
    """A read-only markdown cell (exercise statement, explanation)."""
    cell = nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip())
    cell.id = cell_id
    cell.metadata = _meta(cell_id, grade=False, solution=False, locked=True)
    return cell


def readonly_code(cell_id: str, source: str) -> NotebookNode:
    """A read-only code cell (imports, provided helpers, record types)."""
    cell = nbformat.v4.new_code_cell(textwrap.dedent(source).strip())
    cell.id = cell_id
    cell.metadata = _meta(cell_id, grade=False, solution=False, locked=True)
    return cell


def answer(grade_id: str, source: str) -> NotebookNode:
    """An autograded answer cell; ``source`` carries its own SOLUTION markers."""
    cell = nbformat.v4.new_code_cell(textwrap.dedent(source).strip())
    cell.id = grade_id
    cell.metadata = _meta(grade_id, grade=False, solution=True, locked=False)
    return cell


def tests(grade_id: str, points: float, visible: str) -> NotebookNode:
    """An autograded test cell: visible checks for the student, then the hidden marker.

    The cell's verdict is computed by the trusted suite registered under
    ``grade_id``; the visible checks are a courtesy to the student and are
    repeated, with many more inputs, by that suite.
    """
    source = textwrap.dedent(visible).strip() + "\n\n" + HIDDEN_MARKER
    cell = nbformat.v4.new_code_cell(source)
    cell.id = grade_id
    cell.metadata = _meta(grade_id, grade=True, solution=False, locked=True, points=points)
    return cell


def manual_answer(grade_id: str, points: float, rubric: str) -> NotebookNode:
    """A manually graded markdown answer; the rubric is the hidden solution text.

    nbgrader replaces the whole cell with "YOUR ANSWER HERE" in the released
    notebook, so the rubric stays in source/ and in formgrader's source view.
    """
    cell = nbformat.v4.new_markdown_cell(
        "### BEGIN SOLUTION\n**Rubric for graders.**\n\n" + textwrap.dedent(rubric).strip() + "\n### END SOLUTION"
    )
    cell.id = grade_id
    cell.metadata = _meta(grade_id, grade=True, solution=True, locked=False, points=points)
    return cell


def _split_function(func: Callable) -> tuple[str, str]:
    """Split a function's source into (signature + docstring, body)."""
    source = textwrap.dedent(inspect.getsource(func))
    tree = ast.parse(source)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError(f"{func.__qualname__} is not a plain function")
    first = node.body[0]
    has_doc = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    if not has_doc or len(node.body) < 2:
        raise ValueError(f"{func.__qualname__} needs a docstring (the student's contract) and a body")
    lines = source.splitlines()
    cut = first.end_lineno
    return "\n".join(lines[:cut]), "\n".join(lines[cut:])


def solution_from(functions: Sequence[Callable], helpers: Sequence[Callable | type] = ()) -> str:
    """The answer-cell source for ``functions``, cut from the reference library.

    Each function keeps its signature and docstring (the stub's contract);
    its body becomes the solution region. ``helpers`` (private functions or
    classes the bodies use) are placed whole inside a solution region first,
    so the released stub shows only the public contract.
    """
    parts: list[str] = []
    if helpers:
        helper_src = "\n\n\n".join(textwrap.dedent(inspect.getsource(h)).strip() for h in helpers)
        parts.append("### BEGIN SOLUTION\n" + helper_src + "\n### END SOLUTION")
    for func in functions:
        head, body = _split_function(func)
        code_lines = [line for line in body.splitlines() if line.strip()]
        indent = code_lines[0][: len(code_lines[0]) - len(code_lines[0].lstrip())]
        parts.append(f"{head}\n{indent}### BEGIN SOLUTION\n{body}\n{indent}### END SOLUTION")
    return "\n\n\n".join(parts)
