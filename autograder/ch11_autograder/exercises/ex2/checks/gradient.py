"""The checks of the ``exact_gradient`` cell: values, refusals, the partial as a fraction, independent calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import strategies as st

from ....api.suite import (
    Call,
    CellSuite,
    Mismatch,
    Property,
    Student,
    Unencodable,
    hypothesis_property,
    roundtrip,
    wire_equal,
)
from ..contract import GRADIENT_TESTS, POINTS, TOLERANCE_EXPONENT
from .shared import (
    _BAD_CHOICE,
    _BAD_REAL,
    _G,
    TOL,
    RaisesCase,
    _bad_arguments,
    _call_inputs,
    _call_sequence,
    _check_calls,
    _fixed_property,
    _misconceptions,
    _raises_property,
    _real_in_form,
    _replayed,
)


def gradient_difference(want: np.ndarray, got: Any) -> str:
    """Why ``got`` is not ``exact_gradient``'s answer ``want`` within the tolerance; ``""`` when it is."""
    if not isinstance(got, np.ndarray) or got.dtype != np.float64 or got.shape != (2,):
        return "return a float64 numpy array of shape (2,): (dL/dx, dL/dy)"
    for i, name in enumerate(("dL/dx", "dL/dy")):
        if not abs(float(got[i]) - float(want[i])) <= TOL * abs(float(want[i])):
            return f"{name} is off by more than a relative 2**-{TOLERANCE_EXPONENT}"
    return ""


def _same_gradient(want: Any, got: Any) -> bool:
    return isinstance(want, np.ndarray) and gradient_difference(want, got) == ""


def _gradient_call(x: Any, y: Any) -> Call:
    return Call("exact_gradient", (x, y))


def _check_gradient(student: Student, x: Any, y: Any) -> None:
    _judge_gradient(student.call("exact_gradient", x, y), x, y)


def _judge_gradient(got: Any, x: Any, y: Any) -> None:
    """Raise :class:`Mismatch` unless ``got`` is the gradient at ``(x, y)`` within the tolerance."""
    want = roundtrip(ref.exact_gradient(x, y))
    problem = gradient_difference(want, got)
    if problem:
        raise Mismatch({"x": x, "y": y}, want, got, problem)


def _raises_check(
    fn: str,
    names: Sequence[str],
    cases: Sequence[RaisesCase],
    same: Callable[[Any, Any], bool],
) -> Callable[[Student], None]:
    """The check of :func:`_raises_property`, to combine several functions in one property."""
    return _raises_property("_", "_", fn, names, cases, same).check


def _all_of(name: str, description: str, *checks: Callable[[Student], None], like: Property) -> Property:
    """A property that runs ``checks`` in order (the first failing one is reported), named and matched as ``like``."""

    def run(student: Student) -> None:
        for check in checks:
            check(student)

    return Property(name, description, run, like.misconceptions, like.matches)


# --------------------------------------------------------------------------- exact_gradient

_GRADIENT_WRONG = _misconceptions("exact_gradient")
_GRADIENT_POINT = _real_in_form(st.one_of(st.floats(0.25, 8.0), st.floats(0.25, 8.0, width=32)))

gradient_visible = _fixed_property(
    "gradient_visible_cases",
    "exact_gradient(2, 3) is the float64 array [144, 132], and the gradient at GENERIC_POINT is right.",
    [{"x": 2.0, "y": 3.0}, {"x": _G[0], "y": _G[1]}],
    _gradient_call,
    _judge_gradient,
    _GRADIENT_WRONG,
    _same_gradient,
)


@hypothesis_property(
    "gradient_matches_exact",
    f"exact_gradient(x, y) is (dL/dx, dL/dy) at the exact inputs given, within a relative 2**-{TOLERANCE_EXPONENT}, "
    "a float64 array of shape (2,) whether x and y are Python or numpy floats or ints, for 0.25 <= x, y <= 8.",
    given={"x": _GRADIENT_POINT, "y": _GRADIENT_POINT},
    max_examples=60,
    examples=[{"x": 2.1, "y": 2.9}, {"x": 2, "y": np.int64(3)}, {"x": np.float32(2.1), "y": np.int32(3)}],
    misconceptions=_GRADIENT_WRONG,
    matches=_same_gradient,
)
def gradient_matches_exact(student: Student, x: Any, y: Any) -> None:
    _check_gradient(student, x, y)


