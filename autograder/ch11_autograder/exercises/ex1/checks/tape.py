"""The checks of ``ex1_extended_tape_tests``: ``extended_tape(x, y)``'s layout, values and local derivatives."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from ch11_solutions import ex1_fanout as ref
from trainable_harness import TapeNode

from ....api.suite import CellSuite, Mismatch, Property, Student, hypothesis_property, roundtrip
from ..contract import POINTS, TAPE_TESTS
from .clauses import _contract_properties
from .shared import (
    _GIVEN,
    _MATCH_RELATIVE,
    _NAMES,
    FLOOR,
    MAX_EXAMPLES,
    PROBE_POINTS,
    VISIBLE_POINTS,
    _close,
    _is_real,
    _misconceptions,
    _within,
)


def _is_index(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


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


def _tape_type(got: Any) -> str:
    """Why ``got`` is not a list of TapeNode with Python float values and well-formed edges, or ``""``.

    The number of nodes and their parents are the layout property's clause, not this one.
    """
    return tape_problem(got, len(got)) if isinstance(got, list) else tape_problem(got)


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


TAPE_SUITE: CellSuite = CellSuite(TAPE_TESTS, points=POINTS[TAPE_TESTS], properties=_tape_properties())
