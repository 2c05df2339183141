"""Exercise 5's hidden suites, catalogue and notebook, graded through the real worker.

Unit tests check the suites' own parts in this process (the tolerance, the judges
against the reference, the grouping of catalogue entries that coincide, the two
expected mistakes that are right answers for this chain), each next to a variant the
same check rejects. Worker tests (marked slow) build submissions from the generated
source notebook and grade them with an unsandboxed, quiet worker: reference -> full
marks; released stub -> zero; a correct answer in another operation order -> full
marks; each catalogue entry -> loses exactly in its ``loses`` cells and is named there.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from ch11_autograder.api.suite import Mismatch, StudentError, in_process_student
from ch11_autograder.exercises.catalogue import WrongAnswer, catalogue
from ch11_autograder.exercises.ex5 import strategies
from ch11_autograder.exercises.ex5 import suite as suites
from ch11_autograder.exercises.ex5.contract import COTANGENT_RTOL
from ch11_autograder.trusted.registry import get_suite
from ch11_autograder.trusted.submission_cells import WorkerCells, autograded_test_cells
from ch11_autograder.trusted.verdicts import CellVerdict
from ch11_solutions import ex5_replay as ref
from hypothesis import given, settings
from support import exercise_grading
from trainable_harness import StateLedger, StochasticChain, make_chain, uniform_checkpoint_cost

NOTEBOOK = "ex5_replay"
SUITES = (suites.STORE_ALL_SUITE, suites.CHECKPOINTED_SUITE, suites.FIRST_MISMATCH_SUITE, suites.REPLAY_REPORT_SUITE)
POINTS = {suite.grade_id: suite.points for suite in SUITES}
ENTRIES = {entry.name: entry for entry in catalogue("ex5")}
HYP = settings(max_examples=25, derandomize=True, database=None, deadline=None)

#: The notebook's visible chain: depth 16, random layer 5, blocks of 4.
VISIBLE = strategies.make_case(16, 5, 3, 11, [0.3, -0.2, 0.5], 4, 2)

CHAIN_JUDGES = (
    suites.judge_store_all_values,
    suites.judge_store_all_counts,
    suites.judge_checkpointed_counts,
    suites.judge_matched_bitwise,
    suites.judge_unmatched_layout,
    suites.judge_report_work,
    suites.judge_report_peak,
    suites.judge_report_mismatch,
    suites.judge_report_runs,
    suites.judge_store_all_refusals,
    suites.judge_checkpointed_refusals,
    suites.judge_checkpointed_arguments,
    suites.judge_report_arguments,
)


def failing_judges(entry: WrongAnswer | None, case: dict) -> list[str]:
    """Names of the chain judges that reject ``entry`` (the reference when None) on ``case``."""
    student = suites._local_student(entry)
    failed = []
    for judge in CHAIN_JUDGES:
        try:
            judge(student, case)
        except Mismatch:
            failed.append(judge.__name__)
    return failed


def variant(name: str, replaces: str, function) -> WrongAnswer:
    """A function under test in the catalogue's shape, so the local caller can run it."""
    return WrongAnswer(name, name, "", f"ex5_{replaces}", replaces, ("-",), function)


# --------------------------------------------------------------------------- the notebook and the registry


def _source_notebook():
    return exercise_grading.source_notebook("ex5")


def test_one_registered_suite_per_autograded_cell_with_the_cells_points():
    cells = autograded_test_cells(_source_notebook())
    assert {c.metadata.nbgrader.grade_id: c.metadata.nbgrader.points for _, c in cells} == POINTS
    assert all(get_suite(grade_id) is suite for grade_id, suite in zip(POINTS, SUITES, strict=True))
    assert sum(POINTS.values()) == 12


def test_the_tolerance_the_notebook_states_is_the_one_the_suite_applies():
    prose = {c.id: c.source for c in _source_notebook().cells}["ex5-task1"]
    assert COTANGENT_RTOL == 1e-10
    assert "$10^{-10}$" in prose


