"""Verdicts: property results -> a deterministic score and words a student can act on.

A :class:`CellVerdict` is what the grader decides for one autograded test
cell. Its text never contains the suite's source or a traceback of trusted
code: only property names and one-line descriptions written for students,
counterexample inputs, expected and obtained values, and misconception advice.
:func:`verdict_outputs` turns it into the notebook outputs nbgrader scores:

* full marks: one ``stdout`` stream with a pass summary (nbgrader: full points);
* partial: a ``stdout`` stream with the failures, then an ``execute_result``
  whose ``text/plain`` is ``repr`` of a Python float such as ``'1.5'``
  (nbgrader: that many points; always ``0 < score < points``);
* zero: a single ``error`` output (nbgrader: 0 points).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..protocol import Kept, Laid, Once, Record, RngSeed
from ..textsafe import one_line
from .differences import first_difference, focused_value
from .pasted_calls import read_statements

__all__ = [
    "NOTHING",
    "OUTCOMES",
    "VERDICT_METADATA_KEY",
    "CellVerdict",
    "Failure",
    "example_record",
    "format_call",
    "format_inputs",
    "format_value",
    "not_answered_line",
    "score_for",
    "task_name",
    "verdict_outputs",
]

#: The exception a released stub raises: a failure that is only this says "not answered yet".
NOT_ANSWERED_ERROR = "NotImplementedError"
_RAISED_NOT_IMPLEMENTED = re.compile(rf"(?:raised )?{NOT_ANSWERED_ERROR}(?::.*)?", re.S)
#: Longest rendering of one value in a message, in characters.
MAX_VALUE_CHARS = 400
#: Most entries of a list, dict or tape shown before eliding.
MAX_SHOWN_ITEMS = 12
#: Longest headline (the first line of a cell's verdict), in characters.
MAX_HEADLINE_CHARS = 300
#: The first line of a cell's verdict when every check passed; ``headline_line`` finds it back.
FULL_MARKS = "Full marks:"
#: The first line of a cell's verdict when a check failed.
FIRST_TO_FIX = "First thing to fix:"
#: Input names the suites use for the engine's own bookkeeping, and how a page says them instead:
#: ``case`` (a dict of the inputs, shown as its entries), ``failing_call`` and ``calls`` (a sequence
#: of calls, the Nth of which fails; shown as numbered calls).
_CASE_INPUT = "case"
_FAILING_CALL_INPUT = "failing_call"
_CALLS_INPUT = "calls"
_GRADE_ID = re.compile(r"(?:[a-z]+\d+_)?(?P<task>.+?)(?:_tests?)?")


class _Nothing:
    """Marks a field that has no value (e.g. no ``got`` because the code raised)."""

    _instance: _Nothing | None = None

    def __new__(cls) -> _Nothing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()

#: Kinds of failure; see :class:`Failure`.
FAILURE_KINDS = ("mismatch", "error", "timeout", "crash", "protocol", "budget", "internal", "unavailable")

#: How a property ended, as the class report counts it: a failure's kind folded into three.
OUTCOMES = ("passed", "failed", "errored", "timed_out")
_OUTCOME_OF_KIND = {"mismatch": "failed", "timeout": "timed_out", "budget": "timed_out"}

#: Key of the autograded test cell's metadata that holds :meth:`CellVerdict.record` (written by
#: ``TrustedVerdicts`` beside the outputs; nbconvert's templates never render it, so feedback is unchanged).
VERDICT_METADATA_KEY = "ch11_verdict"


@dataclass(frozen=True)
class Failure:
    """One failed property, in the student's terms.

    Attributes:
        property: the property's name (stable identifier, shown to students).
        description: its one-line, student-facing statement.
        kind: ``mismatch`` (wrong value), ``error`` (the student's code
            raised, or returned something unusable), ``timeout``, ``crash``,
            ``protocol`` (the worker answered garbage), ``budget`` (the
            property's total time ran out), ``internal`` (a bug in the suite)
            or ``unavailable`` (the cell could not be graded at all).
        inputs: the (shrunk, minimal) counterexample, name -> value; empty if unknown.
        expected, got: the values that differ (``NOTHING`` when not applicable).
        detail: for non-mismatch kinds, what happened (e.g. the exception).
        call: the call in which it happened, e.g. ``double(0)``, or ``""``.
        note: extra explanation from the property.
        misconception, advice: the catalogued wrong implementation the
            student's output matches, and what to do about it; ``""`` if none.
        raised, where: for a failure because the student's code raised, the exception's type
            and where it was raised (``line 2 of the code cell starting ...``); ``""`` otherwise.
        calls: a failing example made of several calls, as Python statements a student can paste into a
            fresh kernel, in order, the last one the call that goes wrong (``("f(1, 3.0)", "f(True, 3.0)")``);
            ``()`` when one call (``call``, ``inputs``) shows it.
        varies: the last call before a wrong value, asked again in the same worker, gave another value:
            the answer's output varies from call to call (randomness, or state the call changes), so the
            counterexample and the value are not what the answer fails by (the class report groups such
            failures by the check alone, ``trusted.signature``).
    """

    property: str
    description: str
    kind: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = NOTHING
    got: Any = NOTHING
    detail: str = ""
    call: str = ""
    note: str = ""
    misconception: str = ""
    advice: str = ""
    raised: str = ""
    where: str = ""
    calls: tuple[str, ...] = ()
    varies: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}")

    def unanswered(self) -> bool:
        """Whether this failure is the stub's placeholder: the student's code raised
        ``NotImplementedError``, or a raise-checking property reports that as what it got (the
        suites write ``'raised NotImplementedError'``, ``'NotImplementedError'`` or
        ``'NotImplementedError: <message>'``)."""
        return self.raised == NOT_ANSWERED_ERROR or (
            isinstance(self.got, str) and _RAISED_NOT_IMPLEMENTED.fullmatch(self.got) is not None)

    def cause(self) -> tuple[Any, ...] | None:
        """What makes two failures of a cell one fault: the same failing call (or inputs) and the same outcome
        (the value obtained, or the exception and its message), and the same catalogued mistake named, if any.
        ``None`` when the failure names no call or input to compare (it is then reported on its own)."""
        where = (self.calls, self.call) if (self.calls or self.call) else format_inputs(self.inputs)
        if not where:
            return None
        got = "" if self.got is NOTHING else format_value(self.got)
        return (where, self.kind, got, self.raised, self.detail, self.misconception)

    def subject(self, task: str) -> str:
        """The failing call in a student's words: ``exact_gradient(True, 3.0)``, or ``exact_gradient with
        x=True, y=3.0``; after earlier calls, counted and named as calls of the student's functions, never
        as statements (``the 2nd call of exact_gradient in a sequence of 2 calls (exact_gradient(True, 3.0))``,
        ``what checkpointed_cotangents(chain, z0, 4, rng) leaves in z0``: :mod:`.pasted_calls`); the visible
        checks as such."""
        if self.property == _VISIBLE_CHECKS:
            return "the checks shown in this cell"
        if self.calls:
            return read_statements(self.calls).subject(task)
        if self.call:
            return self.call
        inputs = _plain_inputs(self.inputs)
        shown = ", ".join(f"{name}={text}" for name, text in inputs if name != _CALLS_INPUT)
        return f"{task} with {shown}" if shown else task

    def headline(self, task: str) -> str:
        """The one line that says what to fix first: the function and input, then expected vs got, or
        what happened (see :data:`FIRST_TO_FIX`)."""
        subject = self.subject(task)
        if self.expected is not NOTHING and self.got is not NOTHING:
            expected, got = format_value(self.expected), format_value(self.got)
            difference = first_difference(self.expected, self.got, format_value)
            if difference is not None and difference.hidden_by_printing(expected, got):
                what = difference.line()
            else:
                what = f"expected {expected}, got {got}"
        elif self.detail:
            what = one_line(self.detail)
        else:
            what = self.description
        return _cut(one_line(f"{FIRST_TO_FIX} {subject}: {what}"), MAX_HEADLINE_CHARS)

    def message(self, same_as: str = "") -> str:
        """The student-readable text: header line, then indented details.

        ``same_as``: the check whose failure has this one's cause (:meth:`cause`), reported in full above;
        this one then says so in one line instead of repeating the call and its result, and keeps only its
        own note, which says what this check reads into that result (a record that depends on earlier
        calls, say).
        """
        lines = [f"[FAIL] {self.property}: {self.description}"]
        if same_as:
            lines.append(f"    same cause as {same_as} above: the same call gives the same wrong result there.")
            if self.note:
                lines.append(f"    note: {one_line(self.note)}")
            return "\n".join(lines)
        if self.calls:
            lines.append("    to reproduce, run in a fresh kernel:")
            lines.extend(f"        {one_line(statement)}" for statement in self.calls)
        if self.inputs:
            lines.extend(_inputs_lines(self.inputs, listed=not self.calls))
        printed_expected = "" if self.expected is NOTHING else format_value(self.expected)
        printed_got = "" if self.got is NOTHING else format_value(self.got)
        expected, got = printed_expected, printed_got
        difference = (first_difference(self.expected, self.got, format_value)
                      if self.expected is not NOTHING and self.got is not NOTHING else None)
        if difference is not None:  # a value cut before the place it differs is shown around that place
            expected = _focused(self.expected, difference.path) or expected
            got = _focused(self.got, difference.path) or got
        if self.expected is not NOTHING:
            lines.append(f"    expected: {expected}")
        if self.got is not NOTHING:
            lines.append(f"    got:      {got}")
        if difference is not None and difference.hidden_by_printing(printed_expected, printed_got):
            lines.append(f"    differs:  {difference.line()}")
        if self.detail:
            where = f"in {self.call}: " if self.call else ""
            lines.append(f"    {where}{one_line(self.detail)}")
        if self.note:
            lines.append(f"    note: {one_line(self.note)}")
        if self.misconception:
            lines.append(f"    {known_mistake_sentence(self.misconception, self.advice)}")
        return "\n".join(lines)


def known_mistake_sentence(title: str, advice: str) -> str:
    """``This matches a known mistake: "<title>". <advice>``: the catalogue title quoted, so it reads as a
    name whatever its capitals, and the advice its own sentence: capitalised, unless it opens with a name
    from the code (``exact_gradient raises ...``), which keeps its spelling."""
    advice = advice.strip()
    first = advice.split(" ", 1)[0]
    if not any(mark in first for mark in "_(.="):
        advice = advice[:1].upper() + advice[1:]
    return f'This matches a known mistake: "{title.strip()}". {advice}'.rstrip()


_VISIBLE_CHECKS = "visible_checks"


def task_name(grade_id: str) -> str:
    """The function a test cell grades, from its nbgrader id (``ex2_exact_gradient_tests`` ->
    ``exact_gradient``): the chapter names each test cell ``<exercise>_<function>_tests``."""
    match = _GRADE_ID.fullmatch(grade_id)
    return match.group("task") if match else grade_id


def _plain_inputs(inputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, rendering) of a counterexample in a student's words: a ``case`` dict as its own entries,
    ``failing_call`` and ``calls`` left to :func:`_inputs_lines`."""
    shown: list[tuple[str, str]] = []
    for name, value in inputs.items():
        if name == _CASE_INPUT and isinstance(value, dict):
            shown.extend((str(k), format_value(v)) for k, v in value.items())
        elif name == _FAILING_CALL_INPUT:
            continue
        else:
            shown.append((str(name), format_value(value)))
    return shown


def _inputs_lines(inputs: Mapping[str, Any], *, listed: bool = True) -> list[str]:
    """The ``inputs:`` line, and for a sequence of calls one line per call with the failing one marked
    (``listed=False``: not, where the failure's statements to paste show the sequence already)."""
    shown = [(name, text) for name, text in _plain_inputs(inputs) if name != _CALLS_INPUT]
    lines = [f"    inputs:   {', '.join(f'{name}={text}' for name, text in shown)}"] if shown else []
    if not listed:
        return lines
    calls = inputs.get(_CALLS_INPUT)
    failing = inputs.get(_FAILING_CALL_INPUT)
    if isinstance(calls, list | tuple) and calls:
        lines.append("    calls, in this order:")
        for number, call in enumerate(calls, start=1):
            mark = "  <- this call goes wrong" if number == failing else ""
            lines.append(f"        {number}. {_spec_words(call)}{mark}")
    elif failing is not None:
        lines.append(f"    call {format_value(failing)} of the sequence goes wrong")
    return lines


def _spec_words(call: Any) -> str:
    """One call of a sequence as the suites describe it (``{"function": f, ...}``): ``f with a=1, b=2``."""
    if isinstance(call, dict) and isinstance(call.get("function"), str):
        rest = ", ".join(f"{k}={format_value(v)}" for k, v in call.items() if k != "function")
        return f"{call['function']} with {rest}" if rest else str(call["function"])
    return format_value(call)


def _focused(value: Any, path: Sequence[Any]) -> str:
    """``value`` rendered around ``path`` when its whole rendering would be cut before it; ``""`` otherwise."""
    whole = _format(value, 0)
    if len(whole) <= MAX_VALUE_CHARS or not path:
        return ""
    return focused_value(value, path, lambda v: _format(v, 1), MAX_VALUE_CHARS)


@dataclass(frozen=True)
class CellVerdict:
    """The decision for one autograded test cell.

    Attributes:
        grade_id: the nbgrader id of the test cell.
        points: the cell's maximum score.
        score: ``points * passed / total`` rounded to 2 decimals (see :func:`score_for`).
        passed: names of the properties that held, in suite order.
        failures: one :class:`Failure` per property that did not hold, in suite order.
        descriptions: ``(name, description)`` of every property, in suite order.
    """

    grade_id: str
    points: float
    score: float
    passed: tuple[str, ...]
    failures: tuple[Failure, ...]
    descriptions: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_results(
        cls,
        grade_id: str,
        points: float,
        descriptions: Sequence[tuple[str, str]],
        failures: Sequence[Failure],
    ) -> CellVerdict:
        """Build a verdict from the failures of the properties ``descriptions`` lists."""
        failed = {f.property for f in failures}
        passed = tuple(name for name, _ in descriptions if name not in failed)
        total = len(descriptions)
        return cls(
            grade_id=grade_id,
            points=float(points),
            score=score_for(points, len(passed), total),
            passed=passed,
            failures=tuple(failures),
            descriptions=tuple(descriptions),
        )

    @classmethod
    def unavailable(cls, grade_id: str, points: float, reason: str) -> CellVerdict:
        """A zero verdict for a cell that could not be graded (fail-closed)."""
        failure = Failure(property="grading", description=reason, kind="unavailable")
        return cls(grade_id, float(points), 0.0, (), (failure,), (("grading", reason),))

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failures)

    def record(self) -> dict[str, Any]:
        """The verdict as plain JSON data, for tools that count outcomes (the class report).

        ``{"v": 1, "grade_id", "points", "score", "properties": [{"name", "outcome", "misconception",
        "advice", "description", "unanswered"[, "example"]}, ...]}``: every property in suite order
        (:attr:`descriptions`), ``outcome`` one of :data:`OUTCOMES` (``mismatch`` -> ``failed``; ``timeout``
        and ``budget`` -> ``timed_out``; every other kind -> ``errored``); ``misconception`` and ``advice`` the
        named catalogue entry's title and advice, ``""`` when none; ``description`` the property's one-line
        statement (the contract clause it checks); ``unanswered`` whether the failure is the stub's
        placeholder (:meth:`Failure.unanswered`; a bool). A property that did not pass also has ``example``
        (:func:`example_record`): the shrunk counterexample and what the answer gave on it, as the
        feedback text shows them (formatted, each value at most :data:`MAX_VALUE_CHARS` characters).
        That is student output, written by the trusted formatter: readers escape it (the practice page at
        the ``properties`` level never shows it).
        """
        failed = {f.property: f for f in self.failures}
        describe = dict(self.descriptions)
        order = [name for name, _ in self.descriptions] or [*self.passed, *failed]
        order += [name for name in failed if name not in order]
        props: list[dict[str, Any]] = []
        for name in order:
            f = failed.get(name)
            if f is None:
                props.append({"name": name, "outcome": "passed", "misconception": "", "advice": "",
                              "description": describe.get(name, ""), "unanswered": False})
            else:
                props.append({"name": name, "outcome": _OUTCOME_OF_KIND.get(f.kind, "errored"),
                              "misconception": f.misconception, "advice": f.advice,
                              "description": describe.get(name, f.description), "unanswered": f.unanswered(),
                              "example": example_record(f)})
        return {"v": 1, "grade_id": self.grade_id, "points": self.points, "score": self.score, "properties": props}

    def summary(self) -> str:
        """How many checks passed and the points."""
        return (
            f"{len(self.passed)} of {self.total} checks passed ({_points(self.score)} / {_points(self.points)} points)."
        )

    def headline(self) -> str:
        """The verdict's first line: full marks, or the first thing to fix (function, input, expected vs got:
        the first failure that has them, else the first); a task not answered yet says so."""
        task = task_name(self.grade_id)
        if not self.failures:
            return full_marks_line(task, self.score, self.points)
        answered = [failure for failure in self.failures if not failure.unanswered()]
        if not answered:
            return _unanswered_message(self.failures, whole=not self.passed)
        # A check that names an input and what came back says more than the visible checks' assertion.
        shown = [f for f in answered if f.expected is not NOTHING and f.got is not NOTHING]
        return (shown or answered)[0].headline(task)

    def message(self) -> str:
        """The full student-readable report: the headline, the summary, the failures, then the passes.

        Failures that are the stub's placeholder (:meth:`Failure.unanswered`) are said once, in
        one line, instead of once per property: with nothing passed, the task is not answered yet.
        A failure with the cause of one above it (:meth:`Failure.cause`) says "same cause as" that
        check instead of repeating it; the score counts every failed check all the same.
        """
        describe = dict(self.descriptions)
        lines = [self.headline(), self.summary()]
        unanswered = [failure for failure in self.failures if failure.unanswered()]
        if unanswered and lines[0] != (line := _unanswered_message(unanswered, whole=len(unanswered) == len(
                self.failures) and not self.passed)):
            lines.append(line)
        first_of_cause: dict[Any, str] = {}
        for failure in self.failures:
            if failure.unanswered():
                continue
            cause = failure.cause()
            lines.append(failure.message(same_as=first_of_cause.get(cause, "") if cause is not None else ""))
            if cause is not None:
                first_of_cause.setdefault(cause, failure.property)
        lines.extend(f"[pass] {name}: {describe.get(name, '')}".rstrip() for name in self.passed)
        return "\n".join(lines) + "\n"


