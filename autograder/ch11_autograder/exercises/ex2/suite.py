"""Hidden suites of Exercise 2: a binary32 finite-difference check of the opening gradient.

Three autograded cells of ``ex2_finite_difference.ipynb``:

* ``ex2_exact_gradient_tests`` (2 points): ``exact_gradient`` against the
  exact gradient, to a relative ``2**-TOLERANCE_EXPONENT`` per component;
* ``ex2_fd_estimate_tests`` (4 points): ``fd_estimate`` against the
  reference bit for bit (the harness fixes the operation order inside ``L``
  and the contract fixes it outside, so binary32 leaves no freedom), dtype
  ``float32``;
* ``ex2_fd_sweep_tests`` (4 points): ``fd_sweep`` field by field (see
  :func:`sweep_difference`).

Tolerances (one number, ``TOL = 2**-44``, also stated in the notebook):

* The three errors of a sweep are exact values rounded once in the reference.
  A student may compute them in float64 instead of fractions. Evaluating the
  quotient ``Q`` over two float32 points in float64 costs at most about
  ``8 u64 max|L| / h_eff`` (four rounded operations per ``L``, two values;
  ``u64 = 2**-53``); the float64 derivative adds ``~u64 |dL|``. So each error
  may differ from the reference by ``TOL * (max|L|/h_eff + |dL|)``; over 150
  random points x 4 schemes x k = 1..26, plain float64 stayed below
  ``2**-51.3`` times that scale (``2**7`` inside the bound). A quotient
  evaluated in float32 is off by about ``2**-24`` times the scale (measured:
  every sweep over k = 1..24 has a k where it is off by more than
  ``2**-23.9`` of it), ``2**20`` times the allowance, so "truncation computed
  in float32" cannot pass. This absolute allowance is relative to the
  *rounding* scale, so at tiny truncation errors (central, large k) float64
  cannot resolve them and the suite does not ask it to.
* ``exact`` (the derivative in the sweep) and ``exact_gradient``: relative
  ``TOL``; the chapter's float64 reverse sweep is within ``2**-51.9``
  (measured), a float32 one is ``~2**-24`` off.
* Everything else (``x, y, ks, h, h_eff, estimate, best_k``, the estimate of
  ``fd_estimate``) is compared exactly: bits and dtypes.

Inputs stay where the contract says the applied step is exact (Sterbenz):
``0.5 <= v <= 4`` and, for the central scheme, ``3 h <= v``. There the exact
``Q`` is the same whether divided by the points' exact distance or by the
float32 ``h_eff``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import assume
from hypothesis import strategies as st
from trainable_harness import opening_objective_exact

from ...protocol import Record, roundtrip
from ...trusted.registry import register
from ...trusted.suite import CellSuite, Misconception, Mismatch, Property, Student, hypothesis_property
from ...trusted.worker_client import StudentError
from ..catalogue import catalogue, in_order, misconception
from .contract import (
    ESTIMATE_TESTS,
    GRADED_HIGH,
    GRADED_K_MAX,
    GRADED_LOW,
    GRADIENT_TESTS,
    POINTS,
    SWEEP_TESTS,
    TOLERANCE_EXPONENT,
)

__all__ = [
    "ESTIMATE_SUITE",
    "GRADIENT_SUITE",
    "SWEEP_SUITE",
    "TOL",
    "estimate_difference",
    "gradient_difference",
    "sweep_difference",
]

TOL = 2.0**-TOLERANCE_EXPONENT

_G = ref.GENERIC_POINT
_FIELDS = tuple(ref.FDSweep.__dataclass_fields__)
_FLOAT32_FIELDS = ("h", "h_eff", "estimate")
_ERROR_FIELDS = ("total_error", "truncation_error", "rounding_error")


def _misconceptions(replaces: str, first: Sequence[str] = ()) -> tuple[Misconception, ...]:
    """Catalogue entries for ``replaces`` as misconceptions, entries named in ``first`` tried first."""
    entries = in_order("ex2", (e for e in catalogue("ex2") if e.replaces == replaces), first)
    return tuple(misconception(e) for e in entries)


# --------------------------------------------------------------------------- comparisons


def _is_float32_scalar(value: Any) -> bool:
    return isinstance(value, np.generic) and value.dtype == np.float32


def estimate_difference(want: Any, got: Any) -> str:
    """Why ``got`` is not the binary32 estimate ``want`` (an ``np.float32``); ``""`` when it is."""
    if not _is_float32_scalar(got):
        kind = f"numpy {got.dtype.name}" if isinstance(got, np.generic) else type(got).__name__
        return f"the estimate must be an np.float32 scalar, got a {kind}: is a float64 value mixed in?"
    if np.isnan(want):
        return "" if np.isnan(got) else "the applied step fl(v+h) - (other point) is 0 here: the contract returns nan"
    if np.isnan(got):
        return "the applied step is not 0 here, so the estimate is a number, not nan"
    if got.tobytes() != want.tobytes():
        return "the binary32 bits differ: follow the docstring's operations one float32 operation at a time"
    return ""


def _same_estimate(want: Any, got: Any) -> bool:
    return _is_float32_scalar(want) and estimate_difference(want, got) == ""


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


def _error_scales(want: Record) -> list[float]:
    """Per k: ``max|L|`` over the two evaluation points over ``h_eff``, plus ``|dL|`` (nan where no step)."""
    scales = []
    exact = abs(float(want["exact"]))
    for h in want["h"]:
        upper, lower, h_eff = ref._points(want["x"], want["y"], h, want["scheme"], want["wrt"])
        if h_eff == 0:
            scales.append(math.nan)
            continue
        size = max(abs(opening_objective_exact(*upper)), abs(opening_objective_exact(*lower)))
        scales.append(float(size / Fraction(float(h_eff))) + exact)
    return scales


def _at(ks: np.ndarray, i: int) -> str:
    return f"at k = {int(ks[i])} (position {i})"


def _array_difference(name: str, want: np.ndarray, got: Any, ks: np.ndarray, dtype: str) -> str:
    if not isinstance(got, np.ndarray) or got.dtype.name != dtype or got.shape != want.shape:
        shown = f"{got.dtype.name} array of shape {got.shape}" if isinstance(got, np.ndarray) else type(got).__name__
        return f"{name} must be a {dtype} array of shape {want.shape}, got a {shown}"
    return ""


def sweep_difference(want: Any, got: Any) -> tuple[str, str]:
    """The first field where ``got`` breaks the sweep contract, and why; ``("", "")`` when it holds.

    ``want`` is the reference sweep as it crosses the wire (a ``Record``).
    ``x, y, scheme, wrt, ks, h, h_eff, estimate`` and ``best_k`` must be
    equal (arrays: same dtype, shape and bits; ``nan`` where ``nan``); the
    errors within ``TOL`` times their scale (:func:`_error_scales`), ``nan``
    exactly where the reference has ``nan``; ``exact`` within a relative
    ``TOL``. ``best_k`` may be a Python int or a numpy integer.
    """
    if not isinstance(got, Record) or got.type != "FDSweep":
        kind = f"record of type {got.type!r}" if isinstance(got, Record) else type(got).__name__
        return "", f"return an FDSweep (the record provided in the notebook), got a {kind}"
    if set(got.fields) != set(_FIELDS):
        return "", f"an FDSweep has the fields {', '.join(_FIELDS)}"
    for name in ("x", "y"):
        if not (_is_float32_scalar(got[name]) and got[name].tobytes() == want[name].tobytes()):
            return name, f"{name} is the float32 point actually used: np.float32({float(want[name])!r})"
    for name in ("scheme", "wrt"):
        if not (isinstance(got[name], str) and got[name] == want[name]):
            return name, f"{name} records the choice made: {want[name]!r}"
    ks = want["ks"]
    problem = _array_difference("ks", ks, got["ks"], ks, "int64")
    if problem:
        return "ks", problem
    if not np.array_equal(got["ks"], ks):
        return "ks", "ks lists the exponents in the order given, duplicates kept"
    for name in _FLOAT32_FIELDS:
        problem = _array_difference(name, want[name], got[name], ks, "float32")
        if problem:
            return name, problem
        for i, (w, g) in enumerate(zip(want[name], got[name], strict=True)):
            if not (w.tobytes() == g.tobytes() or (np.isnan(w) and np.isnan(g))):
                hint = " (the sweep records what fd_estimate returns: check fd_estimate first)"
                return name, f"{name} {_at(ks, i)}: expected {w!r}, got {g!r}" + (hint if name == "estimate" else "")
    exact = got["exact"]
    if isinstance(exact, bool) or not isinstance(exact, float | np.float64):
        return "exact", f"exact is the derivative as a float64 (a Python float), got {type(exact).__name__}"
    if not abs(float(exact) - float(want["exact"])) <= TOL * abs(float(want["exact"])):
        return "exact", f"exact is off by more than a relative 2**-{TOLERANCE_EXPONENT}: expected {want['exact']!r}"
    scales = _error_scales(want)
    for name in _ERROR_FIELDS:
        problem = _array_difference(name, want[name], got[name], ks, "float64")
        if problem:
            return name, problem
        for i, (w, g, scale) in enumerate(zip(want[name], got[name], scales, strict=True)):
            if np.isnan(w) or np.isnan(g):
                if not (np.isnan(w) and np.isnan(g)):
                    why = "the step vanished there, so it is nan" if np.isnan(w) else "it is a number there, not nan"
                    return name, f"{name} {_at(ks, i)}: {why}"
                continue
            if not abs(float(g) - float(w)) <= TOL * scale:
                return name, (
                    f"{name} {_at(ks, i)}: expected {float(w)!r}, got {float(g)!r} "
                    f"(allowed difference {TOL * scale:.3g})"
                )
    best = got["best_k"]
    ok_type = best is None or (isinstance(best, int | np.integer) and not isinstance(best, bool | np.bool_))
    if not ok_type or (best is None) != (want["best_k"] is None) or (best is not None and int(best) != want["best_k"]):
        return "best_k", (
            f"best_k: expected {want['best_k']!r}, got {best!r} "
            "(the k of the smallest total error, ties to the smallest k, never a nan)"
        )
    return "", ""


def _same_sweep(want: Any, got: Any) -> bool:
    return isinstance(want, Record) and sweep_difference(want, got) == ("", "")


def _first(record: Any, field: str) -> Any:
    """``record`` with ``field`` moved to the front, so the shortened feedback shows it first."""
    if not isinstance(record, Record) or field not in record.fields:
        return record
    return Record(record.type, {field: record[field], **{k: v for k, v in record.fields.items() if k != field}})


# --------------------------------------------------------------------------- checks


def _estimate_inputs(x: Any, y: Any, k: int, scheme: str, wrt: str) -> dict[str, Any]:
    return {"x": x, "y": y, "k": k, "scheme": scheme, "wrt": wrt}


def _check_estimate(student: Student, x: Any, y: Any, k: int, scheme: str, wrt: str) -> None:
    got = student.call("fd_estimate", x, y, k, scheme, wrt)
    want = roundtrip(ref.fd_estimate(x, y, k, scheme, wrt))
    problem = estimate_difference(want, got)
    if problem:
        raise Mismatch(_estimate_inputs(x, y, k, scheme, wrt), want, got, problem)


def _check_sweep(student: Student, x: Any, y: Any, ks: Sequence[int], scheme: str, wrt: str) -> None:
    got = student.call("fd_sweep", x, y, list(ks), scheme, wrt)
    want = roundtrip(ref.fd_sweep(x, y, ks, scheme, wrt))
    field, problem = sweep_difference(want, got)
    if problem:
        inputs = {"x": x, "y": y, "ks": list(ks), "scheme": scheme, "wrt": wrt}
        raise Mismatch(inputs, _first(want, field), _first(got, field), problem)


def _check_gradient(student: Student, x: Any, y: Any) -> None:
    got = student.call("exact_gradient", x, y)
    want = roundtrip(ref.exact_gradient(x, y))
    problem = gradient_difference(want, got)
    if problem:
        raise Mismatch({"x": x, "y": y}, want, got, problem)


def _fixed_property(
    name: str,
    description: str,
    cases: Iterable[Mapping[str, Any]],
    check: Callable[..., None],
    misconceptions: Sequence[Misconception],
    matches: Callable[[Any, Any], bool],
) -> Property:
    """A property over a fixed list of cases, checked in order (the first failing one is reported)."""
    fixed = [dict(case) for case in cases]

    def run(student: Student) -> None:
        for case in fixed:
            check(student, **case)

    return Property(name, description, run, tuple(misconceptions), matches)


def _raises_property(
    name: str, description: str, fn: str, cases: Sequence[tuple[tuple[Any, ...], str]]
) -> Property:
    """Each call ``fn(*args)`` must raise the exception class named next to it."""

    def run(student: Student) -> None:
        for args, error in cases:
            try:
                got = student.call(fn, *args)
            except StudentError as exc:
                if exc.type != error:
                    inputs = {f"arg{i}": a for i, a in enumerate(args)}
                    note = f"the contract raises {error} here; your code raised {exc.type}: {exc.message}"
                    raise Mismatch(inputs, error, exc.type, note) from None
                continue
            inputs = {f"arg{i}": a for i, a in enumerate(args)}
            raise Mismatch(inputs, error, got, f"the contract raises {error} here; use the provided input checks")

    return Property(name, description, run)


# --------------------------------------------------------------------------- strategies

_FLOAT32_POINT = st.floats(GRADED_LOW, GRADED_HIGH, width=32)
_ANY_POINT = st.floats(GRADED_LOW, GRADED_HIGH)
_K = st.integers(1, GRADED_K_MAX)
_SCHEME = st.sampled_from(ref._SCHEMES)
_WRT = st.sampled_from(ref._VARIABLES)


def _applied_step_exact(x: float, y: float, k: int, scheme: str, wrt: str) -> bool:
    """Where the contract guarantees an exact applied step (Sterbenz): ``h <= v`` forward, ``3h <= v`` central."""
    v = float(np.float32(x if wrt == "x" else y))
    return 2.0**-k <= v if scheme == "forward" else 3 * 2.0**-k <= v


def _graded_ks(x: float, y: float, scheme: str, wrt: str) -> list[int]:
    """``k = 1..GRADED_K_MAX`` without the large steps whose applied step the contract leaves inexact."""
    return [k for k in range(1, GRADED_K_MAX + 1) if _applied_step_exact(x, y, k, scheme, wrt)]


# --------------------------------------------------------------------------- exact_gradient

_GRADIENT_WRONG = _misconceptions("exact_gradient")

gradient_visible = _fixed_property(
    "gradient_visible_cases",
    "exact_gradient(2, 3) is the float64 array [144, 132], and the gradient at GENERIC_POINT is right.",
    [{"x": 2.0, "y": 3.0}, {"x": _G[0], "y": _G[1]}],
    _check_gradient,
    _GRADIENT_WRONG,
    _same_gradient,
)


@hypothesis_property(
    "gradient_matches_exact",
    f"exact_gradient(x, y) is (dL/dx, dL/dy) at the exact inputs given (float32 or not), "
    f"within a relative 2**-{TOLERANCE_EXPONENT}, for 0.25 <= x, y <= 8.",
    given={
        "x": st.one_of(st.floats(0.25, 8.0), st.floats(0.25, 8.0, width=32)),
        "y": st.one_of(st.floats(0.25, 8.0), st.floats(0.25, 8.0, width=32)),
    },
    max_examples=60,
    examples=[{"x": 2.1, "y": 2.9}],
    misconceptions=_GRADIENT_WRONG,
    matches=_same_gradient,
)
def gradient_matches_exact(student: Student, x: float, y: float) -> None:
    _check_gradient(student, x, y)


GRADIENT_SUITE = register(
    CellSuite(GRADIENT_TESTS, points=POINTS[GRADIENT_TESTS], properties=[gradient_visible, gradient_matches_exact])
)


# --------------------------------------------------------------------------- fd_estimate

# At float32 inputs "perturbs the unrounded input" computes what a nominal-step answer computes,
# so the nominal-step entries are tried first there; at inputs that are not float32 values it is
# the likelier explanation and is tried first.
_NOMINAL_FIRST = ["estimate_in_float64", "scheme_ignored", "forward_nominal_step", "central_nominal_2h"]
_ESTIMATE_WRONG = _misconceptions("fd_estimate", first=_NOMINAL_FIRST)
_ESTIMATE_WRONG_ROUNDED = _misconceptions("fd_estimate", first=["perturbs_unrounded_input", *_NOMINAL_FIRST])

estimate_visible = _fixed_property(
    "estimate_visible_cases",
    "The notebook's visible cases: float32 result, 144.0 at (2, 3), nan where the step vanishes, "
    "the rounded step at x = 2.2, central and forward quotients in y.",
    [
        _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 23, "forward", "x"),
        _estimate_inputs(2.2, 3.0, 23, "forward", "x"),
        _estimate_inputs(_G[0], _G[1], 7, "central", "y"),
        _estimate_inputs(_G[0], _G[1], 11, "forward", "y"),
    ],
    _check_estimate,
    _ESTIMATE_WRONG,
    _same_estimate,
)


@hypothesis_property(
    "estimate_bits_at_float32_points",
    "fd_estimate has the contract's binary32 bits (and dtype float32) at float32 points in [0.5, 4], "
    f"k = 1..{GRADED_K_MAX}, both schemes, both inputs, including steps that round or vanish.",
    given={"x": _FLOAT32_POINT, "y": _FLOAT32_POINT, "k": _K, "scheme": _SCHEME, "wrt": _WRT},
    max_examples=120,
    examples=[
        # float32(2.2) has an odd last bit: x + 2**-23 and x - 2**-23 are ties that round away.
        _estimate_inputs(float(np.float32(2.2)), 3.0, 23, "central", "x"),
        _estimate_inputs(3.0, float(np.float32(2.2)), 23, "central", "y"),
        _estimate_inputs(3.0, float(np.float32(2.2)), 23, "forward", "y"),
    ],
    misconceptions=_ESTIMATE_WRONG,
    matches=_same_estimate,
)
def estimate_bits_at_float32_points(student: Student, x: float, y: float, k: int, scheme: str, wrt: str) -> None:
    _check_estimate(student, x, y, k, scheme, wrt)


@hypothesis_property(
    "estimate_bits_at_rounded_inputs",
    "fd_estimate rounds x and y to float32 before perturbing: right bits at inputs in [0.5, 4] "
    "that are not float32 values.",
    given={"x": _ANY_POINT, "y": _ANY_POINT, "k": _K, "scheme": _SCHEME, "wrt": _WRT},
    max_examples=80,
    examples=[
        _estimate_inputs(2.1, 2.9, 24, "forward", "x"),
        _estimate_inputs(2.1, 2.9, 24, "central", "y"),
    ],
    misconceptions=_ESTIMATE_WRONG_ROUNDED,
    matches=_same_estimate,
)
def estimate_bits_at_rounded_inputs(student: Student, x: float, y: float, k: int, scheme: str, wrt: str) -> None:
    _check_estimate(student, x, y, k, scheme, wrt)


estimate_rejects = _raises_property(
    "estimate_rejects_bad_arguments",
    "fd_estimate raises what its docstring says for a non-integer or out-of-range k, an unknown scheme or wrt.",
    "fd_estimate",
    [
        ((2.0, 3.0, -1), "ValueError"),
        ((2.0, 3.0, 150), "ValueError"),
        ((2.0, 3.0, 1.5), "TypeError"),
        ((2.0, 3.0, True), "TypeError"),
        ((2.0, 3.0, 1, "backward", "x"), "ValueError"),
        ((2.0, 3.0, 1, "forward", "z"), "ValueError"),
    ],
)

ESTIMATE_SUITE = register(
    CellSuite(
        ESTIMATE_TESTS,
        points=POINTS[ESTIMATE_TESTS],
        properties=[
            estimate_visible,
            estimate_bits_at_float32_points,
            estimate_bits_at_rounded_inputs,
            estimate_rejects,
        ],
    )
)


# --------------------------------------------------------------------------- fd_sweep

_SWEEP_WRONG = _misconceptions("fd_sweep")
_DEFAULT_KS = list(range(1, 25))


def _sweep_inputs(x: Any, y: Any, ks: Sequence[int], scheme: str, wrt: str) -> dict[str, Any]:
    return {"x": x, "y": y, "ks": list(ks), "scheme": scheme, "wrt": wrt}


sweep_visible = _fixed_property(
    "sweep_visible_cases",
    "The notebook's visible sweeps: forward in x and central in y at GENERIC_POINT, forward in x at (2, 3).",
    [
        _sweep_inputs(_G[0], _G[1], _DEFAULT_KS, "forward", "x"),
        _sweep_inputs(_G[0], _G[1], _DEFAULT_KS, "central", "y"),
        _sweep_inputs(2.0, 3.0, _DEFAULT_KS, "forward", "x"),
    ],
    _check_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)

sweep_full = _fixed_property(
    "sweep_full_range",
    f"Full sweeps k = 1..{GRADED_K_MAX} (central: 3h <= the perturbed input), both schemes and both inputs, "
    "at GENERIC_POINT, (2, 3), (0.7, 3.3) and (3.7, 0.6): every field as the contract states it.",
    [
        _sweep_inputs(x, y, _graded_ks(x, y, scheme, wrt), scheme, wrt)
        for x, y in (_G, (2.0, 3.0), (np.float32(0.7), np.float32(3.3)), (np.float32(3.7), np.float32(0.6)))
        for scheme in ref._SCHEMES
        for wrt in ref._VARIABLES
    ],
    _check_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)


@hypothesis_property(
    "sweep_at_generated_points",
    "fd_sweep at float32 points in [0.5, 4] with short lists of k (any order, repeats), both schemes, "
    f"both inputs: exact fields equal, errors within 2**-{TOLERANCE_EXPONENT} of their scale.",
    given={
        "x": _FLOAT32_POINT,
        "y": _FLOAT32_POINT,
        "ks": st.lists(_K, min_size=1, max_size=5),
        "scheme": _SCHEME,
        "wrt": _WRT,
    },
    max_examples=40,
    examples=[
        # Steps that round: float32(2.2) + 2**-23 and - 2**-23 are ties that round away from 2.2.
        _sweep_inputs(float(np.float32(2.2)), 3.0, [23, 22, 24], "central", "x"),
        _sweep_inputs(3.0, float(np.float32(2.2)), [22, 23], "forward", "y"),
    ],
    misconceptions=_SWEEP_WRONG,
    matches=_same_sweep,
)
def sweep_at_generated_points(student: Student, x: float, y: float, ks: list[int], scheme: str, wrt: str) -> None:
    assume(all(_applied_step_exact(x, y, k, scheme, wrt) for k in ks))
    _check_sweep(student, x, y, ks, scheme, wrt)


sweep_ties = _fixed_property(
    "sweep_best_k_ties_and_nan",
    "best_k takes the smallest k among tied minima whatever the order of ks, skips nan, and is None "
    "when every error is nan.",
    [
        _sweep_inputs(2.0, 3.0, [15, 12, 20, 13], "forward", "x"),
        _sweep_inputs(2.0, 3.0, list(range(20, 9, -1)), "forward", "x"),
        _sweep_inputs(2.0, 3.0, [23, 24, 22], "forward", "x"),
        _sweep_inputs(2.0, 3.0, [23, 24], "forward", "x"),
        _sweep_inputs(_G[0], _G[1], [12, 11, 11, 12], "forward", "x"),
    ],
    _check_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)

sweep_rejects = _raises_property(
    "sweep_rejects_bad_arguments",
    "fd_sweep raises what its docstring says for an empty ks, a k out of range, an unknown scheme or wrt.",
    "fd_sweep",
    [
        ((2.0, 3.0, []), "ValueError"),
        ((2.0, 3.0, [1, 150]), "ValueError"),
        ((2.0, 3.0, [1, 2], "backward", "x"), "ValueError"),
        ((2.0, 3.0, [1, 2], "forward", "z"), "ValueError"),
    ],
)

SWEEP_SUITE = register(
    CellSuite(
        SWEEP_TESTS,
        points=POINTS[SWEEP_TESTS],
        properties=[sweep_visible, sweep_full, sweep_at_generated_points, sweep_ties, sweep_rejects],
    )
)