def test_every_catalogue_entry_targets_a_cell_of_this_notebook():
    answer_cells = {c.id for c in _source_notebook().cells if c.metadata.nbgrader.get("solution")}
    assert len(ENTRIES) >= 5
    for entry in ENTRIES.values():
        assert entry.answer_cell in answer_cells
        assert set(entry.loses) <= set(POINTS), entry.name
        assert f"{entry.answer_cell}_tests" in entry.loses, entry.name


# --------------------------------------------------------------------------- the tolerance


def _reassociated_store_all(chain, z0, rng):
    """Store-all with the reverse rule's factors in another order: a correct derivative."""
    states = [z0]
    for i in range(chain.depth):
        states.append(chain.forward(i, states[-1], rng))
    rows = [np.ones(chain.width)]
    for i in range(chain.depth - 1, -1, -1):
        z = states[i + 1]
        rows.append((chain.weights[i] * rows[-1]) * ((1.0 - z) * (1.0 + z)))
    return np.array(rows[::-1])


@HYP
@given(case=strategies.chain_cases(max_depth=40))
def test_a_reassociated_reverse_rule_is_within_the_tolerance(case):
    chain, z0, seed = suites._chain(case), case["z0"], case["seed"]
    reassociated = _reassociated_store_all(chain, z0, np.random.default_rng(seed))
    saved = suites._reference_saved(case)
    assert suites._agrees(reassociated, saved)
    unmatched = suites._reference_replayed(case, False).cotangents
    if not suites._bits_equal(unmatched, saved):
        # What an unmatched stream changes is far outside the tolerance.
        assert not suites._agrees(unmatched, saved)


def test_the_tolerance_path_is_really_taken_and_refuses_a_real_error():
    saved = suites._reference_saved(VISIBLE)
    reassociated = _reassociated_store_all(suites._chain(VISIBLE), VISIBLE["z0"], np.random.default_rng(2))
    assert not suites._bits_equal(reassociated, saved)
    assert suites._agrees(reassociated, saved)
    assert not suites._agrees(saved * (1 + 1e-9), saved)
    assert not suites._agrees(np.where(saved == 1.0, np.nan, saved), saved)
    assert not suites._agrees(saved.astype(np.float32).astype(np.float64), saved)
    assert not suites._agrees(saved[:-1], saved)


# --------------------------------------------------------------------------- judges in this process


@HYP
@given(case=strategies.chain_cases())
def test_every_judge_accepts_the_reference(case):
    assert failing_judges(None, case) == []


def test_every_judge_accepts_the_visible_and_prediction_chains():
    for case in (suites._VISIBLE_STORE_ALL, *suites._ALL_VISIBLE):
        assert failing_judges(None, case) == []


@pytest.mark.parametrize("name", suites.STREAM_GROUP)
def test_a_broken_snapshot_fails_only_the_matched_stream_judges(name):
    assert failing_judges(ENTRIES[name], VISIBLE) == [
        "judge_matched_bitwise",
        "judge_report_mismatch",
        "judge_report_runs",
    ]


@HYP
@given(case=strategies.chain_cases())
def test_the_grouped_snapshot_entries_report_the_same_derivatives(case):
    # The premise of naming them as one misconception: on any input their outputs coincide.
    outputs = []
    for name in suites.STREAM_GROUP:
        call = suites._local_student(ENTRIES[name])
        for matched in (True, False):
            run = call.call("checkpointed_cotangents", suites._chain(case), case["z0"], case["block_size"],
                       suites.RngSeed(case["seed"]), matched=matched)  # fmt: skip
            outputs.append((matched, run["cotangents"].tobytes()))
    assert len(set(outputs)) == 2


def test_an_entry_outside_the_group_reports_other_derivatives():
    # The same comparison tells a whole-block replay apart (the grouping check can fail).
    case = strategies.make_case(8, 3, 2, 0, [0.1, 0.2], 4, 1)
    grouped = suites._local_student(ENTRIES["unmatched_stream"])
    other = suites._local_student(ENTRIES["whole_block_replayed"])
    args = (suites._chain(case), case["z0"], 4, suites.RngSeed(1))
    assert not suites._bits_equal(
        grouped.call("checkpointed_cotangents", *args, matched=False)["cotangents"],
        other.call("checkpointed_cotangents", *args, matched=False)["cotangents"],
    )


