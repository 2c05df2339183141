"""Exercise 2's witnesses: for every clause of :data:`CONTRACT`, answers that break it alone.

See ``exercises/witness.py``. ``exact_partial`` returns a Fraction, which has no wire form:
its witnesses are seen through ``exact_gradient`` and ``fd_sweep``, which call it by name
(the witness namespace rebinds them to the witness, as an appended answer would).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ch11_solutions import ex2_finite_difference as ref

from ..witness import (
    Family,
    Witness,
    Witnesses,
    by_hand,
    changed_defaults,
    clause_lookup,
    converted,
    mutates,
    other_exception,
    refused,
    wrapper,
)
from .contract import CONTRACT, ESTIMATE_CELL, GRADIENT_CELL, SWEEP_CELL

__all__ = ["WITNESSES"]

_EP, _EG, _FE, _FS = ref.exact_partial, ref.exact_gradient, ref.fd_estimate, ref.fd_sweep


_clause = clause_lookup(CONTRACT)


def _numbers(name: str) -> list[Family]:
    """The accepted number families of a real argument ``name`` other than Python floats."""
    return [Family("numpy_floats", f"isinstance({name}, np.floating)"),
            Family("ints", f"isinstance({name}, (int, np.integer)) and not isinstance({name}, (bool, np.bool_))")]


def _real_families(name: str, *, float32: bool) -> tuple[list[Family], list[Family]]:
    """(TypeError families, ValueError families) of a real argument ``name``, as the suite sends them."""
    types = [
        Family("bool", f"isinstance({name}, (bool, np.bool_))", f"_answer({name}=int({name}))"),
        Family("str", f"isinstance({name}, str)", f"_answer({name}=float({name}))"),
        Family("none", f"{name} is None"),
        Family("list", f"isinstance({name}, list)", f"_answer({name}={name}[0])"),
    ]
    values = [
        Family("nan", f"isinstance({name}, float) and math.isnan({name})"),
        Family("inf", f"isinstance({name}, float) and math.isinf({name})"),
    ]
    if float32:
        values.append(Family("float32_overflow", f"isinstance({name}, float) and math.isfinite({name}) "
                                                 f"and abs({name}) > 3.4e38"))
    return types, values


def _answer(reference: Callable[..., Any]) -> str:
    """``_answer(**changes)``: the reference called with some arguments replaced (module prelude)."""
    name = reference.__name__
    return (f"def _answer(**changes):\n    import inspect as _i\n    frame = _i.currentframe().f_back\n"
            f"    args = {{k: frame.f_locals[k] for k in _i.signature(_reference_{name}).parameters}}\n"
            f"    args.update(changes)\n    return _reference_{name}(**args)\n")


def _raises(function: Callable[..., Any], cell: str, argument: str, families: list[Family], raises: str,
            text: str = "") -> list[Witness]:
    name = function.__name__
    clause = _clause(name, "raises", text, argument=argument, raises=raises)
    out = []
    for w in other_exception(clause, function, cell, families):
        out.append(Witness(w.clause, w.name, w.answer_cell, w.source.replace(
            f"\n\ndef {name}(", "\n" + _answer(function) + f"\n\ndef {name}(", 1)))
    return out


# ---- exact_partial and exact_gradient -----------------------------------------------------------

_SWAP_WRT = "if wrt in ('x', 'y'):\n    wrt = {'x': 'y', 'y': 'x'}[wrt]"

_PARTIAL: list[Witness] = [
    by_hand(_clause("exact_partial", "behaviour"), "partial_swaps_x_and_y", GRADIENT_CELL, wrapper(_EP, _SWAP_WRT)),
    by_hand(_clause("exact_partial", "behaviour"), "partial_at_float32_inputs", GRADIENT_CELL, wrapper(
        _EP, "if isinstance(x, float) and math.isfinite(x) and abs(x) < 3e38:\n    x = float(np.float32(x))")),
    by_hand(_clause("exact_partial", "returns"), "partial_returns_a_float", GRADIENT_CELL,
            wrapper(_EP, result="float(result)")),
    *refused(_clause("exact_partial", "accepts", argument="x"), _EP, GRADIENT_CELL, _numbers("x")),
    *refused(_clause("exact_partial", "accepts", argument="y"), _EP, GRADIENT_CELL, _numbers("y")),
    *refused(_clause("exact_partial", "accepts", argument="wrt"), _EP, GRADIENT_CELL, [Family("y", "wrt == 'y'")]),
    by_hand(_clause("exact_partial", "accepts", argument="wrt"), "partial_wrt_keyword_only", GRADIENT_CELL,
            "_reference_exact_partial = exact_partial\n\n\ndef exact_partial(x, y, *, wrt='x'):\n"
            "    return _reference_exact_partial(x, y, wrt)\n"),
    *changed_defaults(_clause("exact_partial", "default", argument="wrt"), _EP, GRADIENT_CELL, ["'y'"]),
    *_raises(_EP, GRADIENT_CELL, "x", _real_families("x", float32=False)[0], "TypeError"),
    *_raises(_EP, GRADIENT_CELL, "y", _real_families("y", float32=False)[0], "TypeError"),
    *_raises(_EP, GRADIENT_CELL, "x", _real_families("x", float32=False)[1], "ValueError"),
    *_raises(_EP, GRADIENT_CELL, "y", _real_families("y", float32=False)[1], "ValueError"),
    *_raises(_EP, GRADIENT_CELL, "wrt", [Family("other_string", "isinstance(wrt, str) and wrt not in ('x', 'y')"),
                                         Family("not_a_string", "not isinstance(wrt, str)")], "ValueError"),
    # Adjoints accumulated in module state that is never reset: the second call adds to the first.
    by_hand(_clause("exact_partial", "purity"), "partial_accumulates_adjoints", GRADIENT_CELL, wrapper(
        _EP, result="_partial_total.__setitem__(wrt, _partial_total.get(wrt, 0) + result) or _partial_total[wrt]",
        prelude="_partial_total = {}")),
]

_GRADIENT: list[Witness] = [
    by_hand(_clause("exact_gradient", "behaviour"), "gradient_components_swapped", GRADIENT_CELL,
            wrapper(_EG, result="result[::-1].copy()")),
    converted(_clause("exact_gradient", "accepts", argument="x"), _EG, GRADIENT_CELL, "to_float32",
              "isinstance(x, float) and math.isfinite(x) and abs(x) < 3e38", "float(np.float32(x))"),
    *refused(_clause("exact_gradient", "accepts", argument="x"), _EG, GRADIENT_CELL, [
        Family("numpy_integers", "isinstance(x, np.integer)"),
        Family("numpy_floats", "isinstance(x, np.floating)"),
    ]),
    converted(_clause("exact_gradient", "accepts", argument="y"), _EG, GRADIENT_CELL, "to_float32",
              "isinstance(y, float) and math.isfinite(y) and abs(y) < 3e38", "float(np.float32(y))"),
    *refused(_clause("exact_gradient", "accepts", argument="y"), _EG, GRADIENT_CELL, [
        Family("numpy_integers", "isinstance(y, np.integer)"),
        Family("numpy_floats", "isinstance(y, np.floating)"),
    ]),
    by_hand(_clause("exact_gradient", "tolerance"), "gradient_float32_components", GRADIENT_CELL,
            wrapper(_EG, result="result.astype(np.float32).astype(np.float64)")),
    by_hand(_clause("exact_gradient", "returns"), "gradient_returns_a_list", GRADIENT_CELL,
            wrapper(_EG, result="[float(v) for v in result]")),
    by_hand(_clause("exact_gradient", "returns"), "gradient_float32_array", GRADIENT_CELL,
            wrapper(_EG, result="result.astype(np.float32)")),
    *_raises(_EG, GRADIENT_CELL, "x", _real_families("x", float32=False)[0], "TypeError"),
    *_raises(_EG, GRADIENT_CELL, "y", _real_families("y", float32=False)[0], "TypeError"),
    *_raises(_EG, GRADIENT_CELL, "x", _real_families("x", float32=False)[1], "ValueError"),
    *_raises(_EG, GRADIENT_CELL, "y", _real_families("y", float32=False)[1], "ValueError"),
    by_hand(_clause("exact_gradient", "purity"), "gradient_accumulates", GRADIENT_CELL, wrapper(
        _EG, result="_gradient_total.__iadd__(result).copy()", prelude="_gradient_total = np.zeros(2)")),
    by_hand(_clause("exact_gradient", "purity"), "gradient_counts_calls", GRADIENT_CELL, wrapper(
        _EG, "_gradient_calls[0] += 1", result="result * (1 + 2.0 ** -30 * (_gradient_calls[0] > 1))",
        prelude="_gradient_calls = [0]")),
]

# ---- fd_estimate ----------------------------------------------------------------------------

_ESTIMATE_NO_ROUNDING = """
_reference_fd_estimate = fd_estimate


