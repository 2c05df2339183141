"""The checks of the ``fd_estimate`` cell: its bits at float32 and rounded inputs, overflow, warnings,
refusals, defaults and independent calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import strategies as st

from ....api.suite import Call, CellSuite, Mismatch, Property, Student, hypothesis_property, roundtrip, wire_equal
from ..contract import ESTIMATE_TESTS, GRADED_HIGH, GRADED_K_MAX, GRADED_LOW, POINTS
from .shared import (
    _BAD_CHOICE,
    _BAD_REAL_F32,
    _F22,
    _FLOAT32_POINT,
    _G,
    _INT_FORMS,
    _K,
    _SCHEME,
    _WRT,
    T,
    V,
    _bad_arguments,
    _call_sequence,
    _check_calls,
    _defaults_calls,
    _fixed_property,
    _is_float32_scalar,
    _misconceptions,
    _probing,
    _raises_property,
    _real_in_form,
    _replayed,
    same_bits,
)


def estimate_difference(want: Any, got: Any) -> str:
    """Why ``got`` is not the binary32 estimate ``want`` (an ``np.float32``); ``""`` when it is."""
    if not _is_float32_scalar(got):
        kind = f"numpy {got.dtype.name}" if isinstance(got, np.generic) else type(got).__name__
        return f"the estimate must be an np.float32 scalar, got a {kind}: is a float64 value mixed in?"
    if np.isnan(want):
        return "" if np.isnan(got) else (
            "the contract's float32 operations give nan here (the applied step fl(v+h) - (other point) is 0, "
            "or L overflows float32 at both points)"
        )
    if np.isnan(got):
        return "the applied step is not 0 here, so the estimate is a number, not nan"
    if got.tobytes() != want.tobytes():
        if np.isinf(want) or np.isinf(got):
            return "L overflows float32 at one of the points here: the contract's float32 operations give " + (
                f"{float(want)!r}" if np.isinf(want) else "a finite value"
            )
        return "the binary32 bits differ: follow the docstring's operations one float32 operation at a time"
    return ""


def _same_estimate(want: Any, got: Any) -> bool:
    # A misconception's output need not be float32 (a float64 leak): then it must match exactly.
    return estimate_difference(want, got) == "" if _is_float32_scalar(want) else wire_equal(want, got)


# --------------------------------------------------------------------------- checks


def _estimate_inputs(x: Any, y: Any, k: int, scheme: str, wrt: str) -> dict[str, Any]:
    return {"x": x, "y": y, "k": k, "scheme": scheme, "wrt": wrt}


def _estimate_call(x: Any, y: Any, k: int, scheme: str, wrt: str) -> Call:
    return Call("fd_estimate", (x, y, k, scheme, wrt))


def _check_estimate(student: Student, x: Any, y: Any, k: int, scheme: ref.Scheme, wrt: ref.Variable) -> None:
    _judge_estimate(student.call("fd_estimate", x, y, k, scheme, wrt), x, y, k, scheme, wrt)


def _judge_estimate(got: Any, x: Any, y: Any, k: int, scheme: ref.Scheme, wrt: ref.Variable) -> None:
    """Raise :class:`Mismatch` unless ``got`` is the estimate's bits for these arguments."""
    want = roundtrip(ref.fd_estimate(x, y, k, scheme, wrt))
    problem = estimate_difference(want, got)
    if problem:
        raise Mismatch(_estimate_inputs(x, y, k, scheme, wrt), want, got, problem)


_ANY_POINT = st.floats(GRADED_LOW, GRADED_HIGH)


# Where the applied step is not the nominal one. Every plausible way to get the step "almost"
# right (divide by h or 2h, double the forward step for the central one, take the distance of
# the points in float64, multiply by a reciprocal) agrees with the contract wherever
# fl(v + h) and fl(v - h) are exact and h_eff is a power of two: on uniform points each differs
# in 0.03% to 3.5% of cases (measured, see ``ex2.suite``'s docstring). They differ where
#
# * v + h crosses up into the next binade and v's last bit is odd (fl(v + h) rounds away);
# * h is an ulp of v or less (ties and steps that vanish, v's last bit odd or even);
# * 3h > v, central (fl(v + h) - fl(v - h) itself rounds, and is no power of two).
#
# The strategy below draws from these families three times out of four.
_BINADE_TOPS = (1.0, 2.0, 4.0)


