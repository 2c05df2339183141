"""Hidden suites of Exercise 1 (a third child d = a**2 at the shared node, L = b*c + d).

Three autograded test cells, one suite each, checked against
:mod:`ch11_solutions.ex1_fanout`:

=================================  ======  ==========================================
grade_id                           points  properties (each worth points / count)
=================================  ======  ==========================================
``ex1_extended_tape_tests``        3       visible tape at (2, 3); layout; node values;
                                           local derivatives; bad inputs
``ex1_contributions_into_a_tests`` 3       visible values and type; values; sum = a-bar;
                                           bad inputs
``ex1_input_gradient_tests``       2       visible values and type; values; bad inputs
=================================  ======  ==========================================

Each function also has three contract properties (``<fn>_bad_inputs``,
``<fn>_number_types``, ``<fn>_repeated_calls``), one per clause of the
docstring other than the value, so a single mistake costs only the properties
it breaks. The last two compare the student with the student: an answer for a
number of another type must have the contract's return type and equal the
student's own answer for float(x), float(y); each repeated call must get the
answer that call got first. A function wrong alike for every type and every
call passes both, and loses only the value properties.

Inputs. Generated coordinates are finite floats in [-1000, 1000] (zeros,
subnormals and round numbers included: a correct answer is right everywhere).
Several named wrong answers are invisible on special sets (last writer wins
drops ``xy(y + 2)``, which vanishes at y = -2; the y-bar slip drops
``x**2 y (y + 1)``; see ``wrong_answers.py``), so every generated property
first tries :data:`PROBE_POINTS`, chosen off all of those sets, and only
then the generated ones.

Tolerances. Every compared quantity (node value, local derivative,
contribution, gradient component) is an integer polynomial in (x, y) with
non-negative coefficients, computed by at most about ten rounded float64
operations in any sensible order. The forward error bound (Higham, *Accuracy
and Stability of Numerical Algorithms*, ch. 3) is then
``gamma_n * P(|x|, |y|)`` with ``gamma_n ~ n u``, ``u = 2**-53``, where
``P(|x|, |y|)`` is the same polynomial at the absolute inputs, which is the
reference evaluated at ``(|x|, |y|)``. The reference's own error is within
the same kind of bound, so student and reference may differ by about 20 u P;
we allow :data:`RELATIVE` = 64 u P, plus :data:`FLOOR` for gradual underflow
(at most 2**-1074 per operation times factors below 1e9). The bound is relative
to P, not to the value, so it stays honest under cancellation (b = xy + x near
y = -1). Every catalogued mistake is off by a whole path term, orders of
magnitude above it at the probe points. The visible properties compare exactly:
at (2, 3) and (1, 2) every value is a small integer, exact in any order.

Tapes. The node order is the contract; values and local derivatives are
compared per node. A node's edges are compared as a map parent -> the *sum* of
its local derivatives: ``d`` recorded as ``((2, a), (2, a))``, as the harness
records ``a * a``, is accepted, because the reverse sweep adds the two entries
and the chapter's point is that contributions add. A parent whose entries sum to
the wrong value, a missing parent or an extra parent fails.
"""

from __future__ import annotations

import math
import numbers
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ch11_solutions import ex1_fanout as ref
from hypothesis import strategies as st
from trainable_harness import TapeNode, reverse_accumulate

from ...api.suite import (
    Call,
    CellSuite,
    Misconception,
    Mismatch,
    NotDefined,
    Property,
    Student,
    StudentError,
    Unencodable,
    hypothesis_property,
    register,
    roundtrip,
    wire_equal,
)
from ..catalogue import catalogue, misconception, seen_through
from .contract import CONTRIBUTIONS_TESTS, GRADIENT_TESTS, POINTS, TAPE_TESTS

__all__ = [
    "BAD_INPUTS",
    "CALL_ROUNDS",
    "CONTRIBUTIONS_SUITE",
    "FLOOR",
    "GRADIENT_SUITE",
    "MAX_EXAMPLES",
    "NOT_FINITE",
    "NOT_REAL",
    "NUMBER_TYPES",
    "NUMBER_TYPE_EXAMPLES",
    "PROBE_POINTS",
    "RELATIVE",
    "SUITES",
    "TAPE_SUITE",
    "VISIBLE_POINTS",
    "tape_problem",
    "tapes_match",
    "vectors_match",
]

#: Tolerance relative to the magnitude polynomial P(|x|, |y|); see the module docstring.
RELATIVE = 64 * 2.0**-53
#: Absolute slack for gradual underflow; see the module docstring.
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
_CONTRIBUTION_LABELS = ("the contribution via b", "the contribution via c", "the contribution via d")
_GRADIENT_LABELS = ("dL/dx", "dL/dy")


