"""Exercise 3's contract: the notebook, its cells' grade ids and points, and the graded depth range."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

NOTEBOOK = "ex3_block_length"

BEST_CELL = "ex3_best_block_length"
BEST_TESTS = "ex3_best_block_length_tests"
TABLE_CELL = "ex3_block_table"
TABLE_TESTS = "ex3_block_table_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex3_figure"
REPORT = "ex3_report"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType({BEST_TESTS: 4, TABLE_TESTS: 2, REPORT: 3})

#: Largest depth the hidden suite passes to a student's function. A plain scan over
#: every k in 1..L answers in well under a second at this size (the reference's
#: constant-time method is not required), and the notebook's prose promises it.
GRADED_MAX_DEPTH = 20_000
