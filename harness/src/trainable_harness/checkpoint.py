"""The count model of uniform checkpointing (chapter 11, Theorem 11.3)."""

from __future__ import annotations

import operator
from dataclasses import dataclass

__all__ = ["CheckpointCost", "uniform_checkpoint_cost"]


@dataclass(frozen=True)
class CheckpointCost:
    """Counts for one uniform block schedule of a depth-``depth`` chain.

    Attributes:
        depth: number of primitives ``L`` in the chain.
        block_size: block length ``k``; the last block is shorter when ``k``
            does not divide ``L``.
        num_blocks: ``ceil(L / k)``, the retained block-boundary states.
        peak_state_units: ``ceil(L / k) + k``, peak primal states alive.
        recomputed_forward_evaluations: ``L - ceil(L / k)``, the extra
            primitive evaluations of the replay (each block of length ``m``
            replays ``m - 1`` primitives).
    """

    depth: int
    block_size: int
    num_blocks: int
    peak_state_units: int
    recomputed_forward_evaluations: int


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool {value!r}")
    try:
        as_int = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if as_int < 1:
        raise ValueError(f"{name} must be >= 1, got {as_int}")
    return as_int


def uniform_checkpoint_cost(depth: int, block_size: int) -> CheckpointCost:
    """Peak states and replay count of uniform blocks of length ``block_size``.

    For ``k`` dividing ``L`` these are Equations 11.4 and 11.5 exactly:
    ``M(k) = L/k + k`` and ``R(k) = L - L/k``. For other ``k`` the chain splits
    into ``ceil(L/k)`` blocks, the last one shorter, which gives
    ``M(k) = ceil(L/k) + k`` and ``R(k) = L - ceil(L/k)``. ``k = 1`` is
    store-all (``L + 1`` states, no replay).

    Raises:
        TypeError: ``depth`` or ``block_size`` is not an integer (bools and
            floats are refused, numpy integers accepted).
        ValueError: ``depth < 1``, ``block_size < 1`` or ``block_size > depth``.
    """
    depth = _positive_int("depth", depth)
    block_size = _positive_int("block_size", block_size)
    if block_size > depth:
        raise ValueError(f"block_size must be <= depth, got block_size={block_size} for depth={depth}")
    num_blocks = -(-depth // block_size)
    return CheckpointCost(
        depth=depth,
        block_size=block_size,
        num_blocks=num_blocks,
        peak_state_units=num_blocks + block_size,
        recomputed_forward_evaluations=depth - num_blocks,
    )
