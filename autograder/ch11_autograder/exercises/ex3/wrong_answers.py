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
* ``deny_list_validation``: rejects ``bool``, ``float``, ``str`` and ``None``
  by name and converts the rest with ``int()``: ``np.float32(16.0)`` and
  ``np.True_`` (depth 1) get records instead of ``TypeError``.
* ``numpy_depth_kept``: validates numpy depths but computes with them, so a
  numpy depth leaks into the counts (``np.int64`` fields).
* ``warm_start_scan``: starts each scan at the previous call's ``k`` (kept in
  a mutable default) when the depth grew; the smallest minimizer is not
  monotone in ``L`` (``L = 9``: 3, ``L = 10``: 2), so results depend on the
  calls made before. Never named: see ``suites.ex3.STATEFUL``.
* ``table_sorted_unique``: ``block_table`` over ``sorted(set(depths))``.
* ``table_skips_bad_depths``: drops invalid depths instead of raising.
* ``table_empty_check_by_truth``: ``if not depths: return []``, which raises
  ``ValueError`` for a numpy array of more than one depth (and an empty one).
* ``table_checks_types_first``: checks every depth's type before any value,
  so ``[0, 17.0]`` raises ``TypeError`` where the first bad depth asks
  ``ValueError``.
* ``table_wraps_a_lone_depth``: ``block_table(16)`` answers for ``[16]``
  instead of raising ``TypeError`` (an int is not iterable).
* ``table_default_stops_at_4095``: declares ``depths=range(16, 4096)``,
  which leaves out 4096 (read from the signature: the suite never calls
  ``block_table()``, too slow with a plain scan).
* ``table_reads_depths_twice``: validates every depth in a first loop and
  computes in a second; right for lists, tuples, ranges and arrays, an empty
  table for a generator.