def _snapshot_variant(how: str):
    """Checkpointed replay whose only difference from the reference is how the generator is kept."""

    def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
        ref._check_inputs(chain, z0, rng)
        depth = chain.depth
        k = uniform_checkpoint_cost(depth, block_size).block_size
        ledger = StateLedger()
        starts = list(range(0, depth, k))
        first = copy.deepcopy(rng.bit_generator.state)
        kept, snapshots, z = {}, {}, z0
        for s in starts:
            kept[s] = z
            ledger.retain()
            if how == "state dict, no deep copy":
                snapshots[s] = rng.bit_generator.state
            elif how == "forward start for every block":
                snapshots[s] = first
            elif how == "generator by reference":
                snapshots[s] = rng
            for i in range(s, min(s + k, depth)):
                z = chain.forward(i, z, rng)
        kept[depth] = z
        ledger.retain()
        cot = np.empty((depth + 1, chain.width))
        cot[depth] = 1.0
        replays = 0
        for s in reversed(starts):
            end = min(s + k, depth)
            replay = rng
            if matched:
                replay = copy.deepcopy(rng)
                snapshot = snapshots[s]
                replay.bit_generator.state = (
                    snapshot.bit_generator.state if how == "generator by reference" else snapshot
                )
            states = {s: kept[s], end: kept[end]}
            for i in range(s, end - 1):
                states[i + 1] = chain.forward(i, states[i], replay)
                replays += 1
                ledger.retain()
            for i in range(end - 1, s - 1, -1):
                cot[i] = chain.backward(i, states[i + 1], cot[i + 1])
            if end - 1 > s:
                ledger.release(end - 1 - s)
        return ref.ReplayRun(cot, depth + replays, replays, ledger.peak)

    return variant(how, "checkpointed_cotangents", checkpointed_cotangents)


@pytest.mark.parametrize("how", ["state dict, no deep copy", "forward start for every block"])
@HYP
@given(case=strategies.chain_cases())
def test_two_expected_mistakes_are_right_for_a_chain_with_one_random_layer(how, case):
    # Why the catalogue leaves them out: numpy returns a fresh state dict on every read,
    # and with one random layer every block start up to its block sees the same state.
    assert failing_judges(_snapshot_variant(how), case) == []


def test_the_same_judges_reject_a_snapshot_kept_by_reference():
    assert "judge_matched_bitwise" in failing_judges(_snapshot_variant("generator by reference"), VISIBLE)


def test_a_matched_replay_that_is_only_close_is_refused():
    # Another operation order is accepted only if matched replay equals the student's own
    # block_size=1 run bit for bit; a replay that adds rounding noise is not.
    def noisy(chain, z0, block_size, rng, *, matched=True):
        run = ref.checkpointed_cotangents(chain, z0, block_size, rng, matched=matched)
        if block_size == 1:
            return run
        return ref.ReplayRun(run.cotangents * (1 + 2.0**-50), *[getattr(run, f) for f in suites._RUN_FIELDS[1:]])

    assert failing_judges(variant("noisy", "checkpointed_cotangents", noisy), VISIBLE) == [
        "judge_matched_bitwise",
        "judge_unmatched_layout",
        "judge_report_mismatch",
    ]


def test_a_first_mismatch_index_may_be_a_numpy_integer_but_not_a_bool_or_float():
    pair = suites._VISIBLE_PAIRS[1]

    def caller_returning(value):
        # A function that leaves the arrays as given (largest_differing_row also checks that).
        return in_process_student({"first_mismatch": lambda saved, replayed: value})

    suites.judge_first_mismatch(caller_returning(np.int64(4)), pair)
    for wrong in (4.0, np.float64(4.0), True, "4", 3):
        with pytest.raises(Mismatch):
            suites.judge_first_mismatch(caller_returning(wrong), pair)


