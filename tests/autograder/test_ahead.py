"""Suites started before execution (trusted/ahead.py, SuitesAhead): the verdicts are those graded in place."""

from __future__ import annotations

import copy
import logging
import threading

import pytest
from ch11_autograder.trusted import ahead
from ch11_autograder.trusted.preprocessors import SuitesAhead, TrustedVerdicts
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
