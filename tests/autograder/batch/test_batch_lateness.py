"""Late penalties in the batch equal nbgrader's in the real course: due date, per-student extension, hand scores.

nbgrader's ``AssignLatePenalties`` computes a notebook's penalty while autograding,
from the submission row (timestamp, the student's extension), the assignment's due
date and the notebook's score at that moment (hand-entered scores count). The batch
grades each submission in an isolated course; these tests grade a one-notebook class
(``ex4_audit``, the cheapest) under ``penalty_method = "zero"`` and compare with plain
``nbgrader autograde`` in a copy of the same course.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from datetime import datetime
from pathlib import Path

import pytest
from ch11_autograder.batch import BatchOptions, grade_class, isolated
from ch11_autograder.nbgrader_cli import run_nbgrader
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning
from support import batch_support

pytestmark = pytest.mark.slow

NOTEBOOK = "ex4_audit.ipynb"
DUE = datetime(2026, 11, 20, 12, 0, 0)  # naive UTC, as nbgrader stores it
SUBMITTED = "2026-11-21 12:00:00.000000 UTC"  # a day after the due date
STUDENTS = ("ada", "bob")  # ada has a two-day extension; bob has none and a hand score of 1.5 entered


def _db(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _lateness(course: Path) -> dict[str, tuple]:
    """Student -> (seconds late, notebook -> late penalty, score) as the course's gradebook has them."""
    out = {}
    with Gradebook(_db(course)) as gb:
        for sub in gb.assignment_submissions("ch11"):
            penalties = {nb.name: nb.late_submission_penalty for nb in sorted(sub.notebooks, key=lambda n: n.name)}
            out[sub.student.id] = (sub.total_seconds_late, penalties, sub.score)
    return out


@pytest.fixture
def setup(demo_inputs, tmp_path):
    """(source, course): the class with timestamps, and a course with a due date, ada's extension, bob's hand
    score and the "zero" late penalty; nothing graded yet."""
    source = tmp_path / "src"
    for student in STUDENTS:
        folder = source / student / "ch11"
        folder.mkdir(parents=True)
        shutil.copy2(demo_inputs / "class" / "ada" / "ch11" / NOTEBOOK, folder / NOTEBOOK)  # a correct answer: 4/4
        (folder / "timestamp.txt").write_text(SUBMITTED + "\n")
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    with (course / "nbgrader_config.py").open("a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"  # a late notebook scores 0\n')
    with warnings.catch_warnings(), Gradebook(_db(course)) as gb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission; the rows are right
        gb.update_or_create_assignment("ch11", duedate=DUE)
        for student in STUDENTS:  # nbgrader keeps an extension on the submission row
            gb.update_or_create_student(student)
            gb.add_submission("ch11", student)
        gb.grant_extension("ch11", "ada", days=2)
        gb.find_grade("ex4_mathematical_object", "ex4_audit", "ch11", "bob").manual_score = 1.5
        gb.db.commit()
    return source, course


def _plain_nbgrader(source: Path, course: Path) -> dict[str, tuple]:
    """What ``nbgrader autograde ch11`` computes in the real course (no batch, no isolation)."""
    for student in STUDENTS:
        shutil.copytree(source / student, course / "submitted" / student)
    done = run_nbgrader(course, "autograde", "ch11", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    return _lateness(course)


def test_late_penalties_equal_nbgrader_in_the_real_course(setup, tmp_path, monkeypatch):
    source, course = setup
    reference = _plain_nbgrader(source, batch_support.copy_course(course, tmp_path / "reference"))
    # Premise: the case discriminates. ada is on time thanks to her extension (no penalty); bob is a day late
    # and "zero" takes the notebook's whole score, his hand score included (4 autograded + 1.5).
    assert reference["ada"][0] == 0 and reference["ada"][1]["ex4_audit"] is None
    assert reference["bob"][0] == 86400 and reference["bob"][1]["ex4_audit"] == 5.5

    wrong_course = batch_support.copy_course(course, tmp_path / "wrong")
    report = grade_class(source, course, BatchOptions(workers=2, feedback=False))
    assert [r.status for r in report.records] == ["graded", "graded"]
    assert _lateness(course) == reference
    csv_rows = report.csv_path.read_text().splitlines()
    header = csv_rows[0].split(",")
    penalty = {row.split(",")[0]: row.split(",")[header.index("late_penalty")] for row in csv_rows[1:]}
    assert penalty == {"ada": "0", "bob": "5.5"}  # the CSV shows nbgrader's penalty next to the autograded points

    # The same comparison catches the isolated course without the student's own row (the behaviour before):
    # ada's extension is lost (penalised 4) and bob's hand score is missing from his penalty (4, not 5.5).
    monkeypatch.setattr(isolated, "seed_prior", lambda *args, **kwargs: None)
    grade_class(source, wrong_course, BatchOptions(workers=2, feedback=False))
    wrong = _lateness(wrong_course)
    assert wrong != reference
    assert wrong["ada"][1]["ex4_audit"] == 4.0 and wrong["bob"][1]["ex4_audit"] == 4.0
    monkeypatch.undo()

    # Unchanged inputs and due dates: resumed. An extension granted since: that student is graded again.
    assert [r.status for r in grade_class(source, course, BatchOptions(workers=1, feedback=False)).records] == [
        "skipped_resume", "skipped_resume"]
    with Gradebook(_db(course)) as gb:
        gb.grant_extension("ch11", "bob", days=3)
    rerun = {r.student: r.status for r in grade_class(source, course, BatchOptions(workers=1, feedback=False)).records}
    assert rerun == {"ada": "skipped_resume", "bob": "graded"}
    after = _lateness(course)
    assert after["bob"][0] == 0 and after["bob"][1]["ex4_audit"] is None and after["ada"] == reference["ada"]