def fd_estimate(x, y, k, scheme="forward", wrt="x"):
    # Validation as the reference; then the step added in float64 and rounded afterwards.
    _reference_fd_estimate(x, y, k, scheme, wrt)
    v = float(x if wrt == "x" else y)
    h = 2.0 ** -int(k)
    up = np.float32(v + h)
    low = np.float32(v) if scheme == "forward" else np.float32(v - h)
    h_eff = up - low
    if h_eff == 0:
        return np.float32(np.nan)
    xs, ys = np.float32(x), np.float32(y)
    upper = (up, ys) if wrt == "x" else (xs, up)
    lower = (low, ys) if wrt == "x" else (xs, low)
    with np.errstate(all="ignore"):
        return (opening_objective(*upper, dtype=np.float32) - opening_objective(*lower, dtype=np.float32)) / h_eff
"""

_ESTIMATE_NOMINAL_STEP = """
_reference_fd_estimate = fd_estimate


def fd_estimate(x, y, k, scheme="forward", wrt="x"):
    # Divided by the nominal step, not the applied one.
    estimate = _reference_fd_estimate(x, y, k, scheme, wrt)
    xs, ys = np.float32(x), np.float32(y)
    v = xs if wrt == "x" else ys
    h = np.float32(2.0 ** -int(k))
    up = v + h
    low = v if scheme == "forward" else v - h
    nominal = h if scheme == "forward" else h + h
    h_eff = up - low
    if h_eff == 0 or h_eff == nominal:
        return estimate
    with np.errstate(all="ignore"):
        return np.float32(estimate * h_eff / nominal)
