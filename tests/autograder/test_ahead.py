"""Suites started before execution (trusted/ahead.py, SuitesAhead): the verdicts are those graded in place."""

from __future__ import annotations

import copy
import logging
import threading
import time

import pytest
from ch11_autograder.trusted import ahead
from ch11_autograder.trusted.steps import SuitesAhead, TrustedVerdicts
from ch11_autograder.trusted.submission_cells import worker_cells
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY
from nbgrader.utils import determine_grade
from support.toy_notebook import notebook


def _resources(tmp_path):
    return {"metadata": {"path": str(tmp_path)}, "unique_key": "toy"}


def _in_place(nb, resources):
    """The notebook after an execution's counts and TrustedVerdicts alone."""
    for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = number + 1  # what SandboxedExecute copies back; the verdict's output shows it
    nb, _ = TrustedVerdicts(config=_config()).preprocess(nb, resources)
    return nb


def _config():
    from traitlets.config import Config

    config = Config()
    config.TrustedVerdicts.sandbox = "none"
    config.TrustedVerdicts.call_timeout = 2.0
    return config


@pytest.mark.parametrize("answer", ["def double(x):\n    return 2 * x", "def double(x):\n    return x + 2"])
def test_suites_started_ahead_give_the_verdicts_graded_in_place(toy_suite, tmp_path, answer):
    in_place = _in_place(notebook(answer), _resources(tmp_path))
    resources = _resources(tmp_path)
    nb = notebook(answer)
    nb, resources = SuitesAhead(config=_config()).preprocess(nb, resources)
    assert ahead.pending(resources)
    for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = number + 1
    nb, _ = TrustedVerdicts(config=_config()).preprocess(nb, resources)
    assert not ahead.pending(resources)
    assert nb.cells[2].outputs == in_place.cells[2].outputs
    assert nb.cells[2].metadata[VERDICT_METADATA_KEY] == in_place.cells[2].metadata[VERDICT_METADATA_KEY]
    assert determine_grade(nb.cells[2]) == determine_grade(in_place.cells[2])


def test_a_notebook_changed_after_the_start_is_graded_again(toy_suite, tmp_path, caplog):
    resources = _resources(tmp_path)
    nb = notebook("def double(x):\n    return x + 2")  # wrong: the early grading scores 0
    nb, resources = SuitesAhead(config=_config()).preprocess(nb, resources)
    nb.cells[1].source = "def double(x):\n    return 2 * x"  # a step in between changed the answer
    with caplog.at_level(logging.WARNING):
        nb, _ = TrustedVerdicts(config=_config()).preprocess(nb, resources)
    assert determine_grade(nb.cells[2]) == (2.0, 2.0)
    assert "changed after the suites were started early" in caplog.text


def test_an_error_of_the_early_grading_is_raised_where_trusted_verdicts_runs(toy_suite, tmp_path,
                                                                              monkeypatch):
    def broken(self, inputs, launcher):
        raise RuntimeError("suite machinery broke")

    monkeypatch.setattr(TrustedVerdicts, "grade", broken)
    resources = _resources(tmp_path)
    nb, resources = SuitesAhead(config=_config()).preprocess(notebook("def double(x):\n    return 2 * x"),
                                                              resources)
    with pytest.raises(RuntimeError, match="suite machinery broke"):
        TrustedVerdicts(config=_config()).preprocess(nb, resources)


def test_inside_the_grading_container_the_suites_stay_in_place(toy_suite, tmp_path):
    # Every run of a slot is one uid there: a worker beside a running notebook could be signalled by it.
    config = _config()
    config.TrustedVerdicts.sandbox = "docker"
    resources = _resources(tmp_path)
    SuitesAhead(config=config).preprocess(notebook("def double(x):\n    return 2 * x"), resources)
    assert not ahead.pending(resources)


