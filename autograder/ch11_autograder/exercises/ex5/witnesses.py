"""Exercise 5's witnesses: for every clause of :data:`CONTRACT`, answers that break it alone.

See ``exercises/witness.py``. The answer cells nest the reference's helpers in its functions,
so a witness reaches the reference's run through ``_reference_<function>`` and rebuilds a
``ReplayRun`` or ``ReplayReport`` around it with one thing changed.
"""

from __future__ import annotations

from ch11_solutions import ex5_replay as ref

from ..witness import (
    Family,
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
from .contract import CHECKPOINTED_CELL, CONTRACT, MISMATCH_CELL, REPORT_CELL, STORE_ALL_CELL

__all__ = ["WITNESSES"]

_SA, _CC, _FM, _RR = (ref.store_all_cotangents, ref.checkpointed_cotangents, ref.first_mismatch,
                      ref.replay_report)


_clause = clause_lookup(CONTRACT)


def _run(cotangents: str = "result.cotangents", forward: str = "result.forward_evaluations",
         replayed: str = "result.replayed_evaluations", peak: str = "result.peak_states") -> str:
    """A ReplayRun expression: the reference's ``result`` with the fields given replaced."""
    return (f"ReplayRun(cotangents={cotangents}, forward_evaluations={forward}, "
            f"replayed_evaluations={replayed}, peak_states={peak})")


def _report(**changes: str) -> str:
    """A ReplayReport expression: the reference's ``result`` with the fields given replaced."""
    fields = ("block_size", "matched", "saved", "replayed", "extra_forward_evaluations", "saved_peak_states",
              "replayed_peak_states", "first_mismatch")
    return "ReplayReport(" + ", ".join(f"{f}={changes.get(f, 'result.' + f)}" for f in fields) + ")"


# ---- store_all_cotangents ---------------------------------------------------------------------

_STORE_ALL = [
    by_hand(_clause("store_all_cotangents", "behaviour"), "store_all_rows_reversed", STORE_ALL_CELL,
            wrapper(_SA, result=_run("result.cotangents[::-1].copy()"))),
    by_hand(_clause("store_all_cotangents", "tolerance"), "store_all_float32_precision", STORE_ALL_CELL,
            wrapper(_SA, result=_run("result.cotangents.astype(np.float32).astype(np.float64)"))),
    *refused(_clause("store_all_cotangents", "accepts", argument="chain"), _SA, STORE_ALL_CELL, [
        Family("one_layer", "chain.depth == 1"),
        Family("wide_chains", "chain.width > 2"),
        Family("deep_chains", "chain.depth > 8"),
    ]),
    converted(_clause("store_all_cotangents", "accepts", argument="z0"), _SA, STORE_ALL_CELL, "to_float32",
              "isinstance(z0, np.ndarray)", "z0.astype(np.float32).astype(np.float64)"),
    converted(_clause("store_all_cotangents", "accepts", argument="rng"), _SA, STORE_ALL_CELL, "to_a_copy",
              "True", "copy.deepcopy(rng)"),
    converted(_clause("store_all_cotangents", "accepts", argument="rng"), _SA, STORE_ALL_CELL, "to_a_fixed_seed",
              "True", "np.random.default_rng(0)"),
    by_hand(_clause("store_all_cotangents", "returns"), "store_all_float32_cotangents", STORE_ALL_CELL,
            wrapper(_SA, result=_run("result.cotangents.astype(np.float32)"))),
    by_hand(_clause("store_all_cotangents", "returns"), "store_all_peak_L", STORE_ALL_CELL,
            wrapper(_SA, result=_run(peak="result.peak_states - 1"))),
    by_hand(_clause("store_all_cotangents", "returns"), "store_all_float_counts", STORE_ALL_CELL,
            wrapper(_SA, result=_run(forward="float(result.forward_evaluations)",
                                     replayed="float(result.replayed_evaluations)",
                                     peak="float(result.peak_states)"))),
    by_hand(_clause("store_all_cotangents", "purity", "no result"), "store_all_counter_read_whole", STORE_ALL_CELL,
            wrapper(_SA, result=_run(forward="chain.forward_evaluations"))),
    by_hand(_clause("store_all_cotangents", "purity", "no result"), "store_all_counts_across_calls",
            STORE_ALL_CELL, wrapper(_SA, "_store_all_total[0] += chain.depth",
                                    result=_run(forward="_store_all_total[0]"), prelude="_store_all_total = [0]")),
    by_hand(_clause("store_all_cotangents", "purity", "z0 unmodified"), "store_all_resets_the_counter",
            STORE_ALL_CELL, wrapper(_SA, "if isinstance(chain, StochasticChain):\n    chain.forward_evaluations = 0")),
    mutates(_clause("store_all_cotangents", "purity", "z0 unmodified"), _SA, STORE_ALL_CELL,
            "store_all_doubles_z0", "z0.__imul__(2.0)", after=True),
    mutates(_clause("store_all_cotangents", "purity", "z0 unmodified"), _SA, STORE_ALL_CELL,
            "store_all_draws_twice", "rng.standard_normal(chain.width)", after=True),
    mutates(_clause("store_all_cotangents", "purity", "z0 unmodified"), _SA, STORE_ALL_CELL,
            "store_all_runs_forward_twice", "_reference_store_all_cotangents(chain, z0, copy.deepcopy(rng))"),
    *other_exception(_clause("store_all_cotangents", "raises", argument="chain"), _SA, STORE_ALL_CELL, [
        Family("not_a_chain", "not isinstance(chain, StochasticChain)"),
    ]),
    *other_exception(_clause("store_all_cotangents", "raises", argument="rng"), _SA, STORE_ALL_CELL, [
        Family("not_a_generator", "not isinstance(rng, np.random.Generator)"),
    ]),
    converted(_clause("store_all_cotangents", "raises", argument="rng"), _SA, STORE_ALL_CELL, "seed_to_generator",
              "isinstance(rng, int)", "np.random.default_rng(rng)"),
    *other_exception(_clause("store_all_cotangents", "raises", argument="z0"), _SA, STORE_ALL_CELL, [
        Family("list", "isinstance(z0, list)"),
        Family("other_dtype", "isinstance(z0, np.ndarray) and z0.dtype != np.float64"),
        Family("other_shape", "isinstance(z0, np.ndarray) and z0.shape != (chain.width,)"),
    ]),
    converted(_clause("store_all_cotangents", "raises", argument="z0"), _SA, STORE_ALL_CELL, "to_float64",
              "isinstance(z0, (list, np.ndarray))", "np.asarray(z0, dtype=np.float64)"),
]

def _checkpointed(snapshot: str, replay: str) -> str:
    """checkpointed_cotangents as the reference computes it, with the snapshot and the matched replay's
    generator given as expressions (over ``rng``, ``s`` and ``snapshots``)."""
    return f"""
def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    if not isinstance(chain, StochasticChain):
        raise TypeError("chain must be a StochasticChain")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError("z0 must be a float64 array of shape (width,)")
    depth = chain.depth
    k = uniform_checkpoint_cost(depth, block_size).block_size
    starts = list(range(0, depth, k))
    before = chain.forward_evaluations
    ledger = StateLedger()
    retained, snapshots, z = {{}}, {{}}, z0
    for s in starts:
        retained[s] = z
        ledger.retain()
        snapshots[s] = {snapshot}
        for i in range(s, min(s + k, depth)):
            z = chain.forward(i, z, rng)
    retained[depth] = z
    ledger.retain()
    forward_pass = chain.forward_evaluations - before
    cotangents = np.empty((depth + 1, chain.width), dtype=np.float64)
    cotangents[depth] = 1.0
    for s in reversed(starts):
        end = min(s + k, depth)
        replay_rng = {replay} if matched else rng
        states = {{s: retained[s], end: retained[end]}}
        for i in range(s, end - 1):
            states[i + 1] = chain.forward(i, states[i], replay_rng)
            ledger.retain()
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
        if end - 1 > s:
            ledger.release(end - 1 - s)
    ledger.release(len(starts) + 1)
    total = chain.forward_evaluations - before
    return ReplayRun(cotangents, total, total - forward_pass, ledger.peak)
"""


# ---- checkpointed_cotangents ------------------------------------------------------------------

_CK = "checkpointed_cotangents"
_CHECKPOINTED = [
    # Blocks counted from the end: replays the same layers when k divides L, others otherwise.
    by_hand(_clause(_CK, "behaviour", "blocks of k"), "checkpointed_replays_whole_blocks", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(forward="result.forward_evaluations + math.ceil(chain.depth / block_size)",
                                     replayed="result.replayed_evaluations + math.ceil(chain.depth / block_size)"))),
    by_hand(_clause(_CK, "behaviour", "matched: replay"), "checkpointed_matched_replays_from_seed",
            CHECKPOINTED_CELL, wrapper(_CC, "if matched:\n    matched = False")),
    by_hand(_clause(_CK, "tolerance"), "checkpointed_matched_rounds_to_float32", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run("result.cotangents.astype(np.float32).astype(np.float64) if matched "
                                     "else result.cotangents"))),
    by_hand(_clause(_CK, "behaviour", "unmatched"), "checkpointed_unmatched_is_matched", CHECKPOINTED_CELL,
            wrapper(_CC, "matched = True")),
    by_hand(_clause(_CK, "behaviour", "unmatched"), "checkpointed_unmatched_fresh_generator", CHECKPOINTED_CELL,
            wrapper(_CC, "if not matched:\n    rng_copy = copy.deepcopy(rng)",
                    result="result if matched else " + _run(
                        "_reference_checkpointed_cotangents(chain, z0, block_size, np.random.default_rng(1), "
                        "matched=False).cotangents"))),
    by_hand(_clause(_CK, "behaviour", "peak"), "checkpointed_peak_without_replays", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(peak="math.ceil(chain.depth / block_size) + 1"))),
    *refused(_clause(_CK, "accepts", argument="chain"), _CC, CHECKPOINTED_CELL, [
        Family("wide_chains", "chain.width > 2"),
        Family("deep_chains", "chain.depth > 8"),
    ]),
    converted(_clause(_CK, "accepts", argument="z0"), _CC, CHECKPOINTED_CELL, "to_float32",
              "isinstance(z0, np.ndarray)", "z0.astype(np.float32).astype(np.float64)"),
    *refused(_clause(_CK, "accepts", argument="block_size"), _CC, CHECKPOINTED_CELL, [
        Family("numpy_integers", "isinstance(block_size, np.integer)"),
        Family("whole_depth", "isinstance(block_size, int) and block_size == chain.depth"),
        Family("one", "isinstance(block_size, int) and block_size == 1"),
    ]),
    by_hand(_clause(_CK, "accepts", argument="rng"), "checkpointed_replay_from_the_seed", CHECKPOINTED_CELL,
            _checkpointed(snapshot="None", replay="np.random.default_rng(rng.bit_generator.seed_seq)")),
    *refused(_clause(_CK, "accepts", argument="matched"), _CC, CHECKPOINTED_CELL, [
        Family("false", "matched is False"),
        Family("true", "matched is True"),
    ]),
    converted(_clause(_CK, "accepts", argument="matched"), _CC, CHECKPOINTED_CELL, "true_to_false",
              "matched is True", "False"),
    converted(_clause(_CK, "accepts", argument="matched"), _CC, CHECKPOINTED_CELL, "to_true",
              "True", "True"),
    *changed_defaults(_clause(_CK, "default", argument="matched"), _CC, CHECKPOINTED_CELL, ["False"]),
    by_hand(_clause(_CK, "returns"), "checkpointed_float_counts", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(forward="float(result.forward_evaluations)",
                                     replayed="float(result.replayed_evaluations)",
                                     peak="float(result.peak_states)"))),
    # Issue 35: block_size validated (operator.index) but the peak computed from the argument as given,
    # so a numpy integer block_size gives a numpy integer peak_states.
    by_hand(_clause(_CK, "returns"), "checkpointed_numpy_peak_for_numpy_block_size", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(peak="-(-chain.depth // block_size) + block_size"))),
    by_hand(_clause(_CK, "returns"), "checkpointed_replays_counted_floor", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(replayed="chain.depth - chain.depth // block_size"))),
    by_hand(_clause(_CK, "returns"), "checkpointed_float32_cotangents", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run("result.cotangents.astype(np.float32)"))),
    by_hand(_clause(_CK, "purity", "no result"), "checkpointed_counter_read_whole", CHECKPOINTED_CELL,
            wrapper(_CC, result=_run(forward="chain.forward_evaluations"))),
    by_hand(_clause(_CK, "purity", "no result"), "checkpointed_counts_across_calls", CHECKPOINTED_CELL,
            wrapper(_CC, "_checkpointed_total[0] += 1",
                    result=_run(replayed="result.replayed_evaluations + _checkpointed_total[0] - 1"),
                    prelude="_checkpointed_total = [0]")),
    by_hand(_clause(_CK, "purity", "no result"), "checkpointed_snapshot_of_the_seed", CHECKPOINTED_CELL,
            _checkpointed(snapshot="copy.deepcopy(np.random.default_rng(rng.bit_generator.seed_seq))",
                          replay="snapshots[s]")),
    by_hand(_clause(_CK, "purity", "z0 unmodified"), "checkpointed_resets_the_counter", CHECKPOINTED_CELL,
            wrapper(_CC, "if isinstance(chain, StochasticChain):\n    chain.forward_evaluations = 0")),
    mutates(_clause(_CK, "purity", "z0 unmodified"), _CC, CHECKPOINTED_CELL, "checkpointed_doubles_z0",
            "z0.__imul__(2.0)", after=True),
    mutates(_clause(_CK, "purity", "z0 unmodified"), _CC, CHECKPOINTED_CELL, "checkpointed_draws_after",
            "rng.standard_normal(chain.width)", after=True),
    mutates(_clause(_CK, "purity", "z0 unmodified"), _CC, CHECKPOINTED_CELL, "checkpointed_forward_twice",
            "_reference_checkpointed_cotangents(chain, z0, block_size, copy.deepcopy(rng), matched=matched)"),
    *other_exception(_clause(_CK, "raises", argument="chain"), _CC, CHECKPOINTED_CELL, [
        Family("not_a_chain", "not isinstance(chain, StochasticChain)"),
    ]),
    *other_exception(_clause(_CK, "raises", argument="rng"), _CC, CHECKPOINTED_CELL, [
        Family("not_a_generator", "not isinstance(rng, np.random.Generator)"),
    ]),
    *other_exception(_clause(_CK, "raises", argument="z0"), _CC, CHECKPOINTED_CELL, [
        Family("list", "isinstance(z0, list)"),
        Family("other_dtype", "isinstance(z0, np.ndarray) and z0.dtype != np.float64"),
    ]),
    *other_exception(_clause(_CK, "raises", argument="block_size", raises="TypeError"), _CC, CHECKPOINTED_CELL, [
        Family("bool", "isinstance(block_size, bool)", "_reference_checkpointed_cotangents(chain, z0, "
               "int(block_size) or 1, rng, matched=matched)"),
        Family("float", "isinstance(block_size, float)", "_reference_checkpointed_cotangents(chain, z0, "
               "int(block_size), rng, matched=matched)"),
        Family("str", "isinstance(block_size, str)"),
    ]),
    *other_exception(_clause(_CK, "raises", argument="block_size", raises="ValueError"), _CC, CHECKPOINTED_CELL, [
        Family("below_1", "isinstance(block_size, int) and not isinstance(block_size, bool) and block_size < 1",
               "_reference_checkpointed_cotangents(chain, z0, 1, rng, matched=matched)"),
        Family("above_depth", "isinstance(block_size, int) and block_size > chain.depth",
               "_reference_checkpointed_cotangents(chain, z0, chain.depth, rng, matched=matched)"),
    ]),
]