def _with_last_bit(v: float, odd: bool) -> float:
    """The float32 ``v`` with its last significand bit set (``odd``) or cleared."""
    bits = np.float32(v).view(np.int32)
    return float(np.int32((bits & ~1) | int(odd)).view(np.float32))


@st.composite
def _rounding_steps(draw: st.DrawFn) -> dict[str, Any]:
    """``fd_estimate`` arguments at float32 points in [0.5, 4], k in 1..26, mostly where a step rounds."""
    scheme, wrt = draw(_SCHEME), draw(_WRT)
    other = draw(_FLOAT32_POINT)
    family = draw(st.sampled_from(("crossing", "sub_ulp", "wide", "uniform")))
    if family == "crossing":
        # v = top - j ulp with j odd and j ulp <= h: v + h lands in the coarser binade above.
        top = draw(st.sampled_from(_BINADE_TOPS))
        k = draw(_K)
        ulp = top * 2.0**-24
        most = max(1, int(2.0**-k / ulp))
        v = top - (2 * draw(st.integers(0, (most - 1) // 2)) + 1) * ulp
    elif family == "sub_ulp":
        # h = 2 ulp, ulp, ulp/2 (a tie) or ulp/4, at either parity and at binade ends.
        v = draw(st.one_of(_FLOAT32_POINT, st.sampled_from((0.5, 1.0, 2.0, 4.0))))
        if v < GRADED_HIGH:
            v = _with_last_bit(v, draw(st.booleans()))
        ulp_k = -math.frexp(float(np.spacing(np.float32(v))))[1] + 1
        k = min(GRADED_K_MAX, max(1, ulp_k + draw(st.integers(-1, 2))))
    elif family == "wide":
        # Central steps wider than v/3: the applied step fl(v + h) - fl(v - h) itself rounds.
        scheme = "central"
        k = draw(st.integers(1, 2))
        v = draw(st.floats(GRADED_LOW, 3 * 2.0**-k, width=32, exclude_max=True))
    else:
        k, v = draw(_K), draw(_FLOAT32_POINT)
    x, y = (v, other) if wrt == "x" else (other, v)
    return _estimate_inputs(x, y, k, scheme, wrt)


#: The forms of an integer k: Python int, np.int64, np.int32.
_K_FORM = st.sampled_from(_INT_FORMS)
_BAD_K = (
    (True, T), (np.bool_(False), T), (1.0, T), (1.5, T), (np.float64(5.0), T), ("5", T), (None, T),
    (-1, V), (150, V), (np.int64(150), V), (2**100, V),
)


# --------------------------------------------------------------------------- fd_estimate

# At float32 inputs "perturbs the unrounded input" computes what a nominal-step answer computes,
# so the nominal-step entries are tried first there; at inputs that are not float32 values it is
# the likelier explanation and is tried first.
_NOMINAL_FIRST = ["estimate_in_float64", "scheme_ignored", "forward_nominal_step", "central_nominal_2h"]
_ESTIMATE_WRONG = _misconceptions("fd_estimate", first=_NOMINAL_FIRST)
_ESTIMATE_WRONG_ROUNDED = _misconceptions("fd_estimate", first=["perturbs_unrounded_input", *_NOMINAL_FIRST])
_ESTIMATE_NAMES = ("x", "y", "k", "scheme", "wrt")
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))

estimate_visible = _fixed_property(
    "estimate_visible_cases",
    "The notebook's visible cases: float32 result, 144.0 at (2, 3), nan where the step vanishes, "
    "the rounded step at x = 2.2, central and forward quotients in y, inf where L(x + h, y) overflows.",
    [
        _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 23, "forward", "x"),
        _estimate_inputs(2.2, 3.0, 23, "forward", "x"),
        _estimate_inputs(_G[0], _G[1], 7, "central", "y"),
        _estimate_inputs(_G[0], _G[1], 11, "forward", "y"),
        _estimate_inputs(1.0, 6e12, 1, "forward", "x"),
    ],
    _estimate_call,
    _judge_estimate,
    _ESTIMATE_WRONG,
    _same_estimate,
)


