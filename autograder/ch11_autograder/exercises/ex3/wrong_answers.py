"""Exercise 3 catalogue: wrong ways to choose the best uniform block length.

Every entry is a complete answer a student could submit: it validates its
input as the contract asks and differs from a correct scan in one idea only,
so the hidden suite's failure on it is that idea's failure. Entries use only
what the notebook provides: ``math``, ``np``, ``uniform_checkpoint_cost``,
``BlockChoice`` and, for ``block_table`` entries, the student's own
``best_block_length`` (the reference's when called in the trusted process).

What each entry gets wrong, and where the suite catches it:

* ``floor_block_count``: ``floor(L/k)`` blocks; its peak undercuts the
  minimum ``ceil(2 sqrt L)`` at most depths (``L = 1000``: 63 < 64).
* ``largest_k_tie_break``: right costs, largest tied ``k`` (``L = 1000``: 36).
* ``rounded_sqrt`` / ``floor_sqrt``: ``k = round(sqrt L)`` or ``isqrt(L)``.
  Both always reach the minimum peak (``ceil(L/s) + s <= ceil(2 sqrt L)`` for
  ``s = isqrt(L)``, and likewise for the rounded root, checked over
  ``1 <= L <= 20000``), so only the tie-break exposes them: they are not the
  smallest minimizer at most depths (``L = 1000``: 32 and 31, not 28).
* ``replay_floor_formula`` / ``replay_counts_every_primitive``: the replay
  count as ``L - L//k`` (Equation 11.5 with integer division, right only when
  ``k`` divides ``L``) or as ``L`` (the kept block inputs replayed too).
* ``real_valued_peak``: Equation 11.4 in floats, ``L/k + k`` and ``L - L/k``:
  float counts, and the ``k`` of the real-valued minimum.
* ``divisors_only``: scans only the ``k`` dividing ``L`` (prime ``L``: store-all).
* ``scan_skips_one_block`` / ``scan_skips_store_all``: ``range(1, L)`` or
  ``range(2, L + 1)``; wrong only at the edges (``L = 1`` fails for both,
  ``L = 2, 3`` for the second, where ``k = 1`` is the smallest minimizer).
* ``table_sorted_unique``: ``block_table`` over ``sorted(set(depths))``.
* ``table_skips_bad_depths``: drops invalid depths instead of raising.

Not catalogued: a default of ``range(16, 4096)`` (missing 4096). The hidden
suite cannot check ``block_table()``'s default within one call's time limit
when ``best_block_length`` is a plain scan (about 8 million harness calls), so
such an entry could not be shown to lose points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from ch11_solutions.ex3_block_length import BlockChoice, best_block_length
from trainable_harness import uniform_checkpoint_cost

from ..catalogue import wrong_answer
from .contract import BEST_CELL, BEST_TESTS, TABLE_CELL, TABLE_TESTS

__all__: list[str] = []


# A wrong best_block_length also spoils every table built from it.
_BOTH = (BEST_TESTS, TABLE_TESTS)


@wrong_answer(
    exercise="ex3",
    name="floor_block_count",
    title="Floor instead of ceiling for the number of blocks",
    advice=(
        "When k does not divide L the last block is shorter but still needs its own kept state: "
        "there are ceil(L/k) blocks, not L // k. A peak below ceil(2*sqrt(L)) is impossible."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def floor_block_count(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    best_k, best_peak = 1, depth + 1
    for k in range(1, depth + 1):
        peak = depth // k + k
        if peak < best_peak:
            best_k, best_peak = k, peak
    return BlockChoice(depth, best_k, best_peak, depth - depth // best_k, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="largest_k_tie_break",
    title="Largest block length among the ties",
    advice=(
        "Several k reach the minimum peak; the contract asks for the smallest one (it replays least). "
        "A scan that replaces its best on equal peaks (<= instead of <) ends at the largest."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def largest_k_tie_break(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    best = None
    for k in range(1, depth + 1):
        cost = uniform_checkpoint_cost(depth, k)
        if best is None or cost.peak_state_units <= best.peak_state_units:
            best = cost
    return BlockChoice(
        depth, best.block_size, best.peak_state_units, best.recomputed_forward_evaluations, math.sqrt(depth)
    )


@wrong_answer(
    exercise="ex3",
    name="rounded_sqrt",
    title="k = round(sqrt(L)) without a search",
    advice=(
        "round(sqrt(L)) always reaches the minimum peak ceil(2*sqrt(L)), so the peak looks right, "
        "but it is often not the smallest k that does (L = 1000: 32, the contract's answer is 28). "
        "Only the tie-break tells them apart: search the integers."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def rounded_sqrt(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    k = max(1, round(math.sqrt(depth)))
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(depth, k, cost.peak_state_units, cost.recomputed_forward_evaluations, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="floor_sqrt",
    title="k = isqrt(L) (floor of the square root) without a search",
    advice=(
        "floor(sqrt(L)) always reaches the minimum peak ceil(2*sqrt(L)), so the peak looks right, "
        "but it is often not the smallest k that does (L = 1000: 31, the contract's answer is 28). "
        "Only the tie-break tells them apart: search the integers."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def floor_sqrt(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    k = math.isqrt(depth)
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(depth, k, cost.peak_state_units, cost.recomputed_forward_evaluations, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="replay_floor_formula",
    title="Replay count from the divisible case, L - L // k",
    advice=(
        "Equation 11.5 assumes k divides L. Otherwise there are ceil(L/k) blocks and each block's "
        "input is kept, so the replay is L - ceil(L/k) (L = 1000, k = 28: 964, not 965)."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def replay_floor_formula(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    best_k, best_peak = 1, depth + 1
    for k in range(1, depth + 1):
        peak = -(-depth // k) + k
        if peak < best_peak:
            best_k, best_peak = k, peak
    return BlockChoice(depth, best_k, best_peak, depth - depth // best_k, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="replay_counts_every_primitive",
    title="Replay counts every primitive (the kept block inputs too)",
    advice=(
        "The input state of each block is kept from the forward pass, so a block of length m "
        "replays only m - 1 primitives: the replay is L - ceil(L/k), not L."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def replay_counts_every_primitive(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    best_k, best_peak = 1, depth + 1
    for k in range(1, depth + 1):
        peak = -(-depth // k) + k
        if peak < best_peak:
            best_k, best_peak = k, peak
    return BlockChoice(depth, best_k, best_peak, depth, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="real_valued_peak",
    title="Equation 11.4 in real numbers, L/k + k",
    advice=(
        "L/k + k is the count only when k divides L; integer block lengths give ceil(L/k) + k "
        "states, an integer. Minimizing the real-valued L/k + k also picks a different k."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def real_valued_peak(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    best_k = min(range(1, depth + 1), key=lambda k: depth / k + k)
    return BlockChoice(depth, best_k, depth / best_k + best_k, depth - depth / best_k, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="divisors_only",
    title="Only block lengths that divide L",
    advice=(
        "Theorem 11.3 is stated for k dividing L, but any 1 <= k <= L is a valid block length "
        "(the last block is shorter). For a prime L the divisors leave only store-all or one block."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def divisors_only(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    divisors = [k for k in range(1, depth + 1) if depth % k == 0]
    k = min(divisors, key=lambda d: depth // d + d)
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(depth, k, cost.peak_state_units, cost.recomputed_forward_evaluations, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="scan_skips_one_block",
    title="Scan stops before k = L",
    advice=(
        "range(1, L) leaves out k = L (a single block). It is never the only minimizer for L >= 2, "
        "but at L = 1 it is the only block length, and the scan has nothing to choose from."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def scan_skips_one_block(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    k = min(range(1, depth), key=lambda b: uniform_checkpoint_cost(depth, b).peak_state_units)
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(depth, k, cost.peak_state_units, cost.recomputed_forward_evaluations, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="scan_skips_store_all",
    title="Scan starts at k = 2",
    advice=(
        "k = 1 (keep every state) is a valid block length, and for L = 1, 2, 3 it is the smallest "
        "one with the minimum peak: scan k from 1 to L inclusive."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def scan_skips_store_all(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    k = min(range(2, depth + 1), key=lambda b: uniform_checkpoint_cost(depth, b).peak_state_units)
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(depth, k, cost.peak_state_units, cost.recomputed_forward_evaluations, math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="table_sorted_unique",
    title="Table over sorted, de-duplicated depths",
    advice=(
        "block_table returns one record per depth in the order given, repeats included: "
        "the i-th record belongs to the i-th depth."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_sorted_unique(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    return [best_block_length(depth) for depth in sorted(set(depths))]



@wrong_answer(
    exercise="ex3",
    name="table_skips_bad_depths",
    title="Table silently drops invalid depths",
    advice=(
        "An invalid depth is an error to report, not a row to leave out: let best_block_length raise "
        "its TypeError or ValueError, so the caller learns which input was wrong."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_skips_bad_depths(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    return [best_block_length(depth) for depth in depths if isinstance(depth, int) and depth >= 1]
