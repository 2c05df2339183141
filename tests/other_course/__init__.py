"""A course other than the chapter's, graded by the same engine: its registry of exercises.

It proves that the engine serves more than chapter 11: one exercise of another kind (a
numerically stable log-sum-exp, ``logsumexp/``), written against the suite-author facade
(``ch11_autograder.api``) and the exercise kit (``ch11_autograder.exercises``: ``cells``,
``catalogue``, ``witness``, ``registry``) as docs/authoring.md describes, with no engine file
changed to add it. Its reference solution is :mod:`other_course.solutions`.

The generic exercise tests (``tests/autograder/exercises/``) grade it beside the chapter's
exercises; ``tests/autograder/batch/test_other_course.py`` grades a small class of it with
``ch11-grade batch`` in the sandbox, with ``CH11_EXERCISES=other_course``.

Importing this package imports only the contracts, as the chapter's registry does.
"""

from __future__ import annotations

from ch11_autograder.exercises import Exercise, registry

from .logsumexp import contract as _logsumexp

__all__ = ["EXERCISES"]

#: Every exercise of this course, in presentation order.
EXERCISES = registry((
    Exercise("logsumexp", _logsumexp.NOTEBOOK, home=__name__, reference=f"{__name__}.solutions"),
))
