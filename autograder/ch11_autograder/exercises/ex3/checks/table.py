"""The checks of ``ex3_block_table_tests``: ``block_table(depths)``, judged against the student's own records."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from ch11_solutions import ex3_block_length as ref
from hypothesis import strategies as st

from ....api.suite import (
    Call,
    CellSuite,
    Laid,
    Misconception,
    Mismatch,
    Once,
    Property,
    Record,
    Student,
    call_statement,
    hypothesis_property,
    laid,
    roundtrip,
)
from ...catalogue import fails_of, misconception, seen_through
from ..contract import GRADED_MAX_DEPTH, POINTS, TABLE_TESTS
from .shared import _BEST_IN_ORDER, STATEFUL, _entries, _listed_property, _raised, _raising, same_output

_TABLE_ENTRIES = _entries("block_table")


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
#: then tuples and numpy arrays, whose elements are numpy scalars, and two-dimensional ones, whose rows
#: are not depths (refused, not flattened); then a lone depth, which is not
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
    # Two-dimensional integer arrays of the right size: their rows are arrays, not depths.
    (np.array([[16, 64]], dtype=np.int64), "TypeError"),
    (np.array([[16], [64]], dtype=np.int64), "TypeError"),
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
    # numpy arrays in the other memory layouts a one-dimensional array has (api.suite.laid).
    laid(np.array([4096, 16, 1000, 64], dtype=np.int64), "strided"),
    laid(np.array([64, 1000], dtype=np.int32), "read_only"),
)


def _items(depths: Any) -> list[int]:
    """The depths an iterable of :data:`_OTHER_ITERABLES` holds, as a list of Python ints."""
    items = depths.items if isinstance(depths, Once) else depths.values if isinstance(depths, Laid) else depths
    return [int(depth) for depth in items]


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
    """``misconceptions`` run on what the worker passes: a fresh generator where a ``Once`` was sent, the
    array in its layout where a ``Laid`` was."""

    def live(implementation: Callable[..., Any]) -> Callable[..., Any]:
        def run(depths: Any) -> Any:
            if isinstance(depths, Laid):
                return implementation(depths=depths.array())
            return implementation(depths=iter(depths.items) if isinstance(depths, Once) else depths)

        return run

    return tuple(m.rewrapped(live, keep_function=True) for m in misconceptions)


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
    return tuple(m.rewrapped(after) for m in misconceptions)


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
                made = calls[: len(got_tables)]
                raise Mismatch({"depths": depths}, records[0], changed, note,
                               calls=tuple(call_statement("block_table", (list(d),)) for d in made))


TABLE_SUITE = CellSuite(
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
