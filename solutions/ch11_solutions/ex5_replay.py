"""Exercise 5: checkpointed replay of a chain with one stateful random operation.

The chain is :class:`trainable_harness.StochasticChain`: layer ``i`` maps
``z_i`` to ``z_{i+1}``, and one layer adds noise drawn from a numpy
``Generator``. Its reverse rule reads the layer's *output*, so reverse
accumulation needs the primal states ``z_1 .. z_L``.

Store-all keeps every state. Uniform checkpointing keeps only each block's
input and the chain's output and replays the rest of a block during the
reverse pass. The replay is exact only if the random layer sees the same
numbers again: the generator state at the block start is part of the
checkpoint (``copy.deepcopy(rng.bit_generator.state)``) and is restored into
the generator that replays the block. Replaying with the generator as the
forward pass left it draws fresh noise, which changes the replayed states
between the random layer and the end of its block and, through them, the
derivatives.

Which derivatives change is fixed by the layout, not by the data. Let the
random layer ``r`` lie in the block that ends at retained state ``z_e``
(``e = min(s + k, L)`` for the block start ``s``). An unmatched replay
recomputes ``z_{r+1} .. z_{e-1}`` wrongly and leaves ``z_e`` (retained)
right. The reverse rule of layer ``e-1`` reads ``z_e``, so ``dL/dz_{e-1}``
is still right; layer ``e-2`` reads ``z_{e-1}``, so ``dL/dz_{e-2}`` is the
first wrong cotangent going backward from the output, and every row below it
is wrong too. When ``r = e - 1`` (the random layer ends its block) the random
layer is never replayed and nothing changes. This assumes the fresh noise
changes ``z_{e-1}`` at all; a chain that contracts differences below float64
resolution before the block ends would hide the mismatch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from trainable_harness import StateLedger, StochasticChain, uniform_checkpoint_cost

__all__ = [
    "ReplayReport",
    "ReplayRun",
    "checkpointed_cotangents",
    "first_mismatch",
    "replay_report",
    "store_all_cotangents",
]


@dataclass(frozen=True)
class ReplayRun:
    """Derivatives and counts of one reverse pass over a :class:`StochasticChain`.

    Attributes:
        cotangents: float64 array of shape ``(depth + 1, width)``; row ``i``
            is ``dL/dz_i`` (row ``depth`` is all ones, since ``L = sum(z_L)``).
        forward_evaluations: every layer application during the run,
            replays included (store-all: ``depth``).
        replayed_evaluations: the layer applications of the reverse pass
            only (store-all: 0; blocks of length ``k``: ``depth - ceil(depth/k)``).
        peak_states: the largest number of primal states ``z_i`` alive at
            once, in units of one ``z`` vector (store-all: ``depth + 1``;
            blocks of length ``k``: ``ceil(depth/k) + k``). Cotangents are
            not counted.

    The three counts are Python ints (``int``), also when ``block_size`` is a
    numpy integer: a numpy integer count loses points.
    """

    cotangents: np.ndarray
    forward_evaluations: int
    replayed_evaluations: int
    peak_states: int


def _check_inputs(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if not isinstance(chain, StochasticChain):
        raise TypeError(f"chain must be a StochasticChain, got {type(chain).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        got = f"{z0.dtype} {z0.shape}" if isinstance(z0, np.ndarray) else type(z0).__name__
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},), got {got}")
    return z0


def _reverse_block(
    chain: StochasticChain, states: dict[int, np.ndarray], cotangents: np.ndarray, start: int, end: int
) -> None:
    """Reverse rules of layers ``end-1 .. start``; ``states`` holds ``z_{start+1} .. z_end``."""
    for i in range(end - 1, start - 1, -1):
        cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])


def store_all_cotangents(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    """Reverse accumulation with every primal state kept: the saved-state baseline.

    One forward pass applies layers ``0 .. L-1`` to ``z0`` with ``rng`` (the
    random layer draws ``width`` standard normals from it, advancing it) and
    retains ``z_0 .. z_L``; the reverse pass seeds ``dL/dz_L = 1`` and applies
    ``chain.backward`` from layer ``L-1`` down to 0. Nothing is replayed.

    Args:
        chain: the chain; its ``forward_evaluations`` counter grows by ``L``.
        z0: float64 input of shape ``(chain.width,)``, in any memory layout (C or
            Fortran order, a strided view, read-only); not modified.
        rng: the generator of the forward pass; it is advanced.

    Returns:
        a :class:`ReplayRun` with ``forward_evaluations = L``,
        ``replayed_evaluations = 0`` and ``peak_states = L + 1``. Its
        cotangents are graded within a relative tolerance of ``1e-10`` of
        the reference's in every entry (a reverse rule with its factors in
        another order passes); the bit-for-bit claims of the later tasks
        compare your own runs with each other.

    Raises:
        TypeError: ``chain`` is not a ``StochasticChain`` or ``rng`` is not a
            ``numpy.random.Generator`` (a seed is refused, not turned into one).
        ValueError: ``z0`` is not a float64 array of shape ``(width,)`` (a
            list or an array of another dtype or shape is refused, not converted;
            so is one of the right size in another shape, ``(1, width)`` or
            ``(width, 1)``, not reshaped).
    """
    z0 = _check_inputs(chain, z0, rng)
    depth = chain.depth
    before = chain.forward_evaluations
    ledger = StateLedger()
    states = {0: z0}
    ledger.retain()
    for i in range(depth):
        states[i + 1] = chain.forward(i, states[i], rng)
        ledger.retain()
    cotangents = np.empty((depth + 1, chain.width), dtype=np.float64)
    cotangents[depth] = 1.0
    _reverse_block(chain, states, cotangents, 0, depth)
    ledger.release(depth + 1)
    return ReplayRun(
        cotangents=cotangents,
        forward_evaluations=chain.forward_evaluations - before,
        replayed_evaluations=0,
        peak_states=ledger.peak,
    )


def checkpointed_cotangents(
    chain: StochasticChain,
    z0: np.ndarray,
    block_size: int,
    rng: np.random.Generator,
    *,
    matched: bool = True,
) -> ReplayRun:
    """Reverse accumulation with uniform checkpoint blocks and replay.

    The chain of depth ``L`` is cut into blocks of ``k = block_size`` layers
    starting at ``s = 0, k, 2k, ...``; the last block is shorter when ``k``
    does not divide ``L``.

    Forward pass: apply all ``L`` layers with ``rng``; retain each block
    input ``z_s`` and the output ``z_L``; at each block start take a snapshot
    ``copy.deepcopy(rng.bit_generator.state)`` (a copy: keeping the
    ``Generator`` itself would keep advancing with it).

    Reverse pass, last block first: for a block ``[s, s+m)`` replay layers
    ``s .. s+m-2`` from ``z_s`` to rebuild ``z_{s+1} .. z_{s+m-1}`` (``m - 1``
    evaluations; ``z_{s+m}`` is the retained next block input or the output),
    apply the reverse rules of layers ``s+m-1 .. s``, then drop the replayed
    states. With ``matched=True`` each replay draws from a copy of ``rng``
    whose state is set to that block's snapshot, so it repeats the forward
    pass's noise and the result equals :func:`store_all_cotangents` bit for
    bit. With ``matched=False`` the replay draws from ``rng`` as the forward
    pass left it: an unmatched stream.

    State accounting (a :class:`trainable_harness.StateLedger`): retained
    block inputs and the output stay alive for the whole reverse pass, and a
    block's replayed states live until its reverse rules are done, so the
    peak is ``ceil(L/k) + 1 + (k - 1) = ceil(L/k) + k``, the count model of
    :func:`trainable_harness.uniform_checkpoint_cost`.

    Args:
        chain: the chain; its ``forward_evaluations`` counter grows by
            ``L + (L - ceil(L/k))``.
        z0: float64 input of shape ``(chain.width,)``, in any memory layout (C or
            Fortran order, a strided view, read-only); not modified.
        block_size: ``k``, an integer (a Python ``int`` or a numpy integer)
            with ``1 <= k <= L``. ``k = 1`` retains every state and replays
            nothing; ``k = L`` replays ``L - 1`` layers.
        rng: the generator of the forward pass, in whatever state the caller
            left it (it may have drawn before this call: replay repeats the
            draws of *this* forward pass, so rebuilding a generator from its
            seed sequence is not a snapshot); it is advanced by the forward
            pass, and further by an unmatched replay.
        matched: restore the snapshotted generator state for each replay.

    Returns:
        a :class:`ReplayRun` with ``forward_evaluations = 2L - ceil(L/k)``,
        ``replayed_evaluations = L - ceil(L/k)`` and
        ``peak_states = ceil(L/k) + k``.

    Raises:
        TypeError: as :func:`store_all_cotangents`, or ``block_size`` is not
            an integer (bools, floats and strings refused).
        ValueError: as :func:`store_all_cotangents`, or ``block_size`` is
            not in ``[1, L]``.
    """
    z0 = _check_inputs(chain, z0, rng)
    depth = chain.depth
    cost = uniform_checkpoint_cost(depth, block_size)
    k = cost.block_size
    starts = list(range(0, depth, k))
    before = chain.forward_evaluations
    ledger = StateLedger()

    retained: dict[int, np.ndarray] = {}
    snapshots: dict[int, dict] = {}
    z = z0
    for s in starts:
        retained[s] = z
        ledger.retain()
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    retained[depth] = z
    ledger.retain()

    forward_pass = chain.forward_evaluations - before
    cotangents = np.empty((depth + 1, chain.width), dtype=np.float64)
    cotangents[depth] = 1.0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: retained[s], end: retained[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            ledger.retain()
        _reverse_block(chain, states, cotangents, s, end)
        if end - 1 > s:
            ledger.release(end - 1 - s)
    ledger.release(len(starts) + 1)

    total = chain.forward_evaluations - before
    return ReplayRun(
        cotangents=cotangents,
        forward_evaluations=total,
        replayed_evaluations=total - forward_pass,
        peak_states=ledger.peak,
    )


def first_mismatch(saved: np.ndarray, replayed: np.ndarray) -> int | None:
    """The first cotangent row, going backward from the output, that differs bitwise.

    Rows are compared by their bytes, so ``0.0`` and ``-0.0`` differ and two
    identical NaNs agree. Rows are scanned from the last (the output,
    ``dL/dz_L``) toward row 0, and the first differing row found, i.e. the
    largest differing index, is returned; that is where a replay first went
    wrong in the order the reverse pass computes.

    Args:
        saved, replayed: arrays of the same shape and dtype with at least one
            dimension, each in any memory layout (C or Fortran order, a
            transposed or strided view, read-only); rows are indexed by the
            first axis (for :class:`ReplayRun` cotangents, row ``i`` is
            ``dL/dz_i``).

    Returns:
        the largest index ``i`` with ``saved[i]`` and ``replayed[i]``
        differing in any bit, or ``None`` if the arrays are identical. The
        index is an ``int``; a numpy integer (``np.int64``) is one too and
        earns the same points.

    Raises:
        ValueError: the shapes or dtypes differ (two arrays of the same size
            in different shapes too: they are not reshaped), or the arrays are 0-d.
    """
    a = np.asarray(saved)
    b = np.asarray(replayed)
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"cannot compare {a.dtype} {a.shape} with {b.dtype} {b.shape}")
    if a.ndim == 0:
        raise ValueError("cotangent arrays must have at least one dimension (rows)")
    for i in range(a.shape[0] - 1, -1, -1):
        if a[i].tobytes() != b[i].tobytes():
            return i
    return None


@dataclass(frozen=True)
class ReplayReport:
    """Store-all against checkpointed replay, the three quantities kept apart.

    Attributes:
        block_size: ``k`` of the checkpointed run, a Python ``int`` (for a
            numpy integer ``block_size`` too).
        matched: whether the replay restored the generator snapshots.
        saved: the store-all run.
        replayed: the checkpointed run.
        extra_forward_evaluations: arithmetic work, the layer applications
            the replay added (``replayed.forward_evaluations -
            saved.forward_evaluations``, i.e. ``L - ceil(L/k)``).
        saved_peak_states, replayed_peak_states: peak primal states alive,
            in ``z`` units (``L + 1`` and ``ceil(L/k) + k``).
        first_mismatch: :func:`first_mismatch` of the two cotangent arrays:
            ``None`` when the derivatives agree bit for bit.
    """

    block_size: int
    matched: bool
    saved: ReplayRun
    replayed: ReplayRun
    extra_forward_evaluations: int
    saved_peak_states: int
    replayed_peak_states: int
    first_mismatch: int | None


def replay_report(
    chain: StochasticChain, z0: np.ndarray, block_size: int, seed: int, *, matched: bool
) -> ReplayReport:
    """Run store-all and checkpointed replay on the same noise and compare them.

    Each run gets its own fresh ``np.random.default_rng(seed)``, so both
    forward passes draw the same noise; only the replay's stream differs when
    ``matched=False``.

    Returns:
        A :class:`ReplayReport` whose ``block_size`` is a Python ``int``, also
        when ``block_size`` was given as a numpy integer, and whose
        ``matched`` is the ``matched`` given.

    Raises:
        TypeError, ValueError: as :func:`checkpointed_cotangents`.
    """
    saved = store_all_cotangents(chain, z0, np.random.default_rng(seed))
    replayed = checkpointed_cotangents(chain, z0, block_size, np.random.default_rng(seed), matched=matched)
    return ReplayReport(
        block_size=int(block_size),
        matched=bool(matched),
        saved=saved,
        replayed=replayed,
        extra_forward_evaluations=replayed.forward_evaluations - saved.forward_evaluations,
        saved_peak_states=saved.peak_states,
        replayed_peak_states=replayed.peak_states,
        first_mismatch=first_mismatch(saved.cotangents, replayed.cotangents),
    )