# ---- values from the untrusted side --------------------------------------------------------


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _is_index(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _close(got: float, want: float, magnitude: float, relative: float = RELATIVE) -> bool:
    return math.isfinite(got) and abs(got - want) <= relative * abs(magnitude) + FLOOR


def _edge_sums(node: Any) -> dict[int, float]:
    """Parent index -> summed local derivative of a node already checked by :func:`tape_problem`."""
    sums: dict[int, float] = {}
    for parent, local in node.parents:
        sums[int(parent)] = sums.get(int(parent), 0.0) + float(local)
    return sums


def tape_problem(tape: Any, length: int = len(_NAMES)) -> str:
    """Why ``tape`` is not a well-formed tape of ``length`` nodes, or ``""`` if it is.

    Well formed: a list of ``length`` TapeNode, each value a finite float64
    (Python float or numpy float64), each edge a pair (integer index of an
    earlier node, finite real local derivative).
    """
    if not isinstance(tape, list) or not all(isinstance(node, TapeNode) for node in tape):
        return "extended_tape must return a list of TapeNode"
    if len(tape) != length:
        return f"the tape must have {length} nodes ({', '.join(_NAMES)}), this one has {len(tape)}"
    for index, node in enumerate(tape):
        where = f"node {index} ({_NAMES[index]})"
        if not isinstance(node.value, float):
            return f"{where}: its value is a {type(node.value).__name__}; record a Python float (float64)"
        if not math.isfinite(node.value):
            return f"{where}: its value {node.value!r} is not finite"
        if not isinstance(node.parents, tuple | list):
            return f"{where}: parents must be a tuple of (parent_index, local_derivative) pairs"
        for edge in node.parents:
            if not isinstance(edge, tuple | list) or len(edge) != 2:
                return f"{where}: each parent entry must be a pair (parent_index, local_derivative)"
            parent, local = edge
            if not _is_index(parent) or not 0 <= parent < index:
                return f"{where}: parent index {parent!r} must be an integer naming an earlier node"
            if not _is_real(local) or not math.isfinite(local):
                return f"{where}: local derivative {local!r} for parent {parent!r} must be a finite real number"
    return ""


def _first_difference(got: list[Any], want: list[TapeNode], scale: list[TapeNode], what: str) -> str:
    """The first node whose values (``what="values"``) or edges (``"edges"``) differ, described; else ``""``.

    ``scale`` is the reference tape at (|x|, |y|): its entries are the magnitude polynomials.
    """
    for index, (mine, right, size) in enumerate(zip(got, want, scale, strict=True)):
        where = f"node {index} ({_NAMES[index]})"
        if what == "values":
            if not _close(float(mine.value), right.value, size.value):
                return f"{where} has value {mine.value!r}, expected {right.value!r}"
            continue
        mine_sums, right_sums, size_sums = _edge_sums(mine), _edge_sums(right), _edge_sums(size)
        if mine_sums.keys() != right_sums.keys():
            return _parents_message(index, set(mine_sums), set(right_sums))
        for parent, local in right_sums.items():
            if not _close(mine_sums[parent], local, size_sums[parent]):
                return (
                    f"{where}: the local derivative for parent {parent} ({_NAMES[parent]}) is "
                    f"{mine_sums[parent]!r}, expected {local!r}"
                )
    return ""


def _parents_message(index: int, got: set[int], want: set[int]) -> str:
    got_names = [_NAMES[p] for p in sorted(got)]
    want_names = [_NAMES[p] for p in sorted(want)]
    return f"node {index} ({_NAMES[index]}) lists the parents {got_names}, expected {want_names}"


def _parents_problem(got: list[Any], want: list[TapeNode]) -> str:
    """The first node whose set of parents differs from the contract's, described; else ``""``."""
    for index, (mine, right) in enumerate(zip(got, want, strict=True)):
        mine_parents, right_parents = set(_edge_sums(mine)), set(_edge_sums(right))
        if mine_parents != right_parents:
            return _parents_message(index, mine_parents, right_parents)
    return ""


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


def tapes_match(wrong: Any, got: Any) -> bool:
    """Whether the student's tape equals a misconception's tape up to rounding (edges summed per parent)."""
    if not isinstance(wrong, list) or not isinstance(got, list) or len(wrong) != len(got):
        return False
    if tape_problem(wrong, len(wrong)) or tape_problem(got, len(got)):
        return False
    values = np.array([float(n.value) for n in wrong])
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    for mine, theirs in zip(got, wrong, strict=True):
        if abs(float(mine.value) - float(theirs.value)) > _MATCH_RELATIVE * scale + FLOOR:
            return False
        mine_sums, their_sums = _edge_sums(mine), _edge_sums(theirs)
        if mine_sums.keys() != their_sums.keys():
            return False
        if any(abs(mine_sums[p] - their_sums[p]) > _MATCH_RELATIVE * scale + FLOOR for p in their_sums):
            return False
    return True


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


# ---- contract checks shared by the three functions -----------------------------------------

#: Why a return value is not of the contract's return type (``""`` if it is); judges types only.
TypeCheck = Callable[[Any], str]
#: What a comparer returns for ``(x, y, got, own)``: why ``got`` is not ``own`` up to float64 rounding, or "".
#: ``own`` is the student's own answer at the float64 point (x, y); the reference only scales the tolerance.
Compare = Callable[[float, float, Any, Any], str]


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


def _tape_type(got: Any) -> str:
    """Why ``got`` is not a list of TapeNode with Python float values and well-formed edges, or ``""``.

    The number of nodes and their parents are the layout property's clause, not this one.
    """
    return tape_problem(got, len(got)) if isinstance(got, list) else tape_problem(got)


def _within(got: float, own: float, magnitude: float) -> bool:
    # The tolerance scales with the larger of the contract's magnitude polynomial and the student's own
    # value, so a student whose formula is wrong is still judged on rounding alone.
    return _close(got, own, max(abs(magnitude), abs(own)))


def _same_tape(x: float, y: float, got: Any, own: Any) -> str:
    """Why the tape ``got`` is not the tape ``own`` to float64 rounding (values and per-parent local derivatives)."""
    if _tape_type(own) or len(own) != len(got):
        return "it differs from what extended_tape returns for float(x), float(y)"
    scale = ref.extended_tape(abs(x), abs(y))
    for index, (mine, theirs) in enumerate(zip(got, own, strict=True)):
        size = scale[index] if index < len(scale) else TapeNode(0.0)
        where = f"node {index} ({_NAMES[index]})" if index < len(_NAMES) else f"node {index}"
        if not _within(float(mine.value), float(theirs.value), size.value):
            return f"{where} has value {mine.value!r}, but {theirs.value!r} for float(x), float(y)"
        mine_sums, their_sums, size_sums = _edge_sums(mine), _edge_sums(theirs), _edge_sums(size)
        if mine_sums.keys() != their_sums.keys():
            return f"{where} lists other parents than for float(x), float(y)"
        for parent, local in their_sums.items():
            if not _within(mine_sums[parent], local, size_sums.get(parent, 0.0)):
                return (
                    f"{where}: the local derivative for parent {parent} is {mine_sums[parent]!r}, "
                    f"but {local!r} for float(x), float(y)"
                )
    return ""


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
    outcomes = tuple(Misconception(m.name, m.advice, _outcome(m.implementation),
                                   fails=m.fails, history=m.history) for m in misconceptions)
    replays = tuple(Misconception(m.name, m.advice, _replayed(m.implementation),
                                  fails=m.fails, history=m.history) for m in misconceptions)
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
                    )

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