"""

_ESTIMATE: list[Witness] = [
    by_hand(_clause("fd_estimate", "behaviour", "x, y rounded"), "estimate_rounds_after_the_step", ESTIMATE_CELL,
            _ESTIMATE_NO_ROUNDING),
    by_hand(_clause("fd_estimate", "behaviour", "h = float32"), "estimate_divides_by_the_nominal_step",
            ESTIMATE_CELL, _ESTIMATE_NOMINAL_STEP),
    by_hand(_clause("fd_estimate", "behaviour", "forward and central"), "estimate_schemes_swapped", ESTIMATE_CELL,
            wrapper(_FE, "if scheme in ('forward', 'central'):\n"
                    "    scheme = {'forward': 'central', 'central': 'forward'}[scheme]")),
    by_hand(_clause("fd_estimate", "tolerance"), "estimate_in_float64", ESTIMATE_CELL, wrapper(
        _FE, result="np.float32(result + np.float32(np.spacing(result)) * np.float32(0.5 < abs(result)))")),
    *refused(_clause("fd_estimate", "accepts", argument="x"), _FE, ESTIMATE_CELL, _numbers("x")),
    converted(_clause("fd_estimate", "accepts", argument="x"), _FE, ESTIMATE_CELL, "to_float16",
              "isinstance(x, float) and math.isfinite(x) and abs(x) < 6e4", "float(np.float16(x))"),
    *refused(_clause("fd_estimate", "accepts", argument="y"), _FE, ESTIMATE_CELL, _numbers("y")),
    converted(_clause("fd_estimate", "accepts", argument="y"), _FE, ESTIMATE_CELL, "to_float16",
              "isinstance(y, float) and math.isfinite(y) and abs(y) < 6e4", "float(np.float16(y))"),
    *refused(_clause("fd_estimate", "accepts", argument="k"), _FE, ESTIMATE_CELL, [
        Family("numpy_integers", "isinstance(k, np.integer)"),
        Family("zero", "isinstance(k, int) and k == 0"),
        Family("above_24", "isinstance(k, int) and not isinstance(k, bool) and 24 < k <= 149"),
    ]),
    *refused(_clause("fd_estimate", "accepts", argument="scheme"), _FE, ESTIMATE_CELL,
             [Family("central", "scheme == 'central'")]),
    *refused(_clause("fd_estimate", "accepts", argument="wrt"), _FE, ESTIMATE_CELL, [Family("y", "wrt == 'y'")]),
    *changed_defaults(_clause("fd_estimate", "default", argument="scheme"), _FE, ESTIMATE_CELL, ["'central'"]),
    *changed_defaults(_clause("fd_estimate", "default", argument="wrt"), _FE, ESTIMATE_CELL, ["'y'"]),
    by_hand(_clause("fd_estimate", "returns", "inf, -inf"), "estimate_overflow_as_nan", ESTIMATE_CELL,
            wrapper(_FE, result="np.float32(np.nan) if np.isinf(result) else result")),
    by_hand(_clause("fd_estimate", "behaviour", "no warning"), "estimate_warns_on_overflow", ESTIMATE_CELL,
            wrapper(_FE, result="(result, warnings.warn('overflow', RuntimeWarning) if not np.isfinite(result) "
                                "else None)[0]")),
    *_raises(_FE, ESTIMATE_CELL, "k", [
        Family("bool", "isinstance(k, (bool, np.bool_))", "_answer(k=int(k))"),
        Family("float", "isinstance(k, (float, np.floating))", "_answer(k=int(k))"),
        Family("str_or_none", "isinstance(k, str) or k is None"),
    ], "TypeError"),
    *_raises(_FE, ESTIMATE_CELL, "k", [
        Family("negative", "isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and k < 0",
               "_answer(k=0)"),
        Family("above_149", "isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and k > 149",
               "_answer(k=149)"),
    ], "ValueError"),
    *_raises(_FE, ESTIMATE_CELL, "x", _real_families("x", float32=True)[0], "TypeError"),
    *_raises(_FE, ESTIMATE_CELL, "y", _real_families("y", float32=True)[0], "TypeError"),
    *_raises(_FE, ESTIMATE_CELL, "x", _real_families("x", float32=True)[1], "ValueError"),
    *_raises(_FE, ESTIMATE_CELL, "y", _real_families("y", float32=True)[1], "ValueError"),
    *_raises(_FE, ESTIMATE_CELL, "scheme", [Family("other", "scheme not in ('forward', 'central')",
                                                   "_answer(scheme='forward')")], "ValueError"),
    *_raises(_FE, ESTIMATE_CELL, "wrt", [Family("other", "wrt not in ('x', 'y')", "_answer(wrt='x')")],
             "ValueError"),
    by_hand(_clause("fd_estimate", "purity"), "estimate_counts_calls", ESTIMATE_CELL, wrapper(
        _FE, "_estimate_calls[0] += 1",
        result="np.nextafter(result, np.float32(np.inf)) if _estimate_calls[0] > 3 else result",
        prelude="_estimate_calls = [0]")),
]


def _no_step(answer: str) -> str:
    """An fd_estimate that returns ``answer`` instead of nan where the applied step is 0, else the reference's bits."""
    return f"""
_reference_fd_estimate = fd_estimate


def fd_estimate(x, y, k, scheme="forward", wrt="x"):
    estimate = _reference_fd_estimate(x, y, k, scheme, wrt)
    v = np.float32(x if wrt == "x" else y)
    h = np.float32(2.0 ** -int(k))
    low = v if scheme == "forward" else v - h
    if (v + h) - low == 0:
        return {answer}
    return estimate
"""