def example_record(failure: Failure) -> dict[str, Any]:
    """A failure's counterexample as plain JSON data: ``{"kind", "inputs": {name: text}, "expected",
    "got", "raised", "call", "unanswered"}``.

    ``inputs``, ``expected`` and ``got`` are :func:`format_value` renderings (``""`` for a value the
    failure has not, e.g. no ``got`` because the code raised); ``kind`` is :attr:`Failure.kind`;
    ``raised`` the exception type the student's code raised and ``call`` the call it happened in
    (``""`` when none); ``unanswered`` whether it is the stub's placeholder (:meth:`Failure.unanswered`);
    ``calls``, only for a failing example of several calls, the statements that reproduce it (:attr:`Failure.calls`);
    ``varies``, only when true, that the failing call gave another value when asked again (:attr:`Failure.varies`).
    The exception's message is left out: it is the student's own words, and two answers that raise the
    same exception at the same call fail the same way.
    """
    return {
        "kind": failure.kind,
        "inputs": {str(name): format_value(value) for name, value in failure.inputs.items()},
        "expected": "" if failure.expected is NOTHING else format_value(failure.expected),
        "got": "" if failure.got is NOTHING else format_value(failure.got),
        "raised": failure.raised,
        "call": failure.call,
        "unanswered": failure.unanswered(),
        **({"calls": list(failure.calls)} if failure.calls else {}),
        **({"varies": True} if failure.varies else {}),
    }


