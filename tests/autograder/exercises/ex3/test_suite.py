"""Exercise 3's hidden suites, catalogue and notebook, graded through the real worker.

Fast tests check the wiring (grade ids, points, the catalogue's targets), the claims the
feedback makes (round(sqrt L) and isqrt(L) always reach the minimum peak below the graded
maximum) and the suite's own type-aware matcher, each beside a variant the same check rejects.
Worker tests (marked slow) build submissions from the generated source notebook and grade
both cells in one unsandboxed, quiet worker, as the grader does: reference -> full marks;
released stub -> zero; a plain scan written differently -> full marks, and its slowest call
the suite makes stays under a fifth of the course's per-call limit; each catalogue entry -> loses
points in exactly the cells it names and is named in their feedback.

The worker runs no figure cell (the registry's ``WORKER_SKIP_CELLS``, as the grader): it
only draws, and with a scan-based entry it would call best_block_length for all 4081 depths
at every worker start (about 10 s each), which the verdicts do not depend on.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.exercises.ex3 import suite as suite_module
from ch11_autograder.exercises.ex3.contract import GRADED_MAX_DEPTH
from ch11_autograder.exercises.ex3.suite import (
    BEST_MISCONCEPTIONS,
    BEST_SUITE,
    STATEFUL,
    TABLE_MAX_DEPTHS,
    TABLE_MISCONCEPTIONS,
    TABLE_SUITE,
    same_output,
)
from ch11_autograder.protocol import Laid, Once, Record, wire_equal
from ch11_autograder.trusted.cell_suite import Property
from ch11_autograder.trusted.misconception_naming import name_misconception
from ch11_autograder.trusted.mismatch import Mismatch
from ch11_autograder.trusted.registry import get_suite
from ch11_autograder.trusted.roundtrip import roundtrip
from ch11_autograder.trusted.submission_cells import WorkerCells, autograded_test_cells
from ch11_autograder.trusted.verdicts import CellVerdict, format_value
from ch11_solutions import ex3_block_length as ref
from support import exercise_grading

NOTEBOOK = "ex3_block_length"
SUITES = (BEST_SUITE, TABLE_SUITE)
POINTS = {"ex3_best_block_length_tests": 4.0, "ex3_block_table_tests": 2.0}
ENTRIES = catalogue("ex3")
#: Entries that cannot be named, with a text their feedback must show instead: a mistake that
#: shows only as an exception (a scan over an empty range at L = 1) has no output to compare, and
#: a stateful one (suites.ex3.STATEFUL) is never offered as a misconception.
UNNAMEABLE = {
    "scan_skips_one_block": ("(1)", "1, 2, 3"),
    "warm_start_scan": ("depend on the depth alone", "depend on its depth alone"),
}


def _source_notebook():
    return exercise_grading.source_notebook("ex3")


# --------------------------------------------------------------------------- wiring


def test_suites_match_the_notebooks_autograded_cells():
    cells = autograded_test_cells(_source_notebook())
    assert {c.metadata.nbgrader.grade_id: c.metadata.nbgrader.points for _, c in cells} == POINTS
    for suite in SUITES:
        assert get_suite(suite.grade_id) is suite
        assert suite.points == POINTS[suite.grade_id]
    assert [len(s.properties) for s in SUITES] == [9, 8]


def test_catalogue_entries_target_cells_of_the_notebook():
    nb = _source_notebook()
    answers = {c.id: c.source for c in nb.cells if c.metadata.nbgrader.get("solution")}
    assert len(ENTRIES) >= 5
    for entry in ENTRIES:
        assert f"def {entry.replaces}(" in answers[entry.answer_cell], entry.name
        assert set(entry.loses) <= set(POINTS), entry.name
        compile(entry.source, entry.name, "exec")


def test_every_best_block_length_entry_is_a_misconception_of_both_cells():
    # Stateful entries excepted: run in the trusted process they answer from leftover state.
    assert STATEFUL <= {e.name for e in ENTRIES}
    best = [e.title for e in ENTRIES if e.replaces == "best_block_length" and e.name not in STATEFUL]
    table = [e.title for e in ENTRIES if e.replaces == "block_table" and e.name not in STATEFUL]
    assert sorted(m.name for m in BEST_MISCONCEPTIONS) == sorted(best)
    assert sorted(m.name for m in TABLE_MISCONCEPTIONS) == sorted(best + table)


def test_a_scan_finds_the_best_block_length_at_the_largest_graded_depth():
    # The notebook sanctions a plain scan; what it costs against the call limit is the next test's.
    def scan(depth):
        costs = [ref.uniform_checkpoint_cost(depth, k) for k in range(1, depth + 1)]
        return min(costs, key=lambda c: c.peak_state_units).block_size

    assert scan(GRADED_MAX_DEPTH) == ref.best_block_length(GRADED_MAX_DEPTH).block_size
    assert GRADED_MAX_DEPTH <= 20_000


def _plain_scan(depth):
    # The notebook's sanctioned answer: every k from 1 to L through the harness.
    best = None
    for k in range(1, int(depth) + 1):
        cost = ref.uniform_checkpoint_cost(int(depth), k)
        if best is None or cost.peak_state_units < best.peak_state_units:
            best = cost
    return best


def test_the_slowest_call_of_a_plain_scan_is_a_fifth_of_the_call_limit():
    # The suite's costliest calls: best_block_length at the graded maximum, and a block_table of
    # TABLE_MAX_DEPTHS depths all at that maximum. Both must leave the limit a factor of 5.
    # CPU seconds, not wall: other work on a shared machine stretches wall time, not this cost.
    limit = exercise_grading.CALL_TIMEOUT
    start = time.process_time()
    _plain_scan(GRADED_MAX_DEPTH)
    one = time.process_time() - start
    start = time.process_time()
    for _ in range(TABLE_MAX_DEPTHS):
        _plain_scan(GRADED_MAX_DEPTH)
    table = time.process_time() - start
    assert max(one, table) * 5 <= limit, (
        f"plain scan: {one:.2f} CPU-s per depth, {table:.2f} CPU-s per table; limit {limit} s")


def test_the_suites_bad_inputs_are_bad_for_the_reference():
    # Each (value, exception) the suites send is what the reference raises: the tables state the contract.
    for depth, wanted in suite_module._BAD_DEPTHS:
        with pytest.raises(Exception) as caught:
            ref.best_block_length(depth)
        assert type(caught.value).__name__ == wanted, depth
    for depths, wanted in suite_module._BAD_TABLES:
        with pytest.raises(Exception) as caught:
            ref.block_table(depths)
        assert type(caught.value).__name__ == wanted, depths
    for depths in suite_module._OTHER_ITERABLES:
        # What the worker passes: a generator for Once, the laid-out array for Laid.
        passed = (iter(depths.items) if isinstance(depths, Once)
                  else depths.array() if isinstance(depths, Laid) else depths)
        table = ref.block_table(passed)
        assert isinstance(table, list) and all(type(c.peak_states) is int for c in table)
        assert len(table) <= TABLE_MAX_DEPTHS
        assert table == ref.block_table(suite_module._items(depths))  # what the property compares with
    for depths in suite_module._WATCHED_DEPTHS:
        kept = roundtrip(depths)
        assert len(ref.block_table(depths)) <= TABLE_MAX_DEPTHS
        assert same_output(kept, roundtrip(depths))


def test_the_declared_default_is_judged_by_its_depths():
    assert suite_module._is_default_depths(roundtrip(suite_module._declared_default(ref.block_table)))
    assert suite_module._is_default_depths(list(range(16, 4097)))
    assert suite_module._is_default_depths(np.arange(16, 4097))
    # The same check rejects a default one depth short, a None sentinel, floats and a missing default.
    for wrong in (range(16, 4096), range(17, 4097), None, [float(d) for d in range(16, 4097)], "no default declared"):
        assert not suite_module._is_default_depths(wrong), wrong


def test_reading_depths_twice_is_right_for_every_iterable_but_a_generator():
    # Why accepts_iterables sends generators: the catalogued two-loop answer passes every other kind.
    (entry,) = [e for e in ENTRIES if e.name == "table_reads_depths_twice"]
    for depths in ([1000, 16], (1000, 16), range(16, 20), np.array([1000, 16])):
        assert entry.function(depths) == ref.block_table(depths)
    assert entry.function(iter([1000, 16])) == [] != ref.block_table(iter([1000, 16]))


def test_naming_a_mistake_leaves_the_reported_inputs_as_they_were():
    # The engine runs each candidate on the mismatch's own inputs; an entry that empties its list
    # would otherwise change what the feedback shows and what the next candidate sees.
    depths = [1000, 16, 64]
    prop = Property("table", "block_table.", lambda student: None, TABLE_MISCONCEPTIONS, same_output)
    name_misconception(prop, [Mismatch({"depths": depths}, None, [])])
    assert depths == [1000, 16, 64]
    (queue,) = [e for e in ENTRIES if e.name == "table_uses_up_the_callers_list"]
    queue.function(depths)
    assert depths == []  # the same check sees the entry as written change it


def test_feedback_shows_ranges_and_generators_as_sent():
    assert format_value(range(4096, 15, -1360)) == "range(4096, 15, -1360)"
    assert format_value(Once((1000, 16))) == "iter([1000, 16])"


def test_no_two_entries_agree_on_every_small_depth():
    # small_depths gives all its outcomes as evidence, so an entry named there is the only one
    # that reproduces the student's whole list, whatever _BEST_ORDER says.
    def outputs(function):
        out = []
        for depth in suite_module._SMALL_DEPTHS:
            try:
                out.append(roundtrip(function(depth)))
            except Exception as error:
                out.append(type(error).__name__)
        return out

    seen = {repr(outputs(ref.best_block_length)): "the reference"}  # entries right here never fail small_depths
    for m in BEST_MISCONCEPTIONS:
        key = repr(outputs(m.implementation))
        if seen.get(key) == "the reference":
            continue
        assert key not in seen, (m.name, seen.get(key))
        seen[key] = m.name


def test_raise_checking_misconceptions_report_the_exception_like_the_suite():
    (deny,) = [m for m in suite_module._raising(BEST_MISCONCEPTIONS) if m.name.startswith("Validation by")]
    assert deny.implementation(depth=16.0) == "raised TypeError"
    assert same_output(roundtrip(deny.implementation(depth=np.float32(16.0))), roundtrip(ref.best_block_length(16)))


# --------------------------------------------------------------------------- claims the feedback makes


def _min_peak_and_smallest(depths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    peaks, smallest = [], []
    for depth in depths:
        k = np.arange(1, depth + 1)
        m = -(-depth // k) + k
        peaks.append(m.min())
        smallest.append(k[m == m.min()][0])
    return np.array(peaks), np.array(smallest)


def test_round_and_floor_of_the_root_reach_the_minimum_peak_but_not_the_tie_break():
    depths = np.arange(1, GRADED_MAX_DEPTH + 1, 23, dtype=np.int64)
    peaks, smallest = _min_peak_and_smallest(depths)
    floor_k = np.array([math.isqrt(int(d)) for d in depths])
    round_k = np.maximum(1, np.rint(np.sqrt(depths)).astype(np.int64))
    for k in (floor_k, round_k):
        assert np.array_equal(-(-depths // k) + k, peaks)
        assert np.mean(k != smallest) > 0.9
    # The same check rejects a choice that does not always reach the minimum: half the root.
    half_k = np.array([max(1, math.isqrt(int(d)) // 2) for d in depths])
    assert not np.array_equal(-(-depths // half_k) + half_k, peaks)


def test_same_output_tells_float_counts_from_int_counts():
    right = roundtrip(ref.best_block_length(64))
    floats = Record("BlockChoice", {**right.fields, "peak_states": 16.0, "replay_evaluations": 56.0})
    assert wire_equal(right, floats)  # why a type-aware matcher is needed
    assert not same_output(right, floats)
    assert same_output(right, roundtrip(ref.best_block_length(64)))
    assert not same_output([right], [floats])


# --------------------------------------------------------------------------- through the worker


def _cells(replace: dict[str, str] | None = None, append: dict[str, str] | None = None, *,
           released: bool = False) -> WorkerCells:
    return exercise_grading.cells("ex3", append, replace=replace, released=released)


def grade(cells: WorkerCells) -> dict[str, CellVerdict]:
    return exercise_grading.grade("ex3", cells)


def _scores(verdicts: dict[str, CellVerdict]) -> dict[str, float]:
    return {grade_id: verdict.score for grade_id, verdict in verdicts.items()}


# The reference, the released stub and where each entry loses: tests/autograder/exercises/test_suites.py.


PLAIN_SCAN = {
    "ex3_best_block_length": '''
def best_block_length(depth):
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError("depth must be an integer")
    depth = int(depth)
    if depth < 1:
        raise ValueError("depth must be >= 1")
    best = None
    for k in range(1, depth + 1):
        cost = uniform_checkpoint_cost(depth, k)
        if best is None or cost.peak_state_units < best.peak_state_units:
            best = cost
    return BlockChoice(depth=depth, block_size=best.block_size, peak_states=best.peak_state_units,
                       replay_evaluations=best.recomputed_forward_evaluations, sqrt_depth=depth ** 0.5)
''',
    "ex3_block_table": '''
def block_table(depths=range(16, 4097)):
    table = []
    for d in depths:
        table.append(best_block_length(d))
    return table
''',
}


@pytest.mark.slow
def test_a_plain_scan_written_differently_earns_full_marks():
    verdicts = grade(_cells(replace=PLAIN_SCAN))
    assert _scores(verdicts) == POINTS, [v.message() for v in verdicts.values()]


#: Correct, written differently from the reference and the plain scan: validation through
#: numbers.Integral (numpy integers are registered there, bools excluded by hand) before any
#: comparison, so floats below 1 (0.5, -3.0), which input_contract draws since it checks every
#: float family on both sides of 1, raise TypeError as the contract says; a vectorised scan.
INTEGRAL_CHECK = {
    "ex3_best_block_length": '''
import numbers


def best_block_length(depth):
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, numbers.Integral):
        raise TypeError(f"depth must be an integer, not {type(depth).__name__}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    depth = int(depth)
    ks = np.arange(1, depth + 1)
    k = int(ks[np.argmin(-(-depth // ks) + ks)])  # argmin: the first, i.e. smallest, minimizer
    blocks = -(-depth // k)
    return BlockChoice(depth, k, blocks + k, depth - blocks, math.sqrt(depth))
''',
}


#: "The result depends on depth alone: a cache is fine, results that depend on earlier calls are
#: not." Correct answers that cache, appended after the reference (so they wrap it): full marks.
CACHING = {
    "functools.lru_cache(typed=True) around the whole function": '''
import functools

_reference_best = best_block_length


@functools.lru_cache(maxsize=None, typed=True)
def best_block_length(depth):
    return _reference_best(depth)
''',
    "a dict of records filled after the input checks": '''
_reference_best = best_block_length
_records = {}


def best_block_length(depth):
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {type(depth).__name__}")
    depth = int(depth)
    if depth not in _records:
        _records[depth] = _reference_best(depth)
    return _records[depth]
''',
}


@pytest.mark.slow
def test_an_integral_check_before_the_range_check_earns_full_marks():
    verdicts = grade(_cells(replace=INTEGRAL_CHECK))
    assert _scores(verdicts) == POINTS, [v.message() for v in verdicts.values()]


@pytest.mark.slow
@pytest.mark.parametrize("answer", CACHING, ids=list(CACHING))
def test_a_cache_that_never_changes_a_result_earns_full_marks(answer):
    verdicts = grade(_cells(append={"ex3_best_block_length": CACHING[answer]}))
    assert _scores(verdicts) == POINTS, [v.message() for v in verdicts.values()]


#: Caches that change a result: each answers 9973.0 from an entry an integer 9973 left, where
#: asked first it raised TypeError.
CHANGING_CACHES = {
    "a dict keyed on the argument before the input checks": (
        "_reference_best = best_block_length\n_answers = {}\n\n\n"
        "def best_block_length(depth):\n"
        "    if depth not in _answers:\n"
        "        _answers[depth] = _reference_best(depth)\n"
        "    return _answers[depth]\n"
    ),
    # Called positionally it keys a Python int by itself, but np.int64(9973) and 9973.0 by equal tuples.
    "functools.lru_cache without typed=True": (
        "import functools\n\nbest_block_length = functools.lru_cache(maxsize=None)(best_block_length)\n"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("answer", CHANGING_CACHES, ids=list(CHANGING_CACHES))
def test_a_cache_that_changes_a_result_breaks_the_purity_clause(answer):
    verdicts = grade(_cells(append={"ex3_best_block_length": CHANGING_CACHES[answer]}))
    best = verdicts["ex3_best_block_length_tests"]
    failed = {f.property: f for f in best.failures}
    assert "repeated_calls" in failed, best.message()
    assert "raised TypeError" in best.message() and "keep float" in best.message(), best.message()
    assert best.score < POINTS["ex3_best_block_length_tests"]


#: Wrong for 1023 asked right after 1024, and hanging for 1023 asked right after 1022: in
#: repeated_calls' explicit example [1023, 80] the wrong record comes first (1024, 1023), the hang
#: two calls later (1022, 1023), in the same message.
WRONG_THEN_HANGS = """
_reference_best = best_block_length
_previous = [0]


