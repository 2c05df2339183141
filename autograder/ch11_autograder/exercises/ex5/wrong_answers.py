"""Named wrong answers of Exercise 5 (checkpointed replay of a chain with one random layer).

Each entry is what a student could write in one answer cell of
``ex5_replay.ipynb``. The bodies use only names the notebook provides (its
imports ``copy``, ``np``, the harness's ``StateLedger``,
``StochasticChain``, ``uniform_checkpoint_cost``, the record types
``ReplayRun`` and ``ReplayReport``, and the functions of earlier answer
cells), imported here from the same places so that each entry also runs in the
trusted process.

Where each entry is invisible (so that suites and tests probe elsewhere):

* the three broken snapshots (unmatched stream, generator kept by reference,
  shallow ``copy.copy``, snapshot after the block) give the right answer when
  ``matched=False``, and when ``matched=True`` whenever the random layer ends
  its block (it is never replayed) and whenever ``k = 1`` (nothing replays);
  in every other matched case their cotangents are those of an unmatched replay;
* the count entries have the right cotangents everywhere; uncounted replay is
  right at ``k = 1`` only (nothing replays); the unretained output, the
  snapshot counted as a state and the whole-block replay are wrong at every
  ``k`` (at ``k = 1`` the whole-block replay still replays every layer);
* the whole-block replay also changes unmatched derivatives: it reads its own
  recomputed ``z_e``, which the fresh noise changed, so the first mismatch
  moves from ``e - 2`` to ``e - 1``, and appears even when the random layer
  ends its block ``[s, e)``;
* the forward scan is right when at most one row differs; the value comparison
  is right unless a row differs only by the sign of a zero or holds NaNs;
* the shared generator in the report is wrong on every input: the two forward
  passes draw different noise, so even ``z_L`` differs and the replayed run's
  derivatives differ from the reference's for either stream.
* four entries return right values on every fresh chain, generator and input,
  and show only in what a call leaves behind or meets: the counter read off the
  chain is wrong only on a chain that earlier calls used (the report passes its
  chain to store-all and checkpointed replay in turn, so a report on a used chain
  shows it too); the snapshot restored into the caller's rng leaves that rng
  rewound unless the first block replays the random layer; the in-place forward
  pass leaves z_L in the caller's z0; and the replay generator rebuilt from the
  seed sequence is wrong only for a generator that drew before the call.

Two misconceptions one might expect are deliberately *not* here, because for
this chain they are right answers:

* keeping ``rng.bit_generator.state`` without ``copy.deepcopy``: numpy builds
  a fresh dict of immutable integers on every read of the property, so the
  kept dict does not advance with the generator (the deep copy in the
  reference is a safeguard, not a necessity);
* restoring the generator state taken at the *start of the forward pass* for
  every block instead of one snapshot per block: with one random layer the
  generator state is the same at every block start up to the random layer's
  block, and later blocks draw nothing, so every replay sees the right numbers.
"""

from __future__ import annotations

import copy

import numpy as np
from ch11_solutions.ex5_replay import (
    ReplayReport,
    ReplayRun,
    checkpointed_cotangents,
    first_mismatch,
    store_all_cotangents,
)
from trainable_harness import StateLedger, StochasticChain, uniform_checkpoint_cost

from ..catalogue import wrong_answer
from .contract import (
    CHECKPOINTED_CELL,
    CHECKPOINTED_TESTS,
    MISMATCH_CELL,
    MISMATCH_TESTS,
    REPORT_CELL,
    REPORT_TESTS,
    STORE_ALL_CELL,
    STORE_ALL_TESTS,
)

__all__: list[str] = []

# replay_report calls the student's store_all_cotangents, checkpointed_cotangents and
# first_mismatch, so a wrong one of those also costs points in the report cell.
WITH_REPORT = {
    STORE_ALL_TESTS: (STORE_ALL_TESTS, REPORT_TESTS),
    CHECKPOINTED_TESTS: (CHECKPOINTED_TESTS, REPORT_TESTS),
    MISMATCH_TESTS: (MISMATCH_TESTS, REPORT_TESTS),
}


# ---- Task 1: store-all ------------------------------------------------------------------------


