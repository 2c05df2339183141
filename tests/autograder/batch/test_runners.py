"""The nbgrader fork servers a batch starts: the slots the local pool warms before any submission
arrives, and the server ``ch11-grade batch`` hands the batch for slot 0.

Real fork servers (each imports the course's ``nbgrader_config.py``) and real grading, the servers
counted by their pids.
"""

from __future__ import annotations

import shutil
import time

import pytest
from ch11_autograder.batch import BatchOptions, IntakeError, grade_class, nbgrader_fork, orchestrate
from ch11_autograder.batch.plan import BatchPlan
from ch11_autograder.batch.runners import LocalPool
from support import batch_support
from support.paths import ASSIGNMENT

_CountedServer = batch_support.counted_server_class()


def _plan(course, workers: int) -> BatchPlan:
    return BatchPlan(course, course, BatchOptions(workers=workers, sandbox="bwrap", timeout=60.0, feedback=False),
                     progress=None, started=time.monotonic())


@pytest.mark.parametrize(("expected", "warmed"), [(1, 1), (2, 2), (5, 2), (None, 2)])
def test_the_pool_warms_only_the_slots_its_expected_submissions_use(tmp_path_factory, monkeypatch, expected,
                                                                    warmed):
    """``workers=2``: one expected submission warms one server; more than two, or not known, warm both."""
    course = batch_support.new_course(tmp_path_factory.getbasetemp(), tmp_path_factory.mktemp("pool") / "course")
    monkeypatch.setattr(nbgrader_fork, "NbgraderForkServer", _CountedServer)
    _CountedServer.pids = []
    pool = LocalPool(_plan(course, workers=2))
    pool.start(expected)
    pool.close()  # waits for the warming tasks: every server they start is counted by now
    assert len(_CountedServer.pids) == warmed == pool.servers.started


@pytest.mark.parametrize("feedback", [False, True])
def test_a_batch_of_one_submission_grades_on_the_server_it_was_handed_and_starts_no_other(tmp_path_factory,
                                                                                          monkeypatch, feedback):
    """``ch11-grade batch`` hands ``grade_class`` slot 0's server, started before its own imports.

    With feedback, ``generate_feedback`` and ``export`` fork from it too, after the pool has closed:
    no course-wide server imports nbgrader beside the submission's grading.
    """
    base = tmp_path_factory.getbasetemp()
    root = tmp_path_factory.mktemp("first-server")
    course = batch_support.assigned_course(base, root / "course")
    notebook = "ex4_audit.ipynb"
    dest = root / "class" / "ada" / ASSIGNMENT
    dest.mkdir(parents=True)
    shutil.copy2(batch_support.inputs(base) / "class" / "ada" / ASSIGNMENT / notebook, dest / notebook)
    first = nbgrader_fork.NbgraderForkServer(course / "nbgrader_config.py", wait=False)
    monkeypatch.setattr(nbgrader_fork, "NbgraderForkServer", _CountedServer)
    monkeypatch.setattr(orchestrate, "NbgraderForkServer", _CountedServer)
    _CountedServer.pids = []
    report = grade_class(root / "class", course, BatchOptions(workers=2, sandbox="bwrap", feedback=feedback),
                         first_server=first)
    assert [r.status for r in report.records] == ["graded"]
    assert _CountedServer.pids == []  # the pool adopted the server it was handed for slot 0
    if feedback:
        assert (course / "feedback" / "ada" / ASSIGNMENT / "ex4_audit.html").is_file()
        assert report.problems == []
        assert "is gone" not in (course / ".ch11-batch" / "logs" / "generate_feedback.log").read_text()
    assert not first.alive  # and the batch closed it


def test_a_refused_batch_closes_the_server_it_was_handed(tmp_path):
    config = tmp_path / "course" / "nbgrader_config.py"
    config.parent.mkdir()
    config.write_text("c = get_config()  # noqa: F821\n")
    first = nbgrader_fork.NbgraderForkServer(config, wait=False)
    with pytest.raises(IntakeError):
        grade_class(tmp_path / "no-such-folder", tmp_path / "course", BatchOptions(sandbox="bwrap"), first_server=first)
    assert not first.alive