_GRADIENT_OK = ((1e39, 2.0, None), (np.float64(2.5), np.int64(3), None), (np.float32(2.1), 3, None))
_GRADIENT_RAISES = [
    *_bad_arguments({"x": 2.0, "y": 3.0}, {"x": _BAD_REAL, "y": _BAD_REAL}, ("x", "y")),
    *(((x, y), {}, None) for x, y, _ in _GRADIENT_OK),
]
gradient_rejects = _all_of(
    "gradient_rejects_bad_arguments",
    "exact_gradient and exact_partial raise TypeError for an x or y that is no real number (bools too), "
    "ValueError for a nan or infinite one or an unknown wrt, and accept every finite real.",
    _raises_check("exact_gradient", ("x", "y"), _GRADIENT_RAISES, _same_gradient),
    _raises_check(
        "exact_partial",
        ("x", "y", "wrt"),
        _bad_arguments(
            {"x": 2.0, "y": 3.0, "wrt": "y"}, {"x": _BAD_REAL, "y": _BAD_REAL, "wrt": _BAD_CHOICE}, ("x", "y", "wrt")
        ),
        wire_equal,
    ),
    like=_raises_property(
        "_", "_", "exact_gradient", ("x", "y"), (), _same_gradient, _GRADIENT_WRONG
    ),
)


def _partial_is_a_fraction(student: Student) -> None:
    # A Fraction has no wire form: the worker's refusal to send one, naming its type, is the proof of type.
    # Its value reaches the grader only through exact_gradient and the sweep's `exact`.
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((2.0, 3.0), {}),
        ((_G[0], _G[1]), {}),
        ((_G[0], _G[1], "x"), {}),
        ((_G[0], _G[1]), {"wrt": "y"}),
        ((np.float32(0.7), 3), {"wrt": "x"}),
        # Ints for x too, Python and numpy (the contract: any real number).
        ((2, 3.0), {"wrt": "y"}),
        ((np.int64(2), np.float64(3.0)), {}),
        # Every accepted kind of each argument (issue 35): a numpy float64 x, a numpy integer y.
        ((np.float64(2.5), np.int64(3)), {"wrt": "y"}),
    ]
    # Every right answer is a refusal to send (an error reply), so all go in the one message.
    replies = student.batch([Call("exact_partial", args, kwargs) for args, kwargs in cases], stop_on_error=False)
    for args, kwargs in cases:
        inputs = _call_inputs(args, kwargs, ("x", "y", "wrt"))
        try:
            got = replies.take()
        except Unencodable as exc:
            if exc.type == "fractions.Fraction":  # the returned value's type, as the worker names it
                continue
            raise Mismatch(inputs, "a Fraction", f"a value of type {exc.type}",
                           "exact_partial returns the exact derivative as a fractions.Fraction") from None
        raise Mismatch(inputs, "a Fraction", got, "exact_partial returns the exact derivative as a fractions.Fraction")
    # The default's value: a Fraction reaches the grader by type alone, so which partial a call
    # without wrt computes is read where it is declared. A declared choice other than 'x' is the
    # other partial (or an error, which the calls above already report); a sentinel object resolved
    # in the body may well be right and is not judged.
    declared = student.defaults("exact_partial").get("wrt", "x")
    if isinstance(declared, str) and declared != "x":
        raise Mismatch(
            {"x": 2.0, "y": 3.0}, "wrt='x'", f"wrt={declared!r}",
            "exact_partial(x, y) is dL/dx: the default of wrt is 'x', as the signature declares it.",
        )


partial_fraction = Property(
    "partial_returns_a_fraction",
    "exact_partial(x, y) and exact_partial(x, y, wrt) return a fractions.Fraction (wrt defaults to 'x').",
    _partial_is_a_fraction,
    _misconceptions("exact_partial"),
    wire_equal,
)


@hypothesis_property(
    "gradient_calls_independent",
    "exact_gradient gives the same answer for the same point whatever was called before (repeats, any order).",
    given={"calls": _call_sequence(st.builds(lambda x, y: {"x": x, "y": y}, _GRADIENT_POINT, _GRADIENT_POINT))},
    max_examples=20,
    examples=[
        {
            "calls": [
                {"x": 2.1, "y": 2.9},
                {"x": np.float32(2.1), "y": np.float32(2.9)},
                {"x": 2.1, "y": 2.9},
                {"x": 2.9, "y": 2.1},
            ]
        }
    ],
    misconceptions=_replayed(_GRADIENT_WRONG),
    matches=_same_gradient,
)
def gradient_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "exact_gradient", calls)


GRADIENT_SUITE = CellSuite(
    GRADIENT_TESTS,
    points=POINTS[GRADIENT_TESTS],
    properties=[
        gradient_visible,
        gradient_matches_exact,
        gradient_rejects,
        partial_fraction,
        gradient_calls_independent,
    ],
)
