"""An isolated nbgrader run (``batch/isolated.py``): its execution-budget report, the suites ahead or in place."""

from __future__ import annotations

import json

import nbformat
import pytest
from ch11_autograder.batch.course import make_template
from ch11_autograder.batch.intake_records import StudentSubmission
from ch11_autograder.batch.isolated import RunningGraders, grade_isolated, read_execution_report
from ch11_autograder.batch.records import ExecutionUse
from ch11_autograder.trusted.budget import ExecutionBudget
from ch11_autograder.trusted.steps.sandboxed_execute import LOG_EXECUTED_AHEAD
from ch11_autograder.trusted.steps.start_sandboxes import LOG_SANDBOXES_STARTED
from ch11_autograder.trusted.steps.suites_ahead import LOG_AHEAD, LOG_GRADED_AHEAD
from ch11_autograder.trusted.submission_cells import autograded_test_cells
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY
from ch11_autograder.untrusted.launch import EXECUTION_REPORT_ENV
from support import batch_support
from support.paths import ASSIGNMENT


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


@pytest.mark.slow
def test_work_done_ahead_or_in_place_leaves_the_same_graded_notebooks(tmp_path_factory):
    """Real nbgrader under bwrap, ada's five notebooks: SuitesAhead and ExecutionAhead on, then off.

    On, the two sandboxes start before the first notebook, the suites of every notebook start early
    (notebooks 2..5 on the first one's lane, ahead of their turns) and every notebook executes on
    the plan's thread (2..5 ahead of their turns), each run used at its turn; either way the graded
    notebooks are the same, byte for byte.
    """
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    root = tmp_path_factory.mktemp("ahead")
    course = batch_support.assigned_course(base, root / "course")
    make_template(course, root / "template.db", ASSIGNMENT)
    files = {nb.name: nb for nb in sorted((inputs / "class" / "ada" / ASSIGNMENT).glob("*.ipynb"))}
    sub = StudentSubmission("ada", "ada", files, None, None)
    graded = {}
    for ahead in (True, False):
        work = root / f"work-{ahead}"
        work.mkdir()
        outcome = grade_isolated(sub, course=course, template=root / "template.db", work_root=work,
                                 log_path=root / f"ada-{ahead}.log", slot=0, sandbox="bwrap", timeout=600,
                                 assignment=ASSIGNMENT, running=RunningGraders(), spare_core=ahead)
        assert not isinstance(outcome.result, str), outcome.result
        log = (root / f"ada-{ahead}.log").read_text()
        if ahead:
            # The first notebook's suites start at its turn, the later ones' on the same lane as soon as they are
            # read (a turn that comes first starts its own).
            started, graded_ahead = log.count(LOG_AHEAD), log.count(LOG_GRADED_AHEAD)
            assert started >= 1 and graded_ahead >= 1 and started + graded_ahead == len(files), log[-3000:]
            # Both sandboxes' zygotes started before the first notebook (the autograde's command line allows both).
            assert f"{LOG_SANDBOXES_STARTED}: executions, suites" in log, log[-3000:]
        else:
            assert LOG_AHEAD not in log and LOG_GRADED_AHEAD not in log, log[-3000:]
            assert LOG_SANDBOXES_STARTED not in log, log[-3000:]  # the command line turned both steps off
        executed_ahead = log.count(LOG_EXECUTED_AHEAD)
        assert executed_ahead == (len(files) if ahead else 0), log[-3000:]
        notebooks, verdicts = {}, {}
        for path in sorted((outcome.work / "autograded" / "ada" / ASSIGNMENT).glob("*.ipynb")):
            notebooks[path.name] = path.read_bytes()
            nb = nbformat.read(path, as_version=4)
            verdicts[path.name] = [cell.metadata.get(VERDICT_METADATA_KEY) for _, cell in autograded_test_cells(nb)]
        graded[ahead] = (outcome.result, notebooks, verdicts, outcome.execution)
    assert graded[True][1] == graded[False][1]
    assert len(graded[True][2]) == len(files) and all(graded[True][2].values())
    assert graded[True][0] == graded[False][0]
    # The budget was charged each notebook's run, wherever it ran.
    assert graded[True][3] is not None and graded[True][3].used_seconds > 0
