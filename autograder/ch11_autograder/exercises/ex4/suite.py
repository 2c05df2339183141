"""Hidden suite of Exercise 4 (paper audit): the four structured marks of ``audit_marks()``.

One autograded test cell, ``ex4_audit_marks_tests`` (4 points), graded by four
properties, one per mark in :data:`ch11_solutions.ex4_audit.FIELDS` order, so the cell
earns one point per mark the paper's key accepts (``score_for(4, held, 4)``).

Every property first validates the student's return value, which is untrusted data:
it must be a plain ``dict`` with exactly the keys ``paper`` and the four fields, each a
``str`` of at most :data:`MAX_VALUE_CHARS` characters, naming a supported paper and an
allowed value per field, and repeated calls must return the same marks. Anything else fails
all four properties (a clear zero) with a message saying what to fix; the message never
echoes more than a short, truncated piece of what was returned.

Feedback for a wrong mark is written so that it cannot simply be copied into a
resubmission: it restates the question, says what the student's value claims and why
that does not fit the paper, and names the sections to reread (:data:`REREAD`). It never
names the accepted value, and the expected value of the mismatch is left empty. When the
wrong value is a catalogued misconception (``wrong_answers.py``) the catalogue's name and
advice take the place of the reason.

There are no generated inputs (``audit_marks`` takes none), so the properties are plain
:class:`Property` checks, not hypothesis properties: :data:`CALLS_PER_PROPERTY` calls each.
The cell's score is one point per mark (the docstring's scoring rule), so the contract's other
clauses (the form of the return value, the same marks on every call) are checked inside each
of the four properties rather than by properties of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ch11_solutions import ex4_audit as ref

from ...api.suite import (
    NOTHING,
    CellSuite,
    Misconception,
    Mismatch,
    Property,
    Record,
    Student,
    call_statement,
    register,
    truncate,
    with_article,
)
from ..catalogue import WrongAnswer, catalogue, misconception
from .contract import FUNCTION, MARKS_TESTS, POINTS

__all__ = [
    "CALLS_PER_PROPERTY",
    "FUNCTION",
    "MAX_VALUE_CHARS",
    "REREAD",
    "SUITE",
    "FormError",
    "Reread",
    "field_feedback",
    "validate_marks",
]


#: Longest string accepted as a paper id or a mark; the longest allowed value has 23.
MAX_VALUE_CHARS = 64
#: Characters of a student's key or value quoted back in a message.
_QUOTE_CHARS = 40
#: Unexpected keys listed in a message before eliding.
_SHOWN_KEYS = 5
_KEYS = ("paper", *ref.FIELDS)


class FormError(ValueError):
    """The return value of ``audit_marks()`` is not well-formed marks; the message says why."""


def _quote(text: str) -> str:
    return repr(truncate(text, _QUOTE_CHARS))


def _kind(value: Any) -> str:
    """``a list``, ``an int``, ``None``, ``a record of type 'AuditMarks'``: what a value is, briefly."""
    if value is None:
        return "None"
    if isinstance(value, Record):
        return f"a record of type {_quote(value.type)}"
    return with_article(type(value).__name__)


def validate_marks(value: Any) -> dict[str, str]:
    """The marks as a plain ``dict`` of ``str``, in the order ``paper``, then the fields.

    Args:
        value: what ``audit_marks()`` returned, as decoded from the worker (hostile).

    Raises:
        FormError: ``value`` is not a ``dict``; a key is missing or unexpected; a value is
            not a ``str`` or longer than :data:`MAX_VALUE_CHARS`; the paper is not in
            ``SUPPORTED_PAPERS``; or a mark is outside its field's vocabulary (every bad
            field is named). Quoted pieces of ``value`` are truncated.
    """
    if type(value) is not dict:
        raise FormError(
            f"{FUNCTION}() returned {_kind(value)}; it must return a plain dict with the keys {', '.join(_KEYS)}"
        )
    extra = [key for key in value if key not in _KEYS]
    if extra:
        shown = ", ".join(_quote(str(key)) for key in extra[:_SHOWN_KEYS])
        more = f" and {len(extra) - _SHOWN_KEYS} more" if len(extra) > _SHOWN_KEYS else ""
        raise FormError(f"unexpected key(s) {shown}{more}; the marks take exactly the keys {', '.join(_KEYS)}")
    missing = [key for key in _KEYS if key not in value]
    if missing:
        raise FormError(f"missing key(s) {', '.join(missing)}; the marks take exactly the keys {', '.join(_KEYS)}")
    for key in _KEYS:
        item = value[key]
        if type(item) is not str:
            raise FormError(f"{key}: the value is {_kind(item)}; every mark must be a str")
        if len(item) > MAX_VALUE_CHARS:
            raise FormError(
                f"{key}: the value has {len(item)} characters; a mark is one short identifier "
                f"(at most {MAX_VALUE_CHARS})"
            )
    paper = value["paper"]
    if paper not in ref.SUPPORTED_PAPERS:
        supported = ", ".join(repr(p) for p in sorted(ref.SUPPORTED_PAPERS))
        raise FormError(f"paper {_quote(paper)} is not a supported paper; supported ids: {supported}")
    bad = []
    for field in ref.FIELDS:
        allowed = tuple(ref.VALUE_DESCRIPTIONS[field])
        if value[field] not in allowed:
            bad.append(f"{field}: {_quote(value[field])} is not allowed (one of {', '.join(map(repr, allowed))})")
    if bad:
        raise FormError("; ".join(bad) + ". Spell each mark exactly as a key of ALLOWED_VALUES[field].")
    return {key: value[key] for key in _KEYS}


# --------------------------------------------------------------------------- feedback


@dataclass(frozen=True)
class Reread:
    """Where to look, and why a rejected mark does not fit, for one paper, field and value.

    Attributes:
        sections: sections, figures or equations of the paper to reread (every ``Sec.``
            number must be one of the paper's recorded headings).
        reason: why the mark does not fit the paper's text, worded so that it does not
            name the value the key accepts.
    """

    sections: str
    reason: str


def _table(rows: Mapping[str, Mapping[str, Mapping[str, Reread]]]) -> Mapping[str, Any]:
    return MappingProxyType(
        {p: MappingProxyType({f: MappingProxyType(dict(v)) for f, v in fs.items()}) for p, fs in rows.items()}
    )


#: paper -> field -> rejected value -> :class:`Reread`; exactly the values each key rejects.
REREAD: Mapping[str, Mapping[str, Mapping[str, Reread]]] = _table(
    {
        "chen2016": {
            "graph_class": {
                "general_dag": Reread(
                    "Sec. 4.1 (Alg. 1) and Sec. 4.3 (Eq. 1)",
                    "Alg. 2 accepts any graph, but no memory bound is claimed for an arbitrary DAG: Sec. 4.1 "
                    "names a condition a graph must meet before the algorithm generalises, and Eq. 1 assumes "
                    "how the network is divided.",
                ),
                "tree": Reread(
                    "Sec. 4.1 and Sec. 4.4",
                    "No part of the paper analyses tree-shaped networks; the recursion of Sec. 4.4 applies the "
                    "same scheme again inside each segment, it does not describe the shape of the network.",
                ),
                "recurrent_unrolled": Reread(
                    "Sec. 4.1 and Sec. 4.3 (Eq. 1), then Sec. 5.3",
                    "The unrolled LSTM of Sec. 5.3 is one network the method is run on; the bound is derived "
                    "before any experiment, and Sec. 4.1 treats a convolutional network of n layers and a "
                    "recurrent one of length n alike.",
                ),
            },
            "memory_meaning": {
                "saved_activations_count": Reread(
                    "Sec. 5.1 and the Fig. 5 caption",
                    "The O(sqrt(n)) of Sec. 4.3 counts stored results, but the numbers the paper reports are "
                    "in bytes ('48G to 7G'); a count model does not produce bytes.",
                ),
                "measured_device_peak": Reread(
                    "Sec. 5.1, the Fig. 5 caption and Sec. 5.2",
                    "nvidia-smi readings appear in the paper, but not behind the headline numbers: Sec. 5.1 "
                    "says how the reported feature-map cost is obtained and what it leaves out, and Sec. 5.2 "
                    "says which depths fit on the GPU at all without the new plan.",
                ),
                "unspecified": Reread(
                    "Sec. 5.1 and the Fig. 5 caption",
                    "The paper does say where its memory figures come from and what they exclude.",
                ),
            },
            "stochastic_replay": {
                "specified": Reread(
                    "Sec. 4.1 to 4.5 and Sec. 5.1",
                    "Look for the sentence that says how random state (a seed, a dropout mask) is saved or "
                    "restored when a dropped result is recomputed; what a framework's implementation does is "
                    "not a statement of the paper.",
                ),
                "not_applicable": Reread(
                    "Sec. 2 and Sec. 5.1",
                    "The paper does not limit itself to deterministic networks: Sec. 2 offers the method for "
                    "general deep networks and Sec. 5.1 says it can always be safely applied; experiments "
                    "without dropout do not narrow the claimed scope.",
                ),
            },
            "count_vs_wallclock": {
                "confused": Reread(
                    "Sec. 4.3, Sec. 5.4 and the Fig. 7 caption",
                    "Sec. 4.3's 'an additional forward pass' is a count, but the paper's speed figure does not "
                    "rest on it: Sec. 5.4 and the Fig. 7 caption say how the runtime cost was obtained.",
                ),
                "wallclock_not_reported": Reread(
                    "Sec. 5.4 and the Fig. 7 caption",
                    "The paper reports a speed result obtained by running the method, not only a count.",
                ),
            },
        },
    }
)


def _wrong_fields(entry: WrongAnswer) -> tuple[str, dict[str, str]]:
    """The paper and the fields in which a catalogue entry differs from that paper's key."""
    marks = validate_marks(entry.function())
    key = ref.ANSWER_KEYS[marks["paper"]]
    wrong = {f: marks[f] for f in ref.FIELDS if marks[f] not in key.fields[f].accepted_in_order()}
    return marks["paper"], wrong


def _misconceptions(field: str) -> tuple[tuple[str, str, Misconception], ...]:
    """``(paper, value, misconception)`` for each catalogue entry wrong in ``field`` only."""
    found = []
    for entry in catalogue("ex4"):
        paper, wrong = _wrong_fields(entry)
        if set(wrong) == {field}:
            found.append((paper, wrong[field], misconception(entry)))
    return tuple(found)


def field_feedback(paper: str, field: str, value: str, *, with_reason: bool = True) -> str:
    """The note for a rejected mark: what it claims, the question, why not, where to reread.

    Raises:
        KeyError: ``value`` is not a value the paper's key rejects for ``field``.
    """
    reread = REREAD[paper][field][value]
    parts = [
        f"You marked {field} = {value!r}, which claims: {ref.VALUE_DESCRIPTIONS[field][value]}.",
        f"The question: {ref.FIELD_QUESTIONS[field]}",
    ]
    if with_reason:
        parts.append(f"Why that does not fit this paper: {reread.reason}")
    parts.append(f"Reread {reread.sections}.")
    return " ".join(parts)


# --------------------------------------------------------------------------- properties


#: Calls of ``audit_marks()`` per property, all of which must return the same marks. Two calls let
#: marks drawn at random between two values through half the time; six, one time in 32.
CALLS_PER_PROPERTY = 6


def _student_marks(student: Student) -> dict[str, str]:
    """:data:`CALLS_PER_PROPERTY` calls of ``audit_marks()``, validated and compared; Mismatch on any defect."""
    made = 0
    try:
        made += 1
        first = validate_marks(student.call(FUNCTION))
        for _ in range(CALLS_PER_PROPERTY - 1):
            made += 1
            if validate_marks(student.call(FUNCTION)) != first:
                raise Mismatch(
                    {},
                    NOTHING,
                    NOTHING,
                    note=f"call {made} of {FUNCTION}() returned other marks than call 1; it must return "
                    "the same marks every time",
                    calls=(call_statement(FUNCTION),) * made,
                )
    except FormError as exc:
        # A form that goes wrong only after the first call is a history: the calls that show it.
        again = (call_statement(FUNCTION),) * made if made > 1 else ()
        where = f"call {made} of {FUNCTION}(): " if made > 1 else ""
        raise Mismatch({}, NOTHING, NOTHING, note=f"{where}{exc}", calls=again) from None
    return first


def _field_property(field: str) -> Property:
    catalogued = _misconceptions(field)
    named = {(paper, value) for paper, value, _ in catalogued}

    def check(student: Student) -> None:
        marks = _student_marks(student)
        paper, given = marks["paper"], marks[field]
        if given in ref.ANSWER_KEYS[paper].fields[field].accepted_in_order():
            return
        note = field_feedback(paper, field, given, with_reason=(paper, given) not in named)
        raise Mismatch({}, NOTHING, {"paper": paper, field: given}, note=note)

    def matches(wrong_output: Any, got: Any) -> bool:
        # Only the marked field and the paper decide: other wrong fields have their own property.
        return (
            isinstance(wrong_output, dict)
            and isinstance(got, dict)
            and wrong_output.get("paper") == got.get("paper")
            and wrong_output.get(field) == got.get(field)
        )

    return Property(
        name=field,
        description=(
            f"{FUNCTION}() returns well-formed marks for a supported paper, and its {field} mark is one "
            "the paper's text supports."
        ),
        check=check,
        misconceptions=tuple(m for _, _, m in catalogued),
        matches=matches,
        time_budget=30.0,
    )


def _properties() -> tuple[Property, ...]:
    return tuple(_field_property(field) for field in ref.FIELDS)


#: The suite of ``ex4_audit_marks_tests``, registered on import.
SUITE: CellSuite = register(CellSuite(MARKS_TESTS, points=POINTS[MARKS_TESTS], properties=_properties()))
