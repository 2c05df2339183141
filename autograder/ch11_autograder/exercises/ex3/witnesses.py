"""Exercise 3's witnesses: for every clause of :data:`CONTRACT`, answers that break it alone.

See ``exercises/witness.py`` for what a witness is and how the test grades them. The answer
cells define ``best_block_length`` with its helpers nested inside it, so a witness written by
hand reaches the reference's record through ``_reference_best_block_length`` or rebuilds one
with the harness's ``uniform_checkpoint_cost``.
"""

from __future__ import annotations

from ch11_solutions import ex3_block_length as ref

from ..witness import (
    Family,
    Witness,
    Witnesses,
    by_hand,
    changed_defaults,
    clause_lookup,
    converted,
    mutates,
    other_exception,
    refused,
    wrapper,
)
from .contract import BEST_CELL, CONTRACT, TABLE_CELL

__all__ = ["WITNESSES"]

_best = ref.best_block_length
_table = ref.block_table


_clause = clause_lookup(CONTRACT)


#: A record for block size ``k``, as the reference builds it (its helpers are nested, so not callable here).
_CHOICE = """
def _witness_choice(depth, k):
    cost = uniform_checkpoint_cost(depth, k)
    return BlockChoice(cost.depth, cost.block_size, cost.peak_state_units,
                       cost.recomputed_forward_evaluations, math.sqrt(depth))
"""


def _k_rule(name: str, clause_text: str, rule: str, kind: str = "behaviour") -> Witness:
    """A best_block_length that validates like the reference and picks ``k = rule`` (an expression over depth)."""
    return by_hand(_clause("best_block_length", kind, clause_text), name, BEST_CELL, _CHOICE + wrapper(
        _best, "depth = _reference_best_block_length(depth).depth", result=f"_witness_choice(depth, {rule})"))


# Every k reaching the minimum peak, ascending (a scan; graded depths stay below 20 001).
_TIED = "[k for k in range(1, depth + 1) if -(-depth // k) + k == result.peak_states]"

# ---- best_block_length ------------------------------------------------------------------------

_BEHAVIOUR = [
    # ceil(sqrt(L)) + 1: one past the band at perfect squares (64: k = 9, 17 states).
    _k_rule("best_k_one_past_the_root", "peak ceil(L/k)", "min(depth, math.isqrt(depth - 1) + 2)"),
    by_hand(_clause("best_block_length", "behaviour", "replay"), "best_replay_floor_division", BEST_CELL,
            wrapper(_best, result="BlockChoice(result.depth, result.block_size, result.peak_states, "
                    "result.depth - result.depth // result.block_size, result.sqrt_depth)")),
    by_hand(_clause("best_block_length", "tie-break"), "best_largest_tied_k", BEST_CELL, _CHOICE + wrapper(
        _best, "result = _reference_best_block_length(depth)\ndepth = result.depth",
        result=f"_witness_choice(depth, {_TIED}[-1])")),
    by_hand(_clause("best_block_length", "tie-break"), "best_middle_tied_k", BEST_CELL, _CHOICE + wrapper(
        _best, "result = _reference_best_block_length(depth)\ndepth = result.depth",
        result=f"_witness_choice(depth, {_TIED}[len({_TIED}) // 2])")),
]

_ACCEPTS = _clause("best_block_length", "accepts", argument="depth")
_ACCEPTED = [
    *refused(_ACCEPTS, _best, BEST_CELL, [
        Family("numpy_integers", "isinstance(depth, np.integer)"),
        # The exercise's range is 16..4096; the graded one is 1..20 000.
        Family("below_16", "type(depth) is int and depth < 16"),
        Family("above_4096", "type(depth) is int and depth > 4096"),
    ]),
    converted(_ACCEPTS, _best, BEST_CELL, "numpy_to_float", "isinstance(depth, np.integer)", "float(depth)"),
]

def _sqrt_depth(kind: str, name: str, root: str) -> Witness:
    """best_block_length's record with ``sqrt_depth`` replaced by ``root`` (an expression over ``result``)."""
    text = "a BlockChoice" if kind == "returns" else ""
    return by_hand(_clause("best_block_length", kind, text), name, BEST_CELL, wrapper(
        _best, result=f"BlockChoice(result.depth, result.block_size, result.peak_states, "
                      f"result.replay_evaluations, {root})"))


_RETURNS = [
    by_hand(_clause("best_block_length", "returns", "a BlockChoice"), "best_float_counts", BEST_CELL,
            wrapper(_best, result="BlockChoice(*(float(v) for v in (result.depth, result.block_size, "
                    "result.peak_states, result.replay_evaluations, result.sqrt_depth)))")),
    _sqrt_depth("returns", "best_float32_sqrt_depth", "float(np.float32(result.sqrt_depth))"),
    _sqrt_depth("returns", "best_float32_typed_sqrt_depth", "np.float32(result.sqrt_depth)"),
    _sqrt_depth("tolerance", "best_sqrt_depth_three_ulps_off", "result.sqrt_depth + 3 * math.ulp(result.sqrt_depth)"),
    by_hand(_clause("best_block_length", "returns", "Python int counts for numpy"), "best_numpy_counts_for_numpy",
            BEST_CELL, wrapper(_best, result="BlockChoice(*(type(depth)(v) for v in (result.depth, result.block_size, "
                               "result.peak_states, result.replay_evaluations)), result.sqrt_depth) "
                               "if isinstance(depth, np.integer) else result")),
]