def test_the_report_feedback_says_which_run_is_off():
    shared = suites._local_student(ENTRIES["report_shares_one_generator"])
    inputs = suites._local_student(ENTRIES["rule_reads_input_state"])
    got = {}
    for name, caller in (("shared", shared), ("inputs", inputs)):
        with pytest.raises(Mismatch) as caught:
            suites.judge_report_mismatch(caller, VISIBLE)
        got[name] = caught.value.got
    # Both report the same wrong index; the flags tell the two mistakes apart.
    assert got["shared"]["first_mismatch"] == got["inputs"]["first_mismatch"] == 15
    assert got["shared"]["saved_agrees_with_reference"] and not got["shared"]["replayed_agrees_with_reference"]
    assert not got["inputs"]["saved_agrees_with_reference"] and got["inputs"]["replayed_agrees_with_reference"]


# --------------------------------------------------------------------------- arguments and history


@HYP
@given(case=suites.replaying_cases())
def test_the_default_is_checked_where_an_unmatched_replay_differs(case):
    # replaying_cases puts the random layer inside a block it does not end: matched and
    # unmatched replays differ there (unless the chain contracts the noise away, which the
    # cases' shallow depths do not).
    assert case["random_layer"] % case["block_size"] != case["block_size"] - 1
    assert case["random_layer"] < case["depth"] - 1
    matched, unmatched = (suites._reference_replayed(case, m).cotangents for m in (True, False))
    assert not suites._bits_equal(matched, unmatched)


def _stateful_store_all():
    """Store-all whose ledger lives across calls (a module-level ledger in a notebook)."""
    ledger = StateLedger()

    def store_all_cotangents(chain, z0, rng):
        run = ref.store_all_cotangents(chain, z0, rng)
        ledger.retain(chain.depth + 1)
        ledger.release(chain.depth + 1)
        return ref.ReplayRun(run.cotangents, run.forward_evaluations, 0, ledger.peak)

    return variant("module ledger", "store_all_cotangents", store_all_cotangents)


def _cached_checkpointed():
    """Checkpointed replay that keeps the last result for a chain of the same depth and block size."""
    cache = {}

    def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
        key = (chain.depth, block_size)
        if key not in cache:
            cache[key] = ref.checkpointed_cotangents(chain, z0, block_size, rng, matched=matched)
        return cache[key]

    return variant("cache", "checkpointed_cotangents", checkpointed_cotangents)


def test_the_sequence_judges_reject_state_kept_across_calls():
    small, big = strategies.make_case(3, 1, 2, 5, [0.1, 0.2], 1, 1), strategies.make_case(9, 4, 2, 6, [0.1, 0.2], 3, 2)
    ledger = suites._local_student(_stateful_store_all())
    with pytest.raises(Mismatch) as caught:
        suites.judge_store_all_sequence(ledger, {"calls": [small, big, small]})
    assert "repeats call 1" in caught.value.note
    same_shape = {**small, "seed": 99, "z0": np.array([0.5, -0.5]), "matched": True}
    cached = suites._local_student(_cached_checkpointed())
    with pytest.raises(Mismatch) as caught:
        suites.judge_checkpointed_sequence(cached, {"calls": [{**small, "matched": True}, same_shape, same_shape]})
    assert "returned exactly the result of call 1" in caught.value.note
    # Without state, a wrong answer passes them: its values are judged elsewhere.
    wrong = suites._local_student(ENTRIES["rule_reads_input_state"])
    suites.judge_store_all_sequence(wrong, {"calls": [small, big, small]})


# --------------------------------------------------------------------------- arguments after a call, kept objects

#: The judges that watch arguments or share a kept chain or generator, with the inputs they draw.
STATE_JUDGES = (
    (suites.judge_store_all_used_chain, strategies.used_chain_sequences("store_all_cotangents")),
    (suites.judge_checkpointed_used_chain, strategies.used_chain_sequences("checkpointed_cotangents")),
    (suites.judge_report_used_chain, strategies.used_chain_sequences("replay_report")),
    (suites.judge_store_all_left_arguments, strategies.chain_cases()),
    (suites.judge_checkpointed_left_arguments, strategies.chain_cases()),
    (suites.judge_checkpointed_used_generator, strategies.replaying_cases()),
)
#: Which of them reject each entry that only they can see; every other entry passes them all.
STATE_ENTRIES = {
    "counts_read_off_chain": {"judge_store_all_used_chain", "judge_report_used_chain"},
    "snapshot_restored_into_callers_rng": {"judge_checkpointed_left_arguments"},
    # Writing into z0 also raises where z0 is drawn read-only (the used-generator judge's cases).
    "z0_updated_in_place": {"judge_checkpointed_left_arguments", "judge_checkpointed_used_generator"},
    "rewound_from_seed_sequence": {"judge_checkpointed_used_generator"},
}