# ---- first_mismatch ---------------------------------------------------------------------------

_MISMATCH = [
    # Values compared, not bits: 0.0 == -0.0, and any two NaNs taken as equal.
    by_hand(_clause("first_mismatch", "behaviour", "rows compared"), "first_mismatch_any_nans_agree", MISMATCH_CELL,
            wrapper(_FM, "a, b = np.asarray(saved), np.asarray(replayed)\n"
                    "if a.shape == b.shape and a.dtype == b.dtype and a.ndim:\n"
                    "    for i in range(a.shape[0] - 1, -1, -1):\n"
                    "        same = (a[i] == b[i]) | (np.isnan(a[i]) & np.isnan(b[i]))\n"
                    "        if not (np.all(same) and np.array_equal(np.signbit(a[i]) & ~np.isnan(a[i]), "
                    "np.signbit(b[i]) & ~np.isnan(b[i]))):\n"
                    "            return i\n"
                    "    return None")),
    by_hand(_clause("first_mismatch", "behaviour", "rows compared"), "first_mismatch_equal_nan_values",
            MISMATCH_CELL, wrapper(_FM, "a, b = np.asarray(saved), np.asarray(replayed)\n"
                                   "if a.shape == b.shape and a.dtype == b.dtype and a.ndim:\n"
                                   "    for i in range(a.shape[0] - 1, -1, -1):\n"
                                   "        if not np.array_equal(a[i], b[i], equal_nan=True):\n"
                                   "            return i\n"
                                   "    return None")),
    by_hand(_clause("first_mismatch", "behaviour", "scan from the last"), "first_mismatch_smallest_index",
            MISMATCH_CELL, wrapper(_FM, "a, b = np.asarray(saved), np.asarray(replayed)\n"
                                   "if a.shape == b.shape and a.dtype == b.dtype and a.ndim:\n"
                                   "    for i in range(a.shape[0]):\n"
                                   "        if a[i].tobytes() != b[i].tobytes():\n"
                                   "            return i\n"
                                   "    return None")),
    *refused(_clause("first_mismatch", "accepts", argument="saved"), _FM, MISMATCH_CELL, [
        Family("no_rows", "np.asarray(saved).shape[:1] == (0,)"),
        Family("three_dimensions", "np.ndim(saved) == 3"),
    ]),
    *refused(_clause("first_mismatch", "accepts", argument="replayed"), _FM, MISMATCH_CELL, [
        Family("float32", "np.asarray(replayed).dtype == np.float32"),
    ]),
    by_hand(_clause("first_mismatch", "returns"), "first_mismatch_minus_one_for_none", MISMATCH_CELL,
            wrapper(_FM, result="-1 if result is None else result")),
    by_hand(_clause("first_mismatch", "returns"), "first_mismatch_float_index", MISMATCH_CELL,
            wrapper(_FM, result="None if result is None else float(result)")),
    by_hand(_clause("first_mismatch", "purity"), "first_mismatch_index_from_saved_side", MISMATCH_CELL,
            wrapper(_FM, "_first_mismatch_calls[0] += 1", prelude="_first_mismatch_calls = [0]",
                    result="result if result is None or _first_mismatch_calls[0] == 1 else result - 1")),
    mutates(_clause("first_mismatch", "purity"), _FM, MISMATCH_CELL, "first_mismatch_zeroes_replayed",
            "replayed.fill(0) if isinstance(replayed, np.ndarray) else None", after=True),
    *other_exception(_clause("first_mismatch", "raises", argument="saved"), _FM, MISMATCH_CELL, [
        Family("zero_d", "np.ndim(saved) == 0", "None"),
    ]),
    by_hand(_clause("first_mismatch", "raises", argument="saved"), "first_mismatch_casts_dtypes", MISMATCH_CELL,
            wrapper(_FM, "replayed = np.asarray(replayed).astype(np.asarray(saved).dtype)")),
    *other_exception(_clause("first_mismatch", "raises", argument="replayed"), _FM, MISMATCH_CELL, [
        Family("other_shape", "np.shape(saved) != np.shape(replayed)", "0"),
    ]),
]