_TYPE_ERROR = _clause("best_block_length", "raises", argument="depth", raises="TypeError")
_VALUE_ERROR = _clause("best_block_length", "raises", argument="depth", raises="ValueError")
_NUMBER = "(isinstance(depth, (int, np.integer)) and not isinstance(depth, (bool, np.bool_)))"
_RAISES = [
    *other_exception(_TYPE_ERROR, _best, BEST_CELL, [
        Family("bool", "isinstance(depth, bool)", "_reference_best_block_length(int(depth))"),
        # Below 1 a float reaches the range check first in an answer that compares before it
        # checks the type; at or above 1 it is a whole number or not.
        Family("float_below_1", "isinstance(depth, float) and depth < 1"),
        Family("whole_float", "isinstance(depth, float) and depth >= 1 and depth == int(depth)",
               "_reference_best_block_length(int(depth))"),
        Family("fractional_float", "isinstance(depth, float) and depth >= 1 and depth != int(depth)",
               "_reference_best_block_length(math.ceil(depth))"),
        Family("str", "isinstance(depth, str)", "_reference_best_block_length(int(depth))"),
        Family("none", "depth is None"),
        Family("list", "isinstance(depth, list)", "_reference_best_block_length(depth[0])"),
        Family("numpy_bool", "isinstance(depth, np.bool_)", "_reference_best_block_length(int(depth))"),
        Family("numpy_float_below_1", "isinstance(depth, np.floating) and depth < 1"),
        Family("numpy_whole_float", "isinstance(depth, np.floating) and depth >= 1 and depth == int(depth)",
               "_reference_best_block_length(int(depth))"),
    ]),
    *other_exception(_VALUE_ERROR, _best, BEST_CELL, [
        Family("zero", f"{_NUMBER} and depth == 0", "_reference_best_block_length(1)"),
        Family("negative", f"{_NUMBER} and depth < 0", "_reference_best_block_length(-depth)"),
        Family("numpy_below_1", "isinstance(depth, np.integer) and depth < 1", "_reference_best_block_length(1)"),
    ]),
]

# ---- block_table ------------------------------------------------------------------------------

_TABLE_BEHAVIOUR = _clause("block_table", "behaviour")
_TABLE = [
    by_hand(_TABLE_BEHAVIOUR, "table_sorted", TABLE_CELL,
            wrapper(_table, result="sorted(result, key=lambda c: c.depth)")),
    by_hand(_TABLE_BEHAVIOUR, "table_drops_repeats", TABLE_CELL,
            wrapper(_table, result="list({c.depth: c for c in result}.values())")),
    by_hand(_TABLE_BEHAVIOUR, "table_own_floor_sqrt", TABLE_CELL, _CHOICE + wrapper(
        _table, result="[_witness_choice(c.depth, math.isqrt(c.depth)) for c in result]")),
    by_hand(_clause("block_table", "returns"), "table_tuple", TABLE_CELL, wrapper(_table, result="tuple(result)")),
    by_hand(_clause("block_table", "returns"), "table_tuple_unless_list", TABLE_CELL, wrapper(
        _table, "given_list = isinstance(depths, list)", result="result if given_list else tuple(result)")),
]

_TABLE_STATE = _clause("block_table", "purity", "depends on depths")
_TABLE_UNCHANGED = _clause("block_table", "purity", "depths left unchanged")
_PURITY = [
    # A scan sped up by starting at the previous call's last k: the first call is right.
    by_hand(_TABLE_STATE, "table_scan_starts_at_last_calls_k", TABLE_CELL, """
        _table_start = [1]


        def block_table(depths=range(16, 4097)):
            table = []
            start = _table_start[0]
            for depth in depths:
                depth = best_block_length(depth).depth
                best = None
                for k in range(min(start, depth), depth + 1):
                    cost = uniform_checkpoint_cost(depth, k)
                    if best is None or cost.peak_state_units < best.peak_state_units:
                        best = cost
                table.append(BlockChoice(depth, best.block_size, best.peak_state_units,
                                         best.recomputed_forward_evaluations, math.sqrt(depth)))
            if table:
                _table_start[0] = table[-1].block_size
            return table
        """),
    mutates(_TABLE_UNCHANGED, _table, TABLE_CELL, "sorts_the_callers_list",
            "if isinstance(depths, list):\n    depths.sort()"),
    mutates(_TABLE_UNCHANGED, _table, TABLE_CELL, "empties_the_callers_list",
            "depths.clear() if isinstance(depths, list) else None", after=True),
]

_DEFAULTS = changed_defaults(_clause("block_table", "default", argument="depths"), _table, TABLE_CELL,
                             ["range(16, 4096)", "range(1, 4097)", "None", "range(16, 4097, 2)"])