@hypothesis_property(
    "estimate_bits_at_float32_points",
    "fd_estimate has the contract's binary32 bits (and dtype float32) at float32 points in [0.5, 4], "
    f"k = 1..{GRADED_K_MAX}, both schemes, both inputs, mostly where a step rounds or vanishes.",
    given={"case": _rounding_steps()},
    max_examples=200,
    examples=[
        {"case": _estimate_inputs(_F22, 3.0, 23, "central", "x")},
        {"case": _estimate_inputs(3.0, _F22, 23, "central", "y")},
        {"case": _estimate_inputs(3.0, _F22, 23, "forward", "y")},
        {"case": _estimate_inputs(_BELOW_ONE, 2.9, 24, "central", "x")},
        {"case": _estimate_inputs(2.9, 0.75, 2, "central", "y")},
    ],
    misconceptions=_ESTIMATE_WRONG,
    matches=_same_estimate,
)
def estimate_bits_at_float32_points(student: Student, case: dict[str, Any]) -> None:
    _check_estimate(student, **case)


estimate_bits_at_float32_points = _probing(estimate_bits_at_float32_points, lambda case: dict(case))


@hypothesis_property(
    "estimate_bits_at_rounded_inputs",
    "fd_estimate rounds x and y to float32 before perturbing: right bits and an np.float32 at inputs in [0.5, 4] "
    "that are not float32 values, at Python and numpy floats and ints, and with k a numpy integer.",
    given={
        "x": _real_in_form(_ANY_POINT),
        "y": _real_in_form(_ANY_POINT),
        "k": _K,
        "k_form": _K_FORM,
        "scheme": _SCHEME,
        "wrt": _WRT,
    },
    max_examples=80,
    examples=[
        {**_estimate_inputs(2.1, 2.9, 24, "forward", "x"), "k_form": int},
        {**_estimate_inputs(2.1, 2.9, 24, "central", "y"), "k_form": int},
        {**_estimate_inputs(np.float64(2.1), 3, 12, "central", "x"), "k_form": np.int64},
        # The ends of the range [0, 149]: the nominal step 1 and the subnormal 2**-149.
        {**_estimate_inputs(2.1, np.float32(2.9), 149, "forward", "x"), "k_form": np.int64},
        {**_estimate_inputs(3, 2.9, 0, "forward", "y"), "k_form": int},
    ],
    misconceptions=_ESTIMATE_WRONG_ROUNDED,
    matches=_same_estimate,
)
def estimate_bits_at_rounded_inputs(
    student: Student, x: Any, y: Any, k: int, k_form: Callable[[int], Any], scheme: ref.Scheme, wrt: ref.Variable
) -> None:
    _check_estimate(student, x, y, k_form(k), scheme, wrt)


estimate_bits_at_rounded_inputs = _probing(
    estimate_bits_at_rounded_inputs,
    lambda x, y, k, k_form, scheme, wrt: _estimate_inputs(x, y, k_form(k), scheme, wrt),
)


#: Points where L overflows float32 at one evaluation point or both (L(x, y) is about x**2 y**3, and
#: float32 ends at 3.4e38): the contract's float32 operations give inf, -inf or nan there.
_OVERFLOW_CASES = (
    _estimate_inputs(1.0, 6e12, 1, "forward", "x"),
    _estimate_inputs(1.0, 6e12, 1, "central", "x"),
    _estimate_inputs(-1.0, 6e12, 1, "central", "x"),
    _estimate_inputs(1.0, 1e13, 1, "forward", "x"),
    _estimate_inputs(1e19, 1.0, 1, "forward", "y"),
    _estimate_inputs(1e19, 1.0, 2, "central", "y"),
)

estimate_overflow = _fixed_property(
    "estimate_where_L_overflows",
    "Where L overflows float32 at an evaluation point (x = 1, y = 6e12; x = 1e19, y = 1), fd_estimate gives what "
    "the contract's float32 operations give: inf, -inf, or nan where both points overflow.",
    _OVERFLOW_CASES,
    _estimate_call,
    _judge_estimate,
    _ESTIMATE_WRONG,
    _same_estimate,
)

#: Where numpy would warn unless told not to: a step that vanishes (0 / 0), and overflow.
_QUIET_CASES = (
    _estimate_inputs(2.0, 3.0, 23, "forward", "x"),
    _estimate_inputs(3.0, 2.0, 24, "central", "y"),
    *_OVERFLOW_CASES,
)


def _check_no_warnings(student: Student) -> None:
    replies = student.batch([Call("fd_estimate", tuple(case.values()), watch=True) for case in _QUIET_CASES])
    for case in _QUIET_CASES:
        watched = replies.take()
        if watched.warnings:
            note = (
                "fd_estimate must emit no warning, also where the step vanishes or L overflows "
                "(numpy's floating-point warnings can be silenced around the computation with np.errstate)"
            )
            raise Mismatch(case, [], list(watched.warnings), note)


