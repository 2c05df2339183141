"""Exercise 2 reference checked against an independent truth.

Truth here is sympy: the objective is differentiated symbolically and every
derivative and difference quotient is evaluated in exact rationals at the
float32 values. The binary32 estimate is recomputed with np.float32
operations written out below in the harness's operation order. Each check is
a function of the implementation under test, so the same check is shown to
reject a named wrong variant.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import sympy
from ch11_solutions import ex2_finite_difference as ex2
from hypothesis import assume, given, settings
from hypothesis import strategies as st

F32 = np.float32
X, Y = sympy.symbols("x y")
L_SYM = (X * Y + X) * (X * Y * Y)
DL_SYM = {"x": sympy.diff(L_SYM, X), "y": sympy.diff(L_SYM, Y)}

HYP = settings(max_examples=60, deadline=None, derandomize=True, database=None)


# ---------------------------------------------------------------- independent truth


def rat(value: np.floating) -> sympy.Rational:
    """The exact rational a binary float stores."""
    p, q = float(value).as_integer_ratio()
    return sympy.Rational(p, q)


def to_f64(value: sympy.Rational) -> float:
    """Correctly rounded float64 of an exact rational."""
    return float(Fraction(int(value.p), int(value.q)))


def l32(x: np.float32, y: np.float32) -> np.float32:
    a = x * y
    b = a + x
    c = a * y
    out = b * c
    assert out.dtype == np.float32
    return out


def points32(x: np.float32, y: np.float32, k: int, scheme: str, wrt: str):
    h = F32(1.0)
    for _ in range(k):
        h = h / F32(2.0)
    v = x if wrt == "x" else y
    up = v + h
    low = v if scheme == "forward" else v - h
    if wrt == "x":
        return h, (up, y), (low, y), up - low
    return h, (x, up), (x, low), up - low


def estimate32(x: np.float32, y: np.float32, k: int, scheme: str, wrt: str) -> np.float32:
    _, upper, lower, h_eff = points32(x, y, k, scheme, wrt)
    if h_eff == F32(0.0):
        return F32(np.nan)
    out = (l32(*upper) - l32(*lower)) / h_eff
    assert out.dtype == np.float32
    return out


def exact_derivative(x: np.float32, y: np.float32, wrt: str) -> sympy.Rational:
    return DL_SYM[wrt].subs({X: rat(x), Y: rat(y)})


def exact_quotient(x: np.float32, y: np.float32, k: int, scheme: str, wrt: str) -> sympy.Rational | None:
    _, upper, lower, _ = points32(x, y, k, scheme, wrt)
    up = L_SYM.subs({X: rat(upper[0]), Y: rat(upper[1])})
    low = L_SYM.subs({X: rat(lower[0]), Y: rat(lower[1])})
    i = 0 if wrt == "x" else 1
    distance = rat(upper[i]) - rat(lower[i])
    if distance == 0:
        return None
    return (up - low) / distance


def same_bits(a: np.floating, b: np.floating) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- checks


def check_estimate(fd_estimate, x, y, k, scheme, wrt) -> None:
    got = fd_estimate(x, y, k, scheme=scheme, wrt=wrt)
    assert isinstance(got, np.float32), f"estimate is {type(got).__name__}, not np.float32"
    want = estimate32(F32(x), F32(y), k, scheme, wrt)
    if np.isnan(want):
        assert np.isnan(got), f"zero applied step must give nan, got {got}"
    else:
        assert same_bits(got, want), f"estimate {got!r} != binary32 {want!r} at x={x}, y={y}, k={k}"


def check_sweep(fd_sweep, x, y, ks, scheme, wrt) -> None:
    sweep = fd_sweep(x, y, ks, scheme=scheme, wrt=wrt)
    xs, ys = F32(x), F32(y)
    assert same_bits(sweep.x, xs) and same_bits(sweep.y, ys)
    assert sweep.ks.dtype == np.int64 and sweep.ks.tolist() == list(ks)
    for name in ("h", "h_eff", "estimate"):
        assert getattr(sweep, name).dtype == np.float32, f"{name} must be float32"
    for name in ("total_error", "truncation_error", "rounding_error"):
        assert getattr(sweep, name).dtype == np.float64, f"{name} must be float64"
    exact = exact_derivative(xs, ys, wrt)
    assert sweep.exact == to_f64(exact)
    totals = []
    for i, k in enumerate(ks):
        h, _, _, h_eff = points32(xs, ys, k, scheme, wrt)
        assert same_bits(sweep.h[i], h) and same_bits(sweep.h_eff[i], h_eff)
        est = estimate32(xs, ys, k, scheme, wrt)
        quotient = exact_quotient(xs, ys, k, scheme, wrt)
        if quotient is None:
            assert np.isnan(sweep.estimate[i])
            for name in ("total_error", "truncation_error", "rounding_error"):
                assert np.isnan(getattr(sweep, name)[i]), f"{name} at zero step must be nan"
            totals.append(np.nan)
            continue
        assert same_bits(sweep.estimate[i], est), f"k={k}: estimate {sweep.estimate[i]!r} != {est!r}"
        total = abs(rat(est) - exact)
        truncation = abs(quotient - exact)
        rounding = abs(rat(est) - quotient)
        assert total <= truncation + rounding
        assert sweep.total_error[i] == to_f64(total), f"k={k}: total error"
        assert sweep.truncation_error[i] == to_f64(truncation), f"k={k}: truncation error"
        assert sweep.rounding_error[i] == to_f64(rounding), f"k={k}: rounding error"
        # The documented identity on the float64 values, up to their one rounding each.
        assert sweep.total_error[i] <= (sweep.truncation_error[i] + sweep.rounding_error[i]) * (1 + 2.0**-51)
        totals.append(to_f64(total))
    finite = [(t, k) for t, k in zip(totals, ks, strict=True) if not np.isnan(t)]
    want_best = min(finite)[1] if finite else None
    assert sweep.best_k == want_best, f"best_k {sweep.best_k} != {want_best} (smallest k among ties)"


def check_dyadic_floor(fd_sweep) -> None:
    """At (2, 3) binary32 forward errors in x vanish exactly for k = 12..20."""
    sweep = fd_sweep(2.0, 3.0, range(1, 25), scheme="forward", wrt="x")
    floor = sweep.total_error[(sweep.ks >= 12) & (sweep.ks <= 20)]
    assert floor.tolist() == [0.0] * 9, f"expected a zero floor, got {floor}"
    assert (sweep.truncation_error[11:20] > 0).all(), "the formula itself is not exact there"
    assert sweep.best_k == 12


def check_v_shape(fd_sweep, x, y, scheme, wrt, model_k, *, width=3, depth=100.0) -> None:
    """A clear V: a unique minimum within `width` of the model optimum, `depth` times below k = 1 and k = 22."""
    sweep = fd_sweep(x, y, range(1, 25), scheme=scheme, wrt=wrt)
    errors = sweep.total_error
    best = np.nanmin(errors)
    assert np.count_nonzero(errors == best) == 1, "the minimum is a flat floor, not a V"
    assert abs(sweep.best_k - model_k) <= width, f"best k {sweep.best_k} not within {width} of {model_k}"
    arms = errors[(sweep.ks == 1) | (sweep.ks == 22)]
    assert (arms >= depth * best).all(), f"arms {arms} not {depth} times above the minimum {best}"


# ---------------------------------------------------------------- the reference passes

point = st.floats(0.5, 4.0, width=32, allow_subnormal=False)
scheme_st = st.sampled_from(["forward", "central"])
wrt_st = st.sampled_from(["x", "y"])


def _assume_positive(x, y, k, scheme, wrt):
    v = x if wrt == "x" else y
    assume(scheme == "forward" or float(v) - 2.0**-k > 0)


@HYP
@given(x=point, y=point, k=st.integers(1, 26), scheme=scheme_st, wrt=wrt_st)
def test_estimate_is_the_binary32_quotient(x, y, k, scheme, wrt):
    _assume_positive(x, y, k, scheme, wrt)
    check_estimate(ex2.fd_estimate, x, y, k, scheme, wrt)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    x=point,
    y=point,
    ks=st.lists(st.integers(1, 25), min_size=1, max_size=6),
    scheme=scheme_st,
    wrt=wrt_st,
)
def test_sweep_matches_sympy(x, y, ks, scheme, wrt):
    for k in ks:
        _assume_positive(x, y, k, scheme, wrt)
    check_sweep(ex2.fd_sweep, x, y, ks, scheme, wrt)


@pytest.mark.parametrize(("scheme", "wrt"), [("forward", "x"), ("forward", "y"), ("central", "x"), ("central", "y")])
def test_full_sweep_at_generic_point_matches_sympy(scheme, wrt):
    check_sweep(ex2.fd_sweep, *ex2.GENERIC_POINT, list(range(1, 25)), scheme, wrt)


def test_exact_gradient_matches_sympy():
    np.testing.assert_array_equal(ex2.exact_gradient(2.0, 3.0), [144.0, 132.0])
    for x, y in [ex2.GENERIC_POINT, (F32(0.7), F32(3.3)), (0.1, 0.2)]:
        got = ex2.exact_gradient(x, y)
        assert got.dtype == np.float64 and got.shape == (2,)
        exact = {w: DL_SYM[w].subs({X: rat(np.float64(x)), Y: rat(np.float64(y))}) for w in "xy"}
        assert got.tolist() == [to_f64(exact["x"]), to_f64(exact["y"])]
        for w in "xy":
            assert ex2.exact_partial(x, y, w) == Fraction(int(exact[w].p), int(exact[w].q))


def test_dyadic_point_has_a_zero_floor():
    # The pitfall that makes a generic point necessary.
    check_dyadic_floor(ex2.fd_sweep)


@pytest.mark.parametrize(("scheme", "wrt"), [("forward", "x"), ("forward", "y"), ("central", "y")])
def test_generic_point_shows_a_v(scheme, wrt):
    # Measured: best k = 10 (forward, x), 11 (forward, y), 7 (central, y); model optima 12 and 8.
    check_v_shape(ex2.fd_sweep, *ex2.GENERIC_POINT, scheme, wrt, ex2.model_optimal_k(scheme))
    want = {("forward", "x"): 10, ("forward", "y"): 11, ("central", "y"): 7}[scheme, wrt]
    assert ex2.fd_sweep(*ex2.GENERIC_POINT, scheme=scheme, wrt=wrt).best_k == want


def test_central_in_x_has_no_truncation():
    # L is quadratic in x, so the central quotient over exact symmetric points is exact.
    sweep = ex2.fd_sweep(*ex2.GENERIC_POINT, scheme="central", wrt="x")
    assert (sweep.truncation_error[:22] == 0).all()
    with pytest.raises(AssertionError, match="flat floor"):
        check_v_shape(ex2.fd_sweep, *ex2.GENERIC_POINT, "central", "x", 8)


def test_model_optimal_k():
    assert ex2.model_optimal_k("forward") == 12.0
    assert ex2.model_optimal_k("central") == 8.0
    with pytest.raises(ValueError):
        ex2.model_optimal_k("backward")


def test_zero_step_is_nan_without_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(ex2.fd_estimate(2.0, 3.0, 23))
        sweep = ex2.fd_sweep(2.0, 3.0, [23, 24, 22])
    assert sweep.h_eff.tolist()[:2] == [0.0, 0.0]
    assert sweep.best_k == 22
    assert ex2.fd_sweep(2.0, 3.0, [23, 24]).best_k is None


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((2.0, 3.0, 1.0), TypeError),
        ((2.0, 3.0, True), TypeError),
        ((2.0, 3.0, -1), ValueError),
        ((2.0, 3.0, 150), ValueError),
        (("2", 3.0, 1), TypeError),
        ((np.inf, 3.0, 1), ValueError),
        ((1e39, 3.0, 1), ValueError),
    ],
)
def test_bad_arguments(args, error):
    with pytest.raises(error):
        ex2.fd_estimate(*args)


def test_bad_choices_and_empty_sweep():
    with pytest.raises(ValueError, match="scheme"):
        ex2.fd_estimate(2.0, 3.0, 1, scheme="backward")
    with pytest.raises(ValueError, match="wrt"):
        ex2.fd_sweep(2.0, 3.0, wrt="z")
    with pytest.raises(ValueError, match="ks"):
        ex2.fd_sweep(2.0, 3.0, [])


# ---------------------------------------------------------------- wrong variants fail the same checks


def wrong_float64_estimate(x, y, k, scheme="forward", wrt="x"):
    """Float64 where binary32 was asked (here: a Python-float step promotes everything)."""
    xs, ys = np.float64(x), np.float64(y)
    h = 2.0**-k
    v = xs if wrt == "x" else ys
    up, low = v + h, (v if scheme == "forward" else v - h)

    def f(p):
        return (p * ys + p) * (p * ys * ys) if wrt == "x" else (xs * p + xs) * (xs * p * p)

    return (f(up) - f(low)) / (up - low)


def wrong_float64_cast_back(x, y, k, scheme="forward", wrt="x"):
    """Float64 arithmetic with the result cast to float32: right type, wrong bits."""
    return np.float32(wrong_float64_estimate(x, y, k, scheme, wrt))


def wrong_nominal_step(x, y, k, scheme="forward", wrt="x"):
    """Divides by the nominal h (2h central), ignoring that x + h rounds."""
    _, upper, lower, _ = points32(F32(x), F32(y), k, scheme, wrt)
    h = F32(2.0**-k) * (F32(1.0) if scheme == "forward" else F32(2.0))
    return (l32(*upper) - l32(*lower)) / h


def wrong_forward_as_central(x, y, k, scheme="forward", wrt="x"):
    return ex2.fd_estimate(x, y, k, scheme="forward", wrt=wrt)


def wrong_largest_k_sweep(x, y, ks=range(1, 25), scheme="forward", wrt="x"):
    sweep = ex2.fd_sweep(x, y, ks, scheme=scheme, wrt=wrt)
    errors = sweep.total_error
    best = np.nanmin(errors)
    return dataclasses.replace(sweep, best_k=int(sweep.ks[errors == best].max()))


def wrong_float32_truncation_sweep(x, y, ks=range(1, 25), scheme="forward", wrt="x"):
    """Truncation measured with the quotient evaluated in float32 (i.e. the estimate itself)."""
    sweep = ex2.fd_sweep(x, y, ks, scheme=scheme, wrt=wrt)
    exact = ex2.exact_partial(sweep.x, sweep.y, wrt)
    quotient32 = sweep.estimate
    truncation = np.array([float(abs(Fraction(float(q)) - exact)) for q in quotient32])
    rounding = np.abs(sweep.estimate.astype(np.float64) - quotient32.astype(np.float64))
    return dataclasses.replace(sweep, truncation_error=truncation, rounding_error=rounding)


def wrong_float64_sweep(x, y, ks=range(1, 25), scheme="forward", wrt="x"):
    sweep = ex2.fd_sweep(x, y, ks, scheme=scheme, wrt=wrt)
    exact = ex2.exact_partial(sweep.x, sweep.y, wrt)
    est = np.array([wrong_float64_estimate(sweep.x, sweep.y, int(k), scheme, wrt) for k in sweep.ks])
    total = np.array([float(abs(Fraction(float(e)) - exact)) for e in est])
    finite = ~np.isnan(total)
    best = int(sweep.ks[finite][np.argmin(total[finite])])
    return dataclasses.replace(sweep, estimate=est, total_error=total, best_k=best)


def test_step_rounds_where_the_nominal_variant_is_caught():
    # 2.2 in float32 has an odd last significand bit: 2.2f + 2**-23 is a tie that
    # rounds up to the next float, so the applied step is 2**-22, twice nominal.
    x, k = F32(2.2), 23
    assert (x + F32(2.0**-k)) - x == F32(2.0**-22)
    check_estimate(ex2.fd_estimate, x, 3.0, k, "forward", "x")
    with pytest.raises(AssertionError):
        check_estimate(wrong_nominal_step, x, 3.0, k, "forward", "x")


@pytest.mark.parametrize("variant", [wrong_float64_estimate, wrong_float64_cast_back])
def test_float64_variant_fails(variant):
    with pytest.raises(AssertionError):
        check_estimate(variant, *ex2.GENERIC_POINT, 12, "forward", "x")


def test_float64_variant_has_no_dyadic_floor_and_no_binary32_v():
    with pytest.raises(AssertionError):
        check_dyadic_floor(wrong_float64_sweep)
    with pytest.raises(AssertionError):
        check_v_shape(wrong_float64_sweep, *ex2.GENERIC_POINT, "forward", "x", 12)


def test_forward_labelled_central_fails():
    with pytest.raises(AssertionError):
        check_estimate(wrong_forward_as_central, *ex2.GENERIC_POINT, 8, "central", "y")


def test_largest_k_tie_break_fails():
    with pytest.raises(AssertionError):
        check_dyadic_floor(wrong_largest_k_sweep)
    with pytest.raises(AssertionError, match="smallest k among ties"):
        check_sweep(wrong_largest_k_sweep, 2.0, 3.0, list(range(10, 22)), "forward", "x")


def test_float32_truncation_fails():
    with pytest.raises(AssertionError, match="truncation"):
        check_sweep(wrong_float32_truncation_sweep, *ex2.GENERIC_POINT, [8, 12], "forward", "x")


def test_dyadic_point_is_not_a_v():
    with pytest.raises(AssertionError, match="flat floor"):
        check_v_shape(ex2.fd_sweep, 2.0, 3.0, "forward", "x", 12)