_TABLE_ACCEPTS = _clause("block_table", "accepts", argument="depths")
_ITERABLES = [
    *refused(_TABLE_ACCEPTS, _table, TABLE_CELL, [
        Family("generators", "not hasattr(depths, '__len__')"),
        Family("tuples", "isinstance(depths, tuple)"),
        Family("ranges", "isinstance(depths, range)"),
        Family("numpy_arrays", "isinstance(depths, np.ndarray)"),
    ]),
    converted(_TABLE_ACCEPTS, _table, TABLE_CELL, "sorted", "True", "sorted(depths)"),
    converted(_TABLE_ACCEPTS, _table, TABLE_CELL, "numpy_to_float", "isinstance(depths, np.ndarray)",
              "depths.astype(float)"),
    # Counting first, then reading: a generator is empty by the second pass.
    by_hand(_TABLE_ACCEPTS, "block_table_depths_read_twice", TABLE_CELL, wrapper(
        _table, "count = sum(1 for _ in depths)", result="result[:count] if count else []")),
]

_LONE = _clause("block_table", "raises", "depths is not iterable", argument="depths", raises="TypeError")
_FIRST_TYPE = _clause("block_table", "raises", "as best_block_length", argument="depths", raises="TypeError")
_FIRST_VALUE = _clause("block_table", "raises", "as best_block_length", argument="depths", raises="ValueError")
_BAD_TYPE = "(isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)))"
_TABLE_RAISES = [
    *other_exception(_LONE, _table, TABLE_CELL, [
        Family("lone_depth", "isinstance(depths, (int, np.integer))", "[best_block_length(depths)]"),
    ]),
    # Every depth's type checked before any depth's value: [0, 17.0] raises TypeError.
    by_hand(_FIRST_VALUE, "table_types_checked_first", TABLE_CELL, wrapper(
        _table, f"depths = list(depths)\nif any({_BAD_TYPE} for d in depths):\n    raise TypeError('not an integer')")),
    by_hand(_FIRST_VALUE, "table_skips_depths_below_1", TABLE_CELL, wrapper(
        _table, f"depths = [d for d in depths if {_BAD_TYPE} or d >= 1]")),
    # Every depth's value checked before any depth's type: [17.0, 0] raises ValueError.
    by_hand(_FIRST_TYPE, "table_values_checked_first", TABLE_CELL, wrapper(
        _table, f"depths = list(depths)\nif any(not {_BAD_TYPE} and d < 1 for d in depths):\n"
        "    raise ValueError('depth < 1')")),
    by_hand(_FIRST_TYPE, "table_converts_floats", TABLE_CELL, wrapper(
        _table, "depths = [int(d) if isinstance(d, (float, np.floating)) else d for d in depths]")),
]

_BEST_STATE = _clause("best_block_length", "purity")
_BEST_PURITY = [
    # functools.lru_cache without typed=True: after np.int64(L), L.0 finds its entry instead of raising.
    by_hand(_BEST_STATE, "best_plain_lru_cache", BEST_CELL, """
        import functools

        _reference_best_block_length = best_block_length


        @functools.lru_cache(maxsize=None)
        def best_block_length(depth):
            return _reference_best_block_length(depth)
        """),
    # A dict keyed on the argument before the input checks: after L, L.0 finds L's record.
    by_hand(_BEST_STATE, "best_cache_before_the_checks", BEST_CELL, wrapper(
        _best, "try:\n    return _best_memo[depth]\nexcept (KeyError, TypeError):\n    pass",
        result="_best_memo.setdefault(depth, result)", prelude="_best_memo = {}")),
    # A scan sped up by starting at the previous call's k: right from a fresh kernel, wrong after a deeper depth.
    by_hand(_BEST_STATE, "best_scan_starts_at_last_calls_k", BEST_CELL, """
        _reference_best_block_length = best_block_length
        _best_start = [1]


        def best_block_length(depth):
            depth = _reference_best_block_length(depth).depth
            best = None
            for k in range(min(_best_start[0], depth), depth + 1):
                peak = -(-depth // k) + k
                if best is None or peak < best[1]:
                    best = (k, peak)
            _best_start[0] = best[0]
            cost = uniform_checkpoint_cost(depth, best[0])
            return BlockChoice(cost.depth, cost.block_size, cost.peak_state_units,
                               cost.recomputed_forward_evaluations, math.sqrt(depth))
        """),
]

#: The readings the docstring settles: sqrt_depth a np.float64 of math.sqrt's bits, or L ** 0.5 (an ulp apart).
_READINGS = [
    _sqrt_depth("returns", "best_numpy_float64_sqrt_depth", "np.float64(result.sqrt_depth)"),
    _sqrt_depth("tolerance", "best_sqrt_depth_as_power", "result.depth ** 0.5"),
]

WITNESSES = Witnesses(
    CONTRACT,
    (*_BEHAVIOUR, *_ACCEPTED, *_RETURNS, *_RAISES, *_BEST_PURITY, *_TABLE, *_PURITY, *_DEFAULTS, *_ITERABLES,
     *_TABLE_RAISES),
    tuple(_READINGS),
)