def failing_state_judges(entry: WrongAnswer | None, examples: int = 15) -> set[str]:
    """Names of the state judges that reject ``entry`` (the reference when None) on some drawn input."""
    failed: set[str] = set()

    def search(judge, strategy) -> None:
        @settings(max_examples=examples, derandomize=True, database=None, deadline=None)
        @given(drawn=strategy)
        def run(drawn):
            try:
                judge(suites._local_student(entry), drawn)
            except (Mismatch, StudentError):
                # A StudentError fails the property too: an answer that writes into z0 raises on a read-only one.
                failed.add(judge.__name__)

        run()

    for judge, strategy in STATE_JUDGES:
        search(judge, strategy)
    return failed


def test_the_state_judges_accept_the_reference():
    assert failing_state_judges(None, examples=25) == set()


@pytest.mark.parametrize("name", sorted(ENTRIES), ids=str)
def test_the_state_judges_reject_exactly_the_entries_they_were_written_for(name):
    # The others' mistakes are values, judged elsewhere: a wrong stream or extra work must not cost twice.
    assert failing_state_judges(ENTRIES[name]) == STATE_ENTRIES.get(name, set())


def test_the_state_entries_pass_every_judge_on_fresh_arguments():
    for name in STATE_ENTRIES:
        assert failing_judges(ENTRIES[name], VISIBLE) == [], name


def test_a_counter_reset_shows_on_a_used_chain_only():
    # chain.reset_counters() makes the returned counts right but the caller's counter wrong.
    def store_all_cotangents(chain, z0, rng):
        ref._check_inputs(chain, z0, rng)
        chain.reset_counters()
        return ref.store_all_cotangents(chain, z0, rng)

    resets = variant("reset", "store_all_cotangents", store_all_cotangents)
    assert failing_judges(resets, VISIBLE) == []
    sequence = suites._used_chain_example(suites._CHECKPOINTED_CALL, suites._STORE_ALL_CALL)
    with pytest.raises(Mismatch) as caught:
        suites.judge_store_all_used_chain(suites._local_student(resets), sequence)
    assert caught.value.expected == {"chain.forward_evaluations grows by": 16}
    assert caught.value.got == {"chain.forward_evaluations grows by": 16 - 28}


def test_the_rng_is_reported_in_draws_of_the_random_layer():
    rewinds = ENTRIES["snapshot_restored_into_callers_rng"]
    case = {**VISIBLE, "random_layer": 9}  # a later block than the first, so the last restore rewinds to the seed
    with pytest.raises(Mismatch) as caught:
        suites.judge_checkpointed_left_arguments(suites._local_student(rewinds), case)
    assert caught.value.expected == {"rng_draws_of_width_normals": 1}
    assert caught.value.got == {"rng_draws_of_width_normals": 0}


def test_the_local_worker_keeps_one_object_and_watches_like_the_worker():
    local = suites._local_student(None)
    chain = local.keep(suites._chain(VISIBLE), "chain")
    for expected in (16, 32):
        watched = local.call_watch("store_all_cotangents", chain, VISIBLE["z0"], suites.RngSeed(2))
        assert watched.args[0].type == "StochasticChain" and watched.args[0]["forward_evaluations"] == expected
    drawn = np.random.default_rng(2)
    drawn.standard_normal(VISIBLE["width"])
    assert watched.args[2] == suites.Record("Generator", {"state": drawn.bit_generator.state})
    assert suites._rng_draws(watched.args[2]["state"], 2, VISIBLE["width"]) == 1


# --------------------------------------------------------------------------- through the worker


def _cells(
    answer_cell: str = "", suffix: str = "", *, released: bool = False, more: dict[str, str] | None = None
) -> WorkerCells:
    suffixes = {**(more or {}), **({answer_cell: suffix} if suffix else {})}
    return exercise_grading.cells("ex5", suffixes, released=released)


