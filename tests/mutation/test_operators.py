"""The operators mutmut lacks (``mutation/operators.py``): each makes exactly the mutants it claims on a sample.

The sample holds one site for every operator and one that each must leave alone (a docstring,
an annotation, an ``assert``, a literal of no choice type, a line outside the mutable ones).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from mutation.mutants import OPERATOR_NAMES, mutants_of_exercise  # noqa: E402
from mutation.operators import OPERATORS, choice_groups, mutations  # noqa: E402

CHOICES_CELL = '''
Scheme = Literal["forward", "central"]
Variable = Literal["x", "y"]
Single = Literal["only"]
Mixed = Literal["a", 1]
'''

SAMPLE = '''def estimate(x, k, scheme: Literal["forward", "central"] = "forward", wrt="x"):
    """Estimate "x" by "forward" steps."""
    k = operator.index(k)
    if k < 0:
        raise ValueError("k must be >= 0")
    try:
        v = float(x + 1) * 2
    except TypeError:
        raise TypeError("x must be a number") from None
    data = np.asarray(x).copy()
    data += v
    assert data.dtype == np.float64, "internal"
    label = "forward" if scheme == "central" else "other"
    return scheme == "central"


def untouched(wrt="x"):
    raise ValueError(float(wrt))
'''
#: Lines a student writes in the sample: everything but the second function.
LINES = frozenset(range(1, 15))


def _changes(operator: str) -> list[tuple[int, str, str]]:
    """(line, before, after) of every mutant ``operator`` makes of the sample."""
    choices = choice_groups([CHOICES_CELL])
    out = []
    for mutation in mutations(SAMPLE, operator, LINES, choices):
        assert mutation.operator == operator
        compile(mutation.source, operator, "exec")
        diff = [line for line in difflib.unified_diff(SAMPLE.splitlines(), mutation.source.splitlines(), lineterm="",
                                                      n=0) if line[:1] in "+-" and line[:3] not in ("---", "+++")]
        (before,), (after,) = [d[1:].strip() for d in diff if d[0] == "-"], [d[1:].strip() for d in diff if d[0] == "+"]
        out.append((mutation.line, before, after))
    return out


def test_choice_groups_are_the_notebooks_literal_types_of_strings():
    # One string alone is no choice, nor a mixed Literal; a repeated group counts once; a cell with
    # a magic does not parse and is skipped.
    assert choice_groups([CHOICES_CELL, "X = Literal['x', 'y']"]) == (("forward", "central"), ("x", "y"))
    assert choice_groups([CHOICES_CELL + "%matplotlib inline\n"]) == ()


def test_swap_literal_trades_a_value_for_each_other_value_of_its_choice_type():
    assert _changes("swap_literal") == [
        (1, 'def estimate(x, k, scheme: Literal["forward", "central"] = "forward", wrt="x"):',
         'def estimate(x, k, scheme: Literal["forward", "central"] = "central", wrt="x"):'),
        (1, 'def estimate(x, k, scheme: Literal["forward", "central"] = "forward", wrt="x"):',
         'def estimate(x, k, scheme: Literal["forward", "central"] = "forward", wrt="y"):'),
        (13, 'label = "forward" if scheme == "central" else "other"',
         'label = "central" if scheme == "central" else "other"'),
        (13, 'label = "forward" if scheme == "central" else "other"',
         'label = "forward" if scheme == "forward" else "other"'),
        (14, 'return scheme == "central"', 'return scheme == "forward"'),
    ]


def test_swap_exception_trades_type_and_value_errors_in_raise_and_except():
    assert _changes("swap_exception") == [
        (5, 'raise ValueError("k must be >= 0")', 'raise TypeError("k must be >= 0")'),
        (8, "except TypeError:", "except ValueError:"),
        (9, 'raise TypeError("x must be a number") from None', 'raise ValueError("x must be a number") from None'),
    ]


def test_unwrap_call_hands_back_the_wrapped_argument():
    assert _changes("unwrap_call") == [
        (3, "k = operator.index(k)", "k = k"),
        (7, "v = float(x + 1) * 2", "v = (x + 1) * 2"),  # parenthesized: the precedence is kept
        (10, "data = np.asarray(x).copy()", "data = np.asarray(x)"),
        (10, "data = np.asarray(x).copy()", "data = x.copy()"),
    ]


def test_delete_statement_turns_each_simple_statement_into_pass():
    assert _changes("delete_statement") == [
        (3, "k = operator.index(k)", "pass"),
        (7, "v = float(x + 1) * 2", "pass"),
        (10, "data = np.asarray(x).copy()", "pass"),
        (11, "data += v", "pass"),
        (13, 'label = "forward" if scheme == "central" else "other"', "pass"),
        (14, 'return scheme == "central"', "pass"),
    ]


def test_remove_raise_turns_each_raise_into_pass():
    assert _changes("remove_raise") == [
        (5, 'raise ValueError("k must be >= 0")', "pass"),
        (9, 'raise TypeError("x must be a number") from None', "pass"),
    ]


@pytest.mark.parametrize("operator", OPERATORS)
def test_no_operator_touches_lines_outside_the_mutable_ones(operator):
    choices = (("forward", "central"), ("x", "y"))
    assert list(mutations(SAMPLE, operator, (), choices)) == []
    untouched = SAMPLE.split("def untouched")[1]
    for mutation in mutations(SAMPLE, operator, LINES, choices):
        assert mutation.source.split("def untouched")[1] == untouched


def test_the_operators_reach_the_exercises_with_stable_ids():
    # Exercise 2 declares its choice types (Scheme, Variable) in a read-only cell: swap_literal finds
    # its defaults in the answer cells' signatures. Exercise 3's input checks sit in its answer cell.
    ex2 = mutants_of_exercise("ex2", ["swap_literal"])
    assert 'def exact_partial(x: float, y: float, wrt: Variable = "y") -> Fraction:' in {
        m.diff.split("  ->  ")[1] for m in ex2}
    ex3 = mutants_of_exercise("ex3", list(OPERATORS))
    assert {m.operator for m in ex3} == {"swap_exception", "remove_raise", "unwrap_call", "delete_statement"}
    assert [m.id for m in ex3] == [m.id for m in mutants_of_exercise("ex3", list(OPERATORS))]
    assert len({m.id for m in ex3}) == len(ex3)
    assert set(OPERATORS) <= set(OPERATOR_NAMES)