def _unanswered_message(failures: Sequence[Failure], *, whole: bool) -> str:
    """One line for every failure that is the stub's ``NotImplementedError``."""
    called = list(dict.fromkeys(f.call.split("(", 1)[0] for f in failures if f.call))
    where = next((f.where for f in failures if f.where), "")
    return not_answered_line([f.property for f in failures], whole=whole, called=called, where=where)


def full_marks_line(task: str, score: float, points: float) -> str:
    """A cell's first line when every check of it passed (the feedback page, the practice page and Gradescope
    say it alike): ``Full marks: every check of audit_marks passed (4 / 4 points).``"""
    return f"{FULL_MARKS} every check of {task} passed ({_points(score)} / {_points(points)} points)."


def not_answered_line(names: Sequence[str], *, whole: bool, called: Sequence[str] = (), where: str = "") -> str:
    """The one line that stands for the checks ``names`` failing only because the stub still raises.

    ``whole``: every check of the cell failed that way (the task is not answered at all); ``called``: the
    functions that raised (``"your code"`` when unknown); ``where``: where it raised, ``""`` to leave it out.
    The practice page (serve/status.py) says the same line from the verdict record, without ``called`` and
    ``where``.
    """
    subject = f"{' and '.join(called)} still raise{'s' if len(called) == 1 else ''}" if called else (
        "your code still raises")
    at = f" (at {where})" if where else ""
    if whole:
        return (f"[NOT ANSWERED] This task is not answered yet: {subject} {NOT_ANSWERED_ERROR}{at}, the stub's "
                f"placeholder. Replace it with your answer; this cell's {len(names)} checks say more once it "
                "returns a value.")
    return (f"[FAIL] not answered yet: {subject} {NOT_ANSWERED_ERROR}{at}, the stub's placeholder, in "
            f"{len(names)} check{'s' if len(names) > 1 else ''} ({', '.join(names)}); replace it with your answer.")


