"""Exercise 1's contract: the notebook, its cells' grade ids and points, shared by builder, suite and catalogue."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

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