_ESTIMATE_RETURNS_CLAUSE = _clause("fd_estimate", "returns", "np.float32")
_ESTIMATE_RETURNS: list[Witness] = [
    # "No step, no change": 0 where the step vanishes instead of the quotient's nan.
    by_hand(_ESTIMATE_RETURNS_CLAUSE, "estimate_zero_where_no_step", ESTIMATE_CELL, _no_step("np.float32(0.0)")),
    # A guarded division that answers inf for 0 / 0.
    by_hand(_ESTIMATE_RETURNS_CLAUSE, "estimate_inf_where_no_step", ESTIMATE_CELL, _no_step("np.float32(np.inf)")),
    # float32 for float inputs only: an int or numpy integer point comes back in float64.
    by_hand(_ESTIMATE_RETURNS_CLAUSE, "estimate_float64_for_integer_points", ESTIMATE_CELL, wrapper(
        _FE, result="np.float64(result) if isinstance(x, (int, np.integer)) or isinstance(y, (int, np.integer)) "
                    "else result")),
]

# ---- fd_sweep -------------------------------------------------------------------------------


def _sweep(**changes: str) -> str:
    """An FDSweep expression: the reference's ``result`` with the fields given replaced."""
    fields = ("x", "y", "scheme", "wrt", "ks", "h", "h_eff", "estimate", "exact", "total_error",
              "truncation_error", "rounding_error", "best_k")
    return "FDSweep(" + ", ".join(f"{f}={changes.get(f, 'result.' + f)}" for f in fields) + ")"