def grade(cells: WorkerCells) -> dict[str, CellVerdict]:
    return exercise_grading.grade("ex5", cells)


def _report(verdicts: dict[str, CellVerdict]) -> str:
    return "\n".join(v.message() for v in verdicts.values())


# The reference, the released stub and where each entry loses: tests/autograder/exercises/test_suites.py.


# A correct answer written differently: its own reverse rule (another association of the
# factors, so not bit for bit the reference), a deep copy of the whole generator as the
# snapshot, the counts from the cost model, a vectorized first_mismatch returning np.int64.
DIFFERENT = """
def _rule(chain, i, z_out, cot):
    return (chain.weights[i] * cot) * ((1.0 - z_out) * (1.0 + z_out))


def _refuse(chain, z0, rng):
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain, rng a Generator")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError("z0 must be float64 of shape (width,)")


def store_all_cotangents(chain, z0, rng):
    _refuse(chain, z0, rng)
    zs = [z0]
    for i in range(chain.depth):
        zs.append(chain.forward(i, zs[-1], rng))
    rows = [np.ones(chain.width)]
    for i in reversed(range(chain.depth)):
        rows.append(_rule(chain, i, zs[i + 1], rows[-1]))
    return ReplayRun(np.array(rows[::-1]), chain.depth, 0, len(zs))


def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    _refuse(chain, z0, rng)
    L = chain.depth
    cost = uniform_checkpoint_cost(L, block_size)
    k = cost.block_size
    generators, inputs, z = [], [], z0
    for s in range(0, L, k):
        inputs.append(z)
        generators.append(copy.deepcopy(rng))
        for i in range(s, min(s + k, L)):
            z = chain.forward(i, z, rng)
    out = z
    cot = np.zeros((L + 1, chain.width))
    cot[L] = 1.0
    for b in range(len(inputs) - 1, -1, -1):
        s, e = b * k, min(b * k + k, L)
        g = copy.deepcopy(generators[b]) if matched else rng
        zs = [inputs[b]]
        for i in range(s, e - 1):
            zs.append(chain.forward(i, zs[-1], g))
        zs.append(inputs[b + 1] if b + 1 < len(inputs) else out)
        for i in range(e - 1, s - 1, -1):
            cot[i] = _rule(chain, i, zs[i - s + 1], cot[i + 1])
    extra = cost.recomputed_forward_evaluations
    return ReplayRun(cot, L + extra, extra, cost.peak_state_units)


def first_mismatch(saved, replayed):
    a, b = np.asarray(saved), np.asarray(replayed)
    if a.shape != b.shape or a.dtype != b.dtype or a.ndim == 0:
        raise ValueError("incomparable arrays")
    row_bytes = a.itemsize * int(np.prod(a.shape[1:]))  # not -1: an array may have no rows
    bytes_a = np.ascontiguousarray(a).view(np.uint8).reshape(a.shape[0], row_bytes)
    bytes_b = np.ascontiguousarray(b).view(np.uint8).reshape(b.shape[0], row_bytes)
    rows = np.flatnonzero((bytes_a != bytes_b).any(axis=1))
    return rows[-1] if rows.size else None


def replay_report(chain, z0, block_size, seed, *, matched):
    saved = store_all_cotangents(chain, z0, np.random.default_rng(seed))
    replayed = checkpointed_cotangents(chain, z0, block_size, np.random.default_rng(seed), matched=matched)
    # block_size as a Python int: the record promises one, for a numpy block_size too.
    return ReplayReport(int(block_size), matched, saved, replayed, replayed.replayed_evaluations,
                        saved.peak_states, replayed.peak_states, first_mismatch(saved.cotangents, replayed.cotangents))
"""


@pytest.mark.slow
def _answer_cells(source: str) -> dict[str, str]:
    """``source`` cut before each graded function, each piece into that function's answer cell."""
    starts = ("def checkpointed_cotangents", "def first_mismatch", "def replay_report")
    cells = ("ex5_store_all_cotangents", "ex5_checkpointed_cotangents", "ex5_first_mismatch", "ex5_replay_report")
    pieces, rest = [], source
    for start in starts:
        head, found, rest = rest.partition(start)
        pieces.append(head)
        rest = found + rest
    return dict(zip(cells, [*pieces, rest], strict=True))


