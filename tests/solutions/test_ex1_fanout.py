"""Exercise 1 reference (third child d = a**2, L = b*c + d) against sympy.

The source of truth is symbolic: the node definitions are written once as
sympy expressions, the input gradient comes from differentiating the expanded
polynomial L(x, y), and each path contribution into ``a`` from
differentiating with a, b, c, d as independent symbols. Nothing here reuses
the reference's arithmetic. Comparisons are exact (rationals) against a
forward-error bound, and every check is also run on the chapter's named wrong
answers to prove it can fail.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from ch11_solutions.ex1_fanout import (
    EXTENDED_NODE_NAMES,
    contributions_into_a,
    extended_tape,
    input_gradient,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from trainable_harness import TapeNode, opening_tape, reverse_accumulate

GRADING = settings(max_examples=200, derandomize=True, database=None, deadline=None)
TAPE_CHECKS = settings(max_examples=100, derandomize=True, database=None, deadline=None)
moderate = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)

# ---- symbolic source of truth -----------------------------------------------------------

X, Y, A, B, C, D, L = sp.symbols("x y a b c d L")
NODES = (X, Y, A, B, C, D, L)
INDEX = {sym: i for i, sym in enumerate(NODES)}
# Each node as a function of its parent nodes, as Exercise 1 states it.
DEFINITIONS = {A: X * Y, B: A + X, C: A * Y, D: A**2, L: B * C + D}

IN_XY: dict[sp.Symbol, sp.Expr] = {X: X, Y: Y}
for _node, _definition in DEFINITIONS.items():
    IN_XY[_node] = sp.expand(_definition.subs(IN_XY))

GRADIENT_XY = (sp.diff(IN_XY[L], X), sp.diff(IN_XY[L], Y))
# Contribution of the path a -> child -> L: (dL/dchild) * (dchild/da), a..d independent.
CONTRIBUTIONS_XY = tuple(
    sp.expand((sp.diff(DEFINITIONS[L], child) * sp.diff(DEFINITIONS[child], A)).subs(IN_XY)) for child in (B, C, D)
)


class Polynomial:
    """An integer polynomial in (x, y), evaluated exactly on the binary values of floats."""

    def __init__(self, expr: sp.Expr) -> None:
        self.expr = expr
        self.terms = [((int(i), int(j)), int(c)) for (i, j), c in sp.Poly(expr, X, Y).terms()]

    def exact(self, x: float, y: float) -> Fraction:
        fx, fy = Fraction(x), Fraction(y)
        return sum((c * fx**i * fy**j for (i, j), c in self.terms), Fraction(0))

    def magnitude(self, x: float, y: float) -> Fraction:
        fx, fy = abs(Fraction(x)), abs(Fraction(y))
        return sum((abs(c) * fx**i * fy**j for (i, j), c in self.terms), Fraction(0))


NODE_POLYS = [Polynomial(IN_XY[sym]) for sym in NODES]
GRADIENT_POLYS = [Polynomial(e) for e in GRADIENT_XY]
CONTRIBUTION_POLYS = [Polynomial(e) for e in CONTRIBUTIONS_XY]

# Tolerance. Every quantity compared here is computed by a chain of at most 7
# rounded float64 + and * (e.g. dL/dy: a, b, b*y, three additions into a-bar,
# a-bar*x, one more addition), and every node definition has positive
# coefficients. The standard forward error bound (Higham, Accuracy and
# Stability of Numerical Algorithms, ch. 3) then gives
#     |computed - exact| <= gamma_7 * P(|x|, |y|),  gamma_7 = 7u / (1 - 7u),
# where P(|x|, |y|) is the polynomial with absolute coefficients at absolute
# inputs: a relative bound that stays honest under cancellation (b = xy + x
# near y = -1, gradient components near their zeros). We allow 16u, a bit more
# than twice gamma_7. Gradual underflow adds at most 2**-1075 absolute error
# per operation, amplified by at most a few factors of size <= 1e3, far below
# the 1e-300 absolute floor. Wrong variants are off by a whole path
# contribution, orders of magnitude above this bound at the points used.
UNIT_ROUNDOFF = Fraction(1, 2**53)
RELATIVE_FACTOR = 16 * UNIT_ROUNDOFF
ABSOLUTE_FLOOR = Fraction(1, 10**300)


def assert_close(got: object, poly: Polynomial, x: float, y: float, what: str) -> None:
    assert isinstance(got, float | np.floating), f"{what}: expected a float, got {type(got).__name__}"
    assert math.isfinite(got), f"{what}: got non-finite {got!r}"
    exact = poly.exact(x, y)
    bound = RELATIVE_FACTOR * poly.magnitude(x, y) + ABSOLUTE_FLOOR
    assert abs(Fraction(float(got)) - exact) <= bound, (
        f"{what} at (x={x!r}, y={y!r}): got {got!r}, expected {float(exact)!r} ({poly.expr})"
    )


def check_gradient(gradient_fn: Callable[[float, float], np.ndarray], x: float, y: float) -> None:
    got = gradient_fn(x, y)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (2,), repr(got)
    for name, value, poly in zip(("dL/dx", "dL/dy"), got, GRADIENT_POLYS, strict=True):
        assert_close(value, poly, x, y, name)


def check_contributions(contributions_fn: Callable[[float, float], np.ndarray], x: float, y: float) -> None:
    got = contributions_fn(x, y)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (3,), repr(got)
    for name, value, poly in zip(("via b", "via c", "via d"), got, CONTRIBUTION_POLYS, strict=True):
        assert_close(value, poly, x, y, f"contribution {name}")


def _exact_at(expr: sp.Expr, values: dict[sp.Symbol, float]) -> Fraction:
    rational = sp.Rational(expr.subs({sym: sp.Rational(v) for sym, v in values.items()}))
    return Fraction(int(rational.p), int(rational.q))


def check_tape(tape_fn: Callable[[float, float], list[TapeNode]], x: float, y: float) -> None:
    """Node order, node values, and each node's edges as a multiset."""
    tape = tape_fn(x, y)
    assert len(tape) == len(NODES), f"expected {len(NODES)} nodes, got {len(tape)}"
    for index, (sym, node) in enumerate(zip(NODES, tape, strict=True)):
        assert isinstance(node, TapeNode), f"node {index} is a {type(node).__name__}"
        assert_close(node.value, NODE_POLYS[index], x, y, f"value of node {index} ({sym})")
    recorded = {sym: float(node.value) for sym, node in zip(NODES, tape, strict=True)}
    for index, (sym, node) in enumerate(zip(NODES, tape, strict=True)):
        definition = DEFINITIONS.get(sym)
        parents = sorted(definition.free_symbols, key=INDEX.__getitem__) if definition is not None else []
        # A local derivative is an exact function of the recorded values (y, x, a, 2a, c, b, 1):
        # no rounding separates it from the symbolic one, so edges compare exactly.
        want = Counter((INDEX[p], _exact_at(sp.diff(definition, p), recorded)) for p in parents)
        got = Counter((parent, Fraction(local)) for parent, local in node.parents)
        assert got == want, f"edges of node {index} ({sym}): got {node.parents}, expected {dict(want)}"


