"""Exercise 4's contract: the notebook, its cells' grade ids and points.

Five hand-graded prose fields (one manual cell each, :func:`prose_cell`) and the four
structured marks, one autograded point per mark field of :mod:`ch11_solutions.ex4_audit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ch11_solutions import ex4_audit as ref

from ...api.contract import Clause

NOTEBOOK = "ex4_audit"
#: The one graded function, defined in the notebook's answer cell.
FUNCTION = "audit_marks"

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


def _every_field() -> tuple[str, ...]:
    return tuple(f"{MARKS_TESTS}/{field}" for field in ref.FIELDS)


#: Every clause of ``audit_marks()``'s docstring (exercises/ex4/notebook.py), in docstring order.
CONTRACT: tuple[Clause, ...] = (
    Clause(FUNCTION, "returns", "a plain dict with exactly the keys paper and the four fields, each a str",
           _every_field()),
    Clause(FUNCTION, "returns", "paper: a key of SUPPORTED_PAPERS; each mark spelt as a key of ALLOWED_VALUES[field]",
           _every_field()),
    Clause(FUNCTION, "purity", "the same marks on every call (no arguments to leave unchanged; one shared dict "
           "object is fine)", _every_field()),
    *(Clause(FUNCTION, "behaviour", f"{field}: one point if the paper's key accepts it, on its own",
             (f"{MARKS_TESTS}/{field}",)) for field in ref.FIELDS),
    Clause(FUNCTION, "behaviour", "an unsupported paper, a missing or extra key, a value outside a field's "
           "vocabulary or marks that change between calls score zero", _every_field()),
)  # fmt: skip
