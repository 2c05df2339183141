"""Exercise 5's contract: the notebook, its cells' grade ids and points, the cotangent tolerance, the clause table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ...api.contract import Clause, ends, layouts, scalars

NOTEBOOK = "ex5_replay"

STORE_ALL_CELL = "ex5_store_all_cotangents"
STORE_ALL_TESTS = "ex5_store_all_cotangents_tests"
PREDICTION = "ex5_prediction"
CHECKPOINTED_CELL = "ex5_checkpointed_cotangents"
CHECKPOINTED_TESTS = "ex5_checkpointed_cotangents_tests"
MISMATCH_CELL = "ex5_first_mismatch"
MISMATCH_TESTS = "ex5_first_mismatch_tests"
REPORT_CELL = "ex5_replay_report"
REPORT_TESTS = "ex5_replay_report_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex5_figure"
BOUNDARY = "ex5_boundary_contract"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {
        STORE_ALL_TESTS: 3,
        PREDICTION: 1,
        CHECKPOINTED_TESTS: 5,
        MISMATCH_TESTS: 2,
        REPORT_TESTS: 2,
        BOUNDARY: 3,
    }
)

#: Relative agreement with the reference that the hidden suite accepts for a
#: derivative computed with another association of the reverse rule's factors.
#: Stated to students in the Task 1 prose.
COTANGENT_RTOL = 1e-10


# --------------------------------------------------------------------------- the contract, clause by clause


def _properties(grade_id: str) -> Callable[..., tuple[str, ...]]:
    return lambda *names: tuple(f"{grade_id}/{name}" for name in names)


_s, _c, _m, _r = map(_properties, (STORE_ALL_TESTS, CHECKPOINTED_TESTS, MISMATCH_TESTS, REPORT_TESTS))
#: The kinds of block_size drawn where a checkpointed run's or a report's output promise is checked:
#: Python and numpy integers, and the ends of [1, L].
_BLOCK_SIZES = (*scalars("block_size", "int", "int64", "int32"), *ends("block_size", 1, high="chain.depth"))

_SA, _CC, _FM, _RR = "store_all_cotangents", "checkpointed_cotangents", "first_mismatch", "replay_report"

#: Every rule of the four docstrings (``ch11_solutions.ex5_replay``), in docstring order, with the
#: properties that fail when it is broken. That z0 is left unmodified and that rng and the chain's
#: counter advance by exactly the documented amount is read off the arguments after a watched call
#: (the ``*_leaves_arguments`` properties); that counts do not depend on a chain's or a generator's
#: earlier use is checked on one kept chain or generator shared by several calls (``*_used_*``).
CONTRACT: tuple[Clause, ...] = (
    Clause(_SA, "behaviour", "one forward pass, reverse rules L-1 .. 0; row i is dL/dz_i", _s("store_all_derivatives")),
    Clause(_SA, "tolerance", "derivatives within a relative 1e-10 of the reference", _s("store_all_derivatives")),
    Clause(_SA, "accepts", "any StochasticChain (one layer too)", _s("store_all_derivatives", "store_all_counts"),
           "chain"),
    # The properties that check z0's accepted form send it C-ordered, strided or read-only (api.suite.laid).
    Clause(_SA, "accepts", "a float64 array of shape (width,), in any memory layout", _s("store_all_derivatives"), "z0",
           drawn=layouts("z0", ndim=1)),
    Clause(_SA, "accepts", "a numpy Generator (advanced by the draw)",
           _s("store_all_derivatives", "store_all_leaves_arguments"), "rng"),
    Clause(_SA, "returns", "ReplayRun: float64 (L+1, width) cotangents; counts L, 0, L + 1 as ints",
           _s("store_all_form", "store_all_counts")),
    Clause(_SA, "purity", "no result depends on earlier calls, a used chain's among them",
           _s("store_all_repeated_calls", "store_all_used_chain")),
    Clause(_SA, "purity", "z0 unmodified; rng advanced by one draw; counter grows by L",
           _s("store_all_leaves_arguments", "store_all_used_chain")),
    Clause(_SA, "raises", "not a StochasticChain", _s("store_all_refuses_bad_arguments"), "chain", "TypeError"),
    Clause(_SA, "raises", "rng is not a numpy Generator", _s("store_all_refuses_bad_arguments"), "rng", "TypeError"),
    Clause(_SA, "raises", "z0 is not a float64 array of shape (width,): (1, width) and (width, 1) too",
           _s("store_all_form", "store_all_refuses_bad_arguments"), "z0", "ValueError", reshaped="(chain.width,)"),
    Clause(_CC, "behaviour", "blocks of k from s = 0; replay m - 1 layers per block", _c("replay_counts")),
    Clause(_CC, "behaviour", "matched: replay from the block's snapshot", _c("matched_replay_is_store_all")),
    # checkpointed_default_and_integer_types holds a numpy block_size's run to the int's, bit for bit.
    Clause(_CC, "tolerance", "matched equals store-all bit for bit (own runs; reference to 1e-10)",
           _c("matched_replay_is_store_all", "checkpointed_default_and_integer_types")),
    Clause(_CC, "behaviour", "unmatched: replay draws from rng as the forward pass left it", _c("unmatched_replay")),
    Clause(_CC, "behaviour", "peak ceil(L/k) + k, as uniform_checkpoint_cost", _c("replay_counts")),
    Clause(_CC, "accepts", "any StochasticChain", _c("matched_replay_is_store_all", "replay_counts"), "chain"),
    Clause(_CC, "accepts", "a float64 array of shape (width,), in any memory layout", _c("matched_replay_is_store_all"),
           "z0", drawn=layouts("z0", ndim=1)),
    Clause(_CC, "accepts", "an int or numpy integer in [1, L]",
           _c("replay_counts", "checkpointed_default_and_integer_types"), "block_size", drawn=_BLOCK_SIZES),
    # Only checkpointed_used_generator meets a generator that drew before; the replay properties draw fresh ones.
    Clause(_CC, "accepts", "a numpy Generator in any state (it may have drawn before: not rewound to its seed)",
           _c("checkpointed_used_generator"), "rng"),
    Clause(_CC, "accepts", "True and False", _c("matched_replay_is_store_all", "unmatched_replay"), "matched"),
    Clause(_CC, "default", "matched=True", _c("checkpointed_default_and_integer_types"), "matched"),
    # checkpointed_default_and_integer_types checks the form for np.int64 and np.int32 block sizes.
    Clause(_CC, "returns", "ReplayRun: counts 2L - ceil(L/k), L - ceil(L/k), ceil(L/k) + k as Python ints, "
           "for a numpy integer block_size too",
           _c("checkpointed_form", "replay_counts", "checkpointed_default_and_integer_types")),
    Clause(_CC, "purity", "no result depends on earlier calls, a used chain's or generator's among them",
           _c("checkpointed_repeated_calls", "checkpointed_used_chain", "checkpointed_used_generator")),
    Clause(_CC, "purity", "z0 unmodified; rng advanced by the forward pass (and an unmatched replay) only; "
           "counter grows by 2L - ceil(L/k)", _c("checkpointed_leaves_arguments", "checkpointed_used_chain")),
    Clause(_CC, "raises", "as store-all: chain", _c("checkpointed_refuses_bad_arguments"), "chain", "TypeError"),
    Clause(_CC, "raises", "as store-all: rng", _c("checkpointed_refuses_bad_arguments"), "rng", "TypeError"),
    Clause(_CC, "raises", "block_size not an integer (bools, floats refused)",
           _c("checkpointed_refuses_bad_arguments"), "block_size", "TypeError"),
    Clause(_CC, "raises", "as store-all: z0", _c("checkpointed_refuses_bad_arguments"), "z0", "ValueError",
           reshaped="(chain.width,)"),
    Clause(_CC, "raises", "block_size not in [1, L]",
           _c("checkpointed_form", "checkpointed_refuses_bad_arguments"), "block_size", "ValueError"),
    # bitwise_comparison draws signed zeros, identical NaNs and NaNs of other bits (sign bit, payload), each
    # array in a drawn memory layout.
    Clause(_FM, "behaviour", "rows compared by bytes: 0.0 and -0.0 differ, same NaNs agree", _m("bitwise_comparison")),
    Clause(_FM, "behaviour", "scan from the last row: the largest differing index", _m("largest_differing_row")),
    # largest_differing_row sends each array in its own drawn layout (api.suite.laid).
    Clause(_FM, "accepts", "an array of at least one dimension (no rows too), in any memory layout",
           _m("largest_differing_row"), "saved", drawn=layouts("saved", ndim=2)),
    Clause(_FM, "accepts", "an array of the same shape and dtype, in any memory layout", _m("largest_differing_row"),
           "replayed", drawn=layouts("replayed", ndim=2)),
    Clause(_FM, "returns", "an int index (numpy integer accepted) or None", _m("largest_differing_row")),
    Clause(_FM, "purity", "same index swapped and repeated; arrays unmodified", _m("largest_differing_row")),
    Clause(_FM, "raises", "shapes or dtypes differ, or 0-d", _m("refuses_incomparable_arrays"), "saved", "ValueError"),
    Clause(_FM, "raises", "shapes or dtypes differ (the same size in another shape too)",
           _m("refuses_incomparable_arrays"), "replayed", "ValueError", reshaped="saved.shape"),
    # report_arguments holds a numpy block_size's report (np.int64, np.int32) to the int's.
    Clause(_RR, "behaviour", "each run its own default_rng(seed)",
           _r("report_runs", "report_first_mismatch", "report_arguments")),
    Clause(_RR, "behaviour", "work, peaks and first mismatch kept apart", _r("report_work", "report_peak")),
    Clause(_RR, "accepts", "any StochasticChain", _r("report_runs"), "chain"),
    Clause(_RR, "accepts", "a float64 array of shape (width,), in any memory layout", _r("report_runs"), "z0",
           drawn=layouts("z0", ndim=1)),
    Clause(_RR, "accepts", "an int or numpy integer in [1, L]", _r("report_work", "report_arguments"), "block_size",
           drawn=_BLOCK_SIZES),
    Clause(_RR, "accepts", "a non-negative int seed", _r("report_runs"), "seed", drawn=ends("seed", 0)),
    Clause(_RR, "accepts", "True and False", _r("report_work", "report_first_mismatch"), "matched"),
    # report_arguments sends np.int64 block sizes: the field must come back a Python int.
    Clause(_RR, "returns", "ReplayReport echoing block_size (a Python int, for a numpy integer too) and matched",
           _r("report_work", "report_peak", "report_first_mismatch", "report_runs", "report_arguments")),
    Clause(_RR, "purity", "no result depends on earlier calls, a used chain's among them; arguments unmodified",
           _r("report_runs", "report_used_chain")),
    Clause(_RR, "raises", "as checkpointed_cotangents", _r("report_arguments"), "block_size", "TypeError"),
    Clause(_RR, "raises", "as checkpointed_cotangents", _r("report_arguments"), "block_size", "ValueError"),
    Clause(_RR, "raises", "as checkpointed_cotangents: chain", _r("report_arguments"), "chain", "TypeError"),
    Clause(_RR, "raises", "as checkpointed_cotangents: z0", _r("report_arguments"), "z0", "ValueError",
           reshaped="(chain.width,)"),
)  # fmt: skip