def test_off_and_without_test_cells_nothing_starts(toy_suite, tmp_path):
    config = _config()
    config.SuitesAhead.enabled = False
    resources = _resources(tmp_path)
    SuitesAhead(config=config).preprocess(notebook("def double(x):\n    return 2 * x"), resources)
    assert not ahead.pending(resources)
    nb = notebook("def double(x):\n    return 2 * x")
    del nb.cells[2]
    SuitesAhead(config=_config()).preprocess(nb, resources)
    assert not ahead.pending(resources)


def test_the_key_covers_every_input_the_suites_read(tmp_path):
    nb = notebook("def double(x):\n    return 2 * x")

    def key(nb, support=None, skip=()):
        return ahead.SuiteInputs(tests=((2, "double_tests", 2.0),), cells=worker_cells(nb, skip=set(skip)),
                                 support=support or {}).key

    base = key(nb)
    assert key(copy.deepcopy(nb)) == base
    changed = copy.deepcopy(nb)
    changed.cells[1].source += "\n"
    assert key(changed) != base
    visible = copy.deepcopy(nb)
    visible.cells[2].source = visible.cells[2].source.replace("double(3) == 6", "double(4) == 8")
    assert key(visible) != base
    assert key(nb, support={"data.csv": b"1"}) != key(nb, support={"data.csv": b"2"})
    assert key(nb, skip=["double_impl"]) != base
    assert ahead.SuiteInputs(tests=((2, "double_tests", 3.0),), cells=worker_cells(nb), support={}).key != base


def test_take_waits_for_the_early_grading_and_forgets_it(tmp_path):
    release = threading.Event()
    inputs = ahead.SuiteInputs(tests=(), cells=worker_cells(notebook("x = 1")), support={})
    results = ahead.SuiteResults({}, ["incident"])

    def work():
        release.wait(10)
        return results

    resources = _resources(tmp_path)
    ahead.start(resources, inputs, work)
    assert ahead.pending(resources)  # start returned while the grading still waits
    threading.Timer(0.2, release.set).start()
    assert ahead.take(resources, inputs) is results
    assert ahead.take(resources, inputs) is None


# ------------------------------------------------------- Lane: a submission's suites ahead of their turns


def _inputs(source: str) -> ahead.SuiteInputs:
    return ahead.SuiteInputs(tests=(), cells=worker_cells(notebook(source)), support={})


def _until(condition, seconds: float = 10.0) -> None:
    """Wait until ``condition()`` holds; fail the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the lane did not get there in time"
        time.sleep(0.01)


class _Recorder:
    """Work for a lane: each grading records when it ran and returns results naming its notebook."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.order: list[str] = []

    def work(self, notebook: str, release: threading.Event | None = None):
        def run():
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.order.append(notebook)
            if release is not None:
                release.wait(10)
            time.sleep(0.02)
            with self.lock:
                self.running -= 1
            return ahead.SuiteResults({}, [notebook])
        return run


def test_a_lane_grades_one_notebook_at_a_time_in_nbgraders_order(tmp_path):
    rec = _Recorder()
    release = threading.Event()
    later = [(name, _inputs(name), rec.work(name)) for name in ("ex3", "ex10", "ex2")]
    lane = ahead.Lane("test-lane", lambda: later)
    first = _resources(tmp_path)
    assert not lane.attach(first, "ex1", _inputs("ex1"), rec.work("ex1", release))
    threading.Timer(0.2, release.set).start()
    assert ahead.take(first, _inputs("ex1")).incidents == ["ex1"]
    for name in ("ex10", "ex2", "ex3"):  # file names in order: ex10.ipynb < ex2.ipynb
        resources = _resources(tmp_path)
        assert lane.attach(resources, name, _inputs(name), rec.work("turn"))
        assert ahead.take(resources, _inputs(name)).incidents == [name]
    assert rec.order == ["ex1", "ex10", "ex2", "ex3"]
    assert rec.most == 1  # one worker at a time in the lane's sandbox


