"""Hidden suite of Exercise 3 (best uniform block length): two autograded test cells.

``ex3_best_block_length_tests`` (4 points, 9 properties) grades
``best_block_length(depth)`` one idea per property, so a single mistake costs
only the properties it breaks: the visible examples, the minimum peak, the
tie-break, the replay count (checked against the student's *own* ``k``, so a
wrong ``k`` is not charged twice), the record's types, every small depth
``1..40`` (where ``k = 1`` and ``k = L`` matter), the input contract (every
bad kind of depth, Python and numpy, with the exact exception), numpy depths
giving the same record as Python ints, and independence from earlier calls.

``ex3_block_table_tests`` (2 points, 8 properties) grades ``block_table``:
the visible examples, order and repeats (depths only, so a wrong
``best_block_length`` does not fail it), agreement with the reference, invalid
depths and a non-iterable raising (the first bad depth decides), the iterables
it accepts (tuples, ranges, generators, numpy integer arrays), its declared
default, the list it is given left unchanged, and independence from earlier
calls. The clauses about consistency judge the student's table against the
student's own answers (the iterables against the table for the same depths as
a list, repeated calls against the first call), so a wrong record costs
``visible_examples`` and ``matches_best_block_length`` and nothing else.

``CONTRACT`` lists every clause of both docstrings with the properties that
check it (``tests/autograder/test_contract_coverage.py`` derives the clauses
from the notebook and fails when one is missing).

Depths stay in ``1..GRADED_MAX_DEPTH`` (20 000), the range the notebook
promises: there a plain scan over every ``k``, calling the harness each time,
answers in about 0.05 s, and no call sends more than ``TABLE_MAX_DEPTHS`` depths
to ``block_table``, so the slowest call of a plain scan stays well under a
fifth of the worker's 10 s per-call limit (``tests/autograder/suites/test_ex3.py``
times it). For the same reason the suite never calls ``block_table()`` with
its default range: with a scan that is about 8.4 million harness calls (12 to
20 s measured, above the limit). ``default_depths`` reads the default from the
signature instead (``Student.defaults``), and the docstring tells the student so.

Expected values come from ``ch11_solutions.ex3_block_length``. Every mismatch
carries the whole expected and obtained records and the input ``depth`` (or
``depths``), so that catalogue entries (``wrong_answers.py``), run on the same
input, can be recognised by exact equality of their output.

Where a property makes several calls in a row (per example, or over its fixed list), they
travel in one message and the answers are judged in the order the calls were made
(``Student.batch`` says why the reported failure is the one single calls would report).

Layout. One module per graded cell under ``checks/``: ``block_length`` and ``table``, each with its
properties, strategies and judges; ``checks.shared`` holds what both use. This module registers the
cells' suites, in notebook order, and names what the rest of the package and the tests use.
"""

from __future__ import annotations

from ...api.suite import register
from .checks.block_length import _BAD_DEPTHS as _BAD_DEPTHS
from .checks.block_length import _SMALL_DEPTHS as _SMALL_DEPTHS
from .checks.block_length import BEST_MISCONCEPTIONS, BEST_SUITE
from .checks.shared import STATEFUL, same_output
from .checks.shared import _raising as _raising
from .checks.table import _BAD_TABLES as _BAD_TABLES
from .checks.table import _OTHER_ITERABLES as _OTHER_ITERABLES
from .checks.table import _WATCHED_DEPTHS as _WATCHED_DEPTHS
from .checks.table import TABLE_MAX_DEPTHS, TABLE_MISCONCEPTIONS, TABLE_SUITE
from .checks.table import _declared_default as _declared_default
from .checks.table import _is_default_depths as _is_default_depths
from .checks.table import _items as _items
from .contract import GRADED_MAX_DEPTH

__all__ = [
    "BEST_MISCONCEPTIONS",
    "BEST_SUITE",
    "GRADED_MAX_DEPTH",
    "STATEFUL",
    "TABLE_MAX_DEPTHS",
    "TABLE_MISCONCEPTIONS",
    "TABLE_SUITE",
    "same_output",
]

# Registered here, in the notebook's order: the registry lists the cells as the notebook does.
for _suite in (BEST_SUITE, TABLE_SUITE):
    register(_suite)
