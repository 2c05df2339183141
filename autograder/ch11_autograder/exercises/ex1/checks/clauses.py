"""The contract properties every function of Exercise 1 has: bad inputs, number types, repeated calls.

Each compares the student with the student (see ``ex1.suite``), so a single mistake costs only the
properties it breaks.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from trainable_harness import TapeNode

from ....api.suite import (
    Call,
    Misconception,
    Mismatch,
    NotDefined,
    Property,
    Student,
    StudentError,
    Unencodable,
    call_statement,
    hypothesis_property,
    wire_equal,
)
from .shared import (
    _COORDINATE,
    _NUMBER_TYPE,
    BAD_INPUTS,
    MAX_EXAMPLES,
    NUMBER_TYPE_EXAMPLES,
    NUMBER_TYPES,
    Compare,
    _is_real,
)

# ---- contract checks shared by the three functions -----------------------------------------

#: Why a return value is not of the contract's return type (``""`` if it is); judges types only.
TypeCheck = Callable[[Any], str]


def _expected_error(x: Any, y: Any) -> tuple[str, str | None] | None:
    """(exception type, argument its message must name or None) the contract asks for at (x, y), else None.

    The contract checks x before y; every bad input the suites send has one bad argument only.
    """
    for name, value in (("x", x), ("y", y)):
        if not _is_real(value):
            return "TypeError", None
        if not math.isfinite(float(value)):
            return "ValueError", name
    return None


def _asked(student: Student, function: str, points: Sequence[tuple[Any, Any]]) -> Iterator[Any]:
    """``function(x, y)`` at each point, in order in one exchange; each outcome (see :func:`_answer`) as it is reached.

    A check that fails on one outcome ends the property there, whatever the later calls came to.
    """
    results = student.batch([Call(function, point) for point in points], stop_on_error=False, return_errors=True)
    return (_answer(result) for result in results)


def _answer(result: Any) -> Any:
    """A call's return value, or its exception as a :class:`_Raised` (how feedback shows a raise).

    ``result`` is what a ``Student.batch(..., return_errors=True)`` gives for the call. A missing
    function and an unreadable return value are not outcomes: they fail the property as they are.
    """
    if isinstance(result, NotDefined | Unencodable):
        raise result
    if isinstance(result, StudentError):
        return _Raised(result.type, result.message)
    return result


@dataclass(frozen=True)
class _Raised:
    """A call's exception as an outcome; ``str()`` is how feedback shows it, ``"Type: message"``."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


def _shown(outcome: Any) -> Any:
    """An outcome as a Mismatch carries it: a raise as its text (what catalogue replays return), else as is."""
    return str(outcome) if isinstance(outcome, _Raised) else outcome


def _check_raises(function: str, x: Any, y: Any, got: Any) -> None:
    """``function(x, y)``, (x, y) bad, must raise exactly the contract's exception (a ValueError names the argument).

    ``got`` is the call's outcome (see :func:`_answer`).
    """
    error = _expected_error(x, y)
    if error is None:
        raise AssertionError(f"({x!r}, {y!r}) is not a bad input")  # a suite bug, reported as one
    error_type, argument = error
    expected = error_type + (f" whose message names {argument}" if argument else "")
    inputs = {"x": x, "y": y}
    if not isinstance(got, _Raised):
        raise Mismatch(inputs, expected, got, "the function returned instead of raising")
    if got.type != error_type or (argument and not re.search(rf"\b{argument}\b", got.message)):
        raise Mismatch(inputs, expected, str(got))


def _outcome(implementation: Callable[..., Any]) -> Callable[..., Any]:
    """``implementation`` returning its exception as ``"Type: message"``, the form feedback shows for a raise."""

    def run(**inputs: Any) -> Any:
        try:
            return implementation(**inputs)
        except Exception as exc:  # the wrong answer's own raise is its output here
            return f"{type(exc).__name__}: {exc}"

    return run


def _replayed(implementation: Callable[..., Any]) -> Callable[..., Any]:
    """``implementation`` called on every ``(x, y)`` of ``calls`` in order; the last outcome.

    A stateful wrong answer (a cache) reproduces the student's output only after the same earlier calls.
    """
    run = _outcome(implementation)

    def replay(calls: list[tuple[Any, Any]]) -> Any:
        out = None
        for x, y in calls:
            out = run(x=x, y=y)
        return out

    return replay