def best_block_length(depth):
    previous, _previous[0] = _previous[0], depth
    if depth == 1023 and previous == 1024:
        return _reference_best(1022)
    if depth == 1023 and previous == 1022:
        while True:
            pass
    return _reference_best(depth)
"""


@pytest.mark.slow
def test_a_wrong_record_is_reported_though_a_later_call_of_its_message_hangs():
    # One call at a time the check stops at the wrong record and never makes the hanging call; sent
    # together, the hang is made (and costs its limit) but never reached: the same failure is reported.
    verdicts = grade(_cells(append={"ex3_best_block_length": WRONG_THEN_HANGS}))
    failed = {f.property: f for f in verdicts["ex3_best_block_length_tests"].failures}
    assert set(failed) == {"repeated_calls"}, verdicts["ex3_best_block_length_tests"].message()
    failure = failed["repeated_calls"]
    assert failure.kind == "mismatch" and failure.inputs == {"depth": 1023}
    assert "for d in [1023, 80, 1024], in this order" in failure.note


@pytest.mark.slow
def test_hard_coding_the_visible_answers_earns_only_the_visible_properties():
    hard_coded = {
        "ex3_best_block_length": (
            "def best_block_length(depth):\n"
            "    return {64: BlockChoice(64, 8, 16, 56, 8.0),\n"
            "            1000: BlockChoice(1000, 28, 64, 964, math.sqrt(1000))}[depth]\n"
        )
    }
    verdicts = grade(_cells(replace=hard_coded))
    best = verdicts["ex3_best_block_length_tests"]
    assert best.passed == ("visible_examples",), best.message()
    assert best.score == pytest.approx(4 / len(BEST_SUITE.properties), abs=0.01)
    # Every table property needs a depth other than 64 and 1000 (16 is in each explicit example, and
    # default_depths calls the default's last depths, 4091..4096)
    # or the contract's exception for an invalid depth; the lookup raises KeyError for all of them.
    assert verdicts["ex3_block_table_tests"].score == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_catalogue_entry_is_named_where_it_loses(entry):
    verdicts = exercise_grading.graded_entry("ex3", entry.name)
    for grade_id in entry.loses:
        verdict = verdicts[grade_id]
        if entry.name not in UNNAMEABLE:
            named = [f.misconception for f in verdict.failures if f.misconception]
            assert named and set(named) == {entry.title}, (entry.name, verdict.message())
            assert entry.title in verdict.message()
        else:
            assert any(text in verdict.message() for text in UNNAMEABLE[entry.name]), verdict.message()
            # No other entry's name either: warm_start_scan fails small_depths at depth 10 exactly as
            # floor_sqrt does, but passes visible_examples and smallest_tied_k, which floor_sqrt fails
            # (its kill-table row), so its feedback must not give floor_sqrt's advice.
            assert not [f.misconception for f in verdict.failures if f.misconception], verdict.message()


@pytest.mark.slow
def test_round_sqrt_feedback_says_only_the_tie_break_exposes_it():
    (entry,) = [e for e in ENTRIES if e.name == "rounded_sqrt"]
    first = grade(_cells(append={entry.answer_cell: entry.source}))
    second = grade(_cells(append={entry.answer_cell: entry.source}))
    text = first["ex3_best_block_length_tests"].message()
    assert {f.property for f in first["ex3_best_block_length_tests"].failures} == {
        "visible_checks",  # the notebook's own check asks for k = 28 at depth 1000
        "visible_examples",
        "smallest_tied_k",
        "small_depths",
    }
    assert "always reaches the minimum peak" in text and "tie-break" in text
    # Grading is deterministic: the same submission, the same words.
    assert {k: v.message() for k, v in first.items()} == {k: v.message() for k, v in second.items()}