# ---- extended_tape -------------------------------------------------------------------------


def _tape_properties() -> list[Property]:
    misconceptions = _misconceptions("extended_tape")

    def visible(student: Student) -> None:
        x, y = VISIBLE_POINTS[0]
        inputs = {"x": x, "y": y}
        expected = ref.extended_tape(x, y)
        got = student.call("extended_tape", x, y)
        problem = tape_problem(got)
        if not problem:
            # At (2, 3) every value is a small integer: compare exactly (no magnitude slack).
            zero = [TapeNode(0.0, tuple((p, 0.0) for p, _ in n.parents)) for n in expected]
            problem = _first_difference(got, expected, zero, "values") or _first_difference(
                got, expected, zero, "edges"
            )
        if problem:
            raise Mismatch(inputs, roundtrip(expected), got, problem)

    tape_visible = Property(
        "extended_tape_visible",
        "extended_tape(2, 3) is the contract's tape exactly: values 2, 3, 6, 8, 18, 36, 180 and every "
        "local derivative (the notebook's checks).",
        visible,
        misconceptions=misconceptions,
        matches=tapes_match,
    )

    def generated(name: str, description: str, what: str) -> Property:
        @hypothesis_property(
            name,
            description,
            given=_GIVEN,
            examples=PROBE_POINTS,
            max_examples=MAX_EXAMPLES,
            misconceptions=misconceptions,
            matches=tapes_match,
        )
        def body(student: Student, x: float, y: float) -> None:
            inputs = {"x": x, "y": y}
            expected = ref.extended_tape(x, y)
            got = student.call("extended_tape", x, y)
            problem = tape_problem(got)
            if not problem and what == "layout":
                problem = _parents_problem(got, expected)
            elif not problem:
                problem = _first_difference(got, expected, ref.extended_tape(abs(x), abs(y)), what)
            if problem:
                raise Mismatch(inputs, roundtrip(expected), got, problem)

        return body

    return [
        tape_visible,
        generated(
            "extended_tape_layout",
            "extended_tape(x, y) returns 7 TapeNode in the order x, y, a, b, c, d, L, with float values "
            "and exactly the contract's parents at every node (L is one node with parents b, c, d).",
            "layout",
        ),
        generated(
            "extended_tape_values",
            "The node values are a = xy, b = a + x, c = ay, d = a*a, L = bc + d, to float64 rounding, "
            "for x, y in [-1000, 1000].",
            "values",
        ),
        generated(
            "extended_tape_local_derivatives",
            "Each node's local derivatives, summed per parent, are the contract's to float64 rounding "
            "(a parent listed twice is accepted when its entries add up, since the sweep adds them).",
            "edges",
        ),
        *_contract_properties(
            "extended_tape",
            _tape_type,
            _same_tape,
            "the contract's tape of Python floats",
            misconceptions,
            tapes_match,
        ),
    ]


