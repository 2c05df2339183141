"""What more than one of Exercise 1's cells uses: tolerances, points, inputs and the vector properties.

The tolerances and the probe points are explained in ``ex1.suite``'s docstring.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from ch11_solutions import ex1_fanout as ref
from hypothesis import strategies as st
from trainable_harness import TapeNode, reverse_accumulate

from ....api.suite import Call, Misconception, Mismatch, Property, Student, hypothesis_property, roundtrip
from ...catalogue import catalogue, misconception, seen_through

#: Tolerance relative to the magnitude polynomial P(|x|, |y|); see ``ex1.suite``'s docstring.
RELATIVE = 64 * 2.0**-53
#: Absolute slack for gradual underflow; see ``ex1.suite``'s docstring.
FLOOR = 1e-300
#: Looser relative tolerance for naming a misconception: the student's wrong code may
#: round differently from the catalogue's, but two different mistakes differ by far more.
_MATCH_RELATIVE = 1e-9

#: Generated examples per property (after the probe points).
MAX_EXAMPLES = 40

#: Tried first by every generated property: off every set where a catalogued mistake
#: vanishes (x = 0, y in {0, -1, -2, -3}, b = c, c = 1, y = 1, a = 1/2). The first is
#: exact in float64 and short to read in feedback; the second has a non-dyadic coordinate.
PROBE_POINTS: tuple[dict[str, float], ...] = ({"x": 1.5, "y": -0.5}, {"x": -3.25, "y": 2.7})

#: The points of the notebook's visible checks, with their exact answers.
VISIBLE_POINTS: tuple[tuple[float, float], ...] = ((2.0, 3.0), (1.0, 2.0))

#: Values that are not real numbers (TypeError) and real numbers that are not finite (ValueError),
#: as the contract's Raises section names them, numpy's spellings included.
NOT_REAL: tuple[Any, ...] = (True, False, np.True_, "3", "abc", None, [2.0])
NOT_FINITE: tuple[Any, ...] = (math.nan, math.inf, -math.inf, np.float64(math.nan), np.float32(math.inf))
#: The good coordinate beside a bad one: a value no other property sends (a cache keyed by value
#: must not answer a bad call from an earlier good one here; the repeated-calls properties test
#: that, at values of their own).
_PARTNER = {"x": 2.7, "y": -3.25}

#: (x, y, argument the error must name or None, exception type) for the contract's Raises:
#: every bad value in each argument in turn, the other argument good.
BAD_INPUTS: tuple[tuple[Any, Any, str | None, str], ...] = tuple(
    (bad, _PARTNER["x"], "x" if error == "ValueError" else None, error)
    if argument == "x"
    else (_PARTNER["y"], bad, "y" if error == "ValueError" else None, error)
    for values, error in ((NOT_FINITE, "ValueError"), (NOT_REAL, "TypeError"))
    for bad in values
    for argument in ("x", "y")
)

#: The number types the contract accepts for x and y ("a real number", bool excluded), as
#: converters from a generated float; each is used as its float64 value.
NUMBER_TYPES: Mapping[str, Callable[[float], Any]] = {
    "float": float,
    "int": round,
    "np.float64": np.float64,
    "np.float32": np.float32,
    "np.int64": lambda v: np.int64(round(v)),
    "np.int32": lambda v: np.int32(round(v)),
}

_COORDINATE = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
_GIVEN = {"x": _COORDINATE, "y": _COORDINATE}
_NUMBER_TYPE = st.sampled_from(tuple(NUMBER_TYPES))

#: Tried first by every number-types property: each type at least once, float32 at points where
#: float32 arithmetic rounds, and numpy int32 where a*a overflows it (|a| > 46341).
NUMBER_TYPE_EXAMPLES: tuple[dict[str, Any], ...] = (
    {"x": 2.0, "y": 3.0, "x_type": "int", "y_type": "int"},
    {"x": 1.5, "y": 2.7, "x_type": "np.float32", "y_type": "np.float32"},
    {"x": -3.25, "y": 2.7, "x_type": "np.float64", "y_type": "float"},
    {"x": 700.0, "y": -900.0, "x_type": "np.int32", "y_type": "np.int64"},
    {"x": -7.0, "y": 0.5, "x_type": "np.int64", "y_type": "np.float32"},
)
_NAMES = ref.EXTENDED_NODE_NAMES
_A = _NAMES.index("a")
_CHILDREN_OF_A = tuple(_NAMES.index(child) for child in "bcd")


# ---- values from the untrusted side --------------------------------------------------------


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _close(got: float, want: float, magnitude: float, relative: float = RELATIVE) -> bool:
    return math.isfinite(got) and abs(got - want) <= relative * abs(magnitude) + FLOOR


def _vector(value: Any, length: int) -> np.ndarray | None:
    """``value`` as a float64 vector of ``length`` finite entries, or ``None`` if it is not one."""
    if isinstance(value, np.ndarray):
        if value.shape != (length,) or value.dtype.kind not in "fiu":
            return None
        vector = value.astype(np.float64)
    elif isinstance(value, list | tuple) and len(value) == length and all(_is_real(v) for v in value):
        vector = np.array([float(v) for v in value], dtype=np.float64)
    else:
        return None
    return vector if bool(np.all(np.isfinite(vector))) else None


def _exact_vector(value: Any, length: int) -> str:
    """Why ``value`` is not a float64 array of shape ``(length,)``, or ``""``."""
    if not isinstance(value, np.ndarray):
        return f"return a numpy array (float64, shape ({length},)), not a {type(value).__name__}"
    if value.dtype != np.float64 or value.shape != (length,):
        return f"return a float64 array of shape ({length},); this one is {value.dtype.name} of shape {value.shape}"
    return ""


# ---- matching a student's output with a catalogued mistake ---------------------------------


def vectors_match(wrong: Any, got: Any) -> bool:
    """Whether ``got`` equals a misconception's vector output up to rounding (any float dtype)."""
    left = _vector(wrong, np.size(wrong)) if isinstance(wrong, np.ndarray) else None
    right = _vector(got, len(left)) if left is not None else None
    if left is None or right is None:
        return False
    scale = float(np.max(np.abs(left))) if left.size else 0.0
    return bool(np.all(np.abs(left - right) <= _MATCH_RELATIVE * scale + FLOOR))