# ---- the oracle agrees with the exercise's own numbers ----------------------------------


def test_symbolic_truth_matches_the_exercise_numbers():
    at = {X: 2, Y: 3}
    assert [e.subs(at) for e in CONTRIBUTIONS_XY] == [18, 24, 12]
    assert [e.subs(at) for e in GRADIENT_XY] == [180, 156]
    # The three path contributions are the whole of dL/da (graph chain rule, Equation 11.3).
    l_of_a = DEFINITIONS[L].subs({B: DEFINITIONS[B], C: DEFINITIONS[C], D: DEFINITIONS[D]})
    assert sp.expand(sum(CONTRIBUTIONS_XY) - sp.diff(l_of_a, A).subs(A, X * Y)) == 0


# ---- the reference ---------------------------------------------------------------------


def test_exact_numbers_at_2_3():
    tape = extended_tape(2.0, 3.0)
    assert [node.value for node in tape] == [2.0, 3.0, 6.0, 8.0, 18.0, 36.0, 180.0]
    assert [node.parents for node in tape] == [
        (),
        (),
        ((0, 3.0), (1, 2.0)),
        ((2, 1.0), (0, 1.0)),
        ((2, 3.0), (1, 6.0)),
        ((2, 12.0),),
        ((3, 18.0), (4, 8.0), (5, 1.0)),
    ]
    contributions = contributions_into_a(2.0, 3.0)
    assert contributions.dtype == np.float64 and contributions.shape == (3,)
    np.testing.assert_array_equal(contributions, [18.0, 24.0, 12.0])
    assert contributions.sum() == 54.0 == reverse_accumulate(tape)[2]
    gradient = input_gradient(2.0, 3.0)
    assert gradient.dtype == np.float64 and gradient.shape == (2,)
    np.testing.assert_array_equal(gradient, [180.0, 156.0])


