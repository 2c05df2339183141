"""Hidden suite of Exercise 3 (best uniform block length): two autograded test cells.

``ex3_best_block_length_tests`` (4 points, 9 properties) grades
``best_block_length(depth)`` one idea per property, so a single mistake costs
only the properties it breaks: the visible examples, the minimum peak, the
tie-break, the replay count (checked against the student's *own* ``k``, so a
wrong ``k`` is not charged twice), the record's types, every small depth
``1..40`` (where ``k = 1`` and ``k = L`` matter), the input contract (every
bad kind of depth, Python and numpy, with the exact exception), numpy depths
giving the same record as Python ints, and independence from earlier calls.

``ex3_block_table_tests`` (2 points, 8 properties) grades ``block_table``:
the visible examples, order and repeats (depths only, so a wrong
``best_block_length`` does not fail it), agreement with the reference, invalid
depths and a non-iterable raising (the first bad depth decides), the iterables
it accepts (tuples, ranges, generators, numpy integer arrays), its declared
default, the list it is given left unchanged, and independence from earlier
calls. The clauses about consistency judge the student's table against the
student's own answers (the iterables against the table for the same depths as
a list, repeated calls against the first call), so a wrong record costs
``visible_examples`` and ``matches_best_block_length`` and nothing else.

``CONTRACT`` lists every clause of both docstrings with the properties that
check it (``tests/autograder/test_contract_coverage.py`` derives the clauses
from the notebook and fails when one is missing).

Depths stay in ``1..GRADED_MAX_DEPTH`` (20 000), the range the notebook
promises: there a plain scan over every ``k``, calling the harness each time,
answers in about 0.05 s, and no call sends more than ``TABLE_MAX_DEPTHS`` depths
to ``block_table``, so the slowest call of a plain scan stays well under a
fifth of the worker's 10 s per-call limit (``tests/autograder/suites/test_ex3.py``
times it). For the same reason the suite never calls ``block_table()`` with
its default range: with a scan that is about 8.4 million harness calls (12 to
20 s measured, above the limit). ``default_depths`` reads the default from the
signature instead (``Student.defaults``), and the docstring tells the student so.

Expected values come from ``ch11_solutions.ex3_block_length``. Every mismatch
carries the whole expected and obtained records and the input ``depth`` (or
``depths``), so that catalogue entries (``wrong_answers.py``), run on the same
input, can be recognised by exact equality of their output.

Where a property makes several calls in a row (per example, or over its fixed list), they
travel in one message and the answers are judged in the order the calls were made
(``Student.batch`` says why the reported failure is the one single calls would report).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from ch11_solutions import ex3_block_length as ref
from hypothesis import strategies as st

from ...api.suite import (
    MAX_EVIDENCE,
    Call,
    CellSuite,
    Misconception,
    Mismatch,
    Once,
    Property,
    Record,
    Replies,
    Student,
    StudentError,
    Unencodable,
    hypothesis_property,
    register,
    roundtrip,
    wire_equal,
)
from ..catalogue import WrongAnswer, catalogue, fails_of, in_order, misconception, seen_through
from .contract import BEST_TESTS, GRADED_MAX_DEPTH, POINTS, TABLE_TESTS

__all__ = ["BEST_SUITE", "GRADED_MAX_DEPTH", "TABLE_MAX_DEPTHS", "TABLE_SUITE"]

FIELDS = ("depth", "block_size", "peak_states", "replay_evaluations", "sqrt_depth")
COUNT_FIELDS = FIELDS[:4]

#: Depths every generated-depth property tries first: the chapter's 64, the ties at 1000, the
#: exercise's ends 16 and 4096, and the graded maximum.
EDGE_DEPTHS = (64, 1000, 16, 4096, GRADED_MAX_DEPTH)

#: The edge depths 1..3 (where k = 1 is the smallest minimizer and k = L the only choice at L = 1)
#: belong to small_depths alone, so a mistake that shows only there costs one property, not five.
#: They are also where several catalogued mistakes coincide (at L = 2 the largest tie and a scan
#: from k = 2 both give k = 2; at L = 3 round(sqrt(L)) and that scan both do), so keeping them out
#: of the generated properties keeps their counterexamples unambiguous.
_depths = st.integers(min_value=4, max_value=GRADED_MAX_DEPTH)


# ---- catalogue entries as misconceptions ------------------------------------------------


def _entries(replaces: str) -> dict[str, WrongAnswer]:
    return {entry.name: entry for entry in catalogue("ex3") if entry.replaces == replaces}


_BEST_ENTRIES = _entries("best_block_length")
_TABLE_ENTRIES = _entries("block_table")

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

BEST_MISCONCEPTIONS = tuple(misconception(entry) for entry in _BEST_IN_ORDER if entry.name not in STATEFUL)


def _lift(function: Callable[[int], Any]) -> Callable[..., list[Any]]:
    # A wrong best_block_length makes a wrong table through the reference block_table's loop.
    def table(depths: Sequence[int]) -> list[Any]:
        return [function(depth) for depth in depths]

    return table


#: As the entries are: the properties that judge what a call leaves of its arguments wrap them first.
#: (The engine runs every entry on copies of its inputs, so an entry that changes its argument
#: changes neither the inputs the feedback shows nor those the next entry sees.)
_TABLE_AS_WRITTEN = tuple(
    misconception(entry) for entry in _TABLE_ENTRIES.values() if entry.name not in STATEFUL
) + tuple(seen_through(entry, _lift, function="block_table") for entry in _BEST_IN_ORDER if entry.name not in STATEFUL)
TABLE_MISCONCEPTIONS = _TABLE_AS_WRITTEN


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
    return tuple(Misconception(m.name, m.advice, _outcome(m.implementation),
                               fails=m.fails, history=m.history) for m in misconceptions)


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


def _blocks(depth: int, k: int) -> int:
    return -(-depth // k)


def _expected(depth: int) -> Record:
    return roundtrip(ref.best_block_length(depth))


def _choice(student: Student, depth: int) -> tuple[Record, Record]:
    """(expected, got) for ``best_block_length(depth)``; ``got`` is checked to be a BlockChoice record."""
    return _judge_choice(depth, [student.call("best_block_length", depth)])


def _ask_choice(depth: Any) -> list[Call]:
    return [Call("best_block_length", (depth,))]


def _judge_choice(depth: int, answers: Sequence[Any]) -> tuple[Record, Record]:
    """As :func:`_choice`, from the answer of :func:`_ask_choice`."""
    (got,) = answers
    expected = _expected(depth)
    _require_record(depth, expected, got)
    return expected, got


def _require_record(depth: int, expected: Record, got: Any) -> None:
    if not isinstance(got, Record) or got.type != "BlockChoice":
        raise Mismatch({"depth": depth}, expected, got, "return a BlockChoice record (the class defined above).")
    if tuple(got.fields) != FIELDS:
        raise Mismatch({"depth": depth}, expected, got, f"a BlockChoice has the fields {', '.join(FIELDS)}.")


def _int_field(got: Record, name: str) -> int | None:
    value = got[name]
    return value if type(value) is int else None


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


def _tie_note(depth: int, k: Any) -> str:
    ties = ref.minimizing_block_lengths(depth)
    peak = ref.best_block_length(depth).peak_states
    if isinstance(k, int) and not isinstance(k, bool) and ties[0] < k <= ties[-1]:
        return (
            f"k = {k} also reaches the minimum peak {peak}, but so do k = {ties[0]}..{ties[-1]}; "
            f"the contract asks for the smallest, {ties[0]}."
        )
    return f"the smallest k with the minimum peak {peak} is {ties[0]}."


# ---- ex3_best_block_length_tests ---------------------------------------------------------


visible_examples = _listed_property(
    "visible_examples",
    "best_block_length(64) and best_block_length(1000) return the records the notebook shows.",
    ask=_ask_choice,
    judge=_judge_choice,
    argument="depth",
    inputs=(64, 1000),
    note="this is the notebook's visible example.",
    misconceptions=BEST_MISCONCEPTIONS,
    holds=lambda expected, got: (
        _read(got) == expected and all(_int_field(got, name) is not None for name in COUNT_FIELDS)
    ),
)


#: ``judge(depth, expected, got)``: the note for the student when the property fails, else None.
_DepthJudge = Callable[[int, Record, Record], str | None]


def _depth_property(
    name: str, description: str, *, max_examples: int, edge_depths: Sequence[int] = EDGE_DEPTHS
) -> Callable[[_DepthJudge], Property]:
    """Decorator: a ``best_block_length`` property over one depth drawn from ``_depths``.

    ``edge_depths`` are tried first, in order, then ``max_examples`` generated depths. For each
    depth the student's record is fetched and checked to be a BlockChoice with the contract's
    fields (``_choice``), then the decorated ``judge`` compares it with the reference record. A
    note from the judge becomes a Mismatch carrying the depth and both whole records, which is
    what lets ``same_output`` name a catalogue entry.
    """

    def build(judge: _DepthJudge) -> Property:
        @hypothesis_property(
            name,
            description,
            given={"depth": _depths},
            max_examples=max_examples,
            examples=[{"depth": d} for d in edge_depths],
            misconceptions=BEST_MISCONCEPTIONS,
            matches=same_output,
        )
        def check(student: Student, depth: int) -> None:
            expected, got = _choice(student, depth)
            note = judge(depth, expected, got)
            if note is not None:
                raise Mismatch({"depth": depth}, expected, got, note)

        return check

    return build


@_depth_property(
    "minimum_peak",
    "peak_states is the least ceil(L/k) + k over 1 <= k <= L, and the returned block_size reaches it.",
    max_examples=50,
)
def minimum_peak(depth: int, expected: Record, got: Record) -> str | None:
    peak, k = got["peak_states"], _int_field(got, "block_size")
    if peak != expected["peak_states"]:
        return f"the least ceil(L/k) + k for L = {depth} is {expected['peak_states']} (it equals ceil(2*sqrt(L)))."
    if k is None or not 1 <= k <= depth or _blocks(depth, k) + k != peak:
        return "block_size must be an int k in 1..L with ceil(L/k) + k == peak_states."
    return None


@_depth_property(
    "smallest_tied_k",
    "block_size is the smallest k reaching the minimum peak (the contract's tie-break).",
    max_examples=60,
)
def smallest_tied_k(depth: int, expected: Record, got: Record) -> str | None:
    if _int_field(got, "block_size") != expected["block_size"]:
        return _tie_note(depth, got["block_size"])
    return None


@_depth_property(
    "replay_count",
    "replay_evaluations is L - ceil(L/k) for the returned block length k.",
    max_examples=40,
)
def replay_count(depth: int, expected: Record, got: Record) -> str | None:
    k = _int_field(got, "block_size")
    # Judge the replay for the student's own k, so a wrong k costs the tie-break, not this too.
    k = k if k is not None and 1 <= k <= depth else expected["block_size"]
    blocks = _blocks(depth, k)
    if _int_field(got, "replay_evaluations") != depth - blocks:
        return (
            f"k = {k} splits L = {depth} into {blocks} blocks; each keeps its input state, "
            f"so the replay is {depth} - {blocks} = {depth - blocks}."
        )
    return None


# sqrt_depth: math.sqrt is correctly rounded; L ** 0.5 or numpy's sqrt may differ in the last bit
# on some platforms, which is no mistake, so two units in the last place are allowed.
_SQRT_ULPS = 2


@_depth_property(
    "record_types",
    "depth, block_size, peak_states and replay_evaluations are Python ints; depth is L; sqrt_depth is sqrt(L).",
    max_examples=25,
    # The graded range's ends after the notebook's depths.
    edge_depths=(64, 1000, 1, GRADED_MAX_DEPTH),
)
def record_types(depth: int, expected: Record, got: Record) -> str | None:
    wrong = [name for name in COUNT_FIELDS if _int_field(got, name) is None]
    if wrong:
        kinds = ", ".join(f"{name} is {type(got[name]).__name__}" for name in wrong)
        return f"counts are Python ints: {kinds}."
    if got["depth"] != depth:
        return "depth must be the depth you were given."
    root = got["sqrt_depth"]
    # A float, as the docstring says: a np.float64 is one (a subclass of float), a np.float32 is not.
    if not isinstance(root, float) or abs(root - math.sqrt(depth)) > _SQRT_ULPS * math.ulp(math.sqrt(depth)):
        return "sqrt_depth is the float math.sqrt(depth)."
    return None


#: The edges last, for the reason given at _depths; 2 before 3 because only at 2 the catalogued
#: "scan starts at k = 2" differs from round(sqrt(L)), and 1 last because a scan over an empty
#: range raises there, which names no misconception.
_SMALL_DEPTHS = (*range(4, 41), 2, 3, 1)

small_depths = _listed_property(
    "small_depths",
    "every depth from 1 to 40 gives the right record (k = 1 and k = L are allowed block lengths).",
    ask=_ask_choice,
    judge=_judge_choice,
    argument="depth",
    inputs=_SMALL_DEPTHS,
    note="small depths, where k = 1 and k = L matter.",
    misconceptions=BEST_MISCONCEPTIONS,
)

#: (argument, exception the contract names), tried in order: the Python values first, then the
#: numpy ones (numpy scalars travel with their dtype, so the worker receives exactly these), then
#: floats and bools below and at the threshold 1 (appended last, so the feedback of an answer
#: failing an earlier input is what it was).
#: np.float64 is a subclass of float but np.float32 is not, and int(np.True_) is 1: a deny-list of
#: Python types passes the first and answers for the others.
_BAD_DEPTHS: tuple[tuple[Any, str], ...] = (
    (16.0, "TypeError"),
    (True, "TypeError"),
    ("16", "TypeError"),
    (None, "TypeError"),
    (0, "ValueError"),
    (-7, "ValueError"),
    (16.5, "TypeError"),
    ([16], "TypeError"),
    (np.float64(16.0), "TypeError"),
    (np.float32(16.0), "TypeError"),
    (np.True_, "TypeError"),
    (np.int64(0), "ValueError"),
    (np.int32(-3), "ValueError"),
    # Floats on both sides of the range check's threshold 1: below it an answer that compares
    # before it checks the type raises ValueError (math.isqrt used to raise TypeError for it by
    # luck), at 1.0 a whole float, and the numpy kinds and False (whose int is 0, below 1) too.
    (0.5, "TypeError"),
    (-3.0, "TypeError"),
    (0.0, "TypeError"),
    (1.0, "TypeError"),
    (np.float64(0.5), "TypeError"),
    (np.float32(-3.0), "TypeError"),
    (False, "TypeError"),
    (np.False_, "TypeError"),
    (np.int64(-1), "ValueError"),
)


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


def _check_input_contract(student: Student) -> None:
    # Every call raises when right: all go in one message, judged in order.
    calls = [Call("best_block_length", (argument,)) for argument, _ in _BAD_DEPTHS]
    replies = student.batch(calls, stop_on_error=False)
    for argument, wanted in _BAD_DEPTHS:
        raised, value = _raised(replies)
        if raised != wanted:
            got = f"raised {raised}" if raised else value
            raise Mismatch({"depth": argument}, f"raises {wanted}", got, "see the Raises section of the docstring.")


input_contract = Property(
    "input_contract",
    "bool, float (numpy's too), str and other non-integers raise TypeError; depths below 1 (numpy's too) ValueError.",
    _check_input_contract,
    misconceptions=_raising(BEST_MISCONCEPTIONS),
    matches=same_output,
)


def _ask_numpy(depth: np.integer) -> list[Call]:
    # Compared with the student's own record for the Python int: a wrong k is the other
    # properties' business, this one is about the input type alone.
    return [Call("best_block_length", (int(depth),)), Call("best_block_length", (depth,))]


def _judge_numpy(depth: np.integer, answers: list[Any]) -> tuple[Any, Any]:
    as_int, got = answers
    return as_int, got


numpy_depths = _listed_property(
    "numpy_depths",
    "a numpy integer depth gives the same record as the Python int, field types included (Python int counts).",
    ask=_ask_numpy,
    judge=_judge_numpy,
    argument="depth",
    # No depth below 4: a mistake at the edge depths is small_depths' alone (see _depths).
    inputs=(np.int64(1000), np.int32(64), np.int64(GRADED_MAX_DEPTH), np.int32(4096), np.int64(17)),
    note="numpy integers are valid depths: the record is the one the Python int gets, with Python int counts.",
    misconceptions=BEST_MISCONCEPTIONS,
    holds=lambda as_int, got: isinstance(as_int, Record) and same_output(as_int, got),
)


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
            raise Mismatch({"depth": depth}, first[depth], got, note)
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
            raise Mismatch({"calls": [other, depth, np.int64(depth), other]}, shown[0], shown[1], note)


def _check_repeated_calls(student: Student, drawn: Property = repeated_calls) -> None:
    drawn.check(student)
    _check_equal_values_apart(student)


repeated_calls = dataclasses.replace(repeated_calls, check=_check_repeated_calls)


BEST_SUITE = register(
    CellSuite(
        BEST_TESTS,
        points=POINTS[BEST_TESTS],
        properties=[
            visible_examples,
            minimum_peak,
            smallest_tied_k,
            replay_count,
            record_types,
            small_depths,
            input_contract,
            numpy_depths,
            repeated_calls,
        ],
    )
)


# ---- ex3_block_table_tests ---------------------------------------------------------------


def _table(student: Student, depths: list[int]) -> tuple[list[Record], Any]:
    return _judge_table(depths, [student.call("block_table", list(depths))])


def _ask_table(depths: list[int]) -> list[Call]:
    return [Call("block_table", (list(depths),))]


def _judge_table(depths: list[int], answers: Sequence[Any]) -> tuple[list[Record], Any]:
    """(expected, got) for ``block_table(depths)`` from the answer of :func:`_ask_table`; ``got`` must be a list."""
    (got,) = answers
    expected = roundtrip(ref.block_table(depths))
    if not isinstance(got, list):
        raise Mismatch({"depths": depths}, expected, got, "return a list of BlockChoice records.")
    return expected, got


def _depth_of(entry: Any) -> Any:
    return entry["depth"] if isinstance(entry, Record) and "depth" in entry.fields else entry


table_visible_examples = _listed_property(
    "visible_examples",
    "block_table([1000, 16, 64, 1000]) and block_table([]) return the records the notebook shows.",
    ask=_ask_table,
    judge=_judge_table,
    argument="depths",
    inputs=([1000, 16, 64, 1000], []),
    note="this is the notebook's visible example.",
    misconceptions=TABLE_MISCONCEPTIONS,
)

#: Most depths one block_table call receives: with a plain scan, TABLE_MAX_DEPTHS scans at
#: GRADED_MAX_DEPTH are the slowest call the suite makes (tests/autograder/suites/test_ex3.py times it).
TABLE_MAX_DEPTHS = 6

# Repeats are drawn from a small pool so that most lists hold some; the rest spans the graded range.
_table_depths = st.lists(
    st.one_of(st.sampled_from((1, 2, 3, 16, 64, 1000, 4096)), st.integers(1, GRADED_MAX_DEPTH)),
    max_size=TABLE_MAX_DEPTHS,
)
# Order and repeats are judged on the exercise's own range 16..4096 and above, away from the
# edge depths 1..3 where a wrong best_block_length may raise: that is matches_best_block_length's job.
_ordered_depths = st.lists(
    st.one_of(st.sampled_from((16, 64, 1000, 4096)), st.integers(16, GRADED_MAX_DEPTH)),
    max_size=TABLE_MAX_DEPTHS,
)


@hypothesis_property(
    "order_and_repeats",
    "one record per depth, in the order given, repeats kept (record i has depth depths[i]).",
    given={"depths": _ordered_depths},
    max_examples=25,
    examples=[{"depths": [64, 16]}, {"depths": [20, 20, 20]}, {"depths": [1000, 16, 1000]}],
    misconceptions=TABLE_MISCONCEPTIONS,
    matches=same_output,
)
def order_and_repeats(student: Student, depths: list[int]) -> None:
    expected, got = _table(student, depths)
    if [_depth_of(entry) for entry in got] != depths:
        raise Mismatch({"depths": depths}, expected, got, "record i must be for depths[i].")


@hypothesis_property(
    "matches_best_block_length",
    "every record equals the reference best_block_length for its depth.",
    given={"depths": _table_depths},
    max_examples=25,
    # [2, 3] before [1, 2, 3]: a scan from k = 2 returns wrong records for 2 and 3 (a catalogued
    # mistake, named when matched) but raises at 1 (nothing to match).
    # The ends of the graded range last: 1 and GRADED_MAX_DEPTH, each record's field types included.
    examples=[{"depths": [16, 1000, 4096]}, {"depths": [2, 3]}, {"depths": [1, 2, 3]},
              {"depths": [GRADED_MAX_DEPTH, 1]}],
    misconceptions=TABLE_MISCONCEPTIONS,
    matches=same_output,
)
def matches_best_block_length(student: Student, depths: list[int]) -> None:
    expected, got = _table(student, depths)
    if not same_output(expected, got):
        raise Mismatch({"depths": depths}, expected, got)


#: (depths, exception the contract names), tried in order: the first bad depth decides, a later bad
#: depth of the other kind must not (a list validated type-first would raise TypeError for [0, 17.0]);
#: then tuples and numpy arrays, whose elements are numpy scalars; then a lone depth, which is not
#: iterable. No None: a block_table that reads None as "use the default" would compute the whole
#: default range, longer than one call may take.
_BAD_TABLES: tuple[tuple[Any, str], ...] = (
    ([16, 0], "ValueError"),
    ([16, 17.0], "TypeError"),
    ([-1, 16], "ValueError"),
    ([0, 17.0], "ValueError"),
    ([17.0, 0], "TypeError"),
    ([16, True], "TypeError"),
    ((64, 0), "ValueError"),
    (np.array([16, 0], dtype=np.int64), "ValueError"),
    (np.array([16.0, 32.0]), "TypeError"),
    (np.array([16.0, 32.0], dtype=np.float32), "TypeError"),
    (16, "TypeError"),
)


def _check_table_rejects(student: Student) -> None:
    # Every call raises when right: all go in one message, judged in order.
    replies = student.batch([Call("block_table", (depths,)) for depths, _ in _BAD_TABLES], stop_on_error=False)
    for depths, wanted in _BAD_TABLES:
        raised, value = _raised(replies)
        if raised != wanted:
            got = f"raised {raised}" if raised else value
            note = (
                "a lone depth is not an iterable of depths: iterating it raises TypeError."
                if np.ndim(depths) == 0
                else "an invalid depth is an error, not a row; the first bad depth decides which."
            )
            raise Mismatch({"depths": depths}, f"raises {wanted}", got, note)


table_rejects_bad_depths = Property(
    "rejects_bad_depths",
    "an invalid depth raises what best_block_length raises for the first one; a lone depth raises TypeError.",
    _check_table_rejects,
    misconceptions=_raising(TABLE_MISCONCEPTIONS),
    matches=same_output,
)

#: Iterables other than lists, each judged against the student's own table for the same depths as a
#: list of Python ints: tuples, ranges (the default's kind; the top of the default range, and a
#: descending one), generators (``Once``: readable once, so a second pass over depths sees nothing)
#: and numpy integer arrays (int64 and int32, whose elements reach best_block_length as numpy
#: scalars), empty ones too, repeats; GRADED_MAX_DEPTH once, so a scan stays cheap. Depths from 16
#: up, as in order_and_repeats: the edge depths 1..3 are matches_best_block_length's.
_OTHER_ITERABLES: tuple[Any, ...] = (
    (1000, 16, 64, 1000),
    Once((1000, 16, 64, 1000)),
    range(4091, 4097),
    np.array([16, 1000, 4096], dtype=np.int64),
    np.array([64, GRADED_MAX_DEPTH], dtype=np.int32),
    range(4096, 15, -1360),
    Once((4096,)),
    (4096,),
    (),
    range(16, 16),
    Once(()),
    np.array([], dtype=np.int64),
    np.array([17, 17, 5000, 16], dtype=np.int64),
)


def _items(depths: Any) -> list[int]:
    """The depths an iterable of :data:`_OTHER_ITERABLES` holds, as a list of Python ints."""
    return [int(depth) for depth in (depths.items if isinstance(depths, Once) else depths)]


def _iterable_fetch(student: Student, depths: Any) -> tuple[Any, Any]:
    # Compared with the student's own table for the same depths as a list: whether the records are
    # right is the other properties' business, this one is about the kind of iterable alone.
    # The two calls in one message; the call asked again only when they differ must come right after them.
    as_list, got = student.batch([Call("block_table", (_items(depths),)), Call("block_table", (depths,))])
    if not _same_table(as_list, got):
        # Asked again right after, the list meets whatever state the iterable's call met: an
        # answer that depends on earlier calls is repeated_calls' business, not this property's.
        as_list = student.call("block_table", _items(depths))
    return as_list, got


def _same_table(as_list: Any, got: Any) -> bool:
    return isinstance(as_list, list) and isinstance(got, list) and same_output(as_list, got)


def _live(misconceptions: Sequence[Misconception]) -> tuple[Misconception, ...]:
    """``misconceptions`` run on what the worker passes: a fresh generator where a ``Once`` was sent."""

    def live(implementation: Callable[..., Any]) -> Callable[..., Any]:
        def run(depths: Any) -> Any:
            return implementation(depths=iter(depths.items) if isinstance(depths, Once) else depths)

        return run

    return tuple(
        Misconception(m.name, m.advice, live(m.implementation), function=m.function, fails=m.fails, history=m.history)
        for m in misconceptions
    )


accepts_iterables = _listed_property(
    "accepts_iterables",
    "tuples, ranges, generators (read once) and numpy integer arrays give the table the list of the same depths "
    "gives: a list, the same records, Python int counts.",
    fetch=_iterable_fetch,
    argument="depths",
    inputs=_OTHER_ITERABLES,
    note=(
        "expected is your own table for the same depths as a list. depths may be any iterable, a generator "
        "included, which can be read only once; the result is a list of BlockChoice records whatever it is."
    ),
    misconceptions=_live(_TABLE_AS_WRITTEN),
    holds=_same_table,
)


#: The default the docstring and the signature state: the exercise's depths, 16 through 4096.
DEFAULT_DEPTHS = range(16, 4097)

#: What a signature without a default for depths reports in place of one.
_NO_DEFAULT = "no default declared"


def _declared_default(function: Callable[..., Any]) -> Any:
    parameters = [p for p in inspect.signature(function).parameters.values() if p.default is not p.empty]
    return parameters[0].default if parameters else _NO_DEFAULT


def _is_default_depths(value: Any) -> bool:
    # The depths 16..4096 in order, however declared (a range as given, or a list, tuple or numpy
    # integer array of the same depths): a call without the argument then builds the same table.
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iu" and value.ndim == 1 and value.tolist() == list(DEFAULT_DEPTHS)
    if isinstance(value, range | list | tuple):
        return all(type(d) is int for d in value) and list(value) == list(DEFAULT_DEPTHS)
    return False


def _check_default(student: Student) -> None:
    # Read from the signature, not called: block_table() with a plain scan is about 8.4 million
    # harness calls, above the per-call limit. A renamed parameter is no concern of this clause,
    # so the one declared default is judged whatever it is called.
    declared = student.defaults("block_table")
    got = declared.get("depths", next(iter(declared.values()), _NO_DEFAULT))
    if not _is_default_depths(got):
        note = (
            "the signature declares depths=range(16, 4097): depths 16 through 4096 inclusive, in order. The grader "
            "reads this default from the signature (it does not call block_table() without an argument)."
        )
        raise Mismatch({}, DEFAULT_DEPTHS, got, note)
    # A declared default is worth nothing if the function cannot take it (a stub keeps the stub's
    # signature): the default's last depths, as a range, must give a list. Only that it answers is
    # judged here; the records are matches_best_block_length's, ranges as such accepts_iterables'.
    tail = DEFAULT_DEPTHS[-TABLE_MAX_DEPTHS:]
    table = student.call("block_table", tail)
    if not isinstance(table, list):
        raise Mismatch({"depths": tail}, "a list of BlockChoice records", table, "return a list of records.")


default_depths = Property(
    "default_depths",
    "the declared default of depths is range(16, 4097), depths 16 through 4096 inclusive (read from the signature), "
    "and block_table takes its last depths, range(4091, 4097).",
    _check_default,
    misconceptions=tuple(
        Misconception(entry.title, entry.advice, partial(_declared_default, entry.function), fails=fails_of([entry]),
                      history=entry.keeps_state)
        for entry in _TABLE_ENTRIES.values()
    ),
    matches=same_output,
)


#: Lists the call must leave as they were. Depths from 16 up and few of them, as in order_and_repeats;
#: unsorted, with repeats, so sorting, de-duplicating and emptying all show. Lists only: whether other
#: iterables are taken at all is accepts_iterables' business, and a function that refuses a numpy
#: array would otherwise be charged here again.
_WATCHED_DEPTHS: tuple[list[int], ...] = (
    [1000, 16, 64, 1000],
    [4096, 17, 4096],
    [64],
)


def _ask_unchanged(depths: Any) -> list[Call]:
    return [Call("block_table", (depths,), watch=True)]


def _judge_unchanged(depths: Any, answers: Sequence[Any]) -> tuple[Any, Any]:
    """(the depths sent, what the watched call left of them)."""
    (watched,) = answers
    return roundtrip(depths), watched.args[0] if watched.args else None


def _after_call(misconceptions: Sequence[Misconception]) -> tuple[Misconception, ...]:
    """``misconceptions`` as this purity property reports them: the argument as the call left it."""

    def after(implementation: Callable[..., Any]) -> Callable[..., Any]:
        def run(depths: Any) -> Any:
            given = copy.deepcopy(depths)
            implementation(depths=given)
            return given

        return run

    # No function to probe: these predict what a call leaves of its argument, not what it returns.
    return tuple(Misconception(m.name, m.advice, after(m.implementation),
                               fails=m.fails, history=m.history) for m in misconceptions)


leaves_depths_unchanged = _listed_property(
    "leaves_depths_unchanged",
    "block_table leaves the list of depths it is given as it was: not emptied, sorted or reordered.",
    ask=_ask_unchanged,
    judge=_judge_unchanged,
    argument="depths",
    inputs=_WATCHED_DEPTHS,
    note="expected is the depths you were given, got is what your block_table left of them: read depths, "
    "do not change the caller's list.",
    misconceptions=_after_call(_TABLE_AS_WRITTEN),
    holds=lambda sent, after: same_output(sent, after),
)


# Each list is asked for four times, with a neighbour before each depth in two of them, so the
# lists stay short (3 depths, 6 per call) and their depths below 5000.
_table_sequences = st.lists(
    st.lists(st.one_of(st.sampled_from((10, 17, 26, 65, 1000)), st.integers(16, 5000)), min_size=1, max_size=3),
    min_size=1,
    max_size=2,
)


def _records_by_depth(tables: Sequence[Any]) -> dict[Any, list[Any]]:
    """Each record of ``tables`` under its own ``depth`` field (order and row count are not judged here)."""
    found: dict[Any, list[Any]] = {}
    for table in tables:
        for entry in table if isinstance(table, list) else ():
            if isinstance(entry, Record) and "depth" in entry.fields:
                found.setdefault(entry["depth"], []).append(entry)
    return found


@hypothesis_property(
    "repeated_calls",
    "the records do not depend on earlier calls: every table gives a depth the same record.",
    given={"tables": _table_sequences},
    max_examples=6,
    examples=[{"tables": [[1000, 64, 10], [17]]}, {"tables": [[26, 80, 1023]]}],
    matches=same_output,
)
def table_repeated_calls(student: Student, tables: list[list[int]]) -> None:
    # Each list, reversed, then with a deeper and with a shallower neighbour before each depth:
    # a depth's record (found by its depth field, so a wrong order is not charged here) must be
    # the same in every table it appears in.
    calls: list[list[int]] = [*tables, *(t[::-1] for t in tables)]
    for offset in (1, -1):
        calls += [[n for d in t for n in (d + offset, d)] for t in tables]
    # All in one message, judged in order: the first table that disagrees is the one reported.
    replies = student.batch([Call("block_table", (depths,)) for depths in calls])
    got_tables: list[Any] = []
    for depths in calls:
        got_tables.append(replies.take())
        for depth, records in _records_by_depth(got_tables).items():
            if any(not same_output(records[0], other) for other in records[1:]):
                note = (
                    f"after block_table(depths) for depths in {calls[: len(got_tables)]}, in this order, "
                    f"depth {depth} has two different records: each must depend on its depth alone."
                )
                changed = next(other for other in records[1:] if not same_output(records[0], other))
                raise Mismatch({"depths": depths}, records[0], changed, note)


TABLE_SUITE = register(
    CellSuite(
        TABLE_TESTS,
        points=POINTS[TABLE_TESTS],
        properties=[
            table_visible_examples,
            order_and_repeats,
            matches_best_block_length,
            table_rejects_bad_depths,
            accepts_iterables,
            default_depths,
            leaves_depths_unchanged,
            table_repeated_calls,
        ],
    )
)

