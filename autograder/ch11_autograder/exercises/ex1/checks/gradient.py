"""The checks of ``ex1_input_gradient_tests``: ``input_gradient(x, y)``."""

from __future__ import annotations

from ch11_solutions import ex1_fanout as ref

from ....api.suite import CellSuite, Property
from ..contract import GRADIENT_TESTS, POINTS
from .clauses import _contract_properties
from .shared import _exact_vector, _misconceptions, _same_vector, _vector_properties, vectors_match

_GRADIENT_LABELS = ("dL/dx", "dL/dy")


# ---- input_gradient ------------------------------------------------------------------------


def _gradient_properties() -> list[Property]:
    visible, values = _vector_properties(
        "input_gradient", _GRADIENT_LABELS, ref.input_gradient, "gradient (dL/dx, dL/dy)"
    )
    contract = _contract_properties(
        "input_gradient",
        lambda got: _exact_vector(got, len(_GRADIENT_LABELS)),
        _same_vector(ref.input_gradient, _GRADIENT_LABELS),
        "a float64 array of shape (2,)",
        _misconceptions("input_gradient"),
        vectors_match,
    )
    return [visible, values, *contract]


GRADIENT_SUITE: CellSuite = CellSuite(GRADIENT_TESTS, points=POINTS[GRADIENT_TESTS], properties=_gradient_properties())
