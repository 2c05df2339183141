"""Exercise 2's contract: the notebook, its cells' grade ids and points, and the graded input ranges.

The ranges and the tolerance are stated to students in the notebook's prose and used by
the hidden suite, so both read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...api.contract import Clause, Drawn, ends, layouts, scalars

NOTEBOOK = "ex2_finite_difference"

GRADIENT_CELL = "ex2_exact_gradient"
GRADIENT_TESTS = "ex2_exact_gradient_tests"
ESTIMATE_CELL = "ex2_fd_estimate"
ESTIMATE_TESTS = "ex2_fd_estimate_tests"
SWEEP_CELL = "ex2_fd_sweep"
SWEEP_TESTS = "ex2_fd_sweep_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex2_figure"
INTERPRETATION = "ex2_interpretation"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {GRADIENT_TESTS: 2, ESTIMATE_TESTS: 4, SWEEP_TESTS: 4, INTERPRETATION: 4}
)

#: Where the hidden suite samples its inputs; the prose promises this range.
#: Inside it the applied step is exact (Sterbenz) for every k the suite uses, so the
#: exact quotient Q has one meaning whether it is divided by the exact distance of the
#: two points or by the float32 ``h_eff``.
GRADED_LOW, GRADED_HIGH = 0.5, 4.0
GRADED_K_MAX = 26
#: The float64 errors and derivatives of a sweep may be off by 2**-TOLERANCE_EXPONENT
#: times their scale (see the suite); the prose states the same number.
TOLERANCE_EXPONENT = 44


# --------------------------------------------------------------------------- the contract, clause by clause

# The properties, as '<grade_id>/<property name>' (trusted.contract.Clause.checked_by).
_GV = f"{GRADIENT_TESTS}/gradient_visible_cases"
_GM = f"{GRADIENT_TESTS}/gradient_matches_exact"
_GR = f"{GRADIENT_TESTS}/gradient_rejects_bad_arguments"
_GF = f"{GRADIENT_TESTS}/partial_returns_a_fraction"
_GI = f"{GRADIENT_TESTS}/gradient_calls_independent"
_EV = f"{ESTIMATE_TESTS}/estimate_visible_cases"
_EF = f"{ESTIMATE_TESTS}/estimate_bits_at_float32_points"
_ER = f"{ESTIMATE_TESTS}/estimate_bits_at_rounded_inputs"
_EX = f"{ESTIMATE_TESTS}/estimate_rejects_bad_arguments"
_EO = f"{ESTIMATE_TESTS}/estimate_where_L_overflows"
_EW = f"{ESTIMATE_TESTS}/estimate_emits_no_warnings"
_ED = f"{ESTIMATE_TESTS}/estimate_defaults"
_EI = f"{ESTIMATE_TESTS}/estimate_calls_independent"
_SV = f"{SWEEP_TESTS}/sweep_visible_cases"
_SF = f"{SWEEP_TESTS}/sweep_full_range"
_SG = f"{SWEEP_TESTS}/sweep_at_generated_points"
_ST = f"{SWEEP_TESTS}/sweep_best_k_ties_and_nan"
_SO = f"{SWEEP_TESTS}/sweep_where_L_overflows"
_SX = f"{SWEEP_TESTS}/sweep_rejects_bad_arguments"
_SD = f"{SWEEP_TESTS}/sweep_defaults"
_SI = f"{SWEEP_TESTS}/sweep_calls_independent"

_PARTIAL, _GRADIENT, _ESTIMATE, _SWEEP = "exact_partial", "exact_gradient", "fd_estimate", "fd_sweep"

#: The real kinds x and y accept, and the integer kinds of k; each is drawn where an output promise is checked.
_REALS = ("int", "float", "int64", "float64", "float32")
_KS = ("int", "int64")


def _ks_hold(k: str) -> Drawn:
    """ks of a form that can be read twice holding ``k`` (a range end)."""
    return Drawn(f"holding_{k}", f"isinstance(ks, (list, tuple, range, np.ndarray)) and {k} in list(ks)")


#: The forms of ks, and the range ends 0 and 149 inside one.
_KS_DRAWN = (
    Drawn("list", "type(ks) is list"), Drawn("tuple", "type(ks) is tuple"), Drawn("range", "type(ks) is range"),
    Drawn("numpy_array", "isinstance(ks, np.ndarray)"),
    Drawn("generator", "not isinstance(ks, (list, tuple, range, np.ndarray))"),
    _ks_hold("0"), _ks_hold("149"),
    # sweep_at_generated_points also sends numpy arrays strided and read-only (api.suite.laid).
    *layouts("ks", ndim=1),
)

#: Every clause of the four graded docstrings, in docstring order, with the properties that fail
#: when it is broken. Each property judges its own clauses: values against the reference in the
#: value properties; defaults, accepted forms and purity against the student's own answer to the
#: equivalent call, so a wrong value costs only the properties that check values. exact_partial
#: returns a Fraction, which has no wire form: its value is seen only through exact_gradient
#: (which its docstring builds on it) and the sweep's ``exact``; its type, its default and its
#: Raises are checked directly.
CONTRACT: tuple[Clause, ...] = (
    Clause(_PARTIAL, "behaviour", "the exact dL/dx or dL/dy at the exact binary inputs", (_GV, _GM, _SF)),
    Clause(_PARTIAL, "returns", "a fractions.Fraction", (_GF,)),
    # partial_returns_a_fraction sends Python and numpy floats and ints for x and y.
    Clause(_PARTIAL, "accepts", "x: any real number, at its exact value", (_GR, _GF),
           argument="x", drawn=scalars("x", *_REALS)),
    Clause(_PARTIAL, "accepts", "y: any real number, at its exact value", (_GR, _GF),
           argument="y", drawn=scalars("y", *_REALS)),
    Clause(_PARTIAL, "accepts", "wrt: 'x' or 'y', by position or keyword", (_GF,), argument="wrt"),
    # partial_returns_a_fraction calls without wrt, and reads the declared default ('y' is the other partial).
    Clause(_PARTIAL, "default", "wrt = 'x' (a Fraction comes back without it)", (_GF,), argument="wrt"),
    Clause(_PARTIAL, "raises", "x not a real number (bools refused)", (_GR,), argument="x", raises="TypeError"),
    Clause(_PARTIAL, "raises", "y not a real number (bools refused)", (_GR,), argument="y", raises="TypeError"),
    Clause(_PARTIAL, "raises", "wrt not 'x' or 'y'", (_GR,), argument="wrt", raises="ValueError"),
    Clause(_PARTIAL, "raises", "x not finite", (_GR,), argument="x", raises="ValueError"),
    Clause(_PARTIAL, "raises", "y not finite", (_GR,), argument="y", raises="ValueError"),
    Clause(_PARTIAL, "purity", "no dependence on earlier calls (seen through exact_gradient)", (_GI,)),
    Clause(_GRADIENT, "behaviour", "(dL/dx, dL/dy) at the exact inputs; [144, 132] at (2, 3); graded only where both "
           "are within the float64 range (beyond it: OverflowError or inf, nothing promised)", (_GV, _GM)),
    Clause(_GRADIENT, "accepts", "x: Python or numpy floats and ints, used exactly", (_GM, _GR),
           argument="x", drawn=scalars("x", *_REALS)),
    Clause(_GRADIENT, "accepts", "y: Python or numpy floats and ints, used exactly", (_GM, _GR),
           argument="y", drawn=scalars("y", *_REALS)),
    Clause(_GRADIENT, "tolerance", "each component within a relative 2**-44 of the exact value", (_GV, _GM)),
    Clause(_GRADIENT, "returns", "a float64 array of shape (2,), whatever the input types", (_GV, _GM)),
    Clause(_GRADIENT, "raises", "as exact_partial: x not a real number", (_GR,), argument="x", raises="TypeError"),
    Clause(_GRADIENT, "raises", "as exact_partial: y not a real number", (_GR,), argument="y", raises="TypeError"),
    Clause(_GRADIENT, "raises", "as exact_partial: x not finite", (_GR,), argument="x", raises="ValueError"),
    Clause(_GRADIENT, "raises", "as exact_partial: y not finite", (_GR,), argument="y", raises="ValueError"),
    Clause(_GRADIENT, "purity", "same point, same answer, whatever came before", (_GI,)),
    Clause(_ESTIMATE, "behaviour", "x, y rounded to float32 first", (_ER,)),
    Clause(_ESTIMATE, "behaviour", "h = float32 2**-k, xp = fl(v+h), xm = fl(v-h), h_eff = fl(up-low)", (_EV, _EF)),
    Clause(_ESTIMATE, "behaviour", "forward and central quotients, in x or y, divided by h_eff", (_EV, _EF)),
    Clause(_ESTIMATE, "tolerance", "exact binary32 bits, one float32 operation at a time; any NaN where it is nan",
           (_EV, _EF, _ER)),
    # estimate_bits_at_rounded_inputs draws Python and numpy floats (float32 and float64) and ints;
    # estimate_rejects_bad_arguments sends bad values only, so it does not check what is accepted.
    Clause(_ESTIMATE, "accepts", "x: Python/numpy float or int, to float32", (_ER,),
           argument="x", drawn=scalars("x", *_REALS)),
    Clause(_ESTIMATE, "accepts", "y: Python/numpy float or int, to float32", (_ER,),
           argument="y", drawn=scalars("y", *_REALS)),
    Clause(_ESTIMATE, "accepts", "k: an integer in [0, 149], numpy integers too", (_EX, _ER), argument="k",
           drawn=(*scalars("k", *_KS), *ends("k", 0, 149))),
    Clause(_ESTIMATE, "accepts", "scheme: 'forward' or 'central', by keyword too", (_EF, _ED), argument="scheme"),
    Clause(_ESTIMATE, "accepts", "wrt: 'x' or 'y', by position or keyword", (_EF, _ED), argument="wrt"),
    Clause(_ESTIMATE, "default", "scheme = 'forward'", (_ED,), argument="scheme"),
    Clause(_ESTIMATE, "default", "wrt = 'x'", (_ED,), argument="wrt"),
    Clause(_ESTIMATE, "returns", "np.float32 for every input type; nan (any NaN bits) where h_eff is 0",
           (_EV, _EF, _ER)),
    Clause(_ESTIMATE, "returns", "inf, -inf or nan where L overflows float32, as the float32 operations give", (_EO,)),
    Clause(_ESTIMATE, "behaviour", "no warning emitted, where h_eff is 0 or L overflows too", (_EW,)),
    Clause(_ESTIMATE, "raises", "k not an integer, bools refused", (_EX,), argument="k", raises="TypeError"),
    Clause(_ESTIMATE, "raises", "x not a real number", (_EX,), argument="x", raises="TypeError"),
    Clause(_ESTIMATE, "raises", "y not a real number", (_EX,), argument="y", raises="TypeError"),
    Clause(_ESTIMATE, "raises", "k out of [0, 149]", (_EX,), argument="k", raises="ValueError"),
    Clause(_ESTIMATE, "raises", "x not finite in float32 (nan, inf, 1e39)", (_EX,), argument="x", raises="ValueError"),
    Clause(_ESTIMATE, "raises", "y not finite in float32 (nan, inf, 1e39)", (_EX,), argument="y", raises="ValueError"),
    Clause(_ESTIMATE, "raises", "bad scheme", (_EX,), argument="scheme", raises="ValueError"),
    Clause(_ESTIMATE, "raises", "bad wrt", (_EX,), argument="wrt", raises="ValueError"),
    Clause(_ESTIMATE, "purity", "same arguments, same bits, whatever came before", (_EI,)),
    Clause(_SWEEP, "behaviour", "per k, order and repeats kept: steps, fd_estimate's values", (_SV, _SF, _SG)),
    Clause(_SWEEP, "behaviour", "total, truncation, rounding errors vs exact Q and dL; nan, no step; Q over the "
           "points' exact distance, which is h_eff wherever graded (h <= v forward, 3h <= v central)",
           (_SV, _SF, _SG)),
    Clause(_SWEEP, "tolerance", "errors within 2**-44 of their scale; exact within 2**-44 relative", (_SV, _SF, _SG)),
    Clause(_SWEEP, "behaviour", "total and rounding errors inf where the estimate is +-inf, nan where nan", (_SO,)),
    Clause(_SWEEP, "tie-break", "best_k: ties to the smallest k, never nan, None if all nan", (_ST, _SV, _SO)),
    Clause(_SWEEP, "returns", "an FDSweep with its docstring's dtypes, for every input type", (_SV, _SG)),
    # sweep_at_generated_points draws the input forms; sweep_rejects_bad_arguments only accepts k and ks forms.
    Clause(_SWEEP, "accepts", "x: any real, rounded to float32", (_SG,),
           argument="x", drawn=scalars("x", *_REALS)),
    Clause(_SWEEP, "accepts", "y: any real, rounded to float32", (_SG,),
           argument="y", drawn=scalars("y", *_REALS)),
    Clause(_SWEEP, "accepts", "ks: any iterable read once: lists, tuples, ranges, generators, numpy arrays (one "
           "dimension, any memory layout) and ints",
           (_SG, _SX), argument="ks", drawn=_KS_DRAWN),
    Clause(_SWEEP, "accepts", "scheme: 'forward' or 'central', by keyword too", (_SF, _SD), argument="scheme"),
    Clause(_SWEEP, "accepts", "wrt: 'x' or 'y', by position or keyword", (_SF, _SD), argument="wrt"),
    Clause(_SWEEP, "default", "ks = range(1, 25)", (_SD,), argument="ks"),
    Clause(_SWEEP, "default", "scheme = 'forward'", (_SD,), argument="scheme"),
    Clause(_SWEEP, "default", "wrt = 'x'", (_SD,), argument="wrt"),
    Clause(_SWEEP, "raises", "ks empty (list, tuple or array)", (_SX,), argument="ks", raises="ValueError"),
    Clause(_SWEEP, "raises", "as fd_estimate: a k in ks out of range", (_SX,), argument="ks", raises="ValueError"),
    Clause(_SWEEP, "raises", "as fd_estimate: x not finite in float32", (_SX,), argument="x", raises="ValueError"),
    Clause(_SWEEP, "raises", "as fd_estimate: y not finite in float32", (_SX,), argument="y", raises="ValueError"),
    Clause(_SWEEP, "raises", "as fd_estimate: bad scheme", (_SX,), argument="scheme", raises="ValueError"),
    Clause(_SWEEP, "raises", "as fd_estimate: wrt not one of the values", (_SX,), argument="wrt", raises="ValueError"),
    # sweep_rejects_bad_arguments sends (1, n) and (n, 1) integer arrays: refused, not flattened.
    Clause(_SWEEP, "raises", "as fd_estimate: a k not an integer (the rows of a 2-D array are not ks)", (_SX,),
           argument="ks", raises="TypeError", reshaped="(ks.size,)"),
    Clause(_SWEEP, "raises", "as fd_estimate: x not a real number", (_SX,), argument="x", raises="TypeError"),
    Clause(_SWEEP, "raises", "as fd_estimate: y not a real number", (_SX,), argument="y", raises="TypeError"),
    Clause(_SWEEP, "purity", "ks left unchanged (a list or numpy array); same arguments, same sweep, whatever was "
           "swept before", (_SI,)),
)