def _points(value: float) -> str:
    return format(value, "g")


def score_for(points: float, passed: int, total: int) -> float:
    """``points * passed / total`` rounded half-to-even to 2 decimals, as a float.

    Exact arithmetic (``Fraction``) makes it independent of float rounding.
    A cell with failures never reaches full points: a result that rounds up
    to ``points`` is lowered by 0.01. ``total == 0`` scores 0 (fail-closed).

    Raises:
        ValueError: negative or non-finite ``points``, or ``passed`` outside ``[0, total]``.
    """
    if not math.isfinite(points) or points < 0:
        raise ValueError(f"points must be finite and >= 0, got {points}")
    if not 0 <= passed <= total:
        raise ValueError(f"passed must be in [0, {total}], got {passed}")
    if total == 0:
        return 0.0
    cents = round(Fraction(points) * passed / total * 100)
    max_cents = math.floor(Fraction(points) * 100)
    if passed < total:
        cents = min(cents, max_cents - 1)
    return float(Fraction(max(cents, 0), 100))


def verdict_outputs(verdict: CellVerdict, execution_count: int | None = None) -> list[dict[str, Any]]:
    """The nbformat v4 output dicts that make nbgrader record ``verdict.score``.

    See the module docstring for the three shapes. The partial-credit value is
    ``repr(float)``, never a numpy repr, and is ``< verdict.points``.
    """
    text = verdict.message()
    if verdict.score >= verdict.points and not verdict.failures:
        return [{"output_type": "stream", "name": "stdout", "text": text}]
    if verdict.score > 0:
        return [
            {"output_type": "stream", "name": "stdout", "text": text},
            {
                "output_type": "execute_result",
                "execution_count": execution_count,
                "metadata": {},
                "data": {"text/plain": repr(float(verdict.score))},
            },
        ]
    lines = text.rstrip("\n").split("\n")
    return [{"output_type": "error", "ename": "PropertyFailed", "evalue": text.rstrip("\n"), "traceback": lines}]