def test_node_names():
    assert EXTENDED_NODE_NAMES == ("x", "y", "a", "b", "c", "d", "L")
    assert tuple(str(sym) for sym in NODES) == EXTENDED_NODE_NAMES


@GRADING
@given(moderate, moderate)
def test_input_gradient_matches_sympy(x, y):
    check_gradient(input_gradient, x, y)


@GRADING
@given(moderate, moderate)
def test_contributions_match_sympy_paths(x, y):
    check_contributions(contributions_into_a, x, y)


@TAPE_CHECKS
@given(moderate, moderate)
def test_tape_structure_matches_sympy(x, y):
    check_tape(extended_tape, x, y)
    assert all(isinstance(node.value, float) for node in extended_tape(x, y))


@TAPE_CHECKS
@given(moderate, moderate)
def test_gradient_is_the_reverse_sweep_of_the_tape(x, y):
    tape = extended_tape(x, y)
    cotangents = reverse_accumulate(tape)
    np.testing.assert_array_equal(input_gradient(x, y), cotangents[:2])
    # The contributions are what the sweep adds into a-bar (it adds them in another order).
    total = contributions_into_a(x, y).sum()
    assert abs(total - cotangents[2]) <= 4 * 2.0**-53 * np.abs(contributions_into_a(x, y)).sum() + 1e-300


def test_other_real_input_types():
    np.testing.assert_array_equal(input_gradient(2, 3), [180.0, 156.0])
    np.testing.assert_array_equal(input_gradient(np.float32(2), np.int64(3)), [180.0, 156.0])


# ---- named wrong answers fail the same checks --------------------------------------------


def _hand_tape(x: float, y: float, *, d_edge: bool = True) -> list[TapeNode]:
    """The exercise's tape written out independently of the reference."""
    a, b, c = x * y, x * y + x, x * y * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((0, y), (1, x))),
        TapeNode(b, ((2, 1.0), (0, 1.0))),
        TapeNode(c, ((2, y), (1, a))),
        TapeNode(d, ((2, 2 * a),) if d_edge else ()),
        TapeNode(b * c + d, ((3, c), (4, b), (5, 1.0))),
    ]


def _overwrite_sweep(nodes: list[TapeNode], shared_index: int, reverse_order: tuple[int, ...]) -> np.ndarray:
    """The chapter's defective sweep: assignment instead of addition at the shared node."""
    cotangents = np.zeros(len(nodes), dtype=np.float64)
    cotangents[-1] = 1.0
    for node_index in reverse_order:
        incoming = cotangents[node_index]
        for parent_index, local in nodes[node_index].parents:
            if parent_index == shared_index:
                cotangents[parent_index] = incoming * local
            else:
                cotangents[parent_index] += incoming * local
    return cotangents


def last_writer_wins(x: float, y: float) -> np.ndarray:
    # Siblings visited d, b, c: the c path is the last writer at a.
    return _overwrite_sweep(_hand_tape(x, y), 2, (6, 5, 3, 4, 2, 1, 0))[:2]


def last_writer_wins_c_first(x: float, y: float) -> np.ndarray:
    # Same bug, sibling order c before b: now the b path wins.
    return _overwrite_sweep(_hand_tape(x, y), 2, (6, 5, 4, 3, 2, 1, 0))[:2]


def missing_d_path_tape(x: float, y: float) -> list[TapeNode]:
    return _hand_tape(x, y, d_edge=False)


def missing_d_path_gradient(x: float, y: float) -> np.ndarray:
    return reverse_accumulate(missing_d_path_tape(x, y))[:2]


def missing_d_path_contributions(x: float, y: float) -> np.ndarray:
    cot = reverse_accumulate(missing_d_path_tape(x, y))
    return np.array([cot[3], cot[4] * y, 0.0])


def original_objective_gradient(x: float, y: float) -> np.ndarray:
    return reverse_accumulate(opening_tape(x, y))[:2]


def original_objective_contributions(x: float, y: float) -> np.ndarray:
    cot = reverse_accumulate(opening_tape(x, y))
    return np.array([cot[3], cot[4] * y])


# Points where each wrong variant's missing term is far from zero. (Not hypothesis:
# last writer wins drops c + 2a = xy(y + 2), which vanishes at y = -2, so a random
# search can land on a point where that bug is invisible.)
PROBE_POINTS = [(2.0, 3.0), (0.7, -1.3), (-5.25, 0.125), (13.5, 41.0)]