# ---- contributions_into_a ------------------------------------------------------------------


def _contribution_properties() -> list[Property]:
    visible, values = _vector_properties(
        "contributions_into_a",
        _CONTRIBUTION_LABELS,
        ref.contributions_into_a,
        "contributions (via b, via c, via d)",
    )

    @hypothesis_property(
        "contributions_into_a_sum",
        "The three contributions add up to dL/da, the a-bar of the additive sweep, to float64 rounding.",
        given=_GIVEN,
        examples=PROBE_POINTS,
        max_examples=MAX_EXAMPLES,
        misconceptions=_misconceptions("contributions_into_a"),
        matches=vectors_match,
    )
    def adds_up(student: Student, x: float, y: float) -> None:
        inputs = {"x": x, "y": y}
        expected = ref.contributions_into_a(x, y)
        a_bar = float(reverse_accumulate(ref.extended_tape(x, y))[_A])
        scale = float(np.sum(ref.contributions_into_a(abs(x), abs(y))))
        got = student.call("contributions_into_a", x, y)
        vector = _vector(got, 3)
        if vector is None:
            raise Mismatch(inputs, roundtrip(expected), got, "expected 3 finite real numbers")
        total = float(np.sum(vector))
        if not _close(total, a_bar, scale):
            raise Mismatch(inputs, roundtrip(expected), got, f"they add up to {total!r}, but a-bar is {a_bar!r}")

    contract = _contract_properties(
        "contributions_into_a",
        lambda got: _exact_vector(got, len(_CONTRIBUTION_LABELS)),
        _same_vector(ref.contributions_into_a, _CONTRIBUTION_LABELS),
        "a float64 array of shape (3,)",
        _misconceptions("contributions_into_a"),
        vectors_match,
    )
    return [visible, values, adds_up, *contract]


# ---- input_gradient ------------------------------------------------------------------------


def _gradient_properties() -> list[Property]:
    visible, values = _vector_properties(
        "input_gradient", _GRADIENT_LABELS, ref.input_gradient, "gradient (dL/dx, dL/dy)"
    )
    contract = _contract_properties(
        "input_gradient",
        lambda got: _exact_vector(got, len(_GRADIENT_LABELS)),
        _same_vector(ref.input_gradient, _GRADIENT_LABELS),
        "a float64 array of shape (2,)",
        _misconceptions("input_gradient"),
        vectors_match,
    )
    return [visible, values, *contract]


TAPE_SUITE: CellSuite = register(CellSuite(TAPE_TESTS, points=POINTS[TAPE_TESTS], properties=_tape_properties()))
CONTRIBUTIONS_SUITE: CellSuite = register(
    CellSuite(CONTRIBUTIONS_TESTS, points=POINTS[CONTRIBUTIONS_TESTS], properties=_contribution_properties())
)
GRADIENT_SUITE: CellSuite = register(
    CellSuite(GRADIENT_TESTS, points=POINTS[GRADIENT_TESTS], properties=_gradient_properties())
)

#: Every suite of this exercise, by grade_id.
SUITES: Mapping[str, CellSuite] = {s.grade_id: s for s in (TAPE_SUITE, CONTRIBUTIONS_SUITE, GRADIENT_SUITE)}


# ---- the contract, clause by clause ---------------------------------------------------------