@wrong_answer(
    exercise="ex5",
    name="rule_reads_input_state",
    title="Reverse rule given the layer's input z_i instead of its output z_{i+1}",
    advice=(
        "chain.backward(i, z_out, cotangent_out) reads the output of layer i: tanh' is 1 - z_{i+1}**2. "
        "Passing z_i evaluates the derivative at the wrong state in every layer."
    ),
    answer_cell=STORE_ALL_CELL,
    replaces="store_all_cotangents",
    # The checkpointed cell's visible checks compare a matched replay with store_all_cotangents
    # bit for bit, so wrong store-all derivatives fail them too (the notebook shows it as well).
    loses=(STORE_ALL_TESTS, CHECKPOINTED_TESTS, REPORT_TESTS),
)
def rule_reads_input_state(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    """Store-all whose reverse pass hands each rule the state the layer started from."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    ledger = StateLedger()
    states = [z0]
    ledger.retain()
    for i in range(depth):
        states.append(chain.forward(i, states[i], rng))
        ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    for i in range(depth - 1, -1, -1):
        cotangents[i] = chain.backward(i, states[i], cotangents[i + 1])
    return ReplayRun(cotangents, depth, 0, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="store_all_input_not_counted",
    title="Store-all peak without the input state z_0",
    advice=(
        "The reverse pass keeps z_0 alive as well (the caller's array is still a primal state of the run): "
        "store-all holds z_0 .. z_L, that is L + 1 states, the k = 1 case of ceil(L/k) + k."
    ),
    answer_cell=STORE_ALL_CELL,
    replaces="store_all_cotangents",
    loses=WITH_REPORT[STORE_ALL_TESTS],
)
def store_all_input_not_counted(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    """Store-all that counts only the states it computed."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    ledger = StateLedger()
    states = [z0]
    for i in range(depth):
        states.append(chain.forward(i, states[i], rng))
        ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    for i in range(depth - 1, -1, -1):
        cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
    return ReplayRun(cotangents, depth, 0, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="store_all_chain_not_checked",
    title="A chain of another type fails with AttributeError, not the promised TypeError",
    advice=(
        "The docstring promises TypeError when chain is not a StochasticChain. Reading chain.width before "
        "checking lets a wrong argument fail with AttributeError instead: test isinstance(chain, StochasticChain) "
        "first."
    ),
    answer_cell=STORE_ALL_CELL,
    replaces="store_all_cotangents",
    loses=WITH_REPORT[STORE_ALL_TESTS],
)
def store_all_chain_not_checked(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    """Store-all that checks rng, and z0 against chain.width, but never the chain's type."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    zs = [z0]
    for i in range(chain.depth):
        zs.append(chain.forward(i, zs[-1], rng))
    cotangents = np.ones((chain.depth + 1, chain.width))
    for i in reversed(range(chain.depth)):
        cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    return ReplayRun(cotangents, chain.depth, 0, len(zs))


@wrong_answer(
    exercise="ex5",
    name="counts_read_off_chain",
    title="Work read off the chain's running counter",
    advice=(
        "chain.forward_evaluations counts every layer the chain has applied since it was built, earlier calls "
        "included; the run's forward_evaluations is this call's own L. Subtract the counter's value at the start "
        "of the call (do not reset it: the caller's counter must keep growing), or count the layers yourself."
    ),
    answer_cell=STORE_ALL_CELL,
    replaces="store_all_cotangents",
    loses=WITH_REPORT[STORE_ALL_TESTS],
)
def counts_read_off_chain(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    """Store-all that reports the chain's counter as its work."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    ledger = StateLedger()
    states = [z0]
    ledger.retain()
    for i in range(depth):
        states.append(chain.forward(i, states[i], rng))
        ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    for i in range(depth - 1, -1, -1):
        cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
    return ReplayRun(cotangents, chain.forward_evaluations, 0, ledger.peak)


# ---- Task 2: checkpointed replay ----------------------------------------------------------------


@wrong_answer(
    exercise="ex5",
    name="unmatched_stream",
    title="Unmatched random stream on replay (no snapshot restored)",
    advice=(
        "The forward pass advanced rng past the random layer's draw. Replaying that layer from rng as it is "
        "draws new noise and rebuilds different states. Snapshot the generator state at each block start and "
        "restore it into a copy of the generator before replaying the block."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def unmatched_stream(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that always replays from the generator as the forward pass left it."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept = {}
    z = z0
    for s in starts:
        kept[s] = z
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="generator_kept_by_reference",
    title="Snapshot kept by reference: the Generator object itself",
    advice=(
        "snapshots[s] = rng stores a name for the live generator, which the rest of the forward pass keeps "
        "advancing; copying it at replay time copies the advanced state. Copy the state when the block starts: "
        "copy.deepcopy(rng.bit_generator.state)."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def generator_kept_by_reference(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay whose snapshot is the generator object, copied only when the block is replayed."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        snapshots[s] = rng
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        replay_rng = copy.deepcopy(snapshots[s]) if matched else rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="shallow_copy_snapshot",
    title="Snapshot by copy.copy(rng): a new Generator sharing the same bit generator",
    advice=(
        "copy.copy(rng) makes a second Generator around the same BitGenerator object, so the 'snapshot' advances "
        "whenever rng draws. Keep a copy of the state instead: copy.deepcopy(rng.bit_generator.state)."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def shallow_copy_snapshot(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay whose snapshots are shallow copies of the generator."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        snapshots[s] = copy.copy(rng)
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        replay_rng = snapshots[s] if matched else rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="snapshot_after_block",
    title="Generator snapshot taken after the block's forward pass instead of at its start",
    advice=(
        "The replay starts at the block input z_s, so it needs the generator as it was when layer s was "
        "first applied. A snapshot taken after the block already includes the random layer's draw."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def snapshot_after_block(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that snapshots the generator once each block has run."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="replay_not_counted",
    title="Replayed evaluations not counted as arithmetic work",
    advice=(
        "Every chain.forward call is work, replays included: blocks of length k add L - ceil(L/k) layer "
        "applications. Count forward_evaluations over the whole run (the chain's counter does this for you)."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def replay_not_counted(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Correct replay whose work count stops after the forward pass."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    before = chain.forward_evaluations
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    work = chain.forward_evaluations - before
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, work, 0, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="output_not_retained",
    title="Output state z_L not counted as retained (peak one short)",
    advice=(
        "The last block's reverse rules read z_L, so z_L stays alive through the reverse pass next to the "
        "ceil(L/k) block inputs: the peak is ceil(L/k) + 1 + (k - 1) = ceil(L/k) + k."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def output_not_retained(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Correct replay whose ledger keeps the block inputs but not the chain's output."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="snapshot_counted_as_state",
    title="Generator snapshots counted as primal states",
    advice=(
        "A generator snapshot is stateful metadata (section 11.4), a few integers, not a z vector. "
        "Peak state counts primal states only: ceil(L/k) + k."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def snapshot_counted_as_state(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Correct replay whose ledger retains one unit per snapshot as well."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        ledger.retain()
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: kept[s], end: kept[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="whole_block_replayed",
    title="Replaying a block's last layer too, although its output is kept",
    advice=(
        "A block of m layers replays only m - 1 of them: its last output is the next block's input or z_L, "
        "already kept. Replaying it costs extra work and one more live state (total replay L - ceil(L/k))."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def whole_block_replayed(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that recomputes every layer of a block and uses the recomputed end state."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    kept, snapshots = {}, {}
    z = z0
    for s in starts:
        kept[s] = z
        snapshots[s] = copy.deepcopy(rng.bit_generator.state)
        ledger.retain()
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    kept[depth] = z
    ledger.retain()
    cotangents = np.zeros((depth + 1, chain.width))
    cotangents[depth] = 1.0
    replays = 0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            replay_rng = copy.deepcopy(rng)
            replay_rng.bit_generator.state = snapshots[s]
        else:
            replay_rng = rng
        states = {s: kept[s]}
        for i in range(s, end):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            replays += 1
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        ledger.release(end - s)
    return ReplayRun(cotangents, depth + replays, replays, ledger.peak)


@wrong_answer(
    exercise="ex5",
    name="block_size_coerced",
    title="block_size converted with int() instead of refused",
    advice=(
        "The docstring refuses a block_size that is not an integer with TypeError: int(True) is 1 and "
        "int(2.0) is 2, so converting hides a caller's mistake. Pass block_size on as it is (uniform_checkpoint_cost "
        "refuses bools and floats) or check it with operator.index."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def block_size_coerced(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that turns any block_size into an int before using it."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    k = int(block_size)
    if not 1 <= k <= chain.depth:
        raise ValueError(f"block_size must be in [1, {chain.depth}], got {k}")
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, states, z = {}, {}, z0
    for s in starts:
        inputs[s], states[s] = z, copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        replay = rng
        if matched:
            replay = copy.deepcopy(rng)
            replay.bit_generator.state = states[s]
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


@wrong_answer(
    exercise="ex5",
    name="numpy_block_size_refused",
    title="A numpy integer block_size refused as not an integer",
    advice=(
        "np.int64(4) is an integer block size (the docstring accepts numpy integers; a count from numpy "
        "arithmetic is one). isinstance(block_size, int) is False for it: refuse bools and what operator.index "
        "refuses instead, as uniform_checkpoint_cost does."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def numpy_block_size_refused(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that accepts only Python ints as block sizes."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    if not isinstance(block_size, int) or isinstance(block_size, bool):
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    k = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, states, z = {}, {}, z0
    for s in starts:
        inputs[s], states[s] = z, copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        replay = rng
        if matched:
            replay = copy.deepcopy(rng)
            replay.bit_generator.state = states[s]
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


@wrong_answer(
    exercise="ex5",
    name="matched_default_false",
    title="matched defaults to False",
    advice=(
        "Called without matched, checkpointed_cotangents must restore the snapshots (matched=True is the "
        "documented default): an unmatched replay is the experiment, not the normal use."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=(CHECKPOINTED_TESTS,),
)
def matched_default_false(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = False
) -> ReplayRun:
    """Checkpointed replay whose replays are unmatched unless the caller asks otherwise."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    k = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, states, z = {}, {}, z0
    for s in starts:
        inputs[s], states[s] = z, copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        replay = rng
        if matched:
            replay = copy.deepcopy(rng)
            replay.bit_generator.state = states[s]
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


@wrong_answer(
    exercise="ex5",
    name="snapshot_restored_into_callers_rng",
    title="Snapshot restored into the caller's generator instead of a copy",
    advice=(
        "rng.bit_generator.state = snapshot rewinds the caller's own generator: the derivatives are right, but the "
        "caller's rng is left where the last replayed block started, not after the forward pass's draw. Set the "
        "snapshot on a copy (copy.deepcopy(rng)) and replay from that."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=(CHECKPOINTED_TESTS,),
)
def snapshot_restored_into_callers_rng(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that rewinds rng itself to each block's snapshot before replaying the block."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    k = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, states, z = {}, {}, z0
    for s in starts:
        inputs[s], states[s] = z, copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched:
            rng.bit_generator.state = states[s]
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], rng)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


@wrong_answer(
    exercise="ex5",
    name="z0_updated_in_place",
    title="The forward pass overwrites the caller's z0",
    advice=(
        "z = z0 does not copy: writing z[:] = chain.forward(...) then stores every state in the caller's array, "
        "which ends the call holding z_L. Copying what you retain keeps your derivatives right but not the "
        "caller's input; start from z0.copy() (or let chain.forward return new arrays)."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    # replay_report passes its z0 on: where z0 is drawn read-only, the report fails at the same write.
    loses=WITH_REPORT[CHECKPOINTED_TESTS],
)
def z0_updated_in_place(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay whose forward pass reuses z0's buffer and copies only the retained states."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    k = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, states, z = {}, {}, z0
    for s in starts:
        inputs[s], states[s] = z.copy(), copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z[:] = chain.forward(i, z, rng)
    inputs[depth] = z.copy()
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        replay = rng
        if matched:
            replay = copy.deepcopy(rng)
            replay.bit_generator.state = states[s]
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


@wrong_answer(
    exercise="ex5",
    name="rewound_from_seed_sequence",
    title="Replay generator rebuilt from rng's seed sequence",
    advice=(
        "np.random.default_rng(rng.bit_generator.seed_seq) is the generator as it was seeded, not as this call "
        "found it: if rng drew before the call, the replay repeats the seed's first draws instead of this forward "
        "pass's. Snapshot copy.deepcopy(rng.bit_generator.state) at each block start and replay from that."
    ),
    answer_cell=CHECKPOINTED_CELL,
    replaces="checkpointed_cotangents",
    loses=(CHECKPOINTED_TESTS,),
)
def rewound_from_seed_sequence(
    chain: StochasticChain, z0: np.ndarray, block_size: int, rng: np.random.Generator, *, matched: bool = True
) -> ReplayRun:
    """Checkpointed replay that rebuilds the generator from its seed for every matched block replay."""
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    k = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, k)
    inputs, z = {}, z0
    for s in starts:
        inputs[s] = z
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + k, depth)
        replay = np.random.default_rng(rng.bit_generator.seed_seq) if matched else rng
        zs = {s: inputs[s], end: inputs[end]}
        for i in range(s, end - 1):
            zs[i + 1] = chain.forward(i, zs[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, zs[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, k)
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)  # fmt: skip


# ---- Task 3: the first mismatch ----------------------------------------------------------------


@wrong_answer(
    exercise="ex5",
    name="mismatch_scanned_forward",
    title="First mismatch scanned forward from row 0",
    advice=(
        "The reverse pass computes rows from the output (the last row) down to row 0, so the first row that "
        "went wrong is the largest differing index. Scan from the last row toward row 0."
    ),
    answer_cell=MISMATCH_CELL,
    replaces="first_mismatch",
    loses=WITH_REPORT[MISMATCH_TESTS],
)
def mismatch_scanned_forward(saved: np.ndarray, replayed: np.ndarray) -> int | None:
    """The smallest differing row index."""
    a = np.asarray(saved)
    b = np.asarray(replayed)
    if a.shape != b.shape or a.dtype != b.dtype or a.ndim == 0:
        raise ValueError("cannot compare these arrays")
    for i in range(a.shape[0]):
        if a[i].tobytes() != b[i].tobytes():
            return i
    return None


@wrong_answer(
    exercise="ex5",
    name="mismatch_by_value",
    title="Rows compared by value instead of bit for bit",
    advice=(
        "Numerical equality is not bitwise identity: 0.0 == -0.0 although the sign bit differs, and NaN != NaN "
        "although both rows hold the same bits. Compare the rows' bytes (row.tobytes())."
    ),
    answer_cell=MISMATCH_CELL,
    replaces="first_mismatch",
    loses=(MISMATCH_TESTS,),
)
def mismatch_by_value(saved: np.ndarray, replayed: np.ndarray) -> int | None:
    """The largest row index whose values are not all equal."""
    a = np.asarray(saved)
    b = np.asarray(replayed)
    if a.shape != b.shape or a.dtype != b.dtype or a.ndim == 0:
        raise ValueError("cannot compare these arrays")
    for i in range(a.shape[0] - 1, -1, -1):
        if not np.array_equal(a[i], b[i]):
            return i
    return None


# ---- Task 4: the report ---------------------------------------------------------------------------


@wrong_answer(
    exercise="ex5",
    name="report_shares_one_generator",
    title="One generator shared by the store-all and the checkpointed run",
    advice=(
        "After the store-all run the generator has moved past the random layer's draw, so the checkpointed "
        "forward pass draws different noise and the two runs differentiate different functions. Give each run "
        "its own np.random.default_rng(seed)."
    ),
    answer_cell=REPORT_CELL,
    replaces="replay_report",
    loses=(REPORT_TESTS,),
)
def report_shares_one_generator(
    chain: StochasticChain, z0: np.ndarray, block_size: int, seed: int, *, matched: bool
) -> ReplayReport:
    """Store-all and checkpointed replay drawing from one generator in turn."""
    rng = np.random.default_rng(seed)
    saved = store_all_cotangents(chain, z0, rng)
    replayed = checkpointed_cotangents(chain, z0, block_size, rng, matched=matched)
    return ReplayReport(
        block_size=int(block_size),
        matched=matched,
        saved=saved,
        replayed=replayed,
        extra_forward_evaluations=replayed.forward_evaluations - saved.forward_evaluations,
        saved_peak_states=saved.peak_states,
        replayed_peak_states=replayed.peak_states,
        first_mismatch=first_mismatch(saved.cotangents, replayed.cotangents),
    )


@wrong_answer(
    exercise="ex5",
    name="report_total_work",
    title="Arithmetic work reported as the total, not the extra the replay adds",
    advice=(
        "extra_forward_evaluations is what checkpointing costs on top of store-all: the replayed layer "
        "applications, L - ceil(L/k), not the 2L - ceil(L/k) of the whole checkpointed run."
    ),
    answer_cell=REPORT_CELL,
    replaces="replay_report",
    loses=(REPORT_TESTS,),
)
def report_total_work(
    chain: StochasticChain, z0: np.ndarray, block_size: int, seed: int, *, matched: bool
) -> ReplayReport:
    """The report with the checkpointed run's whole work in the extra-work field."""
    saved = store_all_cotangents(chain, z0, np.random.default_rng(seed))
    replayed = checkpointed_cotangents(chain, z0, block_size, np.random.default_rng(seed), matched=matched)
    return ReplayReport(
        block_size=int(block_size),
        matched=matched,
        saved=saved,
        replayed=replayed,
        extra_forward_evaluations=replayed.forward_evaluations,
        saved_peak_states=saved.peak_states,
        replayed_peak_states=replayed.peak_states,
        first_mismatch=first_mismatch(saved.cotangents, replayed.cotangents),
    )