# ---- replay_report ----------------------------------------------------------------------------

_RP = "replay_report"
_FRESH = (
    "saved = store_all_cotangents(chain, z0, rng)\n"
    "replayed = checkpointed_cotangents(chain, z0, block_size, rng, matched=matched)"
)
_REPORT = [
    # One generator for both runs: the replay's forward pass draws other noise.
    by_hand(_clause(_RP, "behaviour", "each run"), "report_one_generator_for_both", REPORT_CELL, wrapper(
        _RR, "rng = np.random.default_rng(seed)\n" + _FRESH,
        result=_report(saved="saved", replayed="replayed",
                       first_mismatch="first_mismatch(saved.cotangents, replayed.cotangents)"))),
    by_hand(_clause(_RP, "behaviour", "work"), "report_peak_is_work", REPORT_CELL,
            wrapper(_RR, result=_report(replayed_peak_states="result.replayed.forward_evaluations",
                                        extra_forward_evaluations="result.replayed.forward_evaluations"))),
    by_hand(_clause(_RP, "behaviour", "work"), "report_extra_is_replayed_total", REPORT_CELL,
            wrapper(_RR, result=_report(extra_forward_evaluations="result.replayed.forward_evaluations"))),
    by_hand(_clause(_RP, "behaviour", "work"), "report_peaks_swapped", REPORT_CELL,
            wrapper(_RR, result=_report(saved_peak_states="result.replayed_peak_states",
                                        replayed_peak_states="result.saved_peak_states"))),
    *refused(_clause(_RP, "accepts", argument="chain"), _RR, REPORT_CELL, [
        Family("deep_chains", "chain.depth > 8"),
    ]),
    converted(_clause(_RP, "accepts", argument="z0"), _RR, REPORT_CELL, "to_float32",
              "isinstance(z0, np.ndarray)", "z0.astype(np.float32).astype(np.float64)"),
    *refused(_clause(_RP, "accepts", argument="block_size"), _RR, REPORT_CELL, [
        Family("numpy_integers", "isinstance(block_size, np.integer)"),
    ]),
    by_hand(_clause(_RP, "accepts", argument="block_size"), "report_block_size_one_less", REPORT_CELL,
            wrapper(_RR, "block_size = max(1, block_size - 1)")),
    converted(_clause(_RP, "accepts", argument="seed"), _RR, REPORT_CELL, "to_32_bits", "True",
              "seed % 2**32 + 1"),
    *refused(_clause(_RP, "accepts", argument="matched"), _RR, REPORT_CELL, [
        Family("false", "matched is False"),
    ]),
    converted(_clause(_RP, "accepts", argument="matched"), _RR, REPORT_CELL, "to_true", "True", "True"),
    by_hand(_clause(_RP, "returns"), "report_echoes_nothing", REPORT_CELL,
            wrapper(_RR, result=_report(block_size="0", matched="not result.matched"))),
    by_hand(_clause(_RP, "returns"), "report_float_counts", REPORT_CELL, wrapper(_RR, result=_report(
        extra_forward_evaluations="float(result.extra_forward_evaluations)",
        saved_peak_states="float(result.saved_peak_states)",
        replayed_peak_states="float(result.replayed_peak_states)",
        first_mismatch="None if result.first_mismatch is None else float(result.first_mismatch)"))),
    # block_size kept as given: a numpy integer stays numpy in the record.
    by_hand(_clause(_RP, "returns"), "report_keeps_numpy_block_size", REPORT_CELL,
            wrapper(_RR, result=_report(block_size="block_size"))),
    by_hand(_clause(_RP, "returns"), "report_runs_swapped", REPORT_CELL,
            wrapper(_RR, result=_report(saved="result.replayed", replayed="result.saved"))),
    by_hand(_clause(_RP, "purity"), "report_counter_read_whole", REPORT_CELL, wrapper(
        _RR, "start = chain.forward_evaluations",
        result=_report(saved=_run("result.saved.cotangents", "chain.forward_evaluations - start",
                                  "result.saved.replayed_evaluations", "result.saved.peak_states")))),
    mutates(_clause(_RP, "purity"), _RR, REPORT_CELL, "report_doubles_z0", "z0.__imul__(2.0)", after=True),
    *other_exception(_clause(_RP, "raises", argument="block_size", raises="TypeError"), _RR, REPORT_CELL, [
        Family("not_an_integer", "isinstance(block_size, (bool, float, str)) or block_size is None"),
    ]),
    *other_exception(_clause(_RP, "raises", argument="block_size", raises="ValueError"), _RR, REPORT_CELL, [
        Family("out_of_range", "isinstance(block_size, int) and not isinstance(block_size, bool) and "
               "not 1 <= block_size <= chain.depth"),
    ]),
    *other_exception(_clause(_RP, "raises", argument="chain"), _RR, REPORT_CELL, [
        Family("not_a_chain", "not isinstance(chain, StochasticChain)"),
    ]),
    *other_exception(_clause(_RP, "raises", argument="z0"), _RR, REPORT_CELL, [
        Family("list", "isinstance(z0, list)"),
    ]),
]

#: The reading the docstring settles: first_mismatch's int may be a numpy integer.
_READINGS = [
    by_hand(_clause("first_mismatch", "returns"), "first_mismatch_numpy_index", MISMATCH_CELL,
            wrapper(_FM, result="None if result is None else np.int64(result)")),
]

WITNESSES = Witnesses(CONTRACT, (*_STORE_ALL, *_CHECKPOINTED, *_MISMATCH, *_REPORT), tuple(_READINGS))
