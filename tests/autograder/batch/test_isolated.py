"""Reading the execution-budget report an isolated nbgrader run leaves (``batch/isolated.py``)."""

from __future__ import annotations

import json

import pytest
from ch11_autograder.batch.isolated import read_execution_report
from ch11_autograder.batch.records import ExecutionUse
from ch11_autograder.trusted.budget import ExecutionBudget
from ch11_autograder.untrusted.launch import EXECUTION_REPORT_ENV


def test_the_report_the_budget_writes_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv(EXECUTION_REPORT_ENV, str(tmp_path / "report.json"))
    budget = ExecutionBudget(30.0)
    budget.charge("ex1_fanout", 12.345)
    budget.charge("ex2_finite_difference", 17.655, cut=True)
    budget.skip("ex3_block_length")
    use = read_execution_report(tmp_path / "report.json")
    assert use == ExecutionUse(30.0, 30.0, ("ex3_block_length",), ("ex2_finite_difference",))
    assert use.exhausted
    assert use.describe() == ("notebook execution stopped at the submission's budget of 30 s: "
                              "ex2_finite_difference cut short; ex3_block_length not run")


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"budget_seconds": 1}',
                                  '{"budget_seconds": "NaN", "used_seconds": 1}',
                                  '{"budget_seconds": 1, "used_seconds": 1, "cut": 5}'])
def test_an_unusable_report_is_no_report(tmp_path, text):
    (tmp_path / "report.json").write_text(text)
    assert read_execution_report(tmp_path / "report.json") is None
    assert read_execution_report(tmp_path / "missing.json") is None


def test_a_budget_that_was_not_spent_is_not_exhausted():
    use = ExecutionUse(600.0, 12.0)
    assert not use.exhausted
    assert json.loads(json.dumps(use.__dict__))["used_seconds"] == 12.0
