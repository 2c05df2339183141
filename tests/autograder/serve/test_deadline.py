"""Each student's due date and lateness, read from a real nbgrader gradebook by nbgrader's own rules."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ch11_autograder.nbgrader_cli import nbgrader_env
from ch11_autograder.serve.deadline import Deadlines, DeadlinesUnreadable, format_due, read_deadlines, submitted_at
from nbgrader.api import Gradebook

DUE = datetime(2026, 12, 14, 17, 0)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ch11 due 2026-12-14 17:00 UTC; alice has a 2-day extension, bob a submission row without one."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs nbgrader's alembic
        with Gradebook(f"sqlite:///{path}") as gb:
            gb.update_or_create_assignment("ch11", duedate="2026-12-14 17:00:00 UTC")
            gb.update_or_create_assignment("other")
            for student in ("alice", "bob"):
                gb.update_or_create_student(student)
                gb.add_submission("ch11", student)
            gb.grant_extension("ch11", "alice", days=2)
    return path


@pytest.fixture
def gradebook(made: Path, tmp_path: Path) -> Path:
    path = tmp_path / "gradebook.db"
    shutil.copy(made, path)
    return path


def test_a_student_s_due_date_is_the_assignment_s_plus_their_extension(gradebook: Path) -> None:
    deadlines = read_deadlines(gradebook, "ch11")
    assert deadlines.duedate == DUE
    assert dict(deadlines.extensions) == {"alice": timedelta(days=2)}
    assert deadlines.due("alice") == DUE + timedelta(days=2)
    assert deadlines.due("bob") == DUE and deadlines.due("carol") == DUE  # no row: the assignment's


def test_no_gradebook_no_assignment_or_no_due_date_means_nothing_is_late(gradebook: Path, tmp_path: Path) -> None:
    for deadlines in (read_deadlines(tmp_path / "none.db", "ch11"), read_deadlines(gradebook, "nope"),
                      read_deadlines(gradebook, "other")):
        assert deadlines == Deadlines()
        assert deadlines.seconds_late("alice", datetime(2099, 1, 1)) == 0


def test_a_gradebook_that_cannot_be_read_is_said_not_taken_for_none(tmp_path: Path) -> None:
    broken = tmp_path / "gradebook.db"
    broken.write_bytes(b"not a database" * 100)
    with pytest.raises(DeadlinesUnreadable, match=f"{broken}: its due dates cannot be read"):
        read_deadlines(broken, "ch11")


def test_the_gradebook_is_read_without_being_written(gradebook: Path) -> None:
    gradebook.chmod(0o444)
    before = gradebook.read_bytes()
    assert read_deadlines(gradebook, "ch11").duedate == DUE
    assert gradebook.read_bytes() == before


@pytest.mark.parametrize(("stamp", "late"), [
    ("2026-12-14 17:00:00.000000 UTC", 0.0),             # at the due date: on time, as nbgrader's > 0
    ("2026-12-14 17:00:01.000000 UTC", 1.0),
    ("2026-12-14 17:30:00.000000 Europe/Berlin", 0.0),  # 16:30 UTC: on time, though 17:30 > 17:00 on the face
    ("2026-12-14 16:30:00.000000 America/New_York", 16200.0),  # 21:30 UTC: late, though 16:30 < 17:00
    ("2026-12-14 17:00:00", 0.0),                        # no zone: UTC, as nbgrader reads it
])
def test_a_timestamp_is_compared_in_utc_as_nbgrader_compares_it(stamp: str, late: float) -> None:
    deadlines = Deadlines(DUE, {"alice": timedelta(days=2)})
    assert deadlines.seconds_late("bob", submitted_at(stamp, 0.0)) == late
    assert deadlines.seconds_late("alice", submitted_at(stamp, 0.0)) == 0.0


def test_an_extension_moves_only_its_student_s_due_date() -> None:
    deadlines = Deadlines(DUE, {"alice": timedelta(hours=36)})
    moment = submitted_at("2026-12-16 04:59:00.000000 UTC", 0.0)
    assert deadlines.seconds_late("alice", moment) == 0.0
    assert deadlines.seconds_late("bob", moment) == 36 * 3600 - 60
    assert deadlines.seconds_late("alice", submitted_at("2026-12-16 05:00:30 UTC", 0.0)) == 30.0


def test_without_a_readable_timestamp_the_folder_s_arrival_counts() -> None:
    arrived = datetime(2026, 12, 15, 9, 0, tzinfo=UTC).timestamp()
    moment = submitted_at(None, arrived)
    assert moment == datetime(2026, 12, 15, 9, 0)  # naive UTC, whatever the machine's zone
    assert submitted_at("not a time", arrived) == moment
    assert submitted_at("", arrived) == moment


def test_due_dates_are_written_in_utc_with_seconds_when_there_are_any() -> None:
    assert format_due(DUE) == "2026-12-14 17:00 UTC"
    assert format_due(DUE + timedelta(seconds=5)) == "2026-12-14 17:00:05 UTC"
    assert format_due(None) is None
