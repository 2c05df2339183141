"""Hypothesis strategies of Exercise 5's hidden suite: chain cases, call sequences and pairs of arrays.

A *case* is the plain-value description of one call (chain shape and seed, input, block
length, generator seed) that the suite turns into a fresh chain and generator for the
student and for the reference alike; the array pairs feed ``first_mismatch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ...api.suite import array_layouts

__all__ = [
    "CASE_KEYS",
    "CHAIN_FUNCTIONS",
    "array_pairs",
    "call_sequences",
    "chain_cases",
    "make_case",
    "replaying_cases",
    "special_pairs",
    "used_chain_sequences",
]

CASE_KEYS = ("depth", "random_layer", "width", "chain_seed", "z0", "block_size", "seed")

#: The graded functions that take a chain and apply its layers.
CHAIN_FUNCTIONS = ("store_all_cotangents", "checkpointed_cotangents", "replay_report")


def make_case(
    depth: int,
    random_layer: int,
    width: int,
    chain_seed: int,
    z0: Sequence[float],
    block_size: int,
    seed: int,
    z0_layout: str | None = None,
) -> dict[str, Any]:
    """One case, keyed by :data:`CASE_KEYS`; ``z0`` becomes a float64 array.

    ``z0_layout`` (not a case key: the case's z0 is the same array in any layout) is the memory layout
    the properties that check z0's accepted form send it in (``api.suite.laid``; None: C order).
    """
    return {
        "depth": depth,
        "random_layer": random_layer,
        "width": width,
        "chain_seed": chain_seed,
        "z0": np.array(z0, dtype=np.float64),
        "block_size": block_size,
        "seed": seed,
        "z0_layout": z0_layout,
    }


@st.composite
def chain_cases(draw: st.DrawFn, max_depth: int = 24) -> dict[str, Any]:
    """A chain, an input, a block length and a generator seed, as plain values.

    Shrinks toward the smallest chain (depth 2, random layer 0, width 1).
    """
    depth = draw(st.integers(2, max_depth))
    width = draw(st.integers(1, 4))
    z0 = draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=width, max_size=width))
    return make_case(
        depth=depth,
        random_layer=draw(st.integers(0, depth - 1)),
        width=width,
        chain_seed=draw(st.integers(0, 2**32 - 1)),
        z0=z0,
        block_size=draw(st.integers(1, depth)),
        seed=draw(st.integers(0, 2**63 - 1)),
        # Drawn last, so the draws before it are what they were.
        z0_layout=draw(array_layouts((width,))),
    )


@st.composite
def array_pairs(draw: st.DrawFn) -> dict[str, Any]:
    """Two arrays of one shape (rows; rows x columns; rows x 2 x 2) differing in a drawn set of rows.

    A differing row changes one entry, by one ulp or by a large step. ``saved_layout`` and
    ``replayed_layout`` are the memory layouts each is sent in (None: C order).
    """
    rows = draw(st.integers(1, 10))
    cols: int | tuple[int, int] | None = draw(st.sampled_from([None, 1, 2, 3, (2, 2)]))
    dtypes: list[type[np.floating]] = [np.float64, np.float64, np.float32]
    dtype = draw(st.sampled_from(dtypes))
    shape = (rows,) if cols is None else (rows, *cols) if isinstance(cols, tuple) else (rows, cols)
    saved = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).normal(size=shape).astype(dtype)
    replayed = saved.copy()
    flat = replayed.reshape(rows, -1)
    for row in sorted(draw(st.sets(st.integers(0, rows - 1), max_size=rows))):
        col = draw(st.integers(0, flat.shape[1] - 1))
        if draw(st.booleans()):
            flat[row, col] = np.nextafter(flat[row, col], dtype(np.inf))
        else:
            flat[row, col] = flat[row, col] + dtype(1.0)
    # Each array in a memory layout of its own (api.suite.laid), drawn last.
    return {
        "saved": saved,
        "replayed": replayed,
        "saved_layout": draw(array_layouts(shape)),
        "replayed_layout": draw(array_layouts(shape)),
    }


@st.composite
def special_pairs(draw: st.DrawFn) -> dict[str, Any]:
    """Arrays of zeros and NaNs: equal values that differ in bits (signed zeros, NaNs of other bits), same-bit NaNs.

    The NaNs of ``replayed`` keep ``saved``'s bits, except those drawn to get another NaN's bits
    (the sign bit set, or another payload): an answer that treats any two NaNs as equal (``nan ==
    nan`` read as "both NaN") misses those rows. They are drawn after the zeros, so the draws
    before them are what they were.
    """
    rows = draw(st.integers(1, 8))
    cols = draw(st.integers(1, 3))
    kinds = draw(st.lists(st.sampled_from(["zero", "nan", "value"]), min_size=rows * cols, max_size=rows * cols))
    saved = np.array([{"zero": 0.0, "nan": np.nan, "value": 1.5}[k] for k in kinds]).reshape(rows, cols)
    replayed = saved.copy()
    zeros = [i for i, k in enumerate(kinds) if k == "zero"]
    flipped = draw(st.sets(st.sampled_from(zeros), max_size=len(zeros))) if zeros else set()
    flat = replayed.reshape(-1)
    for index in flipped:
        flat[index] = -0.0
    nans = [i for i, k in enumerate(kinds) if k == "nan"]
    other = draw(st.sets(st.sampled_from(nans), max_size=len(nans))) if nans else set()
    for index in other:
        flat[index] = _OTHER_NANS[index % len(_OTHER_NANS)]
    # Each array in a memory layout of its own, as array_pairs draws them.
    return {
        "saved": saved,
        "replayed": replayed,
        "saved_layout": draw(array_layouts(saved.shape)),
        "replayed_layout": draw(array_layouts(saved.shape)),
    }


#: NaNs whose bits differ from ``np.nan``'s (0x7ff8000000000000): the sign bit set, and another payload.
_OTHER_NANS = np.array([0xFFF8000000000000, 0x7FF8000000000001], dtype=np.uint64).view(np.float64)


@st.composite
def replaying_cases(draw: st.DrawFn) -> dict[str, Any]:
    """A chain case whose random layer is replayed: it lies in a block of k >= 2 and does not end it.

    Only there do a matched and an unmatched replay differ, so only there can a
    wrong default of ``matched`` show.
    """
    case = draw(chain_cases())
    depth = max(case["depth"], 3)
    k = draw(st.integers(2, depth))
    r = draw(st.integers(0, depth - 2))
    if r % k == k - 1:
        r -= 1  # the last layer of a full block is never replayed; its neighbour in the block is
    return {**case, "depth": depth, "random_layer": r, "block_size": k}


@st.composite
def call_sequences(draw: st.DrawFn, with_matched: bool) -> dict[str, Any]:
    """Three to five calls on two chain cases, in a drawn order, each case met at least once more.

    Small chains keep the whole sequence cheap; ``matched`` is drawn per call.
    """
    pool = [draw(chain_cases(max_depth=10)) for _ in range(2)]
    order = draw(st.lists(st.integers(0, 1), min_size=3, max_size=5).filter(lambda o: len(set(o)) == 2))
    calls = []
    for index in order:
        call = dict(pool[index])
        if with_matched:
            call["matched"] = draw(st.booleans())
        calls.append(call)
    return {"calls": calls}


@st.composite
def _chain_call(draw: st.DrawFn, depth: int, function: str | None = None) -> dict[str, Any]:
    """One call on a shared chain: which function, and its own block length, generator seed and stream."""
    name = function or draw(st.sampled_from(CHAIN_FUNCTIONS))
    call: dict[str, Any] = {"function": name, "seed": draw(st.integers(0, 2**32 - 1))}
    if name != "store_all_cotangents":
        call["block_size"] = draw(st.integers(1, depth))
        call["matched"] = draw(st.booleans())
    return call


@st.composite
def used_chain_sequences(draw: st.DrawFn, function: str) -> dict[str, Any]:
    """One chain and two to four calls on it, in a drawn order, with ``function`` called after another call.

    The calls share the chain (its counter carries over), each with its own
    generator seed; the function under test meets a chain that earlier calls
    used, which is where a count read off the chain's running counter shows.
    """
    case = draw(chain_cases(max_depth=10))
    chain = {key: case[key] for key in ("depth", "random_layer", "width", "chain_seed", "z0")}
    calls = [draw(_chain_call(case["depth"])) for _ in range(draw(st.integers(1, 3)))]
    if not any(call["function"] == function for call in calls[1:]):
        calls.append(draw(_chain_call(case["depth"], function)))
    return {**chain, "calls": calls}
