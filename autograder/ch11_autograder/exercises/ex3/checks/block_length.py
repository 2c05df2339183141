"""The checks of ``ex3_best_block_length_tests``: ``best_block_length(depth)``, one idea per property."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ch11_solutions import ex3_block_length as ref
from hypothesis import strategies as st

from ....api.suite import Call, CellSuite, Mismatch, Property, Record, Student, hypothesis_property, roundtrip
from ...catalogue import misconception
from ..contract import BEST_TESTS, GRADED_MAX_DEPTH, POINTS
from .shared import _BEST_IN_ORDER, STATEFUL, _listed_property, _raised, _raising, _read, repeated_calls, same_output

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

BEST_MISCONCEPTIONS = tuple(misconception(entry) for entry in _BEST_IN_ORDER if entry.name not in STATEFUL)


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


BEST_SUITE = CellSuite(
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
