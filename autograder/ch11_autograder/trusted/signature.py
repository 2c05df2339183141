"""Behavioural signatures: how an answer fails, as a key two answers can share.

Grading already decides, for every property of every autograded test cell, whether the
answer held; for one that did not it keeps hypothesis's shrunk counterexample and what
the answer returned or raised there (``trusted.verdicts.Failure``, recorded in the cell's
metadata by ``CellVerdict.record``, ``example``). The suites are deterministic (seeded per
property, ``derandomize``): two answers that behave alike on every input the search tries
are tried on the same inputs, shrink to the same counterexample and give the same value
there. So a failure's signature is

    (test cell, property, outcome, counterexample inputs, value obtained)

and the signature of an answer is the set of its failures' signatures: no probe set of its
own is needed, the suites' examples are one, the same for every student of a release.
Texts are the feedback's renderings (``trusted.verdicts.format_value``); an exception's
message (the student's own words) never counts, only its type and the call it was raised in.

A failure whose output varies from call to call (``example.varies``: the engine asked the call again and
got another value) has the check alone as its signature, no inputs and :data:`VARIES` as what was
obtained: a random answer meets other inputs and values in each grading, and is kept together by what
it fails.

:func:`same_inputs` is the same comparison for naming a catalogued mistake: an entry names a
failure only when it fails the property on the same inputs (``trusted.misconception_naming.name_misconception``),
not merely the same property.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import ProtocolError, encode_value
from ..textsafe import quoted
from .verdicts import OUTCOMES, format_value

__all__ = ["VARIES", "Example", "FailureSignature", "failure_signatures", "same_inputs", "same_value"]

#: A value that is an exception's text, ``'TypeError: <the student's message>'`` as format_value shows it.
_EXCEPTION_TEXT = re.compile(r"""^(['"])([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)):""")
#: Longest text of one field read from a record (the formatter caps at 400; a forged record more).
MAX_FIELD_CHARS = 1000


def _canonical(value: Any) -> str:
    """One text per value: its wire encoding where it has one (exact: dtypes, bits), else its rendering."""
    try:
        return json.dumps(encode_value(value, request=True), sort_keys=True)
    except (ProtocolError, TypeError, ValueError):
        return format_value(value)


def same_inputs(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether two counterexamples name the same inputs with the same values (exactly, dtypes included)."""
    if set(first) != set(second):
        return False
    return all(same_value(first[name], second[name]) for name in first)


def same_value(first: Any, second: Any) -> bool:
    """Whether two values are the same exactly (types, dtypes and bits included: NaN is NaN)."""
    return _canonical(first) == _canonical(second)


#: What a signature records as obtained where the answer gave another value when asked again.
VARIES = "another value each time it is asked"


def obtained_key(got: str, raised: str) -> str:
    """The obtained value as a signature compares it: an exception's text reduced to its type."""
    match = _EXCEPTION_TEXT.match(got)
    if match:
        return f"{match.group(2)} raised"
    return f"raised {raised}" if raised and not got else got


@dataclass(frozen=True)
class Example:
    """One failure's counterexample as the feedback shows it (all texts, student output included); ``kind`` is
    the failure's (``trusted.verdicts.FAILURE_KINDS``: ``timeout``, ``crash``... say what no value says)."""

    inputs: tuple[tuple[str, str], ...]
    expected: str
    got: str
    raised: str = ""
    call: str = ""
    kind: str = ""

    def input_text(self) -> str:
        """``x=0, y=np.float32(2.5)``, as the feedback's ``inputs:`` line."""
        return ", ".join(f"{name}={value}" for name, value in self.inputs)

    def obtained_text(self) -> str:
        """What the answer gave: the value, else the exception (its type name quoted: the student names it,
        ``textsafe.quoted``) and the call it was raised in."""
        if self.got:
            return self.got
        if self.raised:
            return f"{quoted(self.raised)} raised" + (f" in {self.call}" if self.call else "")
        return f"no value (in {self.call})" if self.call else "no value"


@dataclass(frozen=True, order=True)
class FailureSignature:
    """How one property of one test cell failed: the key two answers share when they fail the same way.

    Attributes:
        grade_id: the autograded test cell.
        prop: the property's name.
        outcome: ``failed``, ``errored`` or ``timed_out`` (``trusted.verdicts.OUTCOMES``).
        inputs: the shrunk counterexample, ``(name, rendered value)`` in the record's order.
        obtained: what the answer gave there (:func:`obtained_key`), plus the call for an exception.
    """

    grade_id: str
    prop: str
    outcome: str
    inputs: tuple[tuple[str, str], ...]
    obtained: str

    @classmethod
    def from_record(cls, grade_id: str, prop: Mapping[str, Any]) -> tuple[FailureSignature, Example] | None:
        """The signature and example of one property of a verdict record, ``None`` for a pass or for
        the stub's placeholder (``example.unanswered``: a task not answered yet is no mistake).

        A property without ``example`` (a record written before examples were recorded) has a
        signature of its outcome alone. Fields of the wrong type are read as empty: a record is
        written by trusted code, but read back from a notebook file.
        """
        outcome = prop.get("outcome")
        name = prop.get("name")
        if outcome not in OUTCOMES or outcome == "passed" or not isinstance(name, str):
            return None
        raw = prop.get("example")
        example = raw if isinstance(raw, Mapping) else {}
        if example.get("unanswered") is True:
            return None
        raw_inputs = example.get("inputs")
        inputs = tuple((str(k)[:MAX_FIELD_CHARS], _text(v)) for k, v in raw_inputs.items()) if isinstance(
            raw_inputs, Mapping) else ()
        got, raised, call = _text(example.get("got")), _text(example.get("raised")), _text(example.get("call"))
        shown = Example(inputs, _text(example.get("expected")), got, raised, call, _text(example.get("kind")))
        obtained = obtained_key(got, raised)
        if raised and not got:
            obtained += f" in {call}" if call else ""
        if example.get("varies") is True:
            # Output that varies from call to call: what it fails is the check, not this input and value
            # (which the search reached by chance); the example still shows them.
            return cls(grade_id, name, outcome, (), VARIES), shown
        return cls(grade_id, name, outcome, inputs, obtained), shown


def _text(value: Any) -> str:
    return value[:MAX_FIELD_CHARS] if isinstance(value, str) else ""


def failure_signatures(record: Mapping[str, Any]) -> list[tuple[FailureSignature, Example, str]]:
    """``(signature, example, misconception named)`` of every property of a verdict record that did not pass.

    ``record`` is ``CellVerdict.record()`` as read back; a malformed one gives what it can (nothing
    when it has no ``grade_id`` or ``properties``).
    """
    grade_id = record.get("grade_id")
    props = record.get("properties")
    if not isinstance(grade_id, str) or not isinstance(props, list):
        return []
    out = []
    for prop in props:
        if not isinstance(prop, Mapping):
            continue
        found = FailureSignature.from_record(grade_id, prop)
        if found is not None:
            named = prop.get("misconception")
            out.append((*found, named if isinstance(named, str) else ""))
    return out