estimate_quiet = Property(
    "estimate_emits_no_warnings",
    "fd_estimate emits no warning where the applied step is 0 (x = 2, k = 23) or L overflows float32.",
    _check_no_warnings,
)


_ESTIMATE_VALID = {"x": 2.5, "y": 3.0, "k": 5, "scheme": "central", "wrt": "y"}
estimate_rejects = _raises_property(
    "estimate_rejects_bad_arguments",
    "fd_estimate raises what its docstring says for a bad x, y, k, scheme or wrt (each alone: bools, strings, None, "
    "nan, a float32 overflow, k out of [0, 149]), and accepts k = 0, 149 and numpy integers.",
    "fd_estimate",
    _ESTIMATE_NAMES,
    [
        *_bad_arguments(
            _ESTIMATE_VALID,
            {"x": _BAD_REAL_F32, "y": _BAD_REAL_F32, "k": _BAD_K, "scheme": _BAD_CHOICE, "wrt": _BAD_CHOICE},
            _ESTIMATE_NAMES,
        ),
        ((2.5, 3.0, 0, "central", "y"), {}, None),
        ((2.5, 3.0, 0, "forward", "x"), {}, None),
        ((2.5, 3.0, 149, "forward", "x"), {}, None),
        ((2.5, 3.0, np.int64(12), "central", "x"), {}, None),
        ((2.5, 3.0, np.int32(12), "forward", "y"), {}, None),
    ],
    _same_estimate,
    _ESTIMATE_WRONG,
)

#: How a call leaves out the defaulted arguments: (positional names, keyword names) passed.
_ESTIMATE_FORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "no scheme, no wrt": (("x", "y", "k"), ()),
    "no wrt": (("x", "y", "k", "scheme"), ()),
    "no scheme": (("x", "y", "k"), ("wrt",)),
    "all by keyword": ((), _ESTIMATE_NAMES),
}


#: The documented defaults, passed explicitly to get the student's own answer to compare with.
_ESTIMATE_DEFAULTS = MappingProxyType({"scheme": "forward", "wrt": "x"})


@hypothesis_property(
    "estimate_defaults",
    "fd_estimate called without scheme and/or wrt gives the bits of your own fd_estimate called with "
    "scheme='forward', wrt='x'; every argument works by keyword.",
    given={"case": _rounding_steps(), "form": st.sampled_from(tuple(_ESTIMATE_FORMS))},
    max_examples=40,
    examples=[{"case": _estimate_inputs(_G[0], _G[1], 12, "central", "y"), "form": f} for f in _ESTIMATE_FORMS],
    misconceptions=_ESTIMATE_WRONG,
    matches=_same_estimate,
)
def estimate_defaults(student: Student, case: dict[str, Any], form: str) -> None:
    inputs, calls = _defaults_calls("fd_estimate", _ESTIMATE_NAMES, _ESTIMATE_DEFAULTS, case, _ESTIMATE_FORMS[form])
    replies = student.batch(calls)
    got, own = replies.take(), replies.take()
    if not same_bits(own, got):
        explicit = "scheme='forward', wrt='x'" if form != "all by keyword" else "x, y, k by position"
        note = f"called with {form}, your fd_estimate answers otherwise than with {explicit} given explicitly"
        raise Mismatch(inputs, own, got, note)


@hypothesis_property(
    "estimate_calls_independent",
    "fd_estimate gives the same bits for the same arguments whatever was called before (repeats, any order).",
    given={"calls": _call_sequence(_rounding_steps())},
    max_examples=25,
    examples=[
        {
            "calls": [
                _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
                _estimate_inputs(_G[0], _G[1], 12, "forward", "y"),
                _estimate_inputs(_G[0], _G[1], 7, "central", "y"),
                _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
            ]
        }
    ],
    misconceptions=_replayed(_ESTIMATE_WRONG),
    matches=_same_estimate,
)
def estimate_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "fd_estimate", calls)


ESTIMATE_SUITE = CellSuite(
    ESTIMATE_TESTS,
    points=POINTS[ESTIMATE_TESTS],
    properties=[
        estimate_visible,
        estimate_bits_at_float32_points,
        estimate_bits_at_rounded_inputs,
        estimate_overflow,
        estimate_quiet,
        estimate_rejects,
        estimate_defaults,
        estimate_calls_independent,
    ],
)
