"""The log-sum-exp exercise's contract: the notebook, its cells' grade ids and points, the clause table."""

from __future__ import annotations

from types import MappingProxyType

from ch11_autograder.api.contract import Clause, Drawn

NOTEBOOK = "logsumexp"
FUNCTION = "logsumexp"
ANSWER_CELL = "logsumexp_answer"
TESTS = "logsumexp_tests"

#: Every graded cell, in notebook order.
POINTS = MappingProxyType({TESTS: 4})

#: The docstring's accuracy: |got - exact| <= TOLERANCE * (1 + |exact|).
TOLERANCE = 1e-12
#: Beyond this, exp(v) overflows float64; below -UNDERFLOW every exp(v) is 0.
OVERFLOW = 709.0
UNDERFLOW = 745.0

_VALUE = f"{TESTS}/matches_the_exact_value"
_EXTREME = f"{TESTS}/finite_where_exp_overflows_or_underflows"
_REFUSES = f"{TESTS}/refuses_empty_or_non_finite_x"
_PURE = f"{TESTS}/leaves_x_alone_and_forgets_earlier_calls"

#: Every clause of logsumexp's docstring, with the properties that fail when it is broken.
CONTRACT: tuple[Clause, ...] = (
    # matches_the_exact_value draws each kind, on both sides of the largest value the reference shifts by.
    Clause(FUNCTION, "accepts", "a non-empty list or tuple of floats, or a 1-d float64 array", (_VALUE,),
           argument="x", drawn=(Drawn("list", "type(x) is list"), Drawn("tuple", "type(x) is tuple"),
                                Drawn("array", "isinstance(x, np.ndarray)"))),
    Clause(FUNCTION, "returns", "a float (a np.float64 is fine)", (_VALUE, _EXTREME)),
    Clause(FUNCTION, "tolerance", "within 1e-12 * (1 + |exact value|) of the exact value", (_VALUE,)),
    Clause(FUNCTION, "behaviour", "finite where exp(x[i]) overflows or every exp(x[i]) underflows", (_EXTREME,)),
    Clause(FUNCTION, "purity", "x is left unchanged; the result depends on x alone, not on earlier calls", (_PURE,)),
    Clause(FUNCTION, "raises", "x empty, or holding a nan or an infinity: ValueError", (_REFUSES,),
           argument="x", raises="ValueError"),
)  # fmt: skip
