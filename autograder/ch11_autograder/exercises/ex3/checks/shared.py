"""What both of Exercise 3's cells use: catalogue entries as misconceptions, reading a record, repeated calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ....api.suite import (
    MAX_EVIDENCE,
    Call,
    Misconception,
    Mismatch,
    Property,
    Record,
    Replies,
    Student,
    StudentError,
    Unencodable,
    call_statement,
    hypothesis_property,
    wire_equal,
)
from ...catalogue import WrongAnswer, catalogue, in_order

# ---- catalogue entries as misconceptions ------------------------------------------------


def _entries(replaces: str) -> dict[str, WrongAnswer]:
    return {entry.name: entry for entry in catalogue("ex3") if entry.replaces == replaces}


_BEST_ENTRIES = _entries("best_block_length")

# Tried in this order, the first whose output equals the student's is named. Where two entries give
# the same record, the earlier one wins, so: floor_sqrt before rounded_sqrt (at L = 10, where isqrt
# first fails, round gives the same k; where round first fails, L = 3, isqrt is right); and
# scan_skips_store_all, wrong only at L = 1, 2, 3, before the entries it coincides with there
# (largest_k_tie_break at L = 2, rounded_sqrt at L = 3), which no property reports at those depths:
# generated depths start at 4, and small_depths checks 4..40 first. The input-type entries last:
# they differ from the reference only on numpy or invalid depths, where every entry above converts
# or raises, so none of those coincides with them. The order is a last resort: the listed
# properties give every input's outcome as evidence, and no two entries agree on all of small_depths'
# inputs (tests/autograder/suites/test_ex3.py), so with today's entries the reversed order names
# the same mistakes (checked by grading every entry with it).
_BEST_ORDER = (
    "floor_block_count",
    "scan_skips_store_all",
    "largest_k_tie_break",
    "floor_sqrt",
    "rounded_sqrt",
    "replay_floor_formula",
    "replay_counts_every_primitive",
    "real_valued_peak",
    "divisors_only",
    "scan_skips_one_block",
    "deny_list_validation",
    "numpy_depth_kept",
    "warm_start_scan",
)
_BEST_IN_ORDER = in_order("ex3", _BEST_ENTRIES.values(), _BEST_ORDER, complete=True)

#: Entries whose output depends on the calls made before. Run in the trusted process to name a
#: mistake they would answer from whatever state earlier naming attempts left, which proves
#: nothing about the student's (and would let grading one submission change another's feedback),
#: so they are catalogued and must lose points but are never offered as a misconception.
STATEFUL = frozenset({"warm_start_scan"})


def _outcome(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``'s result as the raise-checking properties report it: the value, or ``"raised <Type>"``."""

    def run(**kwargs: Any) -> Any:
        try:
            return function(**kwargs)
        except Exception as error:  # the entry's mistake may be the exception it raises
            return f"raised {type(error).__name__}"

    return run


def _raising(misconceptions: Sequence[Misconception]) -> tuple[Misconception, ...]:
    """``misconceptions`` for a property whose ``got`` is a value or ``"raised <Type>"`` (see :func:`_raised`)."""
    return tuple(m.rewrapped(_outcome) for m in misconceptions)


# ---- helpers ----------------------------------------------------------------------------


def _shape(value: Any) -> Any:
    """The Python types inside a decoded value: what ``wire_equal`` (``2 == 2.0``) leaves out."""
    if isinstance(value, Record):
        return (value.type, tuple((name, _shape(v)) for name, v in value.fields.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_shape(v) for v in value))
    return type(value).__name__


def _read(value: Any) -> Any:
    """``value`` with a np.float64 ``sqrt_depth`` read as the float it is (lists of records too).

    The docstring's ``sqrt_depth`` is a float, and a np.float64 is one (a subclass of float), so
    it compares as the Python float of its value; every other field keeps its type.
    """
    if isinstance(value, list):
        return [_read(v) for v in value]
    if isinstance(value, Record) and isinstance(value.fields.get("sqrt_depth"), np.float64):
        return Record(value.type, {**value.fields, "sqrt_depth": float(value["sqrt_depth"])})
    return value


