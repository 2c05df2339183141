"""``SanitizeOnce``: nbgrader's sanitize steps run once per notebook, at its turn or ahead of it and not again.

The steps here are nbgrader's ``ClearOutput`` and a step of this test that counts its runs and
logs a line, so that a second run, and a log line lost or written twice, show.
"""

from __future__ import annotations

import copy
import logging
import uuid

import pytest
from ch11_autograder.trusted.steps import SanitizeOnce
from nbgrader.preprocessors import ClearOutput, NbGraderPreprocessor
from support.toy_notebook import notebook

STREAM = {"output_type": "stream", "name": "stdout", "text": "planted\n"}


class Counted(NbGraderPreprocessor):
    """Counts its runs; logs one line per run, as nbgrader's steps log theirs."""

    runs = 0

    def preprocess(self, nb, resources):
        type(self).runs += 1
        self.log.warning("counted step saw %d cells", len(nb.cells))
        return nb, resources


@pytest.fixture
def counted():
    Counted.runs = 0
    return Counted


def _resources(student: str, name: str = "b") -> dict:
    return {"nbgrader": {"assignment": "toy", "student": student, "notebook": name}}


def _step(logger_name: str = "turn") -> SanitizeOnce:
    return SanitizeOnce(steps=[ClearOutput, Counted], log=logging.getLogger(logger_name))


#: One notebook for every test: nbformat gives each new cell a random id.
SUBMITTED = notebook("def double(x):\n    return 2 * x\n", test_outputs=[STREAM])


def _submitted():
    return copy.deepcopy(SUBMITTED)


def test_a_notebook_sanitized_ahead_is_not_sanitized_again_at_its_turn(counted, caplog):
    student = f"ann-{uuid.uuid4().hex[:8]}"
    with caplog.at_level("INFO"):
        ahead, _ = _step("ahead").ahead(_submitted(), _resources(student))
    assert counted.runs == 1
    assert "counted step saw" not in caplog.text  # held for the turn, not written ahead
    assert all(cell.get("outputs", []) == [] for cell in ahead.cells)  # ClearOutput ran
    with caplog.at_level("INFO"):
        turn, _ = _step().preprocess(_submitted(), _resources(student))
    assert counted.runs == 1
    assert turn == ahead
    assert [r.getMessage() for r in caplog.records if r.name == "turn"] == ["counted step saw 3 cells"]
    _step().preprocess(_submitted(), _resources(student))  # taken once: a second turn sanitizes
    assert counted.runs == 2


def test_a_notebook_changed_since_it_was_sanitized_ahead_is_sanitized_at_its_turn(counted):
    student = f"ann-{uuid.uuid4().hex[:8]}"
    _step().ahead(_submitted(), _resources(student))
    changed = _submitted()
    changed.cells[1].source = "def double(x):\n    return x + x\n"
    turn, _ = _step().preprocess(copy.deepcopy(changed), _resources(student))
    assert counted.runs == 2
    assert turn.cells[1].source == "def double(x):\n    return x + x\n"


def test_another_submission_or_notebook_does_not_take_what_was_sanitized_ahead(counted):
    student = f"ann-{uuid.uuid4().hex[:8]}"
    _step().ahead(_submitted(), _resources(student))
    _step().preprocess(_submitted(), _resources(student, name="c"))
    _step().preprocess(_submitted(), _resources(f"bob-{uuid.uuid4().hex[:8]}"))
    assert counted.runs == 3


def test_disabled_it_does_nothing_ahead(counted):
    nb = _submitted()
    got, _ = SanitizeOnce(steps=[ClearOutput, Counted], enabled=False).ahead(nb, _resources("ann"))
    assert got is nb and counted.runs == 0