_SWEEP: list[Witness] = [
    by_hand(_clause("fd_sweep", "behaviour", "per k"), "sweep_sorts_ks", SWEEP_CELL,
            wrapper(_FS, "ks = sorted(ks)")),
    by_hand(_clause("fd_sweep", "behaviour", "per k"), "sweep_drops_repeated_ks", SWEEP_CELL,
            wrapper(_FS, "ks = list(dict.fromkeys(ks))")),
    by_hand(_clause("fd_sweep", "tolerance"), "sweep_errors_in_float32", SWEEP_CELL, wrapper(
        _FS, result=_sweep(total_error="result.total_error.astype(np.float32).astype(np.float64)",
                           exact="float(np.float32(result.exact))"))),
    by_hand(_clause("fd_sweep", "behaviour", "total and rounding errors inf"), "sweep_overflow_errors_nan",
            SWEEP_CELL, wrapper(_FS, result=_sweep(
                total_error="np.where(np.isinf(result.total_error), np.nan, result.total_error)",
                rounding_error="np.where(np.isinf(result.rounding_error), np.nan, result.rounding_error)"))),
    by_hand(_clause("fd_sweep", "behaviour", "per k"), "sweep_h_eff_is_nominal", SWEEP_CELL,
            wrapper(_FS, result=_sweep(h_eff="result.h * np.float32(1 if result.scheme == 'forward' else 2)"))),
    by_hand(_clause("fd_sweep", "tie-break"), "sweep_best_k_largest_tie", SWEEP_CELL, wrapper(
        _FS, result=_sweep(best_k="None if result.best_k is None else int(result.ks[~np.isnan(result.total_error) "
                           "& (result.total_error == np.nanmin(result.total_error))].max())"))),
    by_hand(_clause("fd_sweep", "tie-break"), "sweep_best_k_argmin_with_nan", SWEEP_CELL, wrapper(
        _FS, result=_sweep(best_k="int(result.ks[np.argmin(result.total_error)])"))),
    # Issue 35: 2**k overflows float32 for k >= 128, so h is 0.0 there instead of the subnormal 2**-k
    # (k = 149 is in range); the estimates agree (the step vanishes either way), only h shows it.
    by_hand(_clause("fd_sweep", "behaviour", "per k"), "sweep_h_from_float32_power", SWEEP_CELL, wrapper(
        _FS, result=_sweep(h="np.array([np.float32(1) / np.float32(2) ** np.float32(k) for k in result.ks], "
                             "dtype=np.float32)"))),
    by_hand(_clause("fd_sweep", "returns"), "sweep_lists_not_arrays", SWEEP_CELL,
            wrapper(_FS, result=_sweep(h="result.h.tolist()", estimate="result.estimate.tolist()"))),
    by_hand(_clause("fd_sweep", "returns"), "sweep_float64_estimates", SWEEP_CELL,
            wrapper(_FS, result=_sweep(estimate="result.estimate.astype(np.float64)",
                                       x="float(result.x)", y="float(result.y)"))),
    *refused(_clause("fd_sweep", "accepts", argument="x"), _FS, SWEEP_CELL, _numbers("x")),
    *refused(_clause("fd_sweep", "accepts", argument="y"), _FS, SWEEP_CELL, _numbers("y")),
    *refused(_clause("fd_sweep", "accepts", argument="ks"), _FS, SWEEP_CELL, [
        Family("tuples", "isinstance(ks, tuple)"),
        Family("numpy_arrays", "isinstance(ks, np.ndarray)"),
        Family("numpy_integers", "isinstance(ks, list) and any(isinstance(k, np.integer) for k in ks)"),
    ]),
    *refused(_clause("fd_sweep", "accepts", argument="scheme"), _FS, SWEEP_CELL,
             [Family("central", "scheme == 'central'")]),
    *refused(_clause("fd_sweep", "accepts", argument="wrt"), _FS, SWEEP_CELL, [Family("y", "wrt == 'y'")]),
]
_SWEEP += [
    *changed_defaults(_clause("fd_sweep", "default", argument="ks"), _FS, SWEEP_CELL,
                      ["range(1, 24)", "range(0, 25)", "range(1, 25, 2)"]),
    *changed_defaults(_clause("fd_sweep", "default", argument="scheme"), _FS, SWEEP_CELL, ["'central'"]),
    *changed_defaults(_clause("fd_sweep", "default", argument="wrt"), _FS, SWEEP_CELL, ["'y'"]),
    *_raises(_FS, SWEEP_CELL, "ks", [
        Family("empty", "isinstance(ks, (list, tuple, np.ndarray)) and len(ks) == 0", "_answer(ks=range(1, 25))"),
    ], "ValueError", text="ks empty"),
    *_raises(_FS, SWEEP_CELL, "ks", [
        Family("k_out_of_range", "isinstance(ks, list) and any(isinstance(k, int) and not isinstance(k, bool) "
               "and not 0 <= k <= 149 for k in ks)", "_answer(ks=[k for k in ks if 0 <= k <= 149] or [1])"),
    ], "ValueError", text="as fd_estimate: a k"),
    *_raises(_FS, SWEEP_CELL, "ks", [
        Family("k_not_an_integer", "isinstance(ks, list) and any(isinstance(k, (bool, float, str, np.floating)) "
               "or k is None for k in ks)"),
    ], "TypeError"),
    *_raises(_FS, SWEEP_CELL, "x", _real_families("x", float32=True)[0], "TypeError"),
    *_raises(_FS, SWEEP_CELL, "y", _real_families("y", float32=True)[0], "TypeError"),
    *_raises(_FS, SWEEP_CELL, "x", _real_families("x", float32=True)[1], "ValueError"),
    *_raises(_FS, SWEEP_CELL, "y", _real_families("y", float32=True)[1], "ValueError"),
    *_raises(_FS, SWEEP_CELL, "scheme", [Family("other", "scheme not in ('forward', 'central')",
                                                "_answer(scheme='forward')")], "ValueError"),
    *_raises(_FS, SWEEP_CELL, "wrt", [Family("other", "wrt not in ('x', 'y')", "_answer(wrt='x')")], "ValueError"),
    mutates(_clause("fd_sweep", "purity"), _FS, SWEEP_CELL, "sweep_sorts_the_callers_ks",
            "ks.sort() if isinstance(ks, (list, np.ndarray)) else None", after=True),
    by_hand(_clause("fd_sweep", "purity"), "sweep_counts_calls", SWEEP_CELL, wrapper(
        _FS, "_sweep_calls[0] += 1",
        result=_sweep(exact="result.exact * (1 + 2.0 ** -20) if _sweep_calls[0] > 2 else result.exact"),
        prelude="_sweep_calls = [0]")),
]

