"""Exercise 2 catalogue: wrong ways to check the opening gradient by finite differences in binary32.

Every entry is a complete answer a student could submit for one function of
``ex2_finite_difference.ipynb``; it validates its input as the contract asks
and differs from a correct answer in one idea only. Entries use only what the
notebook provides: ``np``, ``Fraction``, the harness functions it imports
(``opening_objective``, ``opening_objective_exact``, ``opening_tape``,
``reverse_accumulate``), the provided input checks (``_check_k``,
``_check_choice``, ``_to_float32``, ``_exact``), the choice tuples, ``FDSweep``
and, inside ``fd_sweep`` entries, the student's own ``fd_estimate`` and
``exact_partial`` (the reference's when called in the trusted process).

What each entry gets wrong, and where it shows (``v`` the perturbed input):

* ``gradient_last_writer_wins``: a-bar keeps only the path through c;
  (90, 96) instead of (144, 132) at (2, 3), wrong wherever ``c != 0``.
* ``gradient_in_float32``: the reverse sweep in binary32; relative error
  near ``2**-24`` at points whose products are not exact in float32.
* ``gradient_at_float32_point``: rounds the inputs to float32 first; right for
  float32 inputs, off by about ``2**-24`` relative at 2.1 and the like.
* ``estimate_in_float64``: float64 arithmetic cast to float32 at the end;
  right dtype, wrong bits almost everywhere (at (2, 3), k = 12: 144.00879).
* ``perturbs_unrounded_input``: adds ``h`` to the Python-float input and
  divides by the nominal step; wrong where ``fl(v + h) - v != h`` (``k >= 23``
  at ``v >= 2``) and where the input is not a float32.
* ``forward_nominal_step`` / ``central_nominal_2h``: divide by ``h`` or ``2h``
  instead of the applied step; wrong only where ``v + h`` or ``v - h`` rounds
  (``v`` = float32(2.2), ``k = 23``: twice the applied step).
* ``scheme_ignored``: always the forward quotient; every central estimate.
* ``sweep_ignores_wrt``: the sweep's estimates perturb ``x`` whatever ``wrt``
  says; every sweep in ``y``.
* ``largest_k_tie_break`` / ``first_minimum_in_given_order``: ties of the
  total error (the exact zeros at (2, 3), k = 12..20) go to the largest
  ``k`` or to the first in the order given, not to the smallest ``k``.
* ``argmin_picks_nan``: ``np.argmin`` over errors with ``nan`` (the vanished
  steps) returns the first ``nan``; every default sweep at ``v >= 2``.
* ``truncation_in_float32``: the quotient ``Q`` from float32 values of ``L``,
  i.e. the estimate itself: truncation = total, rounding = 0.
* ``rounding_as_leftover``: rounding = ``| total - truncation |``; wrong where
  the two parts have opposite signs and rounding is the larger one (then it
  reports ``|rounding - 2 truncation|``): on the cancellation arm of most sweeps.
* ``errors_against_float32_derivative``: the exact derivative rounded to
  float32 before the errors are taken; ``exact`` and every total error off.
* ``sweep_sorts_callers_ks``: ``ks.sort()`` on the caller's list (to make the
  first minimum the smallest k): the caller's ks is changed, and every sweep
  over ks not in increasing order comes back in the wrong order.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import numpy as np
from ch11_solutions.ex2_finite_difference import (
    _SCHEMES,
    _VARIABLES,
    FDSweep,
    _check_choice,
    _check_k,
    _exact,
    _to_float32,
    exact_partial,
    fd_estimate,
)
from trainable_harness import opening_objective, opening_objective_exact, opening_tape, reverse_accumulate

from ..catalogue import wrong_answer
from .contract import ESTIMATE_CELL, ESTIMATE_TESTS, GRADIENT_CELL, GRADIENT_TESTS, SWEEP_CELL, SWEEP_TESTS

__all__: list[str] = []


# fd_sweep records fd_estimate's values, so a wrong estimate also spoils the sweep.
_ESTIMATE_AND_SWEEP = (ESTIMATE_TESTS, SWEEP_TESTS)


# ---- Task 1: the gradient under check ---------------------------------------------------------


@wrong_answer(
    exercise="ex2",
    name="gradient_last_writer_wins",
    title="Last writer wins at a: the gradient under check keeps one of a's two contributions",
    advice=(
        "a feeds both b and c, so a-bar = b-bar * 1 + c-bar * y: add the contributions. "
        "At (2, 3) the correct gradient is (144, 132); keeping only the last one gives (90, 96)."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="exact_gradient",
    loses=(GRADIENT_TESTS,),
)
def gradient_last_writer_wins(x: float, y: float) -> np.ndarray:
    """The reverse sweep of Eq. 11.1 in fractions, with a-bar overwritten by the path through c."""
    fx = _exact("x", x)
    fy = _exact("y", y)
    a = fx * fy
    b = a + fx
    c = a * fy
    b_bar = c
    c_bar = b
    a_bar = b_bar
    a_bar = fy * c_bar  # the c path visited last overwrites the b path
    x_bar = fy * a_bar + b_bar
    y_bar = fx * a_bar + a * c_bar
    return np.array([float(x_bar), float(y_bar)], dtype=np.float64)


@wrong_answer(
    exercise="ex2",
    name="gradient_in_float32",
    title="The gradient under check computed in binary32",
    advice=(
        "The check compares a binary32 estimate with the truth; the truth must not carry binary32 "
        "rounding itself. Run the reverse sweep in fractions (or at least in float64) at the exact "
        "values of the inputs."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="exact_gradient",
    loses=(GRADIENT_TESTS,),
)
def gradient_in_float32(x: float, y: float) -> np.ndarray:
    """The reverse sweep of Eq. 11.1 with every value in float32."""
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    a = xs * ys
    b = a + xs
    c = a * ys
    b_bar = c
    c_bar = b
    a_bar = b_bar + ys * c_bar
    return np.array([ys * a_bar + b_bar, xs * a_bar + a * c_bar], dtype=np.float64)


@wrong_answer(
    exercise="ex2",
    name="gradient_at_float32_point",
    title="The gradient taken at the float32-rounded inputs instead of the inputs given",
    advice=(
        "exact_gradient(x, y) is the gradient at the exact values of x and y as given. 2.1 and "
        "np.float32(2.1) are different points; the sweep passes float32 values itself, so do not round "
        "inside exact_gradient."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="exact_gradient",
    loses=(GRADIENT_TESTS,),
)
def gradient_at_float32_point(x: float, y: float) -> np.ndarray:
    """The chapter's float64 reverse sweep at (float32(x), float32(y))."""
    xs = float(_to_float32("x", x))
    ys = float(_to_float32("y", y))
    return np.array(reverse_accumulate(opening_tape(xs, ys))[:2], dtype=np.float64)


