"""Gradebooks opened by the batch leave nothing behind (``batch/gradebook.py``).

The orchestrator opens several gradebooks per submission for the whole batch; whatever
one of them leaves alive is paid once per submission (bench part d measured 0.13 MiB).
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from ch11_autograder.batch.gradebook import open_gradebook
from nbgrader.api import Gradebook
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import SAWarning

#: Gradebooks opened per measurement: well above any fixed-size cache, far below the mappers' LRU limit.
ROUNDS = 12


def _live_dialects() -> int:
    gc.collect()
    return sum(isinstance(o, Dialect) for o in gc.get_objects())


def _use(gb: Gradebook, student: str) -> None:
    """What a merge does to a gradebook: rows inserted, updated and read through nbgrader's ORM."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        gb.update_or_create_student(student, first_name="x")
        gb.add_submission("a1", student)
        gb.update_or_create_student(student, first_name="y")
        assert [s.id for s in gb.students] == [student]


def _opened_many(template, tmp_path, opener) -> int:
    """Live SQLAlchemy dialects added by opening, using and closing ROUNDS gradebooks (each its own file)."""
    before = _live_dialects()
    for i in range(ROUNDS):
        db = tmp_path / f"{opener.__name__}-{i}.db"
        shutil.copy(template, db)  # a copy: a new database would run alembic in a subprocess
        _open_use_close(opener, db, f"s{i}")
    return _live_dialects() - before


def _open_use_close(opener, db, student: str) -> None:
    """In a function of its own, so that no local variable keeps the last gradebook alive."""
    with opener(db) as gb:
        _use(gb, student)


def _plain(db):
    return Gradebook(f"sqlite:///{db}")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A gradebook with assignment ``a1`` (made once: nbgrader stamps a new one by running alembic)."""
    db = tmp_path_factory.mktemp("gradebook") / "template.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        with open_gradebook(db) as gb:
            gb.add_assignment("a1")
    return db


def test_closed_gradebooks_keep_no_engine_alive(template, tmp_path):
    assert _opened_many(template, tmp_path, open_gradebook) == 0
    # nbgrader's Gradebook alone keeps each closed gradebook's dialect (and its compiled SQL) alive.
    assert _opened_many(template, tmp_path, _plain) == ROUNDS
    assert _opened_many(template, tmp_path, open_gradebook) <= 0  # and open_gradebook lets those go too


def test_a_url_or_a_path_opens_the_same_gradebook(template):
    with open_gradebook(f"sqlite:///{template}") as by_url, open_gradebook(template) as by_path:
        assert [a.name for a in by_url.assignments] == [a.name for a in by_path.assignments] == ["a1"]
