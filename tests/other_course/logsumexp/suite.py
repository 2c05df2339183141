"""Hidden suite of the log-sum-exp exercise: one test cell, ``logsumexp_tests``, four properties.

Each property is one point of the cell's four:

* ``matches_the_exact_value``: lists, tuples and float64 arrays of moderate values; a float within
  the docstring's tolerance of the reference;
* ``finite_where_exp_overflows_or_underflows``: values beyond 709 or all below -745, where the
  plain formula gives inf or -inf; the same promise;
* ``refuses_empty_or_non_finite_x``: empty inputs and inputs holding a nan or an infinity raise
  ValueError;
* ``leaves_x_alone_and_forgets_earlier_calls``: two calls with inputs of one length: each argument
  unchanged after its call, each result the reference's for that input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from ch11_autograder.api.suite import (
    CellSuite,
    Mismatch,
    Student,
    StudentError,
    hypothesis_property,
    register,
    roundtrip,
    wire_equal,
)
from ch11_autograder.exercises.catalogue import catalogue, misconception
from hypothesis import strategies as st

from other_course import solutions as ref

from .contract import FUNCTION, OVERFLOW, POINTS, TESTS, TOLERANCE, UNDERFLOW

__all__ = ["SUITE"]

WRONG = tuple(misconception(entry) for entry in catalogue("logsumexp"))
#: The input kinds the docstring accepts, each drawn by every property that checks an output promise.
KINDS = ("list", "tuple", "array")


def _as(kind: str, values: list[float]) -> Any:
    if kind == "list":
        return list(values)
    if kind == "tuple":
        return tuple(values)
    return np.array(values, dtype=np.float64)


def _inputs(elements: st.SearchStrategy[float], *, kinds: tuple[str, ...] = KINDS, size: int | None = None
            ) -> st.SearchStrategy[Any]:
    lengths = {"min_size": size, "max_size": size} if size else {"min_size": 1, "max_size": 12}
    return st.builds(_as, st.sampled_from(kinds), st.lists(elements, **lengths))


_MODERATE = st.floats(-50.0, 50.0, allow_nan=False)
_HIGH = st.one_of(st.floats(OVERFLOW + 0.5, 1e6), st.floats(1e6, 1e300))
_LOW = st.one_of(st.floats(-1e6, -UNDERFLOW - 0.5), st.floats(-1e300, -1e6))


def _check(inputs: dict[str, Any], expected: float, got: Any, note: str = "") -> None:
    """Raise :class:`Mismatch` unless ``got`` is a float within the tolerance of ``expected``."""
    if not isinstance(got, float):
        raise Mismatch(inputs, expected, got, note or f"{FUNCTION} must return a float.")
    if not (math.isfinite(got) and abs(got - expected) <= TOLERANCE * (1 + abs(expected))):
        raise Mismatch(inputs, expected, got, note or f"allowed error: {TOLERANCE:g} * (1 + |expected|).")


@hypothesis_property(
    "matches_the_exact_value",
    "logsumexp(x) is a float within 1e-12 * (1 + |log(sum(exp(x)))|) of that value, for lists, tuples and "
    "float64 arrays x.",
    given={"x": _inputs(_MODERATE)},
    max_examples=60,
    examples=[{"x": [0.0, 0.0]}, {"x": (1.5,)}, {"x": np.array([-3.0, 2.5, 0.25])}],
    misconceptions=WRONG,
)
def matches_the_exact_value(student: Student, x: Any) -> None:
    _check({"x": x}, ref.logsumexp(x), student.call(FUNCTION, x))


@hypothesis_property(
    "finite_where_exp_overflows_or_underflows",
    "logsumexp(x) stays finite and accurate when exp(x[i]) overflows (x[i] above 709) or every exp(x[i]) "
    "underflows (every x[i] below -745).",
    given={"x": st.one_of(_inputs(_HIGH), _inputs(_LOW), _inputs(st.one_of(_MODERATE, _HIGH)))},
    max_examples=40,
    examples=[{"x": [1000.0, 1000.0]}, {"x": (-1000.0, -1001.0)}, {"x": np.array([800.0, 0.0])}],
    misconceptions=WRONG,
)
def finite_where_exp_overflows_or_underflows(student: Student, x: Any) -> None:
    _check({"x": x}, ref.logsumexp(x), student.call(FUNCTION, x))


def _with_bad(values: list[float], bad: float, where: int) -> list[float]:
    return [*values[: where % (len(values) + 1)], bad, *values[where % (len(values) + 1):]]


_BAD = st.one_of(
    st.sampled_from([[], (), np.array([], dtype=np.float64)]),
    st.builds(_as, st.sampled_from(KINDS), st.builds(_with_bad, st.lists(_MODERATE, max_size=6),
                                                     st.sampled_from([math.nan, math.inf, -math.inf]),
                                                     st.integers(0, 6))),
)


@hypothesis_property(
    "refuses_empty_or_non_finite_x",
    "logsumexp(x) raises ValueError when x is empty or holds a nan or an infinity.",
    given={"x": _BAD},
    max_examples=30,
    examples=[{"x": []}, {"x": [1.0, math.nan]}, {"x": np.array([math.inf])}],
)
def refuses_empty_or_non_finite_x(student: Student, x: Any) -> None:
    try:
        got = student.call(FUNCTION, x)
    except StudentError as error:
        if error.type == "ValueError":
            return
        got = f"raised {error.type}"
    raise Mismatch({"x": x}, "raises ValueError", got, "see the Raises section of the docstring.")


@hypothesis_property(
    "leaves_x_alone_and_forgets_earlier_calls",
    "logsumexp(x) leaves x unchanged, and returns for x what it returns when called with x alone.",
    given={"pair": st.integers(1, 6).flatmap(
        lambda n: st.tuples(_inputs(_MODERATE, kinds=("array", "list"), size=n),
                            _inputs(_MODERATE, kinds=("array", "list"), size=n)))},
    max_examples=30,
    examples=[{"pair": (np.array([1.0, 2.0]), [3.0, -4.0])}],
)
def leaves_x_alone_and_forgets_earlier_calls(student: Student, pair: tuple[Any, Any]) -> None:
    first, second = pair
    for x, note in ((first, ""), (second, f"called after logsumexp({_shown(first)}).")):
        watched = student.call_watch(FUNCTION, x)
        if not wire_equal(roundtrip(x), watched.args[0]):
            raise Mismatch({"x": x}, roundtrip(x), watched.args[0], "x after the call: logsumexp must leave it "
                           "unchanged.")
        _check({"x": x}, ref.logsumexp(x), watched.value, note)


def _shown(x: Any) -> str:
    return repr(x.tolist() if isinstance(x, np.ndarray) else x)


SUITE = register(CellSuite(TESTS, points=POINTS[TESTS], properties=[
    matches_the_exact_value,
    finite_where_exp_overflows_or_underflows,
    refuses_empty_or_non_finite_x,
    leaves_x_alone_and_forgets_earlier_calls,
]))
