"""An exercise's notebook graded through a real worker, as the course grades it, for the exercise tests.

One definition for every exercise, found through its registry: the chapter's
(``ch11_autograder.exercises``) or another course's (``tests/other_course/``, :data:`ALL_EXERCISES`):
the source notebook from the exercise's builder, the released one by nbgrader's
``ClearSolutions``, answers appended to their cells as a student would paste them, the cells
run as the grader runs them (figure cells left out, each test cell's visible checks in
place) in an unsandboxed worker, and the exercise's registered suites run on them.

Every call has :data:`CALL_TIMEOUT`, the course's own ``TrustedVerdicts.call_timeout``: an
answer the tests grade is given the time a student's is, no more. A catalogue entry's
verdicts are graded once per test session (:func:`graded_entry`), so the test every exercise
shares (tests/autograder/exercises/test_grading.py) and an exercise's own checks of the same
entry read one grading.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Mapping

import other_course
from ch11_autograder.authoring.build import build_notebook
from ch11_autograder.exercises import EXERCISES, Exercise, exercise
from ch11_autograder.exercises.catalogue import WrongAnswer, catalogue
from ch11_autograder.trusted.grading import grade_suites
from ch11_autograder.trusted.registry import get_suite
from ch11_autograder.trusted.submission_cells import WorkerCells, autograded_test_cells, worker_cells
from ch11_autograder.trusted.suite import CellSuite
from ch11_autograder.trusted.verdicts import CellVerdict
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions
from traitlets.config.loader import PyFileConfigLoader

from support.paths import COURSE_CONFIG

__all__ = ["ALL_EXERCISES", "CALL_TIMEOUT", "cells", "entry", "grade", "graded_entry", "source_notebook", "suites"]

#: Every exercise the generic exercise tests grade: the chapter's, then the other course's, which
#: shows that the engine grades an exercise set other than the chapter's with nothing of it changed.
ALL_EXERCISES: tuple[Exercise, ...] = (*EXERCISES, *other_course.EXERCISES)


def _course_call_timeout() -> float:
    config = PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()
    return float(config.TrustedVerdicts.call_timeout)


#: Seconds each call of a student function may take: the course's limit (nbgrader_config.py).
CALL_TIMEOUT = _course_call_timeout()


@functools.cache
def _built(key: str) -> NotebookNode:
    return build_notebook(exercise(key).cells())


def source_notebook(key: str) -> NotebookNode:
    """The exercise's source notebook (solutions and hidden tests in), a fresh copy each time."""
    return copy.deepcopy(_built(key))


def suites(key: str) -> list[CellSuite]:
    """The exercise's registered suites, one per autograded test cell, in notebook order."""
    importlib.import_module(exercise(key).suite_module)
    return [get_suite(cell.metadata.nbgrader.grade_id) for _, cell in autograded_test_cells(_built(key))]


def cells(
    key: str,
    append: Mapping[str, str] | None = None,
    *,
    replace: Mapping[str, str] | None = None,
    released: bool = False,
) -> WorkerCells:
    """The cells the worker runs for the exercise's notebook.

    Args:
        append: cell id -> source pasted at the end of that cell (after the reference's own,
            so its definitions win), as a student adds to an answer.
        replace: cell id -> the cell's whole source.
        released: start from the released notebook (stubs, no hidden tests' solutions).
    """
    nb = source_notebook(key)
    if released:
        nb, _ = ClearSolutions().preprocess(nb, {})
    for cell in nb.cells:
        if replace and cell.id in replace:
            cell.source = replace[cell.id]
        if append and cell.id in append:
            cell.source += "\n\n\n" + append[cell.id]
    return worker_cells(nb, skip=set(exercise(key).worker_skip_cells))


def grade(key: str, worker_cells: WorkerCells) -> dict[str, CellVerdict]:
    """grade_id -> verdict of each of the exercise's suites on ``worker_cells``, in a fresh worker."""
    launcher = UnsandboxedLauncher(quiet=True)
    with WorkerSession(list(worker_cells.sources), launcher, call_timeout=CALL_TIMEOUT) as session:
        return grade_suites(worker_cells, suites(key), session)


def entry(key: str, name: str) -> WrongAnswer:
    """The exercise's catalogue entry called ``name``."""
    (found,) = [e for e in catalogue(key) if e.name == name]
    return found


@functools.cache
def graded_entry(key: str, name: str) -> dict[str, CellVerdict]:
    """The verdicts of the reference with catalogue entry ``name`` pasted after its answer cell."""
    wrong = entry(key, name)
    return grade(key, cells(key, {wrong.answer_cell: wrong.source}))
