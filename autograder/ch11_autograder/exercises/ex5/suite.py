"""Hidden suites of Exercise 5: checkpointed replay of a chain with one random layer.

One :class:`CellSuite` per autograded test cell of ``ex5_replay.ipynb``. The
trusted side sends the chain as the protocol's ``chain`` constructor (the
worker builds a fresh ``StochasticChain``, so its counter starts at 0) and the
generator as ``RngSeed(seed)`` (the worker builds ``default_rng(seed)``), and
computes every expected value from ``ch11_solutions.ex5_replay`` on an
identical fresh chain and generator.

Comparison rules, and why:

* Counts are compared exactly. A count may be a Python ``int`` or a numpy
  integer scalar (an index from ``np.flatnonzero`` or a count from numpy
  arithmetic is still an exact integer); floats and bools are refused.
* Cotangents: a float64 array of shape ``(depth + 1, width)``. Store-all and
  replayed values must agree with the reference bit for bit, or to a relative
  :data:`COTANGENT_RTOL` in every entry. The tolerance admits a reverse rule
  written with its three factors associated differently from
  ``chain.backward``: over depth <= 40, each layer adds at most a few ulps of
  relative difference (measured: under 3e-16 per layer, 2.4e-15 over a whole
  chain), far below 1e-10, while every catalogued mistake changes entries by
  more than 1e-3 relative. The exercise's claims are bitwise, but between the
  student's *own* runs: matched replay must equal a run without replay bit for
  bit, and an unmatched replay must differ from it in exactly the rows the
  reference's does. When the student's bits are the reference's, those are
  checked against the reference's store-all; otherwise against the student's
  ``block_size=1`` run, which replays nothing and so is store-all in the
  student's own operation order.
* ``first_mismatch`` is compared exactly (index or ``None``).
* Arguments after a call (watched calls): z0 must come back bit for bit, the
  caller's generator in the reference's state and a fresh chain's counter grown
  by the documented work; the last two only where the run's own values are
  right, so a wrong stream or extra work is not charged twice.
* Kept objects: one chain shared by calls of all three chain functions, each
  call of the function under test compared with the student's own call on a
  fresh chain; one generator used by two calls, the second judged from the
  state the first left it in.

Catalogue entries (``wrong_answers.py``) are hooked in per
property. Each property is written once as a function of the ``Student`` it calls, so the
same code that judges the student computes what a catalogued mistake would
have reported; feedback names the mistake whose report equals the student's.
Entries whose outputs coincide everywhere (four ways to replay from an
advanced generator) are named as one misconception.

Layout. One module per graded cell under ``checks/`` (``store_all``, ``checkpointed``,
``first_mismatch``, ``report``), each with its properties and judges; ``checks.calls`` holds the
judges of the call contract the functions share and ``checks.shared`` the runs, the reference and
how a judge becomes a property; the strategies are ``strategies``. This module registers the cells'
suites, in notebook order, and names what the rest of the package and the tests use.
"""

from __future__ import annotations

from ...api.suite import Record as Record
from ...api.suite import RngSeed as RngSeed
from ...api.suite import register
from .checks.calls import _rng_draws as _rng_draws
from .checks.checkpointed import _ALL_VISIBLE as _ALL_VISIBLE
from .checks.checkpointed import (
    CHECKPOINTED_SUITE,
    judge_checkpointed_arguments,
    judge_checkpointed_counts,
    judge_checkpointed_left_arguments,
    judge_checkpointed_refusals,
    judge_checkpointed_sequence,
    judge_checkpointed_used_chain,
    judge_checkpointed_used_generator,
    judge_matched_bitwise,
    judge_unmatched_layout,
)
from .checks.first_mismatch import _VISIBLE_PAIRS as _VISIBLE_PAIRS
from .checks.first_mismatch import FIRST_MISMATCH_SUITE, judge_first_mismatch, judge_first_mismatch_bits
from .checks.report import (
    REPLAY_REPORT_SUITE,
    judge_report_arguments,
    judge_report_mismatch,
    judge_report_peak,
    judge_report_runs,
    judge_report_used_chain,
    judge_report_work,
)
from .checks.shared import _CHECKPOINTED_CALL as _CHECKPOINTED_CALL
from .checks.shared import _RUN_FIELDS as _RUN_FIELDS
from .checks.shared import _STORE_ALL_CALL as _STORE_ALL_CALL
from .checks.shared import _STREAM_NAME as _STREAM_NAME
from .checks.shared import STREAM_GROUP
from .checks.shared import _agrees as _agrees
from .checks.shared import _bits_equal as _bits_equal
from .checks.shared import _chain as _chain
from .checks.shared import _from_shown as _from_shown
from .checks.shared import _local_student as _local_student
from .checks.shared import _reference_replayed as _reference_replayed
from .checks.shared import _reference_saved as _reference_saved
from .checks.shared import _used_chain_example as _used_chain_example
from .checks.store_all import _VISIBLE_STORE_ALL as _VISIBLE_STORE_ALL
from .checks.store_all import (
    STORE_ALL_SUITE,
    judge_store_all_counts,
    judge_store_all_left_arguments,
    judge_store_all_refusals,
    judge_store_all_sequence,
    judge_store_all_used_chain,
    judge_store_all_values,
)
from .strategies import replaying_cases as replaying_cases

__all__ = [
    "CHECKPOINTED_SUITE",
    "FIRST_MISMATCH_SUITE",
    "REPLAY_REPORT_SUITE",
    "STORE_ALL_SUITE",
    "STREAM_GROUP",
    "judge_checkpointed_arguments",
    "judge_checkpointed_counts",
    "judge_checkpointed_left_arguments",
    "judge_checkpointed_refusals",
    "judge_checkpointed_sequence",
    "judge_checkpointed_used_chain",
    "judge_checkpointed_used_generator",
    "judge_first_mismatch",
    "judge_first_mismatch_bits",
    "judge_matched_bitwise",
    "judge_report_arguments",
    "judge_report_mismatch",
    "judge_report_peak",
    "judge_report_runs",
    "judge_report_used_chain",
    "judge_report_work",
    "judge_store_all_counts",
    "judge_store_all_left_arguments",
    "judge_store_all_refusals",
    "judge_store_all_sequence",
    "judge_store_all_used_chain",
    "judge_store_all_values",
    "judge_unmatched_layout",
]

# Registered here, in the notebook's order: the registry lists the cells as the notebook does.
for _suite in (STORE_ALL_SUITE, CHECKPOINTED_SUITE, FIRST_MISMATCH_SUITE, REPLAY_REPORT_SUITE):
    register(_suite)
