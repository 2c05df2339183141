"""Hidden suite of Exercise 3 (best uniform block length): two autograded test cells.

``ex3_best_block_length_tests`` (4 points, 7 properties) grades
``best_block_length(depth)`` one idea per property, so a single mistake costs
only the properties it breaks: the visible examples, the minimum peak, the
tie-break, the replay count (checked against the student's *own* ``k``, so a
wrong ``k`` is not charged twice), the record's types, every small depth
``1..40`` (where ``k = 1`` and ``k = L`` matter), and the input contract.

``ex3_block_table_tests`` (2 points, 4 properties) grades ``block_table``:
the visible examples, order and repeats (depths only, so a wrong
``best_block_length`` does not fail it), agreement with the reference, and
invalid depths raising.

Depths stay in ``1..GRADED_MAX_DEPTH`` (20 000), the range the notebook
promises: there a plain scan over every ``k``, calling the harness each time,
answers in about 0.04 s, far inside the worker's per-call time limit. For the
same reason the suite never calls ``block_table()`` with its default range:
with a scan that is about 8 million harness calls (some 12 s), so the
default is left to the figure, which uses it.

Expected values come from ``ch11_solutions.ex3_block_length``. Every mismatch
carries the whole expected and obtained records and the input ``depth`` (or
``depths``), so that catalogue entries (``wrong_answers.py``), run on the same
input, can be recognised by exact equality of their output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ch11_solutions import ex3_block_length as ref
from hypothesis import strategies as st

from ...protocol import Record, roundtrip, wire_equal
from ...trusted.registry import register
from ...trusted.suite import CellSuite, Misconception, Mismatch, Property, Student, hypothesis_property
from ...trusted.worker_client import StudentError
from ..catalogue import WrongAnswer, catalogue, in_order, misconception, seen_through
from .contract import BEST_TESTS, GRADED_MAX_DEPTH, POINTS, TABLE_TESTS

__all__ = ["BEST_SUITE", "GRADED_MAX_DEPTH", "TABLE_SUITE"]

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
# generated depths start at 4, and small_depths checks 4..40 first.
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
)
_BEST_IN_ORDER = in_order("ex3", _BEST_ENTRIES.values(), _BEST_ORDER, complete=True)

BEST_MISCONCEPTIONS = tuple(misconception(entry) for entry in _BEST_IN_ORDER)


def _lift(function: Callable[[int], Any]) -> Callable[..., list[Any]]:
    # A wrong best_block_length makes a wrong table through the reference block_table's loop.
    def table(depths: Sequence[int]) -> list[Any]:
        return [function(depth) for depth in depths]

    return table


TABLE_MISCONCEPTIONS = tuple(misconception(entry) for entry in _TABLE_ENTRIES.values()) + tuple(
    seen_through(entry, _lift) for entry in _BEST_IN_ORDER
)


# ---- helpers ----------------------------------------------------------------------------


def _shape(value: Any) -> Any:
    """The Python types inside a decoded value: what ``wire_equal`` (``2 == 2.0``) leaves out."""
    if isinstance(value, Record):
        return (value.type, tuple((name, _shape(v)) for name, v in value.fields.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_shape(v) for v in value))
    return type(value).__name__


def same_output(wrong_output: Any, got: Any) -> bool:
    """A catalogue entry's output equals the student's, value *and* type of every field.

    ``wire_equal`` alone would let a record of float counts match an entry whose
    counts are ints (``16.0 == 16``) and name the wrong misconception.
    """
    return wire_equal(wrong_output, got) and _shape(wrong_output) == _shape(got)


def _blocks(depth: int, k: int) -> int:
    return -(-depth // k)


def _expected(depth: int) -> Record:
    return roundtrip(ref.best_block_length(depth))


def _choice(student: Student, depth: int) -> tuple[Record, Record]:
    """(expected, got) for ``best_block_length(depth)``; ``got`` is checked to be a BlockChoice record."""
    got = student.call("best_block_length", depth)
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
    fetch: Callable[[Student, Any], tuple[Any, Any]],
    argument: str,
    inputs: Sequence[Any],
    note: str,
    misconceptions: Sequence[Misconception],
    holds: Callable[[Any, Any], bool] = lambda expected, got: got == expected,
) -> Property:
    """A property over a fixed list of ``inputs``, tried in order; the first failing one is reported.

    ``fetch(student, value)`` returns ``(expected, got)`` for one input (it may raise Mismatch
    itself); ``holds(expected, got)`` decides (default: equal records, ``2 == 2.0`` allowed). A
    failure is a Mismatch with inputs ``{argument: value}``, both whole outputs and ``note``.
    """

    def check(student: Student) -> None:
        for value in inputs:
            expected, got = fetch(student, value)
            if not holds(expected, got):
                raise Mismatch({argument: value}, expected, got, note)

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
    fetch=_choice,
    argument="depth",
    inputs=(64, 1000),
    note="this is the notebook's visible example.",
    misconceptions=BEST_MISCONCEPTIONS,
    holds=lambda expected, got: got == expected and all(_int_field(got, name) is not None for name in COUNT_FIELDS),
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
    edge_depths=(64, 1000),
)
def record_types(depth: int, expected: Record, got: Record) -> str | None:
    wrong = [name for name in COUNT_FIELDS if _int_field(got, name) is None]
    if wrong:
        kinds = ", ".join(f"{name} is {type(got[name]).__name__}" for name in wrong)
        return f"counts are Python ints: {kinds}."
    if got["depth"] != depth:
        return "depth must be the depth you were given."
    root = got["sqrt_depth"]
    if type(root) is not float or abs(root - math.sqrt(depth)) > _SQRT_ULPS * math.ulp(math.sqrt(depth)):
        return "sqrt_depth is the float math.sqrt(depth)."
    return None


small_depths = _listed_property(
    "small_depths",
    "every depth from 1 to 40 gives the right record (k = 1 and k = L are allowed block lengths).",
    fetch=_choice,
    argument="depth",
    # The edges last, for the reason given at _depths; 2 before 3 because only at 2 the catalogued
    # "scan starts at k = 2" differs from round(sqrt(L)), and 1 last because a scan over an empty
    # range raises there, which names no misconception.
    inputs=(*range(4, 41), 2, 3, 1),
    note="small depths, where k = 1 and k = L matter.",
    misconceptions=BEST_MISCONCEPTIONS,
)

#: (argument, exception the contract names). Python values only: they travel as they are.
_BAD_DEPTHS: tuple[tuple[Any, str], ...] = (
    (16.0, "TypeError"),
    (True, "TypeError"),
    ("16", "TypeError"),
    (None, "TypeError"),
    (0, "ValueError"),
    (-7, "ValueError"),
)


def _raised(student: Student, fn: str, argument: Any) -> tuple[str, Any]:
    """("ExceptionName", None) if the call raised, else ("", returned value)."""
    try:
        return "", student.call(fn, argument)
    except StudentError as error:
        return error.type, None


def _check_input_contract(student: Student) -> None:
    for argument, wanted in _BAD_DEPTHS:
        raised, value = _raised(student, "best_block_length", argument)
        if raised != wanted:
            got = f"raised {raised}" if raised else value
            raise Mismatch({"depth": argument}, f"raises {wanted}", got, "see the Raises section of the docstring.")
    # numpy integers are accepted and give the same numbers as the Python int (compared with the
    # student's own answer: a wrong k is the other properties' business; field types are not judged here).
    raised, value = _raised(student, "best_block_length", np.int64(1000))
    as_int = student.call("best_block_length", 1000)
    same = isinstance(value, Record) and isinstance(as_int, Record) and wire_equal(value, as_int)
    if not same:
        got = f"raised {raised}" if raised else value
        note = "numpy integers are valid depths: the same record as for 1000."
        raise Mismatch({"depth": np.int64(1000)}, as_int, got, note)


input_contract = Property(
    "input_contract",
    "bool, float and other non-integers raise TypeError, depths below 1 ValueError; numpy integers are accepted.",
    _check_input_contract,
)

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
        ],
    )
)


# ---- ex3_block_table_tests ---------------------------------------------------------------


def _table(student: Student, depths: list[int]) -> tuple[list[Record], Any]:
    got = student.call("block_table", list(depths))
    expected = roundtrip(ref.block_table(depths))
    if not isinstance(got, list):
        raise Mismatch({"depths": depths}, expected, got, "return a list of BlockChoice records.")
    return expected, got


def _depth_of(entry: Any) -> Any:
    return entry["depth"] if isinstance(entry, Record) and "depth" in entry.fields else entry


table_visible_examples = _listed_property(
    "visible_examples",
    "block_table([1000, 16, 64, 1000]) and block_table([]) return the records the notebook shows.",
    fetch=_table,
    argument="depths",
    inputs=([1000, 16, 64, 1000], []),
    note="this is the notebook's visible example.",
    misconceptions=TABLE_MISCONCEPTIONS,
)

# Repeats are drawn from a small pool so that most lists hold some; the rest spans the graded range.
_table_depths = st.lists(
    st.one_of(st.sampled_from((1, 2, 3, 16, 64, 1000, 4096)), st.integers(1, GRADED_MAX_DEPTH)),
    max_size=6,
)
# Order and repeats are judged on the exercise's own range 16..4096 and above, away from the
# edge depths 1..3 where a wrong best_block_length may raise: that is matches_best_block_length's job.
_ordered_depths = st.lists(
    st.one_of(st.sampled_from((16, 64, 1000, 4096)), st.integers(16, GRADED_MAX_DEPTH)),
    max_size=6,
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
    examples=[{"depths": [16, 1000, 4096]}, {"depths": [2, 3]}, {"depths": [1, 2, 3]}],
    misconceptions=TABLE_MISCONCEPTIONS,
    matches=same_output,
)
def matches_best_block_length(student: Student, depths: list[int]) -> None:
    expected, got = _table(student, depths)
    if got != expected:
        raise Mismatch({"depths": depths}, expected, got)


#: (depths, exception the contract names): the first bad depth decides.
_BAD_TABLES: tuple[tuple[list[Any], str], ...] = (
    ([16, 0], "ValueError"),
    ([16, 17.0], "TypeError"),
    ([-1, 16], "ValueError"),
)


def _check_table_rejects(student: Student) -> None:
    for depths, wanted in _BAD_TABLES:
        raised, value = _raised(student, "block_table", depths)
        if raised != wanted:
            got = f"raised {raised}" if raised else value
            raise Mismatch({"depths": depths}, f"raises {wanted}", got, "an invalid depth is an error, not a row.")


table_rejects_bad_depths = Property(
    "rejects_bad_depths",
    "a list with an invalid depth raises what best_block_length raises for it.",
    _check_table_rejects,
    misconceptions=TABLE_MISCONCEPTIONS,
    matches=same_output,
)

TABLE_SUITE = register(
    CellSuite(
        TABLE_TESTS,
        points=POINTS[TABLE_TESTS],
        properties=[table_visible_examples, order_and_repeats, matches_best_block_length, table_rejects_bad_depths],
    )
)
