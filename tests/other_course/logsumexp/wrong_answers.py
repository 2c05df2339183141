"""The log-sum-exp exercise's catalogue: plausible wrong answers, each named, with advice.

Each entry is a whole ``logsumexp`` as a student might write it; the kill table
(``tests/autograder/exercises/test_suites.py``) requires each to lose points in the cells
its ``loses`` names, and only there.
"""

from __future__ import annotations

import math

import numpy as np
from ch11_autograder.exercises.catalogue import wrong_answer

from .contract import ANSWER_CELL, FUNCTION, TESTS

__all__: list[str] = []


@wrong_answer(
    exercise="logsumexp",
    name="exp_overflows",
    title="The exponentials are summed as they are",
    advice="exp(x) overflows to inf above 709 and underflows to 0 below -745. Subtract the largest value "
    "before exponentiating, and add it back after the logarithm.",
    answer_cell=ANSWER_CELL,
    replaces=FUNCTION,
    loses=(TESTS,),
)
def naive(x):
    values = np.asarray(x, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("x must be non-empty, with every value finite")
    with np.errstate(over="ignore", divide="ignore"):
        return float(np.log(np.sum(np.exp(values))))


@wrong_answer(
    exercise="logsumexp",
    name="shift_not_added_back",
    title="The shift is not added back",
    advice="log(sum(exp(x - m))) is log(sum(exp(x))) - m: after shifting by the largest value m, add m to the "
    "logarithm.",
    answer_cell=ANSWER_CELL,
    replaces=FUNCTION,
    loses=(TESTS,),
)
def unshifted(x):
    values = np.asarray(x, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("x must be non-empty, with every value finite")
    shift = float(np.max(values))
    return math.log(float(np.sum(np.exp(values - shift))))


@wrong_answer(
    exercise="logsumexp",
    name="shifts_x_in_place",
    title="The caller's array is shifted in place",
    advice="np.asarray returns the very array it is given, so values -= m changes the caller's x. Compute "
    "values - m as a new array.",
    answer_cell=ANSWER_CELL,
    replaces=FUNCTION,
    loses=(TESTS,),
)
def in_place(x):
    values = np.asarray(x, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("x must be non-empty, with every value finite")
    shift = float(np.max(values))
    values -= shift
    return shift + math.log(float(np.sum(np.exp(values))))