def test_a_correct_answer_in_another_operation_order_earns_full_marks():
    # Each function in its own answer cell of the released notebook, as a student answers: the
    # grader runs the visible checks where they stand, so a function defined below a check would
    # fail it, in the student's notebook as here.
    verdicts = grade(_cells(released=True, more=_answer_cells(DIFFERENT)))
    assert {g: v.score for g, v in verdicts.items()} == POINTS, _report(verdicts)


def test_the_different_answer_really_differs_in_its_bits():
    namespace = {"np": np, "copy": copy, "ReplayRun": ref.ReplayRun, "ReplayReport": ref.ReplayReport,
                 "uniform_checkpoint_cost": uniform_checkpoint_cost, "StochasticChain": StochasticChain}  # fmt: skip
    exec(DIFFERENT, namespace)
    chain, z0 = make_chain(16, 5, width=3), VISIBLE["z0"]
    run = namespace["checkpointed_cotangents"](chain, z0, 4, np.random.default_rng(2), matched=True)
    saved = ref.store_all_cotangents(chain, z0, np.random.default_rng(2)).cotangents
    assert not suites._bits_equal(run.cotangents, saved)
    assert type(namespace["first_mismatch"](saved, saved * 2)) is np.int64


# Correct, written differently, for the clauses the suite checks more closely now: rows compared
# as unsigned integers of the float's width (so NaNs of other bits differ, identical ones agree),
# on reshaped views that leave the arrays as given; a report that hands each run its own copy of z0.
INTEGER_VIEWS = {
    "ex5_first_mismatch": """
def first_mismatch(saved, replayed):
    saved, replayed = np.asarray(saved), np.asarray(replayed)
    if saved.ndim == 0 or saved.shape != replayed.shape or saved.dtype != replayed.dtype:
        raise ValueError("arrays of one shape and dtype, with rows, are compared")
    width = {4: np.uint32, 8: np.uint64}[saved.dtype.itemsize]
    per_row = int(np.prod(saved.shape[1:]))
    a = np.ascontiguousarray(saved).view(width).reshape(saved.shape[0], per_row)
    b = np.ascontiguousarray(replayed).view(width).reshape(replayed.shape[0], per_row)
    for i in reversed(range(a.shape[0])):
        if np.any(a[i] != b[i]):
            return i
    return None
""",
    "ex5_replay_report": """
def replay_report(chain, z0, block_size, seed, *, matched):
    saved = store_all_cotangents(chain, z0.copy(), np.random.default_rng(seed))
    replayed = checkpointed_cotangents(chain, z0.copy(), block_size, np.random.default_rng(seed), matched=matched)
    return ReplayReport(block_size=int(block_size), matched=bool(matched), saved=saved, replayed=replayed,
                        extra_forward_evaluations=replayed.forward_evaluations - saved.forward_evaluations,
                        saved_peak_states=saved.peak_states, replayed_peak_states=replayed.peak_states,
                        first_mismatch=first_mismatch(saved.cotangents, replayed.cotangents))
""",
}


@pytest.mark.slow
def test_integer_views_and_copies_of_z0_earn_full_marks():
    verdicts = grade(_cells(more=INTEGER_VIEWS))
    assert {g: v.score for g, v in verdicts.items()} == POINTS, _report(verdicts)


# block_size made a Python int by .item() rather than int(): the record's field is an int either way.
ITEM_BLOCK_SIZE = {
    "ex5_replay_report": """
def replay_report(chain, z0, block_size, seed, *, matched):
    k = block_size.item() if isinstance(block_size, np.integer) else block_size
    runs = [store_all_cotangents(chain, z0, np.random.default_rng(seed)),
            checkpointed_cotangents(chain, z0, k, np.random.default_rng(seed), matched=matched)]
    saved, replayed = runs
    return ReplayReport(k, bool(matched), saved, replayed,
                        replayed.forward_evaluations - saved.forward_evaluations,
                        saved.peak_states, replayed.peak_states,
                        first_mismatch(saved.cotangents, replayed.cotangents))
""",
}


