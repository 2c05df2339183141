"""A wrong answer as a check reports it (trusted/mismatch.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ch11_autograder.protocol import Once, Record, RngSeed, wire_equal
from ch11_autograder.trusted.cell_suite import Property
from ch11_autograder.trusted.mismatch import Misconception, Mismatch, call_statement, expect_equal, pasteable
from ch11_autograder.trusted.suite import run_property
from support.local_session import LocalSession
from trainable_harness import CheckpointCost


def test_mismatch_keeps_its_fields():
    m = Mismatch({"x": 1}, 2, 3, "note")
    assert (m.inputs, m.expected, m.got, m.note) == ({"x": 1}, 2, 3, "note")


def test_mismatch_from_a_plain_check():
    def check(student):
        got = student.call("cost", 16, 4)
        expect_equal({"depth": 16, "block_size": 4}, CheckpointCost(16, 4, 4, 8, 12), got)

    prop = Property("cost", "cost(L, k) matches the count model.", check)
    assert run_property(prop, LocalSession(cost=lambda L, k: CheckpointCost(L, k, 4, 8, 12))) is None
    failure = run_property(prop, LocalSession(cost=lambda L, k: CheckpointCost(L, k, 4, 9, 12)))
    assert isinstance(failure.got, Record)
    assert "peak_state_units=9" in failure.message() and "peak_state_units=8" in failure.message()


@pytest.mark.parametrize("value", [
    1.5, 2, True, None, "x", float("nan"), float("-inf"), np.float32(0.75), np.float32("nan"), np.int64(16), np.True_,
    np.float64(-0.0), [16, 17.0, np.int64(3)], (1,), (), {"wrt": "y"}, np.array([1.5, np.inf]),
    np.array([[1, 2]], dtype=np.int64), np.array([0.5], dtype=np.float32),
])
def test_a_pasted_value_is_the_value(value):
    rebuilt = eval(pasteable(value), {"np": np})  # the notebook's namespace: numpy as np
    assert type(rebuilt) is type(value)
    assert wire_equal(rebuilt, value)


def test_generator_arguments_paste_as_what_the_worker_passes():
    assert list(eval(pasteable(Once((3, 1))), {"np": np})) == [3, 1]
    rng = eval(pasteable(RngSeed(7)), {"np": np})
    assert rng.random() == np.random.default_rng(7).random()


def test_a_call_reads_as_the_statement_a_student_pastes():
    assert call_statement("f", (True, float("nan")), {"wrt": "x"}) == "f(True, float('nan'), wrt='x')"
    assert call_statement("audit_marks") == "audit_marks()"
    assert Mismatch({}, 1, 2, calls=("f(1)", "f(True)")).calls == ("f(1)", "f(True)")


def _off_by_one(n):
    return n + 1


def _outcome(implementation):
    def run(**inputs):
        return f"returned {implementation(**inputs)}"

    return run


_KILLS = ({"tests_a": frozenset({"sums_values"})},)


def test_a_rewrapped_misconception_keeps_its_name_advice_row_and_history_but_not_its_function():
    wrong = Misconception("off by one", "count from zero", _off_by_one, function="total", fails=_KILLS, history=True)
    rewrapped = wrong.rewrapped(_outcome)
    assert (rewrapped.name, rewrapped.advice, rewrapped.fails, rewrapped.history) == (
        "off by one", "count from zero", _KILLS, True)
    assert rewrapped.implementation(n=2) == "returned 3"
    # The wrapped implementation predicts an outcome, not what `total` returns: it must not be probed against it.
    assert rewrapped.function == ""
    assert wrong.function == "total" and wrong.implementation(n=2) == 3


def test_a_rewrapped_misconception_keeps_its_function_only_when_asked():
    wrong = Misconception("off by one", "count from zero", _off_by_one, function="total", fails=_KILLS)
    kept = wrong.rewrapped(lambda implementation: implementation, keep_function=True)
    assert kept.function == "total" and kept.fails == _KILLS and kept.history is False
    assert kept.implementation(n=4) == 5