def _sweep_quotient(divisor: str, *, no_step: str = "") -> str:
    """An fd_sweep whose Q divides by ``divisor`` (an expression over ``h``, the float32 nominal step,
    and ``forward``), its truncation and rounding errors recomputed from that Q; where the applied
    step is 0, ``no_step`` (an expression) replaces the three errors' nan, if given."""
    no_step_errors = f"            total[i] = truncation[i] = rounding[i] = {no_step}\n" if no_step else ""
    return f"""
from fractions import Fraction as _Fraction

_reference_fd_sweep = fd_sweep


def fd_sweep(x, y, ks=range(1, 25), scheme="forward", wrt="x"):
    result = _reference_fd_sweep(x, y, ks, scheme, wrt)
    exact = exact_partial(result.x, result.y, result.wrt)
    forward = result.scheme == "forward"
    total = result.total_error.copy()
    truncation = result.truncation_error.copy()
    rounding = result.rounding_error.copy()
    for i, h in enumerate(result.h):
        v = result.x if result.wrt == "x" else result.y
        up = v + h
        low = v if forward else v - h
        if result.h_eff[i] == 0:
{no_step_errors}            continue
        upper = (up, result.y) if result.wrt == "x" else (result.x, up)
        lower = (low, result.y) if result.wrt == "x" else (result.x, low)
        q = (opening_objective_exact(*upper) - opening_objective_exact(*lower)) / ({divisor})
        truncation[i] = float(abs(q - exact))
        if np.isfinite(result.estimate[i]):
            rounding[i] = float(abs(_Fraction(float(result.estimate[i])) - q))
    return FDSweep(result.x, result.y, result.scheme, result.wrt, result.ks, result.h, result.h_eff,
                   result.estimate, result.exact, total, truncation, rounding, result.best_k)
"""