* ``table_uses_up_the_callers_list``: pops from the caller's list as a work
  queue (copying only what is not a list), leaving it empty.
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
    # Past k = 2*sqrt(L) the peak ceil(L/k) + k only grows, so the scan stops there: it finds what the
    # full scan finds, and lin's figure cell (every depth to 4096) runs in seconds, not the half of
    # the 60 s cell limit a scan to L costs, which a loaded grader pushed past it.
    for k in range(1, min(depth, 2 * math.isqrt(depth) + 2) + 1):
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
    name="deny_list_validation",
    title="Validation by a list of forbidden Python types",
    advice=(
        "Rejecting bool, float, str and None by name lets every other non-integer through int(): "
        "numpy floats and bools are not integers either. Accept what operator.index accepts (Python and "
        "numpy integers, never bool) and raise TypeError for everything else."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def deny_list_validation(depth: int) -> BlockChoice:
    if isinstance(depth, (bool, float, str)) or depth is None:
        raise TypeError(f"depth must be an integer, got {depth!r}")
    depth = int(depth)
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    best = None
    for k in range(1, depth + 1):
        cost = uniform_checkpoint_cost(depth, k)
        if best is None or cost.peak_state_units < best.peak_state_units:
            best = cost
    return BlockChoice(
        depth, best.block_size, best.peak_state_units, best.recomputed_forward_evaluations, math.sqrt(depth)
    )


@wrong_answer(
    exercise="ex3",
    name="numpy_depth_kept",
    title="numpy depth kept as it came",
    advice=(
        "A numpy integer is a valid depth, but arithmetic on it gives numpy integers: convert it with "
        "int(depth) (or operator.index) first, so the record holds Python ints whatever the input type."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def numpy_depth_kept(depth: int) -> BlockChoice:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    best_k, best_peak = 1, depth + 1
    for k in range(1, depth + 1):
        peak = -(-depth // k) + k
        if peak < best_peak:
            best_k, best_peak = k, peak
    return BlockChoice(depth, best_k, best_peak, depth - -(-depth // best_k), math.sqrt(depth))


@wrong_answer(
    exercise="ex3",
    name="warm_start_scan",
    title="Scan warm-started from the previous call",
    advice=(
        "The answer for a depth must not depend on what was asked before. The smallest minimizing k does "
        "not grow steadily with L (L = 9: k = 3, L = 10: k = 2), so a scan that starts where the last "
        "call ended misses it: scan every k from 1 each time, or keep no state."
    ),
    answer_cell=BEST_CELL,
    replaces="best_block_length",
    loses=_BOTH,
)
def warm_start_scan(depth: int, _last: dict = {"depth": 0, "k": 1}) -> BlockChoice:  # noqa: B006 (the mistake)
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    # Deeper chains need longer blocks, so start where the previous, shallower depth ended.
    start = _last["k"] if depth >= _last["depth"] else 1
    best = None
    for k in range(start, depth + 1):
        cost = uniform_checkpoint_cost(depth, k)
        if best is None or cost.peak_state_units < best.peak_state_units:
            best = cost
    _last["depth"], _last["k"] = depth, best.block_size
    return BlockChoice(
        depth, best.block_size, best.peak_state_units, best.recomputed_forward_evaluations, math.sqrt(depth)
    )



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


@wrong_answer(
    exercise="ex3",
    name="table_empty_check_by_truth",
    title="Empty input tested by its truth value",
    advice=(
        "`if not depths` works for lists and tuples, but a numpy array has no single truth value and "
        "raises ValueError. depths is any iterable: loop over it, and an empty one gives an empty list."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_empty_check_by_truth(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    if not depths:
        return []
    return [best_block_length(depth) for depth in depths]


@wrong_answer(
    exercise="ex3",
    name="table_checks_types_first",
    title="Every depth's type checked before any value",
    advice=(
        "The contract raises for the first bad depth in the order given: with [0, 17.0] that is the 0, a "
        "ValueError. Checking all the types first reports the 17.0 instead. Check each depth in turn, as "
        "best_block_length does."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_checks_types_first(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    depths = list(depths)
    for depth in depths:
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
            raise TypeError(f"every depth must be an integer, got {depth!r}")
    return [best_block_length(depth) for depth in depths]


@wrong_answer(
    exercise="ex3",
    name="table_wraps_a_lone_depth",
    title="A lone depth accepted as a one-row table",
    advice=(
        "block_table takes an iterable of depths; an int is not one, and iterating it raises TypeError. "
        "Quietly treating 16 as [16] hides a caller's mistake (call best_block_length for one depth)."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_wraps_a_lone_depth(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    if isinstance(depths, (int, np.integer)):
        depths = [depths]
    return [best_block_length(depth) for depth in depths]


@wrong_answer(
    exercise="ex3",
    name="table_default_stops_at_4095",
    title="Default range stops one depth short",
    advice=(
        "range's stop is exclusive: range(16, 4096) ends at 4095. The exercise's depths run from 16 through "
        "4096 inclusive, so the default is range(16, 4097)."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_default_stops_at_4095(depths: Iterable[int] = range(16, 4096)) -> list[BlockChoice]:
    return [best_block_length(depth) for depth in depths]


@wrong_answer(
    exercise="ex3",
    name="table_reads_depths_twice",
    title="Depths read twice: validated in one loop, computed in another",
    advice=(
        "depths may be a generator, which can be read only once: after the validating loop nothing is left "
        "for the second, and the table comes back empty. Read depths once and check each depth as you go "
        "(best_block_length already raises for a bad one), or make a list of it first."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_reads_depths_twice(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    for depth in depths:  # fail before any work if one depth is bad
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
            raise TypeError(f"every depth must be an integer, got {depth!r}")
        if depth < 1:
            raise ValueError(f"every depth must be >= 1, got {depth}")
    return [best_block_length(depth) for depth in depths]


@wrong_answer(
    exercise="ex3",
    name="table_uses_up_the_callers_list",
    title="The caller's list used up as a work queue",
    advice=(
        "depths belongs to the caller: popping from it leaves them an empty list. Loop over depths without "
        "changing it (for depth in depths: ...), or pop from a copy."
    ),
    answer_cell=TABLE_CELL,
    replaces="block_table",
    loses=(TABLE_TESTS,),
)
def table_uses_up_the_callers_list(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    queue = depths if isinstance(depths, list) else list(depths)  # a list already: no copy needed
    table = []
    while queue:
        table.append(best_block_length(queue.pop(0)))
    return table
