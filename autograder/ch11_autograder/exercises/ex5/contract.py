"""Exercise 5's contract: the notebook, its cells' grade ids and points, and the cotangent tolerance."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

NOTEBOOK = "ex5_replay"

STORE_ALL_CELL = "ex5_store_all_cotangents"
STORE_ALL_TESTS = "ex5_store_all_cotangents_tests"
PREDICTION = "ex5_prediction"
CHECKPOINTED_CELL = "ex5_checkpointed_cotangents"
CHECKPOINTED_TESTS = "ex5_checkpointed_cotangents_tests"
MISMATCH_CELL = "ex5_first_mismatch"
MISMATCH_TESTS = "ex5_first_mismatch_tests"
REPORT_CELL = "ex5_replay_report"
REPORT_TESTS = "ex5_replay_report_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex5_figure"
BOUNDARY = "ex5_boundary_contract"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {
        STORE_ALL_TESTS: 3,
        PREDICTION: 1,
        CHECKPOINTED_TESTS: 5,
        MISMATCH_TESTS: 2,
        REPORT_TESTS: 2,
        BOUNDARY: 3,
    }
)

#: Relative agreement with the reference that the hidden suite accepts for a
#: derivative computed with another association of the reverse rule's factors.
#: Stated to students in the Task 1 prose.
COTANGENT_RTOL = 1e-10
