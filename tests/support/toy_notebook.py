"""The toy assignment's one task as an in-memory notebook, and its suite registered for one test.

Shared by the tests that run the preprocessors one at a time (``tests/autograder/test_preprocessors.py``,
``test_ahead.py``): a solution cell defining ``double`` and a locked test cell (2 points) whose
hidden region would fail if it ever ran.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import nbformat
import pytest
from ch11_autograder.trusted import registry
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from support.toy_course import TOY

__all__ = ["HIDDEN", "meta", "notebook", "toy_suite"]

HIDDEN = '### BEGIN HIDDEN TESTS\n# secret-5f1c\nraise AssertionError("graded outside")\n### END HIDDEN TESTS'


def meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
         points: float | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                         "solution": solution}
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


def notebook(solution_code: str, *, test_outputs: Sequence[dict[str, Any]] = (),
             grade_id: str = "double_tests") -> Any:
    """Markdown, the solution cell (``double_impl``), the test cell ``grade_id`` with ``test_outputs``."""
    test = new_code_cell(f"assert double(3) == 6\n{HIDDEN}", metadata=meta(grade_id, grade=True, locked=True, points=2))
    test.outputs = [nbformat.from_dict(o) for o in test_outputs]
    return new_notebook(
        cells=[
            new_markdown_cell("# Toy"),
            new_code_cell(solution_code, metadata=meta("double_impl", solution=True)),
            test,
        ]
    )


@pytest.fixture
def toy_suite() -> Iterator[Any]:
    """The toy suite registered for one test; other suites in the registry are left alone."""
    path = str((TOY / "toy_suite.py").resolve())
    registry.unregister("double_tests")
    # Suite modules load once per path: forget this one so that loading registers it again.
    for name, module in list(sys.modules.items()):
        if name.startswith("_ch11_suite_") and getattr(module, "__file__", None) == path:
            del sys.modules[name]
    registry.load_suite_modules([path])
    yield registry.get_suite("double_tests")
    registry.unregister("double_tests")