def _contributions_from_tape(tape: list[TapeNode]) -> np.ndarray:
    # What a correct contributions_into_a returns when it reads the given (wrong) tape.
    cotangents = reverse_accumulate(tape)
    parts = np.zeros(len(_CHILDREN_OF_A), dtype=np.float64)
    for slot, child in enumerate(_CHILDREN_OF_A):
        for parent, local in tape[child].parents:
            if parent == _A:
                parts[slot] += cotangents[child] * np.float64(local)
    return parts


def _gradient_from_tape(tape: list[TapeNode]) -> np.ndarray:
    return np.array(reverse_accumulate(tape)[:2], dtype=np.float64)


def _reading(read: Callable[[list[TapeNode]], np.ndarray]) -> Callable[[Callable], Callable]:
    """A correct function that reads the tape ``extended_tape`` makes, for :func:`seen_through`."""

    def downstream(tape_of: Callable) -> Callable[[float, float], np.ndarray]:
        def implementation(x: float, y: float) -> np.ndarray:
            return read(tape_of(x, y))

        return implementation

    return downstream


_READERS = {"contributions_into_a": _reading(_contributions_from_tape), "input_gradient": _reading(_gradient_from_tape)}


def _misconceptions(replaces: str) -> tuple[Misconception, ...]:
    entries = catalogue("ex1")
    tape_entries = [e for e in entries if e.replaces == "extended_tape"]
    own = [misconception(e) for e in entries if e.replaces == replaces]
    if replaces in _READERS:
        where = "in extended_tape, which this function reads"
        own += [seen_through(e, _READERS[replaces], where=where) for e in tape_entries]
    return tuple(own)


#: What a comparer returns for ``(x, y, got, own)``: why ``got`` is not ``own`` up to float64 rounding, or "".
#: ``own`` is the student's own answer at the float64 point (x, y); the reference only scales the tolerance.
Compare = Callable[[float, float, Any, Any], str]


def _within(got: float, own: float, magnitude: float) -> bool:
    # The tolerance scales with the larger of the contract's magnitude polynomial and the student's own
    # value, so a student whose formula is wrong is still judged on rounding alone.
    return _close(got, own, max(abs(magnitude), abs(own)))


def _same_vector(reference: Callable[[float, float], np.ndarray], labels: tuple[str, ...]) -> Compare:
    """A comparer of two answers of a vector function, entry by entry, to float64 rounding."""

    def differs(x: float, y: float, got: Any, own: Any) -> str:
        mine, theirs = _vector(got, len(labels)), _vector(own, len(labels))
        if mine is None or theirs is None:
            return "it differs from what the function returns for float(x), float(y)"
        scale = reference(abs(x), abs(y))
        for slot, label in enumerate(labels):
            if not _within(float(mine[slot]), float(theirs[slot]), float(scale[slot])):
                return f"{label} is {float(mine[slot])!r}, but {float(theirs[slot])!r} for float(x), float(y)"
        return ""

    return differs


def _vector_properties(
    function: str, labels: tuple[str, ...], reference: Callable[[float, float], np.ndarray], what: str
) -> list[Property]:
    """The visible-values and generated-values properties of a function returning a vector.

    ``labels`` names the entries of the vector, in order, for feedback.
    """
    length = len(labels)
    misconceptions = _misconceptions(function)

    def visible(student: Student) -> None:
        answers = student.batch([Call(function, point) for point in VISIBLE_POINTS])
        for (x, y), got in zip(VISIBLE_POINTS, answers, strict=True):
            inputs = {"x": x, "y": y}
            expected = reference(x, y)
            problem = _exact_vector(got, length)
            if problem:
                raise Mismatch(inputs, roundtrip(expected), got, problem)
            if not np.array_equal(got, expected):
                raise Mismatch(inputs, roundtrip(expected), got)

    visible_property = Property(
        f"{function}_visible",
        f"{function} returns a float64 array of shape ({length},) with the exact {what} at (2, 3) and (1, 2) "
        "(the notebook's checks).",
        visible,
        misconceptions=misconceptions,
        matches=vectors_match,
    )

    @hypothesis_property(
        f"{function}_values",
        f"{function}(x, y) equals the {what} to float64 rounding for x, y in [-1000, 1000].",
        given=_GIVEN,
        examples=PROBE_POINTS,
        max_examples=MAX_EXAMPLES,
        misconceptions=misconceptions,
        matches=vectors_match,
    )
    def values(student: Student, x: float, y: float) -> None:
        inputs = {"x": x, "y": y}
        expected = reference(x, y)
        scale = reference(abs(x), abs(y))
        got = student.call(function, x, y)
        vector = _vector(got, length)
        if vector is None:
            raise Mismatch(inputs, roundtrip(expected), got, f"expected {length} finite real numbers")
        for slot, label in enumerate(labels):
            if not _close(float(vector[slot]), float(expected[slot]), float(scale[slot])):
                raise Mismatch(
                    inputs, roundtrip(expected), got, f"{label} differs by more than float64 rounding can explain"
                )

    return [visible_property, values]
