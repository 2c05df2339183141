"""Notebooks executed ahead of their turns (trusted/execution_ahead.py): a turn uses a run made
ahead only if it is the run the turn would make, within the limit the turn gives it."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time

import pytest
from ch11_autograder.trusted import execution_ahead
from ch11_autograder.trusted.execution_ahead import Plan
from ch11_autograder.trusted.execution_input import ExecutionInput, ExecutionRun
from ch11_autograder.trusted.steps.sandboxed_execute import LOG_EXECUTED_AHEAD, SANDBOX_ERROR_NAME, SandboxedExecute
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from ch11_autograder.untrusted.capped_run import Deadline, RunResult
from ch11_autograder.untrusted.launch import EXECUTION_REPORT_ENV
from support.toy_notebook import notebook

#: Each test is one grading process: the zygotes its steps start end with it.
pytestmark = pytest.mark.usefixtures("grading_process_ends")

# ------------------------------------------------------- Plan.claim, with runs that are not processes


def _input(text: str) -> ExecutionInput:
    return ExecutionInput(text, (), {}, {}, {})


def _run(seconds: float, *, timed_out: bool = False) -> ExecutionRun:
    return ExecutionRun(RunResult(0, b"", b"", timed_out, "wall_time" if timed_out else None,
                                  elapsed_seconds=seconds), None)


def _plan(runs, runner, workers=1, limit=600.0) -> Plan:
    return Plan(runs, limit=limit, workers=workers, runner_for=lambda: (runner, lambda: None))


def test_a_run_of_the_same_input_within_the_limit_is_taken():
    plan = _plan([("b", _input("b"))], lambda inputs, limit, deadline: _run(2.0))
    claim = plan.claim("b", _input("b").key, 10.0)
    assert claim.why == "taken" and claim.run is not None and claim.run.result.elapsed_seconds == 2.0
    assert plan.claim("b", _input("b").key, 10.0).why == "none"  # claimed once


def _started_until_stopped(stopped: threading.Event) -> Plan:
    """A plan of one run, "b", started: it goes on until its deadline says stop, then sets ``stopped``."""

    def runner(inputs, limit, deadline: Deadline):
        deadline.start(time.monotonic(), limit)
        while time.monotonic() < deadline.at():
            time.sleep(0.01)
        stopped.set()
        return _run(0.1, timed_out=True)

    plan = _plan([("b", _input("b"))], runner)
    while not plan._entries["b"].started:
        time.sleep(0.01)
    return plan


def test_a_run_of_other_inputs_is_stopped_and_not_used():
    stopped = threading.Event()
    plan = _started_until_stopped(stopped)
    claim = plan.claim("b", _input("b changed").key, 10.0)
    assert claim.why == "inputs changed" and claim.run is None
    assert stopped.is_set()


def test_a_run_not_started_at_its_turn_is_dropped_and_never_started():
    release = threading.Event()
    ran = []

    def runner(inputs, limit, deadline):
        ran.append(inputs.notebook_text)
        release.wait(5)
        return _run(0.1)

    plan = _plan([("b", _input("b")), ("c", _input("c"))], runner)
    claim = plan.claim("c", _input("c").key, 10.0)  # "b" holds the only worker
    release.set()
    assert claim.why == "not started" and claim.run is None
    assert plan.claim("b", _input("b").key, 10.0).why == "taken"
    assert ran == ["b"]


def test_inputs_prepared_on_the_plans_thread_are_run_unless_their_turn_came_first():
    ready = threading.Event()
    ran = []

    def runs():
        ready.wait(5)  # reading and sanitizing the later notebooks takes a while
        return [("b", _input("b")), ("c", _input("c"))]

    def runner(inputs, limit, deadline):
        ran.append(inputs.notebook_text)
        return _run(0.1)

    plan = _plan(runs, runner)
    assert plan.claim("b", _input("b").key, 10.0).why == "not ready"  # b's turn came first: b executes in turn
    ready.set()
    for _ in range(500):
        if ran:
            break
        time.sleep(0.01)
    assert plan.claim("c", _input("c").key, 10.0).why == "taken"
    assert ran == ["c"]


def test_the_first_run_goes_at_once_while_the_later_inputs_are_prepared_beside_it():
    first_started, later_read = threading.Event(), threading.Event()
    ran, preparing = [], []

    def runs():
        preparing.append(threading.current_thread().name)
        # Prepared beside the first run, not before it: that run has started by now.
        assert first_started.wait(5), "the later inputs were prepared before the first run started"
        later_read.set()
        return [("b", _input("b")), ("c", _input("c"))]

    def runner(inputs, limit, deadline):
        ran.append((inputs.notebook_text, threading.current_thread().name))
        if inputs.notebook_text == "a":
            first_started.set()
            assert later_read.wait(5)
        return _run(0.1)

    plan = Plan(runs, limit=600.0, workers=1, runner_for=lambda: (runner, lambda: None), first=[("a", _input("a"))])
    # The first notebook's turn finds its run though the later inputs may not be ready yet.
    assert plan.claim("a", _input("a").key, 10.0).why == "taken"
    assert plan.claim("b", _input("b").key, 10.0).why == "taken"
    assert plan.claim("c", _input("c").key, 10.0).why == "taken"
    assert [text for text, _ in ran] == ["a", "b", "c"]
    assert len({thread for _, thread in ran}) == 1 and preparing[0] != ran[0][1]


def test_a_later_turn_before_its_input_is_ready_executes_in_turn_while_the_first_run_is_taken():
    ready = threading.Event()
    ran = []

    def runs():
        ready.wait(5)
        return [("b", _input("b"))]

    def runner(inputs, limit, deadline):
        ran.append(inputs.notebook_text)
        return _run(0.1)

    plan = Plan(runs, limit=600.0, workers=1, runner_for=lambda: (runner, lambda: None), first=[("a", _input("a"))])
    assert plan.claim("a", _input("a").key, 10.0).why == "taken"
    assert plan.claim("b", _input("b").key, 10.0).why == "not ready"
    ready.set()
    plan._threads[0].join(5)
    assert ran == ["a"]


def test_a_plan_without_a_runner_leaves_the_first_turn_to_execute_instead_of_waiting():
    def runner_for():
        raise OSError("no sandbox")

    plan = Plan(lambda: [("b", _input("b"))], limit=600.0, workers=1, runner_for=runner_for,
                first=[("a", _input("a"))])
    plan._threads[0].join(5)
    assert plan.claim("a", _input("a").key, 10.0).why == "failed"


def test_a_plan_whose_inputs_cannot_be_prepared_runs_nothing(caplog):
    def runs():
        raise OSError("submitted/ is gone")

    plan = _plan(runs, lambda inputs, limit, deadline: pytest.fail("nothing should run"))
    with caplog.at_level(logging.WARNING):
        plan._threads[0].join(5)
    assert plan.claim("b", _input("b").key, 10.0).why == "none"
    assert "submitted/ is gone" in caplog.text


def test_a_run_past_the_turns_limit_is_not_used():
    plan = _plan([("b", _input("b")), ("c", _input("c"))], lambda inputs, limit, deadline: _run(8.0))
    assert plan.claim("b", _input("b").key, 5.0).why == "past the limit"  # ended at 8 s, the turn gives 5
    assert plan.claim("c", _input("c").key, 8.0).why == "taken"


def test_a_run_killed_for_time_is_taken_only_if_its_limit_was_no_more_than_the_turns():
    def runner(inputs, limit, deadline: Deadline):
        deadline.start(time.monotonic(), limit)
        deadline.fired_limit = limit  # killed at the plan's limit, before the turn came
        return _run(limit, timed_out=True)

    plan = _plan([("b", _input("b"))], runner, limit=20.0)
    time.sleep(0.2)
    assert plan.claim("b", _input("b").key, 10.0).why == "past the limit"
    plan = _plan([("b", _input("b"))], runner, limit=10.0)
    assert plan.claim("b", _input("b").key, 10.0).why == "taken"


def test_a_runner_that_raises_leaves_the_turn_to_execute(caplog):
    def runner(inputs, limit, deadline):
        raise RuntimeError("sandbox gone")

    plan = _plan([("b", _input("b"))], runner)
    with caplog.at_level(logging.WARNING):
        assert plan.claim("b", _input("b").key, 10.0).why == "failed"
    assert "sandbox gone" in caplog.text


def test_closing_a_plan_stops_its_runs():
    ended = threading.Event()
    plan = _started_until_stopped(ended)
    plan.close()
    assert ended.wait(5)


# --------------------------------------------------------------------------- SandboxedExecute with a real run ahead


def _resources(tmp_path, student, name):
    return {"metadata": {"path": str(tmp_path)}, "unique_key": name,
            "nbgrader": {"student": student, "assignment": "toy", "notebook": name}}


def _ahead(execute: SandboxedExecute, nbs: dict, tmp_path, student: str, limit: float = 600.0) -> Plan:
    """A plan for ``nbs`` (name -> notebook) of ``student``, as ExecutionAhead makes one."""
    launcher = UnsandboxedLauncher()
    runs = [(name, execute.prepare(nb, _resources(tmp_path, student, name))) for name, nb in nbs.items()]
    return execution_ahead.start_plan(("toy", student), lambda: Plan(
        runs, limit=limit, workers=1,
        runner_for=lambda: ((lambda i, w, d: execute.run(i, launcher, w, d)), lambda: None)))


@pytest.mark.slow
def test_a_turn_takes_the_run_ahead_and_its_outputs_are_those_of_a_run_in_turn(tmp_path, caplog):
    (tmp_path / "data.txt").write_text("from a support file")
    code = "def double(x):\n    return 2 * x\nprint(open('data.txt').read(), double(21))"
    execute = SandboxedExecute(sandbox="none")
    nb = notebook(code)  # one notebook: new cells get new ids, and ids are part of the input
    in_turn, _ = execute.preprocess(copy.deepcopy(nb), _resources(tmp_path, "in-turn", "second"))
    student = f"ahead-{time.monotonic_ns()}"
    _ahead(execute, {"second": copy.deepcopy(nb)}, tmp_path, student)
    with caplog.at_level(logging.INFO):
        ahead, _ = execute.preprocess(copy.deepcopy(nb), _resources(tmp_path, student, "second"))
    assert LOG_EXECUTED_AHEAD in caplog.text
    assert ahead.cells[1].outputs[0].text == "from a support file 42\n"
    assert [c.get("outputs") for c in ahead.cells] == [c.get("outputs") for c in in_turn.cells]


@pytest.mark.slow
def test_a_notebook_changed_after_its_run_ahead_is_executed_in_turn(tmp_path, caplog):
    execute = SandboxedExecute(sandbox="none")
    student = f"changed-{time.monotonic_ns()}"
    _ahead(execute, {"second": notebook("print('guessed')")}, tmp_path, student)
    with caplog.at_level(logging.INFO):
        nb, _ = execute.preprocess(notebook("print('as it reached its turn')"), _resources(tmp_path, student, "second"))
    assert "the run ahead is not used (inputs changed)" in caplog.text
    assert LOG_EXECUTED_AHEAD not in caplog.text
    assert nb.cells[1].outputs[0].text == "as it reached its turn\n"


@pytest.mark.slow
def test_a_run_ahead_that_hangs_ends_at_its_turns_limit_and_is_not_run_again(tmp_path, monkeypatch, caplog):
    """The turn's wall time stays within its limit: the hanging run is not paid for twice."""
    report = tmp_path / "budget.json"
    monkeypatch.setenv(EXECUTION_REPORT_ENV, str(report))
    execute = SandboxedExecute(sandbox="none", submission_wall_seconds=8.0, wall_seconds=60.0, timeout=60)
    student = f"hang-{time.monotonic_ns()}"
    hang = notebook("import time\ntime.sleep(120)\ndef double(x):\n    return 2 * x")
    _ahead(execute, {"second": copy.deepcopy(hang)}, tmp_path, student, limit=60.0)
    time.sleep(2.0)  # the run ahead is under way before its turn
    began = time.monotonic()
    with caplog.at_level(logging.INFO):
        nb, _ = execute.preprocess(hang, _resources(tmp_path, student, "second"))
    took = time.monotonic() - began
    assert LOG_EXECUTED_AHEAD in caplog.text  # killed at the turn's limit: that is the turn's result
    assert took < 8.0, took  # counted from the run's start, which was before the turn
    used = json.loads(report.read_text())
    assert used["cut"] == ["second"] and 8.0 <= used["used_seconds"] < 8.0 + 6.0, used
    assert nb.cells[1].outputs[-1].ename == SANDBOX_ERROR_NAME
    assert "(its execution budget), and that was spent" in nb.cells[1].outputs[-1].evalue
