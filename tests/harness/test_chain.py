"""StochasticChain, make_chain and StateLedger (the instruments of Exercise 5)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainable_harness import StateLedger, StochasticChain, make_chain

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)
FD_STEP = 1e-5
FD_TOLERANCE = 1e-7  # central differences in float64: O(h^2) truncation, O(eps/h) rounding


def run_forward(chain: StochasticChain, z0: np.ndarray, seed: int) -> list[np.ndarray]:
    """All states z_0 .. z_L, the random layer drawing from Generator(seed)."""
    rng = np.random.default_rng(seed)
    states = [z0]
    for layer in range(chain.depth):
        states.append(chain.forward(layer, states[-1], rng))
    return states


def reverse_gradient(chain: StochasticChain, states: list[np.ndarray], backward=None) -> np.ndarray:
    """dL/dz_0 by reverse accumulation over stored states."""
    backward = backward or chain.backward
    cotangent = np.ones(chain.width)
    for layer in range(chain.depth - 1, -1, -1):
        cotangent = backward(layer, states[layer + 1], cotangent)
    return cotangent


def central_difference_gradient(chain: StochasticChain, z0: np.ndarray, seed: int) -> np.ndarray:
    """dL/dz_0 by central differences; every evaluation replays the same noise."""
    gradient = np.empty(chain.width)
    for j in range(chain.width):
        step = np.zeros(chain.width)
        step[j] = FD_STEP
        plus = chain.loss(run_forward(chain, z0 + step, seed)[-1])
        minus = chain.loss(run_forward(chain, z0 - step, seed)[-1])
        gradient[j] = (plus - minus) / (2 * FD_STEP)
    return gradient


def agrees_with_differences(reverse: np.ndarray, differences: np.ndarray) -> bool:
    return bool(np.all(np.abs(reverse - differences) <= FD_TOLERANCE * (1.0 + np.abs(differences))))


def _state(rng: np.random.Generator) -> dict:
    return copy.deepcopy(rng.bit_generator.state)


# ---------------------------------------------------------------- forward


def test_every_forward_call_counts_once_including_replays():
    chain = make_chain(depth=6, random_layer=2)
    z0 = np.linspace(-0.5, 0.5, chain.width)
    run_forward(chain, z0, seed=1)
    assert chain.forward_evaluations == 6
    run_forward(chain, z0, seed=1)  # a replay is work too
    assert chain.forward_evaluations == 12
    states = run_forward(chain, z0, seed=1)
    reverse_gradient(chain, states)  # reverse rules are not forward evaluations
    assert chain.forward_evaluations == 18
    chain.reset_counters()
    assert chain.forward_evaluations == 0


def test_counters_do_not_take_part_in_equality():
    first, second = make_chain(4, 1), make_chain(4, 1)
    first.forward(0, np.zeros(first.width), np.random.default_rng(0))
    assert first.forward_evaluations != second.forward_evaluations
    assert first == second


def test_forward_is_the_documented_layer_map():
    chain = StochasticChain(weights=(1.5, -0.5), biases=(0.25, 0.1), random_layer=1, noise_scale=0.5, width=3)
    z = np.array([0.2, -0.4, 0.9])
    deterministic = chain.forward(0, z, np.random.default_rng(7))
    np.testing.assert_array_equal(deterministic, np.tanh(1.5 * z + 0.25))
    noisy = chain.forward(1, z, np.random.default_rng(7))
    eps = np.random.default_rng(7).standard_normal(3)
    np.testing.assert_array_equal(noisy, np.tanh(-0.5 * z + 0.1 + 0.5 * eps))
    assert chain.loss(noisy) == float(np.sum(noisy))


def test_random_layer_consumes_the_generator_and_others_do_not():
    chain = make_chain(depth=5, random_layer=3, width=4)
    rng = np.random.default_rng(2024)
    z = np.full(4, 0.1)
    for layer in (0, 1, 2, 4):
        before = _state(rng)
        chain.forward(layer, z, rng)
        assert rng.bit_generator.state == before, f"deterministic layer {layer} touched the generator"
    before = _state(rng)
    chain.forward(3, z, rng)
    assert rng.bit_generator.state != before
    # exactly `width` standard normals were drawn
    reference = np.random.default_rng(2024)
    reference.standard_normal(4)
    assert rng.bit_generator.state == reference.bit_generator.state


def test_matched_stream_replays_bit_for_bit_and_an_unmatched_one_does_not():
    chain = make_chain(depth=8, random_layer=3)
    z0 = np.linspace(-1, 1, chain.width)
    saved = run_forward(chain, z0, seed=5)
    matched = run_forward(chain, z0, seed=5)
    unmatched = run_forward(chain, z0, seed=6)
    for layer in range(chain.depth + 1):
        np.testing.assert_array_equal(matched[layer], saved[layer])
    # states up to the random layer's input agree; from its output on they differ
    for layer in range(4):
        np.testing.assert_array_equal(unmatched[layer], saved[layer])
    for layer in range(4, chain.depth + 1):
        assert not np.array_equal(unmatched[layer], saved[layer])


# ---------------------------------------------------------------- backward


@SETTINGS
@given(
    depth=st.integers(1, 10),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
    width=st.integers(1, 5),
)
def test_backward_matches_central_differences(depth, data, seed, width):
    random_layer = data.draw(st.integers(0, depth - 1), label="random_layer")
    chain = make_chain(depth, random_layer, width=width, seed=seed % 1000)
    z0 = np.array(data.draw(st.lists(st.floats(-1.5, 1.5), min_size=width, max_size=width), label="z0"))
    states = run_forward(chain, z0, seed)
    reverse = reverse_gradient(chain, states)
    assert reverse.dtype == np.float64
    assert agrees_with_differences(reverse, central_difference_gradient(chain, z0, seed))


def test_the_difference_check_rejects_wrong_reverse_rules():
    chain = make_chain(depth=6, random_layer=2)
    z0 = np.linspace(-0.8, 0.8, chain.width)
    states = run_forward(chain, z0, seed=3)
    differences = central_difference_gradient(chain, z0, seed=3)
    assert agrees_with_differences(reverse_gradient(chain, states), differences)

    def reads_the_input(layer, z_out, cotangent):  # uses z_i where the rule needs z_{i+1}
        return chain.backward(layer, states[layer], cotangent)

    def forgets_tanh(layer, z_out, cotangent):
        return chain.weights[layer] * cotangent

    for wrong in (reads_the_input, forgets_tanh):
        assert not agrees_with_differences(reverse_gradient(chain, states, wrong), differences)


def test_reverse_over_states_from_an_unmatched_stream_is_wrong():
    chain = make_chain(depth=6, random_layer=2)
    z0 = np.linspace(-0.8, 0.8, chain.width)
    differences = central_difference_gradient(chain, z0, seed=3)
    replayed_with_other_noise = run_forward(chain, z0, seed=4)
    assert not agrees_with_differences(reverse_gradient(chain, replayed_with_other_noise), differences)


def test_backward_is_the_documented_formula():
    chain = StochasticChain(weights=(2.0,), biases=(0.0,), random_layer=0, width=2)
    out = chain.backward(0, np.array([0.5, -0.25]), np.array([1.0, 4.0]))
    np.testing.assert_array_equal(out, [2.0 * 0.75 * 1.0, 2.0 * 0.9375 * 4.0])


# ---------------------------------------------------------------- make_chain


def test_make_chain_is_deterministic_and_in_the_documented_ranges():
    chain = make_chain(depth=200, random_layer=17, seed=11)
    assert chain == make_chain(depth=200, random_layer=17, seed=11)
    assert chain != make_chain(depth=200, random_layer=17, seed=12)
    assert all(0.6 <= w < 1.4 for w in chain.weights)
    assert all(-0.3 <= b < 0.3 for b in chain.biases)
    assert (chain.depth, chain.random_layer, chain.width, chain.noise_scale) == (200, 17, 4, 0.5)
    assert all(type(w) is float for w in chain.weights + chain.biases)


# ---------------------------------------------------------------- ledger


def test_ledger_tracks_live_and_peak():
    ledger = StateLedger()
    ledger.retain()
    ledger.retain(3)
    ledger.release(2)
    ledger.retain()
    assert (ledger.live, ledger.peak) == (3, 4)
    ledger.release(3)
    assert (ledger.live, ledger.peak) == (0, 4)


@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        (lambda ledger: ledger.retain(0), "retain count must be >= 1, got 0"),
        (lambda ledger: ledger.retain(-2), "retain count must be >= 1, got -2"),
        (lambda ledger: ledger.release(0), "release count must be >= 1, got 0"),
        (lambda ledger: ledger.release(3), "cannot release 3 states: only 2 alive"),
    ],
)
def test_ledger_errors(action, fragment):
    ledger = StateLedger()
    ledger.retain(2)
    with pytest.raises(ValueError) as info:
        action(ledger)
    assert fragment in str(info.value)
    assert (ledger.live, ledger.peak) == (2, 2), "a refused call must not change the counts"


def test_ledger_refuses_release_when_empty():
    with pytest.raises(ValueError, match="only 0 alive"):
        StateLedger().release()


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"weights": (), "biases": (), "random_layer": 0}, "non-empty and of equal length"),
        ({"weights": (1.0, 1.0), "biases": (0.0,), "random_layer": 0}, "non-empty and of equal length"),
        ({"weights": (1.0, 1.0), "biases": (0.0, 0.0), "random_layer": 2}, "random_layer must be in [0, 2), got 2"),
        ({"weights": (1.0,), "biases": (0.0,), "random_layer": -1}, "random_layer must be in [0, 1), got -1"),
        ({"weights": (1.0,), "biases": (0.0,), "random_layer": 0, "width": 0}, "width must be >= 1, got 0"),
    ],
)
def test_construction_is_validated(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        StochasticChain(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("layer", "vector", "fragment"),
    [
        (3, np.zeros(4), "layer must be in [0, 3), got 3"),
        (-1, np.zeros(4), "layer must be in [0, 3), got -1"),
        (0, np.zeros(3), "must be a float64 vector of shape (4,), got float64 (3,)"),
        (0, np.zeros((4, 1)), "got float64 (4, 1)"),
        (0, np.zeros(4, dtype=np.float32), "got float32 (4,)"),
        (0, np.zeros(4, dtype=np.int64), "got int64 (4,)"),
    ],
)
def test_forward_and_backward_validate_their_inputs(layer, vector, fragment):
    chain = make_chain(depth=3, random_layer=1, width=4)
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(ValueError) as info:
        chain.forward(layer, vector, rng)
    assert fragment in str(info.value)
    assert chain.forward_evaluations == 0 and rng.bit_generator.state == before
    with pytest.raises(ValueError) as info:
        chain.backward(layer, vector, np.ones(4) if vector.shape == (4,) else vector)
    assert fragment in str(info.value)


def test_backward_validates_the_cotangent_by_name():
    chain = make_chain(depth=3, random_layer=1, width=4)
    with pytest.raises(ValueError, match="cotangent_out must be a float64 vector"):
        chain.backward(0, np.zeros(4), np.zeros(4, dtype=np.float32))


def test_float64_lists_are_accepted():
    chain = make_chain(depth=2, random_layer=0, width=2)
    out = chain.forward(1, [0.1, 0.2], np.random.default_rng(0))
    assert out.dtype == np.float64 and out.shape == (2,)
