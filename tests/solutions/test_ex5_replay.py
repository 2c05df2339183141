"""Exercise 5 reference checked against an independent store-all and a derived mismatch layout.

Truth here never calls the harness's forward or backward: the chain's
parameters are read and the forward pass and the analytic tanh reverse rule
are written out below, with the noise taken from a fresh
``default_rng(seed).standard_normal(width)``. The operations are in the same
order as the harness's, so the truth agrees with it bit for bit; a float64
central finite difference checks that the analytic rule is a derivative at
all. Each check is a function of the implementation under test, and the same
checks are shown to reject named wrong variants.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from ch11_solutions import ex5_replay as ex5
from hypothesis import given, settings
from hypothesis import strategies as st
from trainable_harness import StateLedger, make_chain, uniform_checkpoint_cost

HYP = settings(max_examples=80, deadline=None, derandomize=True, database=None)


# ---------------------------------------------------------------- independent truth


def truth_forward(chain, z0, noise):
    """States z_0..z_L with the random layer adding noise_scale * noise."""
    states = [z0]
    for i, (w, b) in enumerate(zip(chain.weights, chain.biases, strict=True)):
        pre = w * states[-1] + b
        if i == chain.random_layer:
            pre = pre + chain.noise_scale * noise
        states.append(np.tanh(pre))
    return states


def truth_cotangents(chain, states):
    """dL/dz_i for L = sum(z_L), by d tanh(p)/dp = 1 - tanh(p)**2 read off the layer output."""
    cot = [np.ones(chain.width)]
    for i in range(chain.depth - 1, -1, -1):
        cot.append(chain.weights[i] * (1.0 - states[i + 1] * states[i + 1]) * cot[-1])
    return np.array(cot[::-1])


def truth_loss(chain, z0, seed):
    noise = np.random.default_rng(seed).standard_normal(chain.width)
    return float(np.sum(truth_forward(chain, z0, noise)[-1]))


def truth_store_all(chain, z0, seed):
    noise = np.random.default_rng(seed).standard_normal(chain.width)
    return truth_cotangents(chain, truth_forward(chain, z0, noise))


def block_end(depth, random_layer, k):
    """Index e of the retained state that closes the block holding the random layer."""
    return min((random_layer // k) * k + k, depth)


def predicted_first_mismatch(depth, random_layer, k):
    """First principles, independent of the data.

    An unmatched replay of the random layer's block [s, e) recomputes
    z_{r+1} .. z_{e-1} with fresh noise; z_e is retained and stays right. The
    rule of layer i reads z_{i+1}, so row e-1 (reads z_e) is right and row e-2
    (reads z_{e-1}) is the first wrong row going backward, provided z_{e-1} was
    replayed at all, i.e. r <= e-2. When r = e-1 the random layer ends its
    block, is never replayed, and no row changes.
    """
    e = block_end(depth, random_layer, k)
    return e - 2 if random_layer <= e - 2 else None


def truth_unmatched(chain, z0, seed, k):
    """Cotangents of a replay that continues the forward pass's generator.

    The stream draws once in the forward pass; only the random layer's block
    draws again on replay, so its replay sees the stream's second draw.
    """
    rng = np.random.default_rng(seed)
    first = rng.standard_normal(chain.width)
    second = rng.standard_normal(chain.width)
    states = truth_forward(chain, z0, first)
    e = block_end(chain.depth, chain.random_layer, k)
    s = (chain.random_layer // k) * k
    replayed = truth_forward(chain, z0, second)
    for i in range(s + 1, e):  # the replayed states of that block; z_e is retained
        states[i] = replayed[i]
    return truth_cotangents(chain, states)


def fd_input_gradient(chain, z0, seed, h=1e-6):
    grad = np.empty(chain.width)
    for j in range(chain.width):
        up, down = z0.copy(), z0.copy()
        up[j] += h
        down[j] -= h
        grad[j] = (truth_loss(chain, up, seed) - truth_loss(chain, down, seed)) / (2 * h)
    return grad


def bits_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- checks


def check_store_all(store_all, chain, z0, seed):
    before = chain.forward_evaluations
    run = store_all(chain, z0, np.random.default_rng(seed))
    assert run.cotangents.dtype == np.float64 and run.cotangents.shape == (chain.depth + 1, chain.width)
    assert bits_equal(run.cotangents, truth_store_all(chain, z0, seed)), "store-all cotangents"
    assert run.forward_evaluations == chain.forward_evaluations - before == chain.depth
    assert run.replayed_evaluations == 0
    assert run.peak_states == chain.depth + 1


def _check_counts(run, chain, k, counted):
    cost = uniform_checkpoint_cost(chain.depth, k)
    assert run.replayed_evaluations == cost.recomputed_forward_evaluations, "replayed evaluations"
    assert run.forward_evaluations == counted == chain.depth + cost.recomputed_forward_evaluations, "work"
    assert run.peak_states == cost.peak_state_units, f"peak {run.peak_states} != {cost.peak_state_units}"


def check_matched(checkpointed, chain, z0, k, seed):
    before = chain.forward_evaluations
    run = checkpointed(chain, z0, k, np.random.default_rng(seed), matched=True)
    _check_counts(run, chain, k, chain.forward_evaluations - before)
    assert bits_equal(run.cotangents, truth_store_all(chain, z0, seed)), "matched replay differs from store-all"


def check_unmatched(checkpointed, first_mismatch, chain, z0, k, seed):
    before = chain.forward_evaluations
    run = checkpointed(chain, z0, k, np.random.default_rng(seed), matched=False)
    _check_counts(run, chain, k, chain.forward_evaluations - before)
    assert bits_equal(run.cotangents, truth_unmatched(chain, z0, seed, k)), "unmatched replay cotangents"
    saved = truth_store_all(chain, z0, seed)
    want = predicted_first_mismatch(chain.depth, chain.random_layer, k)
    assert first_mismatch(saved, run.cotangents) == want, f"first mismatch should be {want}"
    if want is not None:
        # The layout: rows above the mismatch agree bitwise, it and every row below differ.
        assert bits_equal(saved[want + 1 :], run.cotangents[want + 1 :])
        assert all(saved[i].tobytes() != run.cotangents[i].tobytes() for i in range(want + 1))


def check_first_mismatch(first_mismatch):
    a = np.arange(12.0).reshape(6, 2)
    b = a.copy()
    assert first_mismatch(a, b) is None
    b[1, 0] += 1.0
    b[4, 1] += 1e-12
    assert first_mismatch(a, b) == 4, "going backward from the output, row 4 differs first"
    c = np.zeros_like(a)
    c[0, 0] = -0.0
    assert first_mismatch(np.zeros_like(a), c) == 0, "-0.0 and 0.0 differ bitwise"
    n = np.full((3, 2), np.nan)
    assert first_mismatch(n, n.copy()) is None
    for bad in (a[:5], a.astype(np.float32)):
        with pytest.raises(ValueError):
            first_mismatch(a, bad)


# ---------------------------------------------------------------- generated cases

@st.composite
def cases(draw):
    depth = draw(st.integers(2, 40))
    chain = make_chain(
        depth,
        draw(st.integers(0, depth - 1)),
        width=draw(st.integers(1, 5)),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    z0 = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).uniform(-1.0, 1.0, chain.width)
    return chain, z0, draw(st.integers(1, depth)), draw(st.integers(0, 2**63 - 1))


@HYP
@given(case=cases())
def test_store_all_matches_independent_truth(case):
    chain, z0, _, seed = case
    check_store_all(ex5.store_all_cotangents, chain, z0, seed)


@HYP
@given(case=cases())
def test_matched_replay_is_store_all_bitwise(case):
    chain, z0, k, seed = case
    check_matched(ex5.checkpointed_cotangents, chain, z0, k, seed)


@HYP
@given(case=cases())
def test_unmatched_replay_first_mismatch_is_the_derived_one(case):
    chain, z0, k, seed = case
    check_unmatched(ex5.checkpointed_cotangents, ex5.first_mismatch, chain, z0, k, seed)


def test_analytic_derivative_matches_finite_difference():
    for depth, r, width, seed in [(2, 0, 1, 3), (12, 5, 4, 7), (40, 39, 5, 11)]:
        chain = make_chain(depth, r, width=width, seed=seed)
        z0 = np.random.default_rng(seed).uniform(-1.0, 1.0, width)
        analytic = ex5.store_all_cotangents(chain, z0, np.random.default_rng(seed)).cotangents[0]
        np.testing.assert_allclose(analytic, fd_input_gradient(chain, z0, seed), rtol=1e-6, atol=1e-9)


def test_counts_match_the_count_model_for_every_block_size():
    for depth in range(1, 25):
        chain = make_chain(depth, depth // 2, width=2)
        z0 = np.linspace(-0.5, 0.5, 2)
        for k in range(1, depth + 1):
            check_matched(ex5.checkpointed_cotangents, chain, z0, k, seed=depth)


def test_random_layer_ending_its_block_never_mismatches():
    # r = 3, k = 4: the block [0, 4) ends at r; z_4 is a retained boundary, so the
    # random layer is not replayed and the stream is never consulted again.
    chain = make_chain(10, 3, width=3)
    z0 = np.array([0.1, -0.2, 0.3])
    assert predicted_first_mismatch(10, 3, 4) is None
    check_unmatched(ex5.checkpointed_cotangents, ex5.first_mismatch, chain, z0, 4, seed=5)
    rng = np.random.default_rng(5)
    ex5.checkpointed_cotangents(chain, z0, 4, rng, matched=False)
    fresh = np.random.default_rng(5)
    fresh.standard_normal(3)
    assert rng.bit_generator.state == fresh.bit_generator.state, "the replay drew nothing"
    # Last layer of the chain: its output is the retained z_L.
    check_unmatched(ex5.checkpointed_cotangents, ex5.first_mismatch, make_chain(10, 9, width=3), z0, 4, seed=5)


def test_first_mismatch_contract():
    check_first_mismatch(ex5.first_mismatch)
    with pytest.raises(ValueError):
        ex5.first_mismatch(np.float64(1.0), np.float64(1.0))


def test_replay_report_keeps_the_quantities_apart():
    chain = make_chain(16, 5, width=3)
    z0 = np.array([0.2, -0.1, 0.4])
    assert predicted_first_mismatch(16, 5, 4) == 6
    for matched, want in [(True, None), (False, 6)]:
        report = ex5.replay_report(chain, z0, 4, seed=2, matched=matched)
        assert (report.block_size, report.matched) == (4, matched)
        assert report.first_mismatch == want
        assert report.extra_forward_evaluations == 12 == report.replayed.replayed_evaluations
        assert (report.saved_peak_states, report.replayed_peak_states) == (17, 8)
        assert bits_equal(report.saved.cotangents, truth_store_all(chain, z0, 2))


def test_bad_arguments():
    chain = make_chain(6, 2, width=2)
    rng = np.random.default_rng(0)
    z0 = np.zeros(2)
    with pytest.raises(ValueError):
        ex5.store_all_cotangents(chain, np.zeros(3), rng)
    with pytest.raises(ValueError):
        ex5.store_all_cotangents(chain, np.zeros(2, dtype=np.float32), rng)
    with pytest.raises(TypeError):
        ex5.store_all_cotangents(chain, z0, np.random.RandomState(0))
    with pytest.raises(ValueError):
        ex5.checkpointed_cotangents(chain, z0, 7, rng)
    with pytest.raises(ValueError):
        ex5.checkpointed_cotangents(chain, z0, 0, rng)
    with pytest.raises(TypeError):
        ex5.checkpointed_cotangents(chain, z0, 2.0, rng)


# ---------------------------------------------------------------- wrong variants fail the same checks


def variant_checkpointed(chain, z0, k, rng, *, matched=True, bug=None):
    """A second checkpointed implementation; `bug` names one misconception to plant."""
    depth = chain.depth
    before = chain.forward_evaluations
    ledger = StateLedger()
    starts = list(range(0, depth, k))
    retained, snapshots, z = {}, {}, z0
    for s in starts:
        retained[s] = z
        ledger.retain()
        # By reference: the Generator object itself, which keeps advancing.
        snapshots[s] = rng if bug == "reference" else copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    retained[depth] = z
    if bug != "no_output":
        ledger.retain()
    forward_pass = chain.forward_evaluations - before
    cot = np.empty((depth + 1, chain.width))
    cot[depth] = 1.0
    for s in reversed(starts):
        end = min(s + k, depth)
        if matched and bug != "stream":
            replay = copy.deepcopy(rng)
            state = snapshots[s].bit_generator.state if bug == "reference" else snapshots[s]
            replay.bit_generator.state = copy.deepcopy(state)
        else:
            replay = rng
        states = {s: retained[s], end: retained[end]}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay)
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cot[i] = chain.backward(i, states[i + 1], cot[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    total = chain.forward_evaluations - before
    return ex5.ReplayRun(
        cotangents=cot,
        forward_evaluations=forward_pass if bug == "uncounted" else total,
        replayed_evaluations=0 if bug == "uncounted" else total - forward_pass,
        peak_states=ledger.peak,
    )


def planted(bug):
    def run(chain, z0, k, rng, *, matched=True):
        return variant_checkpointed(chain, z0, k, rng, matched=matched, bug=bug)

    return run


def scan_forward(saved, replayed):
    for i in range(saved.shape[0]):
        if saved[i].tobytes() != replayed[i].tobytes():
            return i
    return None


# r = 1 inside the block [0, 4) of a depth-10 chain: replay rebuilds z_1..z_3, so
# with fresh noise rows 0..2 differ and row 2 is the first mismatch going backward.
MISMATCH_CASE = (make_chain(10, 1, width=3, seed=4), np.array([0.3, -0.6, 0.1]), 4, 9)


def test_planted_variant_without_bug_passes():
    # The variants differ from this by one planted line each.
    chain, z0, k, seed = MISMATCH_CASE
    check_matched(planted(None), chain, z0, k, seed)
    check_unmatched(planted(None), ex5.first_mismatch, chain, z0, k, seed)


@pytest.mark.parametrize(
    ("bug", "message"),
    [
        ("stream", "matched replay differs"),
        ("reference", "matched replay differs"),
        ("uncounted", "replayed evaluations"),
        ("no_output", "peak"),
    ],
)
def test_wrong_checkpointing_fails(bug, message):
    chain, z0, k, seed = MISMATCH_CASE
    with pytest.raises(AssertionError, match=message):
        check_matched(planted(bug), chain, z0, k, seed)


def test_snapshot_by_reference_really_advances():
    rng = np.random.default_rng(0)
    kept, copied = rng, copy.deepcopy(rng.bit_generator.state)
    rng.standard_normal(3)
    assert kept.bit_generator.state != copied


def test_forward_scan_fails():
    chain, z0, k, seed = MISMATCH_CASE
    assert predicted_first_mismatch(10, 1, 4) == 2
    with pytest.raises(AssertionError, match="first mismatch should be 2"):
        check_unmatched(ex5.checkpointed_cotangents, scan_forward, chain, z0, k, seed)
    with pytest.raises(AssertionError, match="row 4 differs first"):
        check_first_mismatch(scan_forward)
