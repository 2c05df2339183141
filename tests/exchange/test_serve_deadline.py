"""The due-date stop and an extension through nbgrader's own exchange, with real unix users and the real service.

The instructor sets the due date an hour ago (``nbgrader db assignment add``) and gives one
student two more days with ``ch11-grade extend``; both students' nbgrader writes its submission
times in New York's zone (``c.Exchange.timezone``: ``... EST``, five hours behind UTC, so on its
face a time after the due date reads as earlier). Both submit with ``nbgrader submit`` and fetch
with ``nbgrader fetch_feedback``: the extended student gets practice feedback and reads their own
due date; the other reads that practice feedback closed at the class's due date, and the
service graded nothing of theirs.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import pytest
from ch11_autograder.serve.deadline import format_due
from support import exchange_course
from support.course_users import run_as
from support.serve_exchange import ASSIGNMENT, ok, queue_rows, served_course, start_service, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

NOTEBOOK = exchange_course.NOTEBOOK
COURSE_ID = "ch11-due"
POLICY = """
c.ServePolicy.workers = 1
c.ServePolicy.rescan_seconds = 2
"""


def test_practice_feedback_closes_at_each_student_s_own_due_date() -> None:
    with served_course(COURSE_ID, ("ext", "late"), POLICY, prefix="c11d") as served:
        grader = {"venv": served.grader_venv, "cwd": served.course, "env": {"PYTHONPATH": str(served.root / "lib")}}
        instructor, ext, late = served.instructor, served.students["ext"], served.students["late"]
        due = datetime.now(UTC).replace(microsecond=0, tzinfo=None) - timedelta(hours=1)
        ok(run_as(instructor, ["nbgrader", "db", "assignment", "add", ASSIGNMENT,
                               f"--duedate={due:%Y-%m-%d %H:%M:%S} UTC"], **grader), "db assignment add")
        ok(run_as(instructor, ["nbgrader", "db", "student", "add", ext.name], **grader), "db student add")
        extended = ok(run_as(instructor, ["python", "-m", "ch11_autograder.cli", "extend", ASSIGNMENT, "--course",
                                          str(served.course), "--student", ext.name, "--by", "2d"], **grader),
                      "ch11-grade extend")
        own_due, class_due = format_due(due + timedelta(days=2)), format_due(due)
        assert f"{ext.name}  due {own_due} (extension 2d" in extended.stdout, extended.stdout
        for user in (ext, late):
            exchange_course.write_user_config(user, served.exchange, COURSE_ID,
                                              "c.Exchange.timezone = 'America/New_York'\n")
        start_service(served)
        stamps = {}
        for role, user in served.students.items():
            ok(run_as(user, ["nbgrader", "fetch_assignment", ASSIGNMENT], venv=served.student_venv), "fetch")
            exchange_course.answer_exercise4(user, f"private-{secrets.token_hex(8)}")
            ok(run_as(user, ["nbgrader", "submit", ASSIGNMENT], venv=served.student_venv), f"{user.name}: submit")
            (folder,) = served.cache(role).iterdir()
            stamps[user.name] = folder.name.split("+")[2]
            assert stamps[user.name].endswith(" EST"), stamps[user.name]  # nbgrader wrote it in New York's zone
        wait_for(lambda: f"graded   {ext.name}" in served.log.read_text(errors="replace"), "the extended grading",
                 served)
        wait_for(lambda: f"refused  {late.name}+" in served.log.read_text(errors="replace"), "the late refusal",
                 served)
        pages = {}
        for user in (ext, late):
            ok(run_as(user, ["nbgrader", "fetch_feedback", ASSIGNMENT], venv=served.student_venv), "fetch_feedback")
            pages[user.name] = (user.home / ASSIGNMENT / "feedback" / stamps[user.name] /
                                f"{NOTEBOOK}.html").read_text()
        assert "practice feedback for your submission" in pages[ext.name]
        assert f"Due date: {own_due} (your extension included)." in pages[ext.name], pages[ext.name]
        assert (f"Not graded</strong>: practice feedback closed at {class_due}; your submission is kept for the "
                "instructor&#x27;s grading.") in pages[late.name], pages[late.name]
        states = {row["student"]: row["state"] for row in queue_rows(served)}
        assert states == {ext.name: "done", late.name: "refused"}, states
        # nbgrader's collect still takes the late submission for the official grading.
        ok(run_as(instructor, ["nbgrader", "collect", ASSIGNMENT], **grader), "collect")
        assert (served.course / "submitted" / late.name / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()
