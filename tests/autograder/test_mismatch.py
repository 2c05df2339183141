"""A wrong answer as a check reports it (trusted/mismatch.py)."""

from __future__ import annotations

from ch11_autograder.protocol import Record
from ch11_autograder.trusted.cell_suite import Property
from ch11_autograder.trusted.mismatch import Mismatch, expect_equal
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