_SWEEP_ERRORS_CLAUSE = _clause("fd_sweep", "behaviour", "total, truncation")
_SWEEP_ERRORS: list[Witness] = [
    # Q over the nominal step (h forward, 2h central), not the points' distance: they differ where v + h rounds.
    by_hand(_SWEEP_ERRORS_CLAUSE, "sweep_q_over_the_nominal_step", SWEEP_CELL,
            _sweep_quotient("_Fraction(float(h)) * (1 if forward else 2)")),
    # Q over h for both schemes: the central quotient's points are 2h apart.
    by_hand(_SWEEP_ERRORS_CLAUSE, "sweep_central_q_over_h", SWEEP_CELL, _sweep_quotient("_Fraction(float(h))")),
    # Where no step was taken, errors of 0 instead of nan (or inf, from a guarded division).
    by_hand(_SWEEP_ERRORS_CLAUSE, "sweep_zero_errors_where_no_step", SWEEP_CELL,
            _sweep_quotient("_Fraction(float(result.h_eff[i]))", no_step="0.0")),
    by_hand(_SWEEP_ERRORS_CLAUSE, "sweep_inf_errors_where_no_step", SWEEP_CELL,
            _sweep_quotient("_Fraction(float(result.h_eff[i]))", no_step="np.inf")),
]


#: The readings the docstring settles: exact is a float (np.float64 is one), best_k an int (a numpy integer is one).
_READINGS = [
    by_hand(_clause("fd_sweep", "returns"), "sweep_numpy_exact_and_best_k", SWEEP_CELL, wrapper(
        _FS, result=_sweep(exact="np.float64(result.exact)",
                           best_k="None if result.best_k is None else np.int64(result.best_k)"))),
]

WITNESSES = Witnesses(CONTRACT, (*_PARTIAL, *_GRADIENT, *_ESTIMATE, *_ESTIMATE_RETURNS, *_SWEEP, *_SWEEP_ERRORS),
                      tuple(_READINGS))
