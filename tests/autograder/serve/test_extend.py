"""``ch11-grade extend``: per-student extensions in nbgrader's own gradebook, read back through nbgrader's API, and
honoured by a real ``nbgrader autograde``'s late flag."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from ch11_autograder.cli import main
from ch11_autograder.course_layout import GRADEBOOK, SUBMITTED, student_folder
from ch11_autograder.nbgrader_cli import nbgrader_env
from ch11_autograder.serve.extend import ExtendError, format_extension, parse_duration
from nbgrader.api import Gradebook, MissingEntry
from support.toy_course import make_course, nbgrader, submit

DUE = datetime(2026, 12, 14, 17, 0)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course folder whose gradebook has ch11 due 2026-12-14 17:00 UTC, students alice and bob (bob with an
    autograded-looking submission row), and an assignment without a due date."""
    course = tmp_path_factory.mktemp("course")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs nbgrader's alembic
        with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
            gb.update_or_create_assignment("ch11", duedate="2026-12-14 17:00:00 UTC")
            gb.update_or_create_assignment("undated")
            for student in ("alice", "bob"):
                gb.update_or_create_student(student)
            gb.add_submission("ch11", "bob", timestamp="2026-12-15 09:00:00 UTC")
    return course


@pytest.fixture
def course(made: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "course"))


def row(course: Path, student: str, assignment: str = "ch11") -> tuple[timedelta | None, datetime, datetime | None]:
    """(extension, due date, timestamp) of the student's submission row, through nbgrader's Gradebook."""
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        sub = gb.find_submission(assignment, student)
        return sub.extension, sub.duedate, sub.timestamp


def extend(course: Path, *args: str) -> int:
    return main(["extend", "ch11", "--course", str(course), *args])


def test_by_creates_the_submission_row_nbgrader_needs(course: Path, capsys) -> None:
    assert extend(course, "--student", "alice", "--by", "2d") == 0
    assert row(course, "alice") == (timedelta(days=2), DUE + timedelta(days=2), None)
    assert "alice  due 2026-12-16 17:00 UTC (extension 2d" in capsys.readouterr().out


def test_an_existing_row_keeps_its_timestamp_and_the_new_extension_replaces_the_old(course: Path) -> None:
    assert extend(course, "--student", "bob", "--by", "36h") == 0
    assert row(course, "bob") == (timedelta(hours=36), DUE + timedelta(hours=36), datetime(2026, 12, 15, 9, 0))
    assert extend(course, "--student", "bob", "--by", "90m") == 0  # not stacked: replaced, as grant_extension
    assert row(course, "bob")[0] == timedelta(minutes=90)
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        assert gb.find_submission("ch11", "bob").total_seconds_late == 16 * 3600 - 90 * 60
    assert extend(course, "--student", "bob", "--remove") == 0
    assert row(course, "bob")[:2] == (None, DUE)


def test_until_is_read_as_nbgrader_reads_a_due_date(course: Path) -> None:
    assert extend(course, "--student", "alice", "--until", "2026-12-16 18:00 Europe/Berlin") == 0
    assert row(course, "alice")[:2] == (timedelta(days=2), DUE + timedelta(days=2))  # 18:00 CET is 17:00 UTC
    assert extend(course, "--student", "alice", "--until", "2026-12-15 05:00") == 0  # no zone: UTC
    assert row(course, "alice")[0] == timedelta(hours=12)


def test_list_prints_each_extended_student_s_due_date(course: Path, capsys) -> None:
    extend(course, "--student", "bob", "--by", "1d12h")
    capsys.readouterr()
    assert extend(course, "--list") == 0
    assert capsys.readouterr().out.splitlines() == [
        "bob  due 2026-12-16 05:00 UTC (extension 1d 12h; the class's 2026-12-14 17:00 UTC)"]