def _outcome_matches(base: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """``base``, except that raises compare by their exact text and arrays of different dtypes differ."""

    def matches(wrong: Any, got: Any) -> bool:
        if isinstance(wrong, str) or isinstance(got, str):
            return isinstance(wrong, str) and isinstance(got, str) and wrong == got
        if isinstance(wrong, np.ndarray) and isinstance(got, np.ndarray) and wrong.dtype != got.dtype:
            return False
        return base(wrong, got)

    return matches


def _same_outcome(base: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """Whether two outcomes of the same call are the same answer: for the repeated-calls clause only.

    Two raises agree when the exception type does (the message is the Raises clause's business); two
    return values when they are equal on the wire (so a malformed answer repeated exactly agrees with
    itself) or equal to rounding with the same dtype.
    """
    rounding = _outcome_matches(base)

    def same(first: Any, later: Any) -> bool:
        if isinstance(first, _Raised) or isinstance(later, _Raised):
            return isinstance(first, _Raised) and isinstance(later, _Raised) and first.type == later.type
        return wire_equal(first, later) or rounding(first, later)

    return same


def _call_key(x: Any, y: Any) -> tuple[str, ...]:
    # Calls are the same when their arguments are of the same type and spelling: 1.0, 1 and True are
    # three different calls (equal values of other types are the number-types property's clause).
    return (type(x).__name__, repr(x), type(y).__name__, repr(y))


def _call_rounds(values: tuple[float, ...]) -> tuple[tuple[tuple[Any, Any], ...], ...]:
    """Sequences of calls for one repeated-calls property, one per value ``v``: bools, equal numbers, repeats.

    ``1.0``, ``1``, ``True``, ``np.True_``, ``np.float32(1)`` and ``np.int64(1)`` are all equal and hash
    alike, as are the zeros and ``False``: a cache keyed by value answers the bool from the number. Each
    round first asks every bool at ``v`` before any number equal to it, so that its first answer is a
    fresh one; then every call, each number right before its bool twin, then all of them again. The
    first round is in that order (the shortest story in feedback); the others are shuffled after the
    bools with a fixed seed, so every submission meets the same orders.
    """
    shuffle = random.Random(1111).shuffle
    rounds: list[tuple[tuple[Any, Any], ...]] = []
    for v in values:
        bools = [(True, v), (np.True_, v), (v, False), (v, np.False_)]
        calls = [
            (1.0, v), (True, v), (v, 0.0), (v, False), (1, v), (np.True_, v), (v, -0.0), (v, np.False_),
            (np.float32(1.0), v), (np.int64(1), v), (v, 0), (1.5 * v, v), (1.5 * v, v), (v, 1.5 * v),
        ]  # fmt: skip
        again = list(calls)
        shuffle(again)
        if rounds:
            shuffle(calls)
        rounds.append((*bools, *calls, *again))
    return tuple(rounds)


#: The call sequences of each function's repeated-calls property; see :func:`_call_rounds`. The values
#: differ between functions and appear in no other property: contributions_into_a and input_gradient
#: read the student's extended_tape, which the earlier cells' calls may have cached, and the first
#: answer to a call is only fresh if no equal call came before it in the worker.
CALL_ROUNDS: Mapping[str, tuple[tuple[tuple[Any, Any], ...], ...]] = {
    "extended_tape": _call_rounds((0.75, -1.25, 3.5)),
    "contributions_into_a": _call_rounds((0.625, -1.75, 2.5)),
    "input_gradient": _call_rounds((0.875, -2.25, 4.5)),
}


def _contract_properties(
    function: str,
    exact_type: TypeCheck,
    same_answer: Compare,
    returns: str,
    misconceptions: tuple[Misconception, ...],
    matches: Callable[[Any, Any], bool],
) -> list[Property]:
    """The Raises, accepted-types and purity properties of ``function(x, y)``.

    Each judges its own clause and compares the student with the student, never with the reference, so a
    wrong value costs the value properties only: ``number_types`` holds the answer for a number of another
    type to the student's own answer for float(x), float(y) (and its return type to the contract's),
    ``repeated_calls`` holds each answer to the student's own first answer to the same call.

    ``returns`` describes the contract's return value for students; ``misconceptions`` and
    ``matches`` are those of the function's value properties (outputs are compared the same way).
    """
    outcomes = tuple(m.rewrapped(_outcome) for m in misconceptions)
    replays = tuple(m.rewrapped(_replayed) for m in misconceptions)
    same = _same_outcome(matches)
    matches = _outcome_matches(matches)

    def bad_inputs(student: Student) -> None:
        outcomes = _asked(student, function, [(x, y) for x, y, _, _ in BAD_INPUTS])
        for (x, y, _, _), got in zip(BAD_INPUTS, outcomes, strict=True):
            _check_raises(function, x, y, got)

    bad = Property(
        f"{function}_bad_inputs",
        f"{function} raises ValueError naming the argument for a nan or infinite x or y, and TypeError "
        "when x or y is not a real number (a bool or numpy bool, a string, None, a list).",
        bad_inputs,
        misconceptions=outcomes,
        matches=matches,
    )

    @hypothesis_property(
        f"{function}_number_types",
        f"{function} accepts x and y as int, float, numpy integer or floating scalars (float32 included), "
        f"returns {returns} for each, and the same answer as for float(x), float(y).",
        given={"x": _COORDINATE, "y": _COORDINATE, "x_type": _NUMBER_TYPE, "y_type": _NUMBER_TYPE},
        examples=NUMBER_TYPE_EXAMPLES,
        max_examples=MAX_EXAMPLES,
        misconceptions=outcomes,
        matches=matches,
    )
    def number_types(student: Student, x: float, y: float, x_type: str, y_type: str) -> None:
        x_typed, y_typed = NUMBER_TYPES[x_type](x), NUMBER_TYPES[y_type](y)
        fx, fy = float(x_typed), float(y_typed)
        inputs = {"x": x_typed, "y": y_typed}
        got, own = _asked(student, function, [(x_typed, y_typed), (fx, fy)])
        # The expected answer is the student's own for the float64 point: a wrong value there is the value
        # properties' business, and this clause is only that the type of a number does not matter.
        expected = "a return value" if isinstance(own, _Raised) else own
        if isinstance(got, _Raised):
            raise Mismatch(inputs, expected, str(got), "the contract accepts this input")
        problem = exact_type(got)
        if problem:
            raise Mismatch(inputs, expected, got, problem)
        if isinstance(own, _Raised):
            raise Mismatch({"x": fx, "y": fy}, "a return value", str(own), "the contract accepts this input")
        problem = _not_finite(own)
        if problem:
            raise Mismatch({"x": fx, "y": fy}, f"{returns}, finite", own, problem)
        problem = same_answer(fx, fy, got, own)
        if problem:
            raise Mismatch(inputs, own, got, f"{problem}; the contract computes with float(x) and float(y)")

    def repeated_calls(student: Student) -> None:
        rounds = CALL_ROUNDS[function]
        # Every round in one exchange, made in order in the same worker; each answer judged as it is reached.
        results = student.batch(
            [Call(function, point) for calls in rounds for point in calls], stop_on_error=False, return_errors=True
        )
        for calls in rounds:
            first: dict[tuple[str, ...], tuple[int, Any]] = {}
            # The calls to paste to see it: those made so far that returned (one that raised changes nothing a
            # later call sees, and pasted into one cell it would stop the cell before the failing call).
            returned: list[str] = []
            for count, (x, y) in enumerate(calls, start=1):
                # At a point of two Python floats a raise fails the property as in every other one (a stub
                # must not pass for raising alike each time); at other types it is compared like an answer,
                # since whether they are accepted is the number-types property's clause.
                plain = type(x) is float and type(y) is float
                result = next(results)
                if plain and isinstance(result, StudentError):
                    raise result
                got = result if plain else _answer(result)
                # Consistency is credit for an answer of the contract's form only: the same garbage
                # every time (a dict, an array of NaN) is no answer to be consistent about.
                problem = (exact_type(got) or _not_finite(got)) if plain else ""
                if problem:
                    raise Mismatch({"x": x, "y": y}, f"{returns}, finite", _shown(got), problem)
                earlier = first.setdefault(_call_key(x, y), (count, got))
                if earlier[0] != count and not same(earlier[1], got):
                    raise Mismatch(
                        {"calls": list(calls[:count])},
                        _shown(earlier[1]),
                        _shown(got),
                        f"call {earlier[0]} with the same x and y answered this; the last call got another answer",
                        calls=(*returned, call_statement(function, (x, y))),
                    )
                if not isinstance(result, StudentError):
                    returned.append(call_statement(function, (x, y)))

    repeated = Property(
        f"{function}_repeated_calls",
        f"Each call of {function} gets the answer that call got first, whatever was called in between "
        "(the same point again, equal numbers of other types, a bool right after the equal number).",
        repeated_calls,
        misconceptions=replays,
        matches=matches,
    )
    return [bad, number_types, repeated]


def _not_finite(value: Any) -> str:
    """A problem when ``value`` (a tape or an array) holds a nan or an infinity, else ``""``.

    At finite x and y every quantity of the contract is finite, so the same nan answer given every
    time earns nothing from the clauses that compare the student with the student.
    """
    numbers: list[Any] = []
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        numbers = value.ravel().tolist()
    elif isinstance(value, list):
        for node in value:
            if isinstance(node, TapeNode):
                numbers.append(node.value)
                numbers.extend(local for _, local in node.parents)
    if any(isinstance(n, float) and not math.isfinite(n) for n in numbers):
        return "at finite x and y every value of the contract is finite; this answer holds nan or infinity"
    return ""