@pytest.mark.parametrize(("x", "y"), PROBE_POINTS)
def test_reference_passes_every_check_at_probe_points(x, y):
    check_gradient(input_gradient, x, y)
    check_contributions(contributions_into_a, x, y)
    check_tape(extended_tape, x, y)
    check_tape(_hand_tape, x, y)


@pytest.mark.parametrize(
    "wrong_gradient",
    [last_writer_wins, last_writer_wins_c_first, missing_d_path_gradient, original_objective_gradient],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize(("x", "y"), PROBE_POINTS)
def test_wrong_gradients_fail(wrong_gradient, x, y):
    with pytest.raises(AssertionError):
        check_gradient(wrong_gradient, x, y)


@pytest.mark.parametrize(
    "wrong_contributions", [missing_d_path_contributions, original_objective_contributions], ids=lambda f: f.__name__
)
@pytest.mark.parametrize(("x", "y"), PROBE_POINTS)
def test_wrong_contributions_fail(wrong_contributions, x, y):
    with pytest.raises(AssertionError):
        check_contributions(wrong_contributions, x, y)


@pytest.mark.parametrize("wrong_tape", [missing_d_path_tape, opening_tape], ids=lambda f: f.__name__)
def test_wrong_tapes_fail(wrong_tape):
    with pytest.raises(AssertionError):
        check_tape(wrong_tape, 2.0, 3.0)


def test_wrong_numbers_at_2_3():
    # The overwrite bug's answer depends on sibling order; neither is (180, 156).
    np.testing.assert_array_equal(last_writer_wins(2.0, 3.0), [90.0, 96.0])
    np.testing.assert_array_equal(last_writer_wins_c_first(2.0, 3.0), [72.0, 84.0])
    np.testing.assert_array_equal(missing_d_path_gradient(2.0, 3.0), [144.0, 132.0])
    np.testing.assert_array_equal(original_objective_gradient(2.0, 3.0), [144.0, 132.0])


# ---- the tape check encodes the documented contract -------------------------------------


def test_parent_pair_order_inside_a_node_does_not_matter():
    def reversed_pairs(x: float, y: float) -> list[TapeNode]:
        return [TapeNode(n.value, tuple(reversed(n.parents))) for n in extended_tape(x, y)]

    check_tape(reversed_pairs, 2.0, 3.0)
    np.testing.assert_array_equal(reverse_accumulate(reversed_pairs(2.0, 3.0))[:2], [180.0, 156.0])


def test_node_order_does_matter():
    def b_and_c_swapped(x: float, y: float) -> list[TapeNode]:
        t = _hand_tape(x, y)
        a, b, c, d, out = t[2].value, t[3].value, t[4].value, t[5].value, t[6].value
        return [
            t[0],
            t[1],
            t[2],
            TapeNode(c, ((2, y), (1, a))),
            TapeNode(b, ((2, 1.0), (0, 1.0))),
            TapeNode(d, ((2, 2 * a),)),
            TapeNode(out, ((3, b), (4, c), (5, 1.0))),
        ]

    # Still a valid tape with the right gradient, but not the documented node order.
    np.testing.assert_array_equal(reverse_accumulate(b_and_c_swapped(2.0, 3.0))[:2], [180.0, 156.0])
    with pytest.raises(AssertionError):
        check_tape(b_and_c_swapped, 2.0, 3.0)


def test_square_as_two_edges_is_not_the_reference_form_but_has_its_gradient():
    def two_edge_square(x: float, y: float) -> list[TapeNode]:
        t = _hand_tape(x, y)
        a = t[2].value
        return [*t[:5], TapeNode(t[5].value, ((2, a), (2, a))), t[6]]

    np.testing.assert_array_equal(reverse_accumulate(two_edge_square(2.0, 3.0))[:2], [180.0, 156.0])
    with pytest.raises(AssertionError):
        check_tape(two_edge_square, 2.0, 3.0)


# ---- bad inputs --------------------------------------------------------------------------

FUNCTIONS = [extended_tape, contributions_into_a, input_gradient]


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan"), np.float32("inf")])
def test_non_finite_inputs_name_the_argument(function, bad):
    with pytest.raises(ValueError, match=r"^x must be finite"):
        function(bad, 3.0)
    with pytest.raises(ValueError, match=r"^y must be finite"):
        function(2.0, bad)


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [True, "2", None, 1 + 0j])
def test_non_real_inputs_are_type_errors(function, bad):
    with pytest.raises(TypeError, match=r"^x must be a real number"):
        function(bad, 3.0)
    with pytest.raises(TypeError, match=r"^y must be a real number"):
        function(2.0, bad)
