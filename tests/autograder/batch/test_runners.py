"""The local pool's start: which slots' nbgrader fork servers it warms before any submission arrives.

Real fork servers (each imports the course's ``nbgrader_config.py``), counted by their pids.
"""

from __future__ import annotations

import time
from typing import ClassVar

import pytest
from ch11_autograder.batch import nbgrader_fork
from ch11_autograder.batch.plan import BatchPlan
from ch11_autograder.batch.runners import LocalPool
from support import batch_support


class _CountedServer(nbgrader_fork.NbgraderForkServer):
    """The real fork server, its starts counted, so a test can see how many the pool started."""

    pids: ClassVar[list[int]] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _CountedServer.pids.append(self.proc.pid)


def _plan(course, workers: int) -> BatchPlan:
    return BatchPlan(course, course, workers=workers, sandbox="bwrap", timeout=60.0, limits=None, regrade=False,
                     assignment="ch11", keep_work=False, feedback=False, progress=None, started=time.monotonic())


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
