"""Exercise 4's contract: the notebook, its cells' grade ids and points.

Five hand-graded prose fields (one manual cell each, :func:`prose_cell`) and the four
structured marks, one autograded point per mark field of :mod:`ch11_solutions.ex4_audit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ch11_solutions import ex4_audit as ref

NOTEBOOK = "ex4_audit"

MARKS_CELL = "ex4_audit_marks"
MARKS_TESTS = "ex4_audit_marks_tests"

#: Points of each hand-graded protocol field, and of the autograded marks (one per field).
PROSE_POINTS = 2
MARKS_POINTS = len(ref.FIELDS)


def prose_cell(field: str) -> str:
    """The grade id of the manual cell answering ``field`` (one of ``ref.PROSE_FIELDS``)."""
    return "ex4_" + field.lower().replace(" and ", "_").replace(" ", "_")


#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {**{prose_cell(field): PROSE_POINTS for field in ref.PROSE_FIELDS}, MARKS_TESTS: MARKS_POINTS}
)
