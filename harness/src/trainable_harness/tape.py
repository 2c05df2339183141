"""A scalar tape and its reverse sweep: the whole idea of reverse accumulation.

A tape is a sequence of :class:`TapeNode` in execution order. Node ``i`` stores
its primal value and, for each parent ``p < i``, the local derivative
``d value_i / d value_p``. The last node is the scalar output.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TapeNode", "reverse_accumulate", "validate_tape"]


@dataclass(frozen=True)
class TapeNode:
    """One executed primitive.

    Attributes:
        value: the primal value this node computed.
        parents: ``(parent_index, local_derivative)`` pairs; a parent index
            refers to an earlier position of the same tape. A parent may
            appear more than once (``x * x`` has two edges to ``x``).
    """

    value: float
    parents: tuple[tuple[int, float], ...] = ()


def _is_real(value: object) -> bool:
    # bool is an int subclass, but a flag on a tape is always a mistake.
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def validate_tape(tape: Sequence[TapeNode]) -> None:
    """Raise ``ValueError`` naming the first malformed node of ``tape``.

    A tape is well formed when it is non-empty, every node's value and local
    derivatives are real numbers, and every parent index is an integer that
    points at an earlier node.
    """
    if len(tape) == 0:
        raise ValueError("tape is empty: it needs at least the output node")
    for index, node in enumerate(tape):
        where = f"node {index}"
        if not isinstance(node, TapeNode):
            raise ValueError(f"{where} is a {type(node).__name__}, not a TapeNode")
        if not _is_real(node.value):
            raise ValueError(f"{where} has a non-numeric value {node.value!r}")
        try:
            edges = list(node.parents)
        except TypeError:
            raise ValueError(f"{where} has parents {node.parents!r}, not a sequence of pairs") from None
        for edge in edges:
            try:
                parent, local = edge
            except (TypeError, ValueError):
                raise ValueError(
                    f"{where} has parent entry {edge!r}; expected (parent_index, local_derivative)"
                ) from None
            if not isinstance(parent, numbers.Integral) or isinstance(parent, bool | np.bool_):
                raise ValueError(f"{where} has parent index {parent!r}, not an integer")
            if not 0 <= parent < index:
                raise ValueError(
                    f"{where} has parent index {parent}; parents must be earlier nodes "
                    f"(0 <= parent < {index})"
                )
            if not _is_real(local):
                raise ValueError(f"{where} has a non-numeric local derivative {local!r} for parent {parent}")


def reverse_accumulate(tape: Sequence[TapeNode]) -> np.ndarray:
    """Return the cotangent ``dL/dz_i`` of every node, ``L`` being the last node.

    The output cotangent is seeded with 1.0 and nodes are visited in reverse
    tape order (a reverse topological order, since parents are earlier). Each
    edge *adds* ``cotangent[child] * local_derivative`` into its parent, so a
    node with several children receives the sum of all their contributions.

    Returns:
        float64 array of shape ``(len(tape),)``.

    Raises:
        ValueError: the tape is malformed (see :func:`validate_tape`).
    """
    validate_tape(tape)
    cotangents = np.zeros(len(tape), dtype=np.float64)
    cotangents[-1] = 1.0
    for index in range(len(tape) - 1, -1, -1):
        incoming = cotangents[index]
        for parent, local in tape[index].parents:
            cotangents[parent] += incoming * np.float64(local)
    return cotangents