def same_output(wrong_output: Any, got: Any) -> bool:
    """A catalogue entry's output equals the student's, value *and* type of every field.

    ``wire_equal`` alone would let a record of float counts match an entry whose
    counts are ints (``16.0 == 16``) and name the wrong misconception. A np.float64
    ``sqrt_depth`` is a float (:func:`_read`).
    """
    wrong_output, got = _read(wrong_output), _read(got)
    return wire_equal(wrong_output, got) and _shape(wrong_output) == _shape(got)


def _listed_property(
    name: str,
    description: str,
    *,
    fetch: Callable[[Student, Any], tuple[Any, Any]] | None = None,
    ask: Callable[[Any], Sequence[Call]] | None = None,
    judge: Callable[[Any, list[Any]], tuple[Any, Any]] | None = None,
    argument: str,
    inputs: Sequence[Any],
    note: str,
    misconceptions: Sequence[Misconception],
    holds: Callable[[Any, Any], bool] = lambda expected, got: _read(got) == expected,
) -> Property:
    """A property over a fixed list of ``inputs``, tried in order; the first failing one is reported.

    ``fetch(student, value)`` returns ``(expected, got)`` for one input (it may raise Mismatch
    itself); ``holds(expected, got)`` decides (default: equal records, ``2 == 2.0`` allowed). A
    failure is a Mismatch with inputs ``{argument: value}``, both whole outputs and ``note``.
    Instead of ``fetch``, ``ask(value)`` may list an input's calls and ``judge(value, answers)``
    return ``(expected, got)`` from their answers: then every input's calls go in one message.
    That makes the same calls as one by one: the inputs are all tried anyway, and the first
    error, which ends the property, also ends the message.

    After the first failure the remaining inputs are still tried, and every input's outcome
    becomes evidence a named misconception must also reproduce: the other failures, and the
    student's own outputs where they were right. One failing input is weak evidence (at
    ``L = 10`` a scan warm-started from ``L = 9`` returns ``isqrt(10)``, and on the failing
    depths of 4..40 the two agree throughout); the depths where the student was right tell
    them apart.
    """

    if (fetch is None) == (ask is None or judge is None):
        raise ValueError(f"property {name}: give fetch, or ask and judge")

    def answer(student: Student, replies: Replies | None, value: Any) -> tuple[Any, Any]:
        if replies is None or ask is None or judge is None:
            assert fetch is not None
            return fetch(student, value)
        return judge(value, [replies.take() for _ in ask(value)])

    def outcome(student: Student, replies: Replies | None, value: Any) -> tuple[Mismatch, bool]:
        """(the input's outcome as a Mismatch, whether it failed); a passing one has ``got`` as expected."""
        try:
            expected, got = answer(student, replies, value)
        except Mismatch as mismatch:
            return mismatch, True
        return Mismatch({argument: value}, expected, got, note), not holds(expected, got)

    def check(student: Student) -> None:
        replies = student.batch([call for value in inputs for call in ask(value)]) if ask is not None else None
        seen: list[tuple[Mismatch, bool]] = []
        for value in inputs:
            try:
                seen.append(outcome(student, replies, value))
            except StudentError:
                if not any(failed for _, failed in seen):
                    raise
                break  # an error is no output to compare; the failure found first stands
        failures = [mismatch for mismatch, failed in seen if failed]
        if failures:
            others = [mismatch for mismatch, _ in seen if mismatch is not failures[0]]
            student.mismatches.extend(others[: max(0, MAX_EVIDENCE - len(student.mismatches))])
            raise failures[0]

    return Property(name, description, check, misconceptions=tuple(misconceptions), matches=same_output)


def _raised(replies: Replies) -> tuple[str, Any]:
    """("ExceptionName", None) if the next call of ``replies`` raised, else ("", returned value).

    A value the grader cannot read is neither: it fails the property as it is (its text says so).
    """
    try:
        return "", replies.take()
    except Unencodable:
        raise
    except StudentError as error:
        return error.type, None


#: Depths for the call-order property: a pool of depths where the smallest minimizer is below the
#: previous depth's (so a scan that remembers the last k overshoots) and pairs sharing isqrt (where a
#: cache keyed on the root answers for the wrong depth), and the rest of a range small enough that
#: each of the many calls stays fast.
_sequence_depths = st.lists(
    st.one_of(st.sampled_from((10, 17, 26, 65, 80, 1000, 1023)), st.integers(4, 2000)),
    min_size=1,
    max_size=4,
)


