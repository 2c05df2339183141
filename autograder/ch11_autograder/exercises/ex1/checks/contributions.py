"""The checks of ``ex1_contributions_into_a_tests``: ``contributions_into_a(x, y)``."""

from __future__ import annotations

import numpy as np
from ch11_solutions import ex1_fanout as ref
from trainable_harness import reverse_accumulate

from ....api.suite import CellSuite, Mismatch, Property, Student, hypothesis_property, roundtrip
from ..contract import CONTRIBUTIONS_TESTS, POINTS
from .clauses import _contract_properties
from .shared import (
    _A,
    _GIVEN,
    MAX_EXAMPLES,
    PROBE_POINTS,
    _close,
    _exact_vector,
    _misconceptions,
    _same_vector,
    _vector,
    _vector_properties,
    vectors_match,
)

_CONTRIBUTION_LABELS = ("the contribution via b", "the contribution via c", "the contribution via d")


# ---- contributions_into_a ------------------------------------------------------------------


def _contribution_properties() -> list[Property]:
    visible, values = _vector_properties(
        "contributions_into_a",
        _CONTRIBUTION_LABELS,
        ref.contributions_into_a,
        "contributions (via b, via c, via d)",
    )

    @hypothesis_property(
        "contributions_into_a_sum",
        "The three contributions add up to dL/da, the a-bar of the additive sweep, to float64 rounding.",
        given=_GIVEN,
        examples=PROBE_POINTS,
        max_examples=MAX_EXAMPLES,
        misconceptions=_misconceptions("contributions_into_a"),
        matches=vectors_match,
    )
    def adds_up(student: Student, x: float, y: float) -> None:
        inputs = {"x": x, "y": y}
        expected = ref.contributions_into_a(x, y)
        a_bar = float(reverse_accumulate(ref.extended_tape(x, y))[_A])
        scale = float(np.sum(ref.contributions_into_a(abs(x), abs(y))))
        got = student.call("contributions_into_a", x, y)
        vector = _vector(got, 3)
        if vector is None:
            raise Mismatch(inputs, roundtrip(expected), got, "expected 3 finite real numbers")
        total = float(np.sum(vector))
        if not _close(total, a_bar, scale):
            raise Mismatch(inputs, roundtrip(expected), got, f"they add up to {total!r}, but a-bar is {a_bar!r}")

    contract = _contract_properties(
        "contributions_into_a",
        lambda got: _exact_vector(got, len(_CONTRIBUTION_LABELS)),
        _same_vector(ref.contributions_into_a, _CONTRIBUTION_LABELS),
        "a float64 array of shape (3,)",
        _misconceptions("contributions_into_a"),
        vectors_match,
    )
    return [visible, values, adds_up, *contract]


CONTRIBUTIONS_SUITE: CellSuite = CellSuite(
    CONTRIBUTIONS_TESTS, points=POINTS[CONTRIBUTIONS_TESTS], properties=_contribution_properties()
)