def test_a_later_notebook_whose_inputs_changed_is_graded_from_the_turns_inputs(tmp_path):
    rec = _Recorder()
    release = threading.Event()
    lane = ahead.Lane("test-lane", lambda: [("ex2", _inputs("old"), rec.work("ex2-old"))])
    first = _resources(tmp_path)
    lane.attach(first, "ex1", _inputs("ex1"), rec.work("ex1", release))  # holds the lane: ex2-old stays queued
    _until(lambda: "ex2" in lane._entries)
    turn = _resources(tmp_path)
    assert not lane.attach(turn, "ex2", _inputs("new"), rec.work("ex2-new"))
    release.set()
    assert ahead.take(first, _inputs("ex1")).incidents == ["ex1"]
    assert ahead.take(turn, _inputs("new")).incidents == ["ex2-new"]
    assert rec.order == ["ex1", "ex2-new"]  # the guess made ahead was never run


def test_later_notebooks_that_cannot_be_prepared_are_graded_at_their_turns(tmp_path, caplog):
    def broken():
        raise OSError("submission folder vanished")

    rec = _Recorder()
    lane = ahead.Lane("test-lane", broken)
    first = _resources(tmp_path)
    with caplog.at_level(logging.WARNING):
        lane.attach(first, "ex1", _inputs("ex1"), rec.work("ex1"))
        assert ahead.take(first, _inputs("ex1")).incidents == ["ex1"]
        turn = _resources(tmp_path)
        assert not lane.attach(turn, "ex2", _inputs("ex2"), rec.work("ex2"))
        assert ahead.take(turn, _inputs("ex2")).incidents == ["ex2"]
    assert "preparing them failed: OSError: submission folder vanished" in caplog.text


def test_a_closed_lane_grades_nothing_queued_and_its_turns_grade_in_place(tmp_path):
    rec = _Recorder()
    release = threading.Event()
    lane = ahead.Lane("test-lane")
    first, second = _resources(tmp_path), _resources(tmp_path)
    lane.attach(first, "ex1", _inputs("ex1"), rec.work("ex1", release))
    lane.attach(second, "ex2", _inputs("ex2"), rec.work("ex2"))
    _until(lambda: rec.order == ["ex1"])  # ex1 is going, ex2 queued behind it
    lane.close()
    release.set()
    assert ahead.take(first, _inputs("ex1")).incidents == ["ex1"]  # the one going ends on its own
    assert ahead.take(second, _inputs("ex2")) is None  # TrustedVerdicts grades it in place
    late = _resources(tmp_path)
    lane.attach(late, "ex3", _inputs("ex3"), rec.work("ex3"))
    assert ahead.take(late, _inputs("ex3")) is None
    assert rec.order == ["ex1"]


def test_one_lane_per_submission_and_a_new_submission_closes_the_last(tmp_path):
    a = ahead.lane_for(("ch11", "ada"))
    assert ahead.lane_for(("ch11", "ada")) is a
    b = ahead.lane_for(("ch11", "hal"))
    assert b is not a and a._closed and not b._closed
    c = ahead.lane_for(("ch11", "cal"))
    assert b._closed and not c._closed
    c.close()


def test_a_notebook_whose_turn_came_before_the_lane_had_it_is_not_graded_again(tmp_path):
    rec = _Recorder()
    ready = threading.Event()

    def later():
        ready.wait(10)  # preparing the later notebooks is slower than the turns
        return [("ex2", _inputs("ex2"), rec.work("ex2-ahead")), ("ex3", _inputs("ex3"), rec.work("ex3-ahead"))]

    lane = ahead.Lane("test-lane", later)
    first, second = _resources(tmp_path), _resources(tmp_path)
    lane.attach(first, "ex1", _inputs("ex1"), rec.work("ex1"))
    ahead.take(first, _inputs("ex1"))
    assert not lane.attach(second, "ex2", _inputs("ex2"), rec.work("ex2-turn"))
    assert ahead.take(second, _inputs("ex2")).incidents == ["ex2-turn"]
    ready.set()
    third = _resources(tmp_path)
    _until(lambda: "ex3" in lane._entries)
    assert lane.attach(third, "ex3", _inputs("ex3"), rec.work("ex3-turn"))
    assert ahead.take(third, _inputs("ex3")).incidents == ["ex3-ahead"]
    assert rec.order == ["ex1", "ex2-turn", "ex3-ahead"]