@hypothesis_property(
    "repeated_calls",
    "the record for a depth does not depend on the calls made before (same depth, same record, in any order).",
    given={"depths": _sequence_depths},
    max_examples=10,
    examples=[{"depths": [1000, 64]}, {"depths": [10, 17]}, {"depths": [1023, 80]}],
    matches=same_output,
)
def repeated_calls(student: Student, depths: list[int]) -> None:
    # The depths in order, then each again right after a deeper and right after a shallower
    # neighbour: every call of a depth must return the record its first call did. Whether that
    # record is right is the other properties' business.
    calls = [*depths]
    for depth in depths:
        calls += [depth + 1, depth, depth - 1, depth]
    # All in one message, judged in order: the first call that disagrees is the one reported.
    replies = student.batch([Call("best_block_length", (depth,)) for depth in calls])
    first: dict[int, Any] = {}
    made: list[int] = []
    for depth in calls:
        got = replies.take()
        if depth in first and not same_output(first[depth], got):
            note = (
                f"after the calls best_block_length(d) for d in {made}, in this order, depth {depth} got another "
                "record than its first call: the result must depend on the depth alone."
            )
            raise Mismatch({"depth": depth}, first[depth], got, note,
                           calls=tuple(call_statement("best_block_length", (d,)) for d in [*made, depth]))
        first.setdefault(depth, got)
        made.append(depth)


#: Depths no other property asks for by name, so a cache has not met them yet when
#: _check_equal_values_apart asks for each as a float first.
_UNMET_DEPTHS = (9973, 15013)
#: The forms of a depth's value the contract refuses (TypeError) but a value-keyed cache confuses with the int:
#: ``16.0 == 16`` and ``hash(16.0) == hash(16)``, the same for numpy floats.
_SAME_VALUE_FORMS: tuple[Callable[[int], Any], ...] = (float, np.float32)


def _check_equal_values_apart(student: Student) -> None:
    """A float of a depth's value answers alike before and after the int was asked (the docstring's cache clause).

    A cache is fine; one keyed on the value alone answers ``16.0`` from the entry ``16`` or
    ``np.int64(16)`` left, where asked first it raised: a dict keyed on the argument before the
    input checks, or ``functools.lru_cache`` without ``typed=True`` (called positionally it keys a
    Python int by itself, but ``np.int64(16)`` and ``16.0`` by equal tuples). Judged against the
    student's own first answer, so a function that accepts floats throughout fails only the Raises
    property.
    """
    # Asked as a float before and after the int: the right answer raises, so every call goes in one message
    # (an error of the int calls still ends the property there, as it would one call at a time).
    groups = [(depth, form(depth)) for depth in _UNMET_DEPTHS for form in _SAME_VALUE_FORMS]
    replies = student.batch(
        [Call("best_block_length", (n,)) for depth, other in groups for n in (other, depth, np.int64(depth), other)],
        stop_on_error=False,
    )
    for depth, other in groups:
        before = _raised(replies)
        replies.take()
        replies.take()
        after = _raised(replies)
        if before[0] != after[0] or not (before[0] or same_output(before[1], after[1])):
            shown = [f"raised {raised}" if raised else value for raised, value in (before, after)]
            note = (
                f"best_block_length({other!r}) gave another outcome after best_block_length({depth}) and "
                f"best_block_length(np.int64({depth})) than before them: the result must depend on the depth "
                f"alone (a cache must keep {type(other).__name__} {other!r} and the integer {depth} apart)."
            )
            # The first call is left out of the statements to paste where it raised (as it should): pasted
            # into one cell, its raise would stop the cell before the call that goes wrong.
            made = [other, depth, np.int64(depth), other][1 if before[0] else 0:]
            raise Mismatch({"calls": [other, depth, np.int64(depth), other]}, shown[0], shown[1], note,
                           calls=tuple(call_statement("best_block_length", (n,)) for n in made))


def _check_repeated_calls(student: Student, drawn: Property = repeated_calls) -> None:
    drawn.check(student)
    _check_equal_values_apart(student)


repeated_calls = dataclasses.replace(repeated_calls, check=_check_repeated_calls)