@pytest.mark.slow
def test_a_report_making_block_size_an_int_by_item_earns_full_marks():
    verdicts = grade(_cells(more=ITEM_BLOCK_SIZE))
    assert {g: v.score for g, v in verdicts.items()} == POINTS, _report(verdicts)


def _expected_name(entry: WrongAnswer) -> str:
    return suites._STREAM_NAME if entry.name in suites.STREAM_GROUP else entry.title


@pytest.mark.slow
@pytest.mark.parametrize("entry", catalogue("ex5"), ids=lambda e: e.name)
def test_catalogue_entry_is_named_where_it_loses(entry):
    verdicts = exercise_grading.graded_entry("ex5", entry.name)
    for grade_id in entry.loses:
        verdict = verdicts[grade_id]
        # The notebook's own checks fail as errors, with no name; every property failure is named.
        named = [f for f in verdict.failures if f.property != "visible_checks"]
        if not named:  # lost through the notebook's own checks alone, which call the function it breaks
            assert [f.property for f in verdict.failures] == ["visible_checks"], verdict.message()
            continue
        assert all(f.kind == "mismatch" for f in named), verdict.message()
        assert {f.misconception for f in named} == {_expected_name(entry)}, verdict.message()
        assert _expected_name(entry) in verdict.message()


# Answers that fail checkpointed_refuses_bad_arguments as block_size_coerced does, "no exception: returned a
# ReplayRun", but for another argument: the entry's mistake is not theirs, so it is not named.
OTHER_REFUSALS = {
    # A list z0 made an array instead of refused (refused_argument='z0').
    "z0_list_converted": """
_checkpointed_as_given = checkpointed_cotangents


def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    if isinstance(z0, list):
        z0 = np.array(z0, dtype=np.float64)
    return _checkpointed_as_given(chain, z0, block_size, rng, matched=matched)
""",
    # An integer rng taken as a seed instead of refused (refused_argument='rng').
    "rng_seed_accepted": """
_checkpointed_as_given = checkpointed_cotangents


def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    if isinstance(rng, int):
        rng = np.random.default_rng(rng)
    return _checkpointed_as_given(chain, z0, block_size, rng, matched=matched)
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OTHER_REFUSALS))
def test_an_answer_failing_a_refusal_for_another_argument_is_not_named(name):
    verdicts = grade(_cells("ex5_checkpointed_cotangents", OTHER_REFUSALS[name]))
    verdict = verdicts["ex5_checkpointed_cotangents_tests"]
    failures = {f.property: f for f in verdict.failures}
    refusal = failures["checkpointed_refuses_bad_arguments"]
    assert refusal.got == "no exception: returned a ReplayRun", verdict.message()
    assert refusal.inputs["refused_argument"] == name.split("_")[0], verdict.message()
    # block_size_coerced reports the same value on the same case, for block_size=True.
    entry = ENTRIES["block_size_coerced"]
    try:
        suites.judge_checkpointed_refusals(suites._local_student(entry), suites._from_shown(refusal.inputs)[0])
    except Mismatch as mismatch:
        assert mismatch.got == refusal.got and mismatch.inputs["refused_argument"] == "block_size"
    else:
        raise AssertionError("block_size_coerced passes the refusals")
    assert refusal.misconception == "" and "block_size" not in refusal.advice, verdict.message()
    assert entry.title not in verdict.message()


@pytest.mark.slow
def test_a_bare_array_instead_of_a_replay_run_scores_zero_with_a_message():
    wrong = "def store_all_cotangents(chain, z0, rng):\n    return np.ones((chain.depth + 1, chain.width))\n"
    verdicts = grade(_cells("ex5_store_all_cotangents", wrong))
    verdict = verdicts["ex5_store_all_cotangents_tests"]
    assert verdict.score == 0.0, verdict.message()
    assert "return a ReplayRun" in verdict.message()


@pytest.mark.slow
def test_grading_twice_gives_identical_verdicts():
    cells = _cells("ex5_checkpointed_cotangents", ENTRIES["whole_block_replayed"].source)
    first, second = grade(cells), grade(cells)
    assert _report(first) == _report(second)
    assert first["ex5_checkpointed_cotangents_tests"].failures
