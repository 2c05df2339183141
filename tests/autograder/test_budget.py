"""The submission's notebook-execution budget (``trusted/budget.py``) and its report file."""

from __future__ import annotations

import json

from ch11_autograder.trusted.budget import ExecutionBudget, budget_for
from ch11_autograder.untrusted.launch import EXECUTION_REPORT_ENV


def test_each_notebook_gets_what_the_earlier_ones_left():
    budget = ExecutionBudget(100.0)
    assert budget.limit_for(60.0) == 60.0
    budget.charge("ex1", 45.5)
    assert budget.limit_for(60.0) == 54.5
    budget.charge("ex2", 54.5, cut=True)
    assert budget.remaining == 0.0 and budget.limit_for(60.0) == 0.0
    budget.skip("ex3")
    assert budget.as_json() == {"budget_seconds": 100.0, "used_seconds": 100.0, "notebooks": {"ex1": 45.5, "ex2": 54.5},
                                "not_run": ["ex3"], "cut": ["ex2"]}


def test_every_charge_rewrites_the_report_when_one_is_asked_for(tmp_path, monkeypatch):
    report = tmp_path / "report.json"
    budget = ExecutionBudget(10.0)
    monkeypatch.delenv(EXECUTION_REPORT_ENV, raising=False)
    budget.charge("ex1", 1.0)
    assert not report.exists()
    monkeypatch.setenv(EXECUTION_REPORT_ENV, str(report))
    budget.charge("ex2", 2.004)
    assert json.loads(report.read_text())["used_seconds"] == 3.0
    budget.skip("ex3")
    assert json.loads(report.read_text())["not_run"] == ["ex3"]
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_budgets_are_per_student_and_assignment():
    first = budget_for("a1", "test-budget-ada", 50.0)
    first.charge("ex1", 20.0)
    assert budget_for("a1", "test-budget-ada", 999.0) is first  # made once, with the first value
    assert budget_for("a1", "test-budget-hal", 50.0).remaining == 50.0
    assert budget_for("a2", "test-budget-ada", 50.0).remaining == 50.0
