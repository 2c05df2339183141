"""An exercise's notebook graded through a real worker, as the course grades it, for the exercise tests.

One definition for every exercise, found through its registry: the chapter's
(``ch11_autograder.exercises``) or another course's (``tests/other_course/``, :data:`ALL_EXERCISES`):
the source notebook from the exercise's builder, the released one by nbgrader's
``ClearSolutions``, answers appended to their cells as a student would paste them, the cells
run as the grader runs them (figure cells left out, each test cell's visible checks in
place) in an unsandboxed worker, and the exercise's registered suites run on them: the grading
``ch11_autograder.authoring.kill_table`` does for the catalogue's kill table, which this module uses.

Every call has :data:`CALL_TIMEOUT`, the course's own ``TrustedVerdicts.call_timeout``: an
answer the tests grade is given the time a student's is, no more. A catalogue entry's
verdicts are graded once per test session (:func:`graded_entry`), so the test every exercise
shares (tests/autograder/exercises/test_grading.py) and an exercise's own checks of the same
entry read one grading.
"""

from __future__ import annotations

import functools

import other_course
from ch11_autograder.authoring import kill_table
from ch11_autograder.exercises import EXERCISES, Exercise
from ch11_autograder.exercises.catalogue import WrongAnswer, catalogue
from ch11_autograder.trusted.submission_cells import WorkerCells
from ch11_autograder.trusted.verdicts import CellVerdict

__all__ = ["ALL_EXERCISES", "CALL_TIMEOUT", "cells", "entry", "grade", "graded_entry", "source_notebook", "suites"]

#: Every exercise the generic exercise tests grade: the chapter's, then the other course's, which
#: shows that the engine grades an exercise set other than the chapter's with nothing of it changed.
ALL_EXERCISES: tuple[Exercise, ...] = (*EXERCISES, *other_course.EXERCISES)

#: Seconds each call of a student function may take: the course's limit (nbgrader_config.py).
CALL_TIMEOUT = kill_table.course_call_timeout()

#: The exercise's source notebook (solutions and hidden tests in), a fresh copy each time.
source_notebook = kill_table.source_notebook
#: The cells the worker runs for the exercise's notebook (``append``, ``replace``, ``released``).
cells = kill_table.notebook_cells
#: The exercise's registered suites, one per autograded test cell, in notebook order.
suites = kill_table.suites


def grade(key: str, worker_cells: WorkerCells) -> dict[str, CellVerdict]:
    """grade_id -> verdict of each of the exercise's suites on ``worker_cells``, in a fresh worker."""
    return kill_table.grade(key, worker_cells, CALL_TIMEOUT)


def entry(key: str, name: str) -> WrongAnswer:
    """The exercise's catalogue entry called ``name``."""
    (found,) = [e for e in catalogue(key) if e.name == name]
    return found


@functools.cache
def graded_entry(key: str, name: str) -> dict[str, CellVerdict]:
    """The verdicts of the reference with catalogue entry ``name`` pasted after its answer cell."""
    return kill_table.entry_verdicts(key, entry(key, name), CALL_TIMEOUT)