# ---- Task 2: one binary32 estimate --------------------------------------------------------------


@wrong_answer(
    exercise="ex2",
    name="estimate_in_float64",
    title="Float64 where binary32 was asked (cast to float32 only at the end)",
    advice=(
        "The exercise measures binary32 cancellation, so every operation must be a float32 operation: "
        "evaluate L with dtype=np.float32 and keep x + h, the step and the quotient in float32. A float64 "
        "quotient cast to float32 has the right dtype but not the binary32 bits."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def estimate_in_float64(x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x") -> np.float32:
    """The difference quotient at the float32 point, evaluated in float64."""
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = np.float64(_to_float32("x", x))
    ys = np.float64(_to_float32("y", y))
    h = np.float64(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    step = up - low
    if step == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float64) - opening_objective(low, ys, dtype=np.float64)
        else:
            diff = opening_objective(xs, up, dtype=np.float64) - opening_objective(xs, low, dtype=np.float64)
        return np.float32(diff / step)


@wrong_answer(
    exercise="ex2",
    name="perturbs_unrounded_input",
    title="The perturbation added to the unrounded input, divided by the nominal step",
    advice=(
        "Round x and y to float32 first, add h in float32, and divide by the step the two float32 "
        "points are really apart: at x = float32(2), 2 + 2**-23 rounds back to 2 (no step at all)."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def perturbs_unrounded_input(x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x") -> np.float32:
    """x + h in Python floats; opening_objective rounds the points; division by h (or 2h)."""
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    _to_float32("x", x)
    _to_float32("y", y)
    x = float(x)
    y = float(y)
    h = 2.0**-k
    v = x if wrt == "x" else y
    up = v + h
    low = v if scheme == "forward" else v - h
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, y, dtype=np.float32) - opening_objective(low, y, dtype=np.float32)
        else:
            diff = opening_objective(x, up, dtype=np.float32) - opening_objective(x, low, dtype=np.float32)
        # A Python float divisor adapts to float32 under NumPy 2, so the dtype is right.
        return diff / (up - low)


@wrong_answer(
    exercise="ex2",
    name="forward_nominal_step",
    title="Forward quotient divided by the nominal h instead of the applied step",
    advice=(
        "x + h is rounded to float32, so the two points can be 0, h or 2h apart. Divide by "
        "h_eff = fl(x + h) - x, the step actually applied (at x = float32(2.2), k = 23 it is 2**-22)."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def forward_nominal_step(x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x") -> np.float32:
    """Right points and central quotient; the forward quotient divides by h."""
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = up - low
    if h_eff == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float32) - opening_objective(low, ys, dtype=np.float32)
        else:
            diff = opening_objective(xs, up, dtype=np.float32) - opening_objective(xs, low, dtype=np.float32)
        return diff / (h if scheme == "forward" else h_eff)


@wrong_answer(
    exercise="ex2",
    name="central_nominal_2h",
    title="Central quotient divided by the nominal 2h instead of the applied step",
    advice=(
        "Both x + h and x - h are rounded to float32, so their distance need not be 2h. Divide by "
        "h_eff = fl(x + h) - fl(x - h) (at x = float32(2.2), k = 23 it is 2**-21, not 2**-22)."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def central_nominal_2h(x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x") -> np.float32:
    """Right points and forward quotient; the central quotient divides by 2h."""
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = up - low
    if h_eff == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float32) - opening_objective(low, ys, dtype=np.float32)
        else:
            diff = opening_objective(xs, up, dtype=np.float32) - opening_objective(xs, low, dtype=np.float32)
        return diff / (h_eff if scheme == "forward" else np.float32(2) * h)


@wrong_answer(
    exercise="ex2",
    name="scheme_ignored",
    title="The forward quotient returned for scheme='central'",
    advice=(
        "The central quotient evaluates L at x + h and x - h and divides by their distance; its "
        "truncation error falls like h**2, not h. Check which scheme you were asked for."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def scheme_ignored(x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x") -> np.float32:
    """The forward quotient whatever ``scheme`` says."""
    k = _check_k(k)
    _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    h_eff = up - v
    if h_eff == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float32) - opening_objective(xs, ys, dtype=np.float32)
        else:
            diff = opening_objective(xs, up, dtype=np.float32) - opening_objective(xs, ys, dtype=np.float32)
        return diff / h_eff


# ---- Task 3: the sweep ----------------------------------------------------------------------------
#
# Every sweep entry below is the same plain sweep in fractions with one idea changed;
# the comment "# <-" marks the changed line.


@wrong_answer(
    exercise="ex2",
    name="sweep_ignores_wrt",
    title="The sweep perturbs x whatever wrt says",
    advice=(
        "Pass wrt on to fd_estimate (its default is 'x'): a sweep in y must perturb y, and its errors "
        "are measured against dL/dy."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def sweep_ignores_wrt(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A sweep whose estimates always perturb x."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme) for k in ks], dtype=np.float32)  # <-
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="largest_k_tie_break",
    title="Ties of the total error broken toward the largest k",
    advice=(
        "The contract breaks ties toward the smallest k. At (2, 3) the total error is exactly 0 for "
        "k = 12..20, so best_k is 12."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def largest_k_tie_break(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep whose best_k is the largest of the tied minimizers."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].max()) if finite.any() else None  # <-
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="first_minimum_in_given_order",
    title="Ties of the total error broken toward the first k in the order given",
    advice=(
        "np.nanargmin returns the first minimum in the order of ks, which need not be sorted. The "
        "contract breaks ties toward the smallest k, whatever the order of ks."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def first_minimum_in_given_order(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep whose best_k is ``ks[np.nanargmin(total)]``."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    best_k = None if np.isnan(total).all() else int(ks[np.nanargmin(total)])  # <-
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="argmin_picks_nan",
    title="best_k from np.argmin over errors that contain nan",
    advice=(
        "Where the step vanished the errors are nan, and np.argmin returns the position of the first "
        "nan. Leave the nan entries out (or use np.nanargmin and then the smallest tied k)."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def argmin_picks_nan(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep whose best_k is ``ks[np.argmin(total)]``."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    best_k = int(ks[np.argmin(total)])  # <-
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="truncation_in_float32",
    title="Truncation computed in float32 (the quotient Q taken from binary32 values of L)",
    advice=(
        "Q must be the quotient over the same two points in exact arithmetic "
        "(opening_objective_exact, or at least float64): computed in float32 it is the estimate "
        "itself, so the truncation error absorbs all the rounding and the rounding error reads 0."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def truncation_in_float32(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A sweep whose Q is evaluated with ``opening_objective(..., dtype=np.float32)``."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        # upper and lower are pairs; mypy reads the starred tuples as of unknown length.
        q32 = (opening_objective(*upper, dtype=np.float32) - opening_objective(*lower, dtype=np.float32)) / h_eff[i]  # type: ignore[misc]
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = abs(float(q32))  # <- the float32 quotient overflowed too
            continue
        q = Fraction(float(q32))  # <-
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="rounding_as_leftover",
    title="Rounding error taken as what is left of the total after truncation",
    advice=(
        "The parts have signs: estimate - dL = (estimate - Q) + (Q - dL). When they pull in opposite "
        "directions they partly cancel, so |total - truncation| is not the rounding error. Measure it "
        "directly as |estimate - Q|."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def rounding_as_leftover(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A sweep whose rounding error is ``|total - truncation|``."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = abs(total[i] - truncation[i])  # <-
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="errors_against_float32_derivative",
    title="Errors measured against the exact derivative rounded to binary32",
    advice=(
        "The reference value of a check must be more accurate than what it checks: keep dL exact (or "
        "float64). Rounded to float32 it is off by up to half a float32 ulp, as much as the estimate's "
        "error near the optimum."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def errors_against_float32_derivative(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep whose derivative is ``np.float32(exact_partial(...))``."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = Fraction(float(np.float32(exact_partial(xs, ys, wrt))))  # <-
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


# ---- Contract clauses beyond the value: Raises, defaults, accepted types, purity -----------------


@wrong_answer(
    exercise="ex2",
    name="gradient_inputs_unchecked",
    title="The gradient from the float64 tape without the input checks",
    advice=(
        "exact_gradient raises as exact_partial does: TypeError for a bool, a string or None, ValueError for "
        "nan or inf. float(x) accepts True and '2.5'; check the inputs with _exact first."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="exact_gradient",
    loses=(GRADIENT_TESTS,),
)
def gradient_inputs_unchecked(x: float, y: float) -> np.ndarray:
    """The chapter's float64 reverse sweep at the inputs as given, with no input checks."""
    return np.array(reverse_accumulate(opening_tape(float(x), float(y)))[:2], dtype=np.float64)


@wrong_answer(
    exercise="ex2",
    name="partial_returns_float",
    title="exact_partial returns a float instead of a Fraction",
    advice=(
        "exact_partial is the exact derivative: return the Fraction itself. Rounding happens once, in "
        "exact_gradient (and in the sweep's errors), not inside the exact value."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="exact_partial",
    loses=(GRADIENT_TESTS,),
)
def partial_returns_float(x: float, y: float, wrt: str = "x") -> float:
    """The exact reverse sweep, rounded to a Python float on return."""
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    fx = _exact("x", x)
    fy = _exact("y", y)
    a = fx * fy
    b = a + fx
    c = a * fy
    a_bar = c + fy * b
    return float(fy * a_bar + c if wrt == "x" else fx * a_bar + a * b)  # <-


@wrong_answer(
    exercise="ex2",
    name="estimate_step_from_numpy_power",
    title="The step 2**-k computed from k as given: a numpy integer k turns it into float64",
    advice=(
        "Use the integer _check_k returns: np.float32(2) ** -k stays float32 for a Python int k but becomes "
        "float64 for an np.int64 k, and the whole estimate follows. np.float32(2.0**-k) of a Python int is safe."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=(ESTIMATE_TESTS,),
)
def estimate_step_from_numpy_power(
    x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x"
) -> np.float32:
    """A correct estimate whose validated k is not kept: h = np.float32(2) ** -k with k as the caller gave it."""
    _check_k(k)  # <- the checked int is dropped
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2) ** -k
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = up - low
    if h_eff == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float32) - opening_objective(low, ys, dtype=np.float32)
        else:
            diff = opening_objective(xs, up, dtype=np.float32) - opening_objective(xs, low, dtype=np.float32)
        return diff / h_eff


@wrong_answer(
    exercise="ex2",
    name="central_step_from_forward_step",
    title="Central applied step taken as twice the forward one",
    advice=(
        "fl(x + h) and fl(x - h) round independently: where x + h crosses into the next binade, or h is an "
        "ulp of x or less, fl(x + h) - x and x - fl(x - h) differ. Divide by fl(x + h) - fl(x - h)."
    ),
    answer_cell=ESTIMATE_CELL,
    replaces="fd_estimate",
    loses=_ESTIMATE_AND_SWEEP,
)
def central_step_from_forward_step(
    x: float, y: float, k: int, scheme: str = "forward", wrt: str = "x"
) -> np.float32:
    """Right points; the central quotient divides by 2 * (fl(v + h) - v)."""
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = (up - v) if scheme == "forward" else np.float32(2) * (up - v)  # <-
    if up - low == 0 or h_eff == 0:
        return np.float32(np.nan)
    with np.errstate(all="ignore"):  # as the contract: no warning where the step vanishes or L overflows
        if wrt == "x":
            diff = opening_objective(up, ys, dtype=np.float32) - opening_objective(low, ys, dtype=np.float32)
        else:
            diff = opening_objective(xs, up, dtype=np.float32) - opening_objective(xs, low, dtype=np.float32)
        return diff / h_eff


@wrong_answer(
    exercise="ex2",
    name="sweep_default_ks_from_zero",
    title="The default sweep starts at k = 0",
    advice="Without ks the sweep covers k = 1..24: the default is range(1, 25), not range(24).",
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def sweep_default_ks_from_zero(
    x: float, y: float, ks: Iterable[int] = range(24), scheme: str = "forward", wrt: str = "x"  # <-
) -> FDSweep:
    """A correct sweep whose default ks is 0..23."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="sweep_ks_truthiness",
    title="An empty ks detected with `if not ks`",
    advice=(
        "ks is any iterable of integers: `not ks` is ambiguous for a numpy array (ValueError) and always False "
        "for a generator. Build the list of checked ks first, then test its length."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def sweep_ks_truthiness(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep that tests ``not ks`` on ks as given."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    if not ks:  # <-
        raise ValueError("ks must contain at least one k")
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="sweep_caches_exact_by_point",
    title="The exact derivative cached by point, whatever wrt",
    advice=(
        "A cache must be keyed by everything the value depends on: dL/dx and dL/dy at one point differ. "
        "exact_partial is cheap; call it for each sweep."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def sweep_caches_exact_by_point(
    x: float,
    y: float,
    ks: Iterable[int] = range(1, 25),
    scheme: str = "forward",
    wrt: str = "x",
    _memo: dict = {},  # noqa: B006 - the shared default is the memo
) -> FDSweep:
    """A correct sweep that remembers, in a shared default, the first derivative computed at each point."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    key = (float(xs), float(ys))  # <- wrt missing from the key
    if key not in _memo:
        _memo[key] = exact_partial(xs, ys, wrt)
    exact = _memo[key]
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)


@wrong_answer(
    exercise="ex2",
    name="sweep_sorts_callers_ks",
    title="The caller's list of ks sorted in place",
    advice=(
        "ks belongs to the caller: ks.sort() reorders their list, so the next sweep they ask for with it (or the "
        "figure they draw from it) is not the one they wrote, and the sweep no longer keeps the order given. Sorting "
        "is not needed for the tie-break either: among equal total errors take the smallest k."
    ),
    answer_cell=SWEEP_CELL,
    replaces="fd_sweep",
    loses=(SWEEP_TESTS,),
)
def sweep_sorts_callers_ks(
    x: float, y: float, ks: Iterable[int] = range(1, 25), scheme: str = "forward", wrt: str = "x"
) -> FDSweep:
    """A correct sweep over ks sorted first, in place when the caller passed a list."""
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    if not isinstance(ks, list):
        ks = list(ks)
    ks.sort()  # <- in increasing order the first minimum is the smallest k; but this is the caller's list
    ks = np.array([_check_k(k) for k in ks], dtype=np.int64)
    if ks.size == 0:
        raise ValueError("ks must contain at least one k")
    exact = exact_partial(xs, ys, wrt)
    n = len(ks)
    h = np.array([2.0 ** -int(k) for k in ks], dtype=np.float32)
    h_eff = np.zeros(n, dtype=np.float32)
    estimate = np.array([fd_estimate(xs, ys, int(k), scheme, wrt) for k in ks], dtype=np.float32)
    total, truncation, rounding = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    v = xs if wrt == "x" else ys
    for i in range(n):
        up = v + h[i]
        low = v if scheme == "forward" else v - h[i]
        h_eff[i] = up - low
        if h_eff[i] == 0:
            continue
        upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / (
            Fraction(float(up)) - Fraction(float(low))
        )
        if not np.isfinite(estimate[i]):  # L overflowed: the errors are as unbounded as the estimate
            total[i] = rounding[i] = abs(float(estimate[i]))
            truncation[i] = float(abs(q - exact))
            continue
        e = Fraction(float(estimate[i]))
        total[i] = float(abs(e - exact))
        truncation[i] = float(abs(q - exact))
        rounding[i] = float(abs(e - q))
    finite = ~np.isnan(total)
    best_k = int(ks[finite][total[finite] == total[finite].min()].min()) if finite.any() else None
    return FDSweep(xs, ys, scheme, wrt, ks, h, h_eff, estimate, float(exact), total, truncation, rounding, best_k)