# --------------------------------------------------------------------------- formatting


def format_inputs(inputs: Mapping[str, Any]) -> str:
    """``x=0, y=np.float32(2.5)`` in the order given."""
    return ", ".join(f"{name}={format_value(value)}" for name, value in inputs.items())


def format_call(fn: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """``fn(0, y=1.5)`` with compactly formatted arguments."""
    parts = [format_value(a) for a in args] + [f"{k}={format_value(v)}" for k, v in kwargs.items()]
    return _cut(f"{fn}({', '.join(parts)})")


def _cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_value(value: Any) -> str:
    """A compact, deterministic rendering of a decoded wire value.

    Floats use the shortest repr that round-trips (``0.1``, ``nan``); numpy
    scalars show their type (``np.float32(0.1)``); arrays show dtype and
    shape and elide the middle of long ones; tapes list their nodes.
    """
    return _cut(_format(value, 0))


def _format(value: Any, depth: int) -> str:
    if depth > 6:
        return "..."
    if value is NOTHING:
        return "(nothing)"
    if isinstance(value, np.ndarray):
        with np.printoptions(threshold=MAX_SHOWN_ITEMS * 2, edgeitems=3, linewidth=10_000, floatmode="unique"):
            body = np.array2string(value, separator=", ")
        return f"array({body}, dtype={value.dtype.name}, shape={tuple(value.shape)})"
    if isinstance(value, np.generic):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bool | int | str) or value is None:
        return repr(value)
    if isinstance(value, Record):
        inner = ", ".join(f"{k}={_format(v, depth + 1)}" for k, v in value.fields.items())
        return f"{value.type}({inner})"
    if isinstance(value, list) and value and all(_is_tape_node(v) for v in value):
        return _format_tape(value, depth)
    if _is_tape_node(value):
        return _format_node(value, depth)
    if isinstance(value, list | tuple):
        items = [_format(v, depth + 1) for v in value[:MAX_SHOWN_ITEMS]]
        if len(value) > MAX_SHOWN_ITEMS:
            items.append(f"... ({len(value)} items)")
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(value) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        items = [f"{k!r}: {_format(v, depth + 1)}" for k, v in list(value.items())[:MAX_SHOWN_ITEMS]]
        if len(value) > MAX_SHOWN_ITEMS:
            items.append(f"... ({len(value)} entries)")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, range | Once | RngSeed):
        # range(16, 4097), iter([16, 64]), np.random.default_rng(7): as the student's code received it
        return repr(value)
    if isinstance(value, Laid):
        return value.source(_format(value.values, depth + 1))  # the layout the student's code received
    if isinstance(value, Kept):
        return repr(value)  # its label: the grader's name for a shared object, e.g. "chain"
    return f"<{type(value).__name__}>"


def _is_tape_node(value: Any) -> bool:
    return type(value).__name__ == "TapeNode" and hasattr(value, "value") and hasattr(value, "parents")


def _format_node(node: Any, depth: int) -> str:
    edges = ", ".join(f"({_format(i, depth + 1)}, {_format(d, depth + 1)})" for i, d in node.parents)
    value = _format(node.value, depth + 1)
    return f"{value} <- [{edges}]" if edges else value


def _format_tape(tape: Sequence[Any], depth: int) -> str:
    shown = [f"#{i}: {_format_node(node, depth)}" for i, node in enumerate(tape[:MAX_SHOWN_ITEMS])]
    if len(tape) > MAX_SHOWN_ITEMS:
        shown.append(f"... ({len(tape)} nodes)")
    return f"tape of {len(tape)} nodes [" + "; ".join(shown) + "]"
