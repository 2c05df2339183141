"""Exercise 1's contract: the notebook, its cells' grade ids and points, and the clause table of its docstrings.

Shared by builder, suite and catalogue; :data:`CONTRACT` maps every clause of the graded functions'
docstrings to the suite's properties that fail when it is broken (``trusted.contract``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...api.contract import Clause, scalars

NOTEBOOK = "ex1_fanout"

DERIVATION = "ex1_derivation"
TAPE_CELL = "ex1_extended_tape"
TAPE_TESTS = "ex1_extended_tape_tests"
CONTRIBUTIONS_CELL = "ex1_contributions_into_a"
CONTRIBUTIONS_TESTS = "ex1_contributions_into_a_tests"
GRADIENT_CELL = "ex1_input_gradient"
GRADIENT_TESTS = "ex1_input_gradient_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex1_figure"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {DERIVATION: 4, TAPE_TESTS: 3, CONTRIBUTIONS_TESTS: 3, GRADIENT_TESTS: 2}
)


_CELLS = {"extended_tape": TAPE_TESTS, "contributions_into_a": CONTRIBUTIONS_TESTS, "input_gradient": GRADIENT_TESTS}


def _by(function: str, *names: str) -> tuple[str, ...]:
    """``"<grade_id>/<function>_<name>"`` of each of ``function``'s properties named."""
    return tuple(f"{_CELLS[function]}/{function}_{name}" for name in names)


#: The number kinds x and y accept; number_types draws each (NUMBER_TYPES in the suite).
_NUMBERS = ("int", "float", "int64", "int32", "float64", "float32")


def _shared_clauses(f: str) -> tuple[Clause, ...]:
    """The clauses all three functions state alike: Args (x, y), Raises, and purity.

    x and y are numbers, immutable, so "arguments left unchanged" holds by construction; purity
    is about earlier calls (caches, running totals), which the repeated-calls property checks. A bool
    answered from a cache breaks purity, not the Raises clause: repeated_calls compares each call with
    the student's own first answer to it, so a function that accepts bools on every call alike fails
    bad_inputs only.
    """
    return (
        Clause(f, "accepts", "x: int, float, numpy integer or floating scalar (float32 included), used as float(x)",
               _by(f, "number_types", "values"), argument="x", drawn=scalars("x", *_NUMBERS)),
        Clause(f, "accepts", "y: likewise", _by(f, "number_types", "values"), argument="y",
               drawn=scalars("y", *_NUMBERS)),
        Clause(f, "raises", "x not a real number (bool, numpy bool_, str, None, list)",
               _by(f, "bad_inputs"), argument="x", raises="TypeError"),
        Clause(f, "raises", "y not a real number (bool, numpy bool_, str, None, list)",
               _by(f, "bad_inputs"), argument="y", raises="TypeError"),
        Clause(f, "raises", "x nan or infinite (numpy float64, float32 too); the message names x",
               _by(f, "bad_inputs"), argument="x", raises="ValueError"),
        Clause(f, "raises", "y nan or infinite (numpy float64, float32 too); the message names y",
               _by(f, "bad_inputs"), argument="y", raises="ValueError"),
        Clause(f, "purity", "no dependence on earlier calls (repeats, equal numbers of other types, a bool "
               "right after its equal number)", _by(f, "repeated_calls")),
    )  # fmt: skip


#: Every clause of the three graded functions' docstrings (solutions/ch11_solutions/ex1_fanout.py),
#: in docstring order, with the properties that fail when it is broken.
CONTRACT: tuple[Clause, ...] = (
    # extended_tape(x, y) -> list[TapeNode]
    Clause("extended_tape", "behaviour", "a = xy, b = a + x, c = ay, d = a*a, L = bc + d, recorded in that order",
           _by("extended_tape", "visible", "values")),
    Clause("extended_tape", "returns", "each value a Python float (float64), whatever the types of x and y",
           _by("extended_tape", "layout", "number_types")),
    # number_types holds the tape at every accepted number type to the student's own at float(x), float(y).
    Clause("extended_tape", "tolerance", "values and local derivatives to 64 * 2**-53 of the quantity at (|x|, |y|)",
           _by("extended_tape", "values", "local_derivatives", "number_types")),
    *_shared_clauses("extended_tape")[:2],
    Clause("extended_tape", "returns", "a list of exactly 7 TapeNode x, y, a, b, c, d, L; L one node, 3 parents; "
           "parent indices ints (numpy integers accepted)",
           _by("extended_tape", "visible", "layout")),
    Clause("extended_tape", "behaviour", "local derivatives, summed per parent, are d node / d parent",
           _by("extended_tape", "visible", "local_derivatives")),
    *_shared_clauses("extended_tape")[2:],
    # contributions_into_a(x, y) -> np.ndarray
    *_shared_clauses("contributions_into_a")[:2],
    Clause("contributions_into_a", "returns", "float64 array of shape (3,), for every accepted input type",
           _by("contributions_into_a", "visible", "number_types")),
    Clause("contributions_into_a", "behaviour", "[b_bar * db/da, c_bar * dc/da, d_bar * dd/da], in that order",
           _by("contributions_into_a", "visible", "values")),
    Clause("contributions_into_a", "behaviour", "their sum is dL/da", _by("contributions_into_a", "sum")),
    Clause("contributions_into_a", "tolerance", "each term to 64 * 2**-53 of the term at (|x|, |y|)",
           _by("contributions_into_a", "values", "sum", "number_types")),
    *_shared_clauses("contributions_into_a")[2:],
    # input_gradient(x, y) -> np.ndarray
    *_shared_clauses("input_gradient")[:2],
    Clause("input_gradient", "returns", "float64 array of shape (2,), for every accepted input type",
           _by("input_gradient", "visible", "number_types")),
    Clause("input_gradient", "behaviour", "[dL/dx, dL/dy]", _by("input_gradient", "visible", "values")),
    Clause("input_gradient", "tolerance", "each component to 64 * 2**-53 of the component at (|x|, |y|)",
           _by("input_gradient", "values", "number_types")),
    *_shared_clauses("input_gradient")[2:],
)  # fmt: skip
