"""Exercise 4's witnesses: for every clause of :data:`CONTRACT`, marks that break it alone.

See ``exercises/witness.py``. ``audit_marks()`` returns a literal dict; each witness wraps the
reference's answer (the first supported paper's canonical marks) and changes one thing.
"""

from __future__ import annotations

from ch11_solutions import ex4_audit as ref

from ...api.contract import Clause
from ..witness import Witness, Witnesses, by_hand, find_clause
from .contract import CONTRACT, FUNCTION, MARKS_CELL

__all__ = ["WITNESSES"]

_PAPER = sorted(ref.SUPPORTED_PAPERS)[0]


def _clause(kind: str, text: str = "") -> Clause:
    return find_clause(CONTRACT, FUNCTION, kind, text=text)


def _marks(expression: str, prelude: str = "") -> str:
    """audit_marks returning ``expression`` over ``marks`` (the reference's dict, a fresh copy each call)."""
    return (f"_reference_audit_marks = audit_marks\n{prelude}\n\n"
            f"def audit_marks():\n    marks = dict(_reference_audit_marks())\n    return {expression}\n")


def _rejected(field: str) -> str:
    """A value of ``field``'s vocabulary that the audited paper's key does not accept."""
    accepted = {v.value for v in ref.ANSWER_KEYS[_PAPER].fields[field].accepted}
    vocabulary = [v.value for v in type(ref.ANSWER_KEYS[_PAPER].fields[field].canonical)]
    return next(v for v in vocabulary if v not in accepted)


_FIELD_WITNESSES = [
    by_hand(_clause("behaviour", f"{field}:"), f"marks_wrong_{field}", MARKS_CELL,
            _marks(f"{{**marks, {field!r}: {_rejected(field)!r}}}"))
    for field in ref.FIELDS
]

_WITNESSES: list[Witness] = [
    by_hand(_clause("returns", "a plain dict"), "marks_extra_key", MARKS_CELL, _marks("{**marks, 'notes': ''}")),
    by_hand(_clause("returns", "a plain dict"), "marks_missing_paper", MARKS_CELL,
            _marks("{k: v for k, v in marks.items() if k != 'paper'}")),
    by_hand(_clause("returns", "paper:"), "marks_field_values_capitalised", MARKS_CELL,
            _marks("{k: (v if k == 'paper' else v.upper()) for k, v in marks.items()}")),
    by_hand(_clause("returns", "paper:"), "marks_paper_title_not_id", MARKS_CELL,
            _marks("{**marks, 'paper': marks['paper'] + ' (2016)'}")),
    # Every other call another graph_class: each property's repeated calls see the marks change.
    by_hand(_clause("purity"), "marks_alternate_between_calls", MARKS_CELL, _marks(
        f"{{**marks, 'graph_class': {_rejected('graph_class')!r}}} if _calls.append(1) or len(_calls) % 2 == 0 "
        "else marks", prelude="_calls = []")),
    *_FIELD_WITNESSES,
    by_hand(_clause("behaviour", "an unsupported paper"), "marks_unsupported_paper", MARKS_CELL,
            _marks("{**marks, 'paper': 'griewank2000'}")),
]

#: The reading the docstring settles: "the same marks" may be one dict object returned by every call.
_READINGS = [
    by_hand(_clause("purity"), "marks_one_shared_dict", MARKS_CELL,
            "_reference_audit_marks = audit_marks\n_shared_marks = _reference_audit_marks()\n\n\n"
            "def audit_marks():\n    return _shared_marks\n"),
]

WITNESSES = Witnesses(CONTRACT, tuple(_WITNESSES), tuple(_READINGS))