@pytest.mark.parametrize(("args", "message"), [
    (["--student", "mallory", "--by", "2d"], "student 'mallory' is not in"),
    (["--student", "alice", "--by", "2x"], "--by '2x': not a duration"),
    (["--student", "alice", "--by", "0h"], "longer than 0"),
    (["--student", "alice", "--until", "next tuesday-ish"], "--until 'next tuesday-ish': not a date and time"),
    (["--student", "alice", "--until", "2026-12-14 16:00"], "is not after the due date of 'ch11'"),
    (["--by", "2d"], "--student is needed"),
])
def test_bad_input_is_refused_naming_it(course: Path, capsys, args: list[str], message: str) -> None:
    before = (course / GRADEBOOK).read_bytes()
    assert extend(course, *args) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert (course / GRADEBOOK).read_bytes() == before
    with pytest.raises(MissingEntry), Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        gb.find_submission("ch11", "alice")


def test_an_unknown_or_undated_assignment_and_a_folder_without_gradebook_are_refused(course: Path, tmp_path: Path,
                                                                                      capsys) -> None:
    assert main(["extend", "ch12", "--course", str(course), "--student", "alice", "--by", "2d"]) == 2
    assert "assignment 'ch12' is not in" in capsys.readouterr().err
    assert main(["extend", "undated", "--course", str(course), "--student", "alice", "--by", "2d"]) == 2
    assert "assignment 'undated' has no due date" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["extend", "ch11", "--course", str(empty), "--student", "alice", "--by", "2d"]) == 2
    err = capsys.readouterr().err
    assert f"{empty}: no gradebook.db" in err
    assert not (empty / GRADEBOOK).exists()  # refused, not created


def test_durations() -> None:
    assert parse_duration("2d") == timedelta(days=2)
    assert parse_duration("36h") == timedelta(hours=36)
    assert parse_duration("90m") == timedelta(minutes=90)
    assert parse_duration("1w") == timedelta(weeks=1)
    assert parse_duration("1d12h") == timedelta(hours=36)
    assert parse_duration("1.5d") == timedelta(hours=36)
    for bad in ("", "2", "d", "2 days", "-2d", "2s", "2d-1h"):
        with pytest.raises(ExtendError, match="not a duration"):
            parse_duration(bad)
    assert format_extension(timedelta(hours=36)) == "1d 12h" and format_extension(timedelta(minutes=90)) == "1h 30m"


PLAIN = (
    "c = get_config()  # noqa: F821\n"
    "c.CourseDirectory.source_directory = 'source'\n"
    "c.CourseDirectory.release_directory = 'assignments'\n"
)


def test_autograde_s_late_flag_uses_the_extension(tmp_path: Path) -> None:
    """Real ``nbgrader autograde``: two submissions a day after the due date; the one whose student was given two
    days (before any submission row existed) is on time, the other is late."""
    course = make_course(tmp_path / "course", PLAIN)
    nbgrader(course, "db", "assignment", "add", "toy", "--duedate=2026-12-14 17:00:00 UTC")
    for student in ("alice", "bob"):
        nbgrader(course, "db", "student", "add", student)
        submit(course, student, None, [])
        stamp = student_folder(course, SUBMITTED, student, "toy") / "timestamp.txt"
        stamp.write_text("2026-12-15 18:00:00.000000 Europe/Berlin")  # 17:00 UTC: 24 h late without an extension
    assert main(["extend", "toy", "--course", str(course), "--student", "alice", "--by", "2d"]) == 0
    log = nbgrader(course, "autograde", "toy")
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        alice, bob = gb.find_submission("toy", "alice"), gb.find_submission("toy", "bob")
        assert alice.extension == timedelta(days=2), "autograde dropped the extension"
        assert alice.timestamp == bob.timestamp == datetime(2026, 12, 15, 17, 0)
        assert alice.total_seconds_late == 0
        assert bob.total_seconds_late == 24 * 3600
    text = log.stdout + log.stderr
    assert "bob> is 86400.0 seconds late" in text and "alice> is" not in text, text
