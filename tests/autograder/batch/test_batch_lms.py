"""LMS downloads through the whole batch: a Canvas zip's ``LATE``, and a student's own zip inside the download.

Canvas's "Download Submissions" zip marks a late submission ``LATE`` in its file
names, and carries no submission time (Canvas dates every zip entry when it builds
the zip). nbgrader computes lateness from a submission time only, so no late penalty
can follow; the batch keeps the flag and says so in the record, the CSV and the
summary. A student who uploaded a zip of their notebooks is graded from inside it
(intake's own tests cover the rules and caps). Each test grades one notebook
(``ex4_audit``, the cheapest) for real.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ch11_autograder.batch import BatchOptions, grade_class
from conftest import tiny_notebook
from support import batch_support

pytestmark = pytest.mark.slow

NOTEBOOK = "ex4_audit.ipynb"
CH11_GRADE = Path(sys.executable).parent / "ch11-grade"


def _csv_rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _canvas_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_canvas_late_flag_reaches_the_csv_and_summary_and_no_penalty_is_invented(demo_inputs, tmp_path):
    correct = (demo_inputs / "class" / "ada" / "ch11" / NOTEBOOK).read_bytes()
    source = _canvas_zip(tmp_path / "submissions.zip", {
        f"doejane_LATE_777_900003_{NOTEBOOK}": correct,
        f"smithjohn_12345_900001_{NOTEBOOK}": tiny_notebook("john")[:-5],  # cut off: an intake error
        f"roelee_late_31_900007_{NOTEBOOK}": b"{",  # late and broken
    })
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    report = grade_class(source, course, BatchOptions(workers=1, feedback=False))
    records = {r.student: r for r in report.records}
    assert {s: (r.status, r.lms_late) for s, r in records.items()} == {
        "doejane_777": ("graded", True), "roelee_31": ("error", True), "smithjohn_12345": ("error", False)}
    assert records["doejane_777"].score == 4.0
    rows = _csv_rows(report.csv_path)
    # Graded in full: nbgrader had no submission time, so it computed no lateness (penalty 0), and the CSV says
    # that the LMS called it late, for errors too.
    assert (rows["doejane_777"]["late_penalty"], rows["doejane_777"]["lms_late"]) == ("0", "LATE")
    assert (rows["roelee_31"]["lms_late"], rows["smithjohn_12345"]["lms_late"]) == ("LATE", "")
    summary = report.summary_path.read_text()
    assert "marked LATE by the LMS (2): doejane_777, roelee_31" in summary
    assert "doejane_777: Canvas marked this submission LATE; its download has no submission time" in summary


def test_a_students_own_zip_in_a_canvas_download_is_graded(demo_inputs, tmp_path):
    import io

    correct = (demo_inputs / "class" / "ada" / "ch11" / NOTEBOOK).read_bytes()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"Homework 11/{NOTEBOOK}", correct)
        archive.writestr(f"__MACOSX/Homework 11/._{NOTEBOOK}", b"\0\5\26\7")
    source = _canvas_zip(tmp_path / "submissions.zip", {"parkmin_4242_900010_Homework 11.zip": inner.getvalue()})
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    (record,) = grade_class(source, course, BatchOptions(workers=1, feedback=False)).records
    assert (record.student, record.status, record.score) == ("parkmin_4242", "graded", 4.0)
    assert record.per_notebook["ex4_audit"] == 4.0
    assert "parkmin_4242_900010_Homework 11.zip: the student's own zip, unpacked (2 members)" in record.notes
    graded = course / "autograded" / "parkmin_4242" / "ch11"
    assert sorted(p.name for p in graded.iterdir()) == [NOTEBOOK]


#: A Canvas member name as a hostile download can carry it: a forged progress line after a newline, a colour
#: escape, a carriage return that rewinds the line, a right-to-left override, a bell; and a window-title escape.
HOSTILE = "mal\n[ 1-1] alice graded 40-40\x1b[31m\rRED\u202eevil\x07"
TITLE = "ok\x1b]0;pwned\x07"


def test_student_named_text_reaches_the_terminal_and_the_summary_escaped(demo_inputs, tmp_path):
    source = _canvas_zip(tmp_path / "submissions.zip", {
        f"{HOSTILE}_123_456_{NOTEBOOK}": b"{",  # broken JSON: an intake error naming the member
        f"{TITLE}_77_88_{NOTEBOOK}": tiny_notebook("x")[:-3],
    })
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    env = {**os.environ, "PATH": f"{CH11_GRADE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(CH11_GRADE), "batch", str(source), "--course", str(course), "--workers", "1"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr  # two intake errors, nothing graded
    summary = (course / "reports" / "ch11-summary.txt").read_text()
    report = (course / "reports" / "ch11-report.md").read_text()
    for text in (done.stdout, done.stderr, summary, report):
        for raw in ("\x1b", "\r", "\u202e", "\x07", "\n[ 1-1] alice"):
            assert raw not in text, (raw, text)
    shown = r"mal\n[ 1-1] alice graded 40-40\x1b[31m\rRED\u202eevil\x07_123_456_ex4_audit.ipynb: malformed JSON"
    assert shown in done.stdout and shown in summary
    assert r"ok\x1b]0;pwned\x07_77_88_ex4_audit.ipynb: malformed JSON" in done.stdout
    # Each error is one line of its own: the forged progress line never starts a line.
    assert not any(line.startswith("[ 1-1] alice") for line in done.stdout.splitlines())
