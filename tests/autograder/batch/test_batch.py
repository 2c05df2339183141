"""The batch grader end to end: real nbgrader, real kernels, the bwrap sandbox.

The demo class is graded once per session (``demo_graded``, 2 workers) and
compared with what ``make demo`` computes; the other tests here grade the class
(or part of it) again or work on copies of that course. Failure paths and
merging, which need only tiny classes, are in ``test_batch_failures.py`` and
``test_merge.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ch11_autograder.batch import BatchOptions, grade_class, gradebook_snapshot
from ch11_autograder.batch.ledger import Ledger
from ch11_autograder.cli import main as cli_main
from support import batch_support

pytestmark = [pytest.mark.slow, pytest.mark.class_batch]


@pytest.fixture
def demo(demo_inputs) -> Path:
    """The session's copy of the demo class."""
    return demo_inputs / "class"


@pytest.fixture
def ada(demo) -> Path:
    return demo / "ada" / "ch11"


def _course(tmp_path: Path) -> Path:
    return batch_support.new_course(tmp_path.parent, tmp_path / "course")


def _feedback_files(course: Path) -> dict[str, str]:
    return batch_support.feedback_html(course)


# --------------------------------------------------------------------------- the demo class


def test_batch_of_the_demo_class_equals_make_demo(demo_graded, make_demo_course):
    course, report, events = demo_graded
    assert [r.student for r in report.records] == ["ada", "blank", "hal", "lin"]
    assert {r.status for r in report.records} == {"graded"} and not report.problems
    # The gradebook: every cell of hal and lin as plain `nbgrader autograde` of a class left it.
    expected = gradebook_snapshot(make_demo_course, "ch11")
    assert set(expected) == set(batch_support.MAKE_DEMO_STUDENTS)
    assert {s: v for s, v in gradebook_snapshot(course, "ch11").items() if s in expected} == expected
    assert sum(len(cells) for cells in expected.values()) == 2 * 23
    # Feedback is byte for byte what make demo produced.
    feedback = _feedback_files(course)
    assert len(feedback) == 4 * 5
    assert {k: v for k, v in feedback.items() if k.split("/")[0] in expected} == _feedback_files(make_demo_course)
    scores = {r.student: (r.score, r.per_notebook["ex1_fanout"]) for r in report.records}
    assert scores == {"ada": (40.0, 8.0), "blank": (0.0, 0.0), "hal": (18.0, 8.0), "lin": (36.73, 7.0)}
    csv_lines = report.csv_path.read_text().splitlines()
    assert csv_lines[0].startswith("student,status,ex1_fanout,") and csv_lines[4].startswith("lin,graded,7,10,3.73")
    assert "status counts: graded 4, skipped_resume 0, error 0" in report.summary_path.read_text()
    # Progress: one event per submission, counting up, with an ETA until the last.
    done = [e for e in events if e.record is not None]
    assert [e.done for e in done] == [1, 2, 3, 4] and all(e.total == 4 for e in events)
    assert done[0].eta_seconds is not None and done[0].eta_seconds > 0
    # Each submission ran in its own isolated course, now removed; logs are kept.
    assert not any((course / ".ch11-batch" / "work").iterdir())
    assert all(Path(r.log).is_file() for r in report.records)


# --------------------------------------------------------------------------- resume and determinism


_ORCHESTRATOR = """
import sys
from pathlib import Path
from ch11_autograder.batch import BatchOptions, grade_class
grade_class(Path(sys.argv[1]), Path(sys.argv[2]), BatchOptions(workers=2, sandbox="bwrap"))
"""


def test_sigkill_mid_batch_then_rerun_equals_an_uninterrupted_run(demo_graded, demo, tmp_path):
    """Two students graded at once; the orchestrator is SIGKILLed right after the first is merged."""
    reference, reference_report, _ = demo_graded
    students = ["blank", "hal"]
    source = tmp_path / "class"
    for student in students:
        shutil.copytree(demo / student, source / student)
    course = _course(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", _ORCHESTRATOR, str(source), str(course)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ledger = Ledger(course / ".ch11-batch" / "ledger.jsonl")
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        if any(e.event == "graded" for e in ledger.entries()):
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the batch ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)  # the orchestrator only: its nbgrader children must die with it
    proc.wait()
    merged_before = [e.student for e in ledger.entries() if e.event == "graded"]
    assert len(merged_before) == 1
    time.sleep(2.0)
    assert batch_support.processes_under(course / ".ch11-batch") == [], "graders outlived the killed orchestrator"

    report = grade_class(source, course, BatchOptions(workers=2, sandbox="bwrap"))
    statuses = {r.student: r.status for r in report.records}
    assert statuses == {s: "skipped_resume" if s in merged_before else "graded" for s in students}
    # Nothing lost, nothing counted twice: the gradebook equals the uninterrupted run's, cell by cell.
    expected = gradebook_snapshot(reference, "ch11")
    assert gradebook_snapshot(course, "ch11") == {s: expected[s] for s in students}
    # Determinism: the same input graded twice gives identical CSV rows and feedback files.
    reference_rows = reference_report.csv_path.read_text().splitlines()
    assert report.csv_path.read_text().splitlines() == [reference_rows[0]] + [
        row for row in reference_rows[1:] if row.split(",")[0] in students]
    reference_feedback = _feedback_files(reference)
    assert _feedback_files(course) == {k: v for k, v in reference_feedback.items() if k.split("/")[0] in students}
    # Each student was merged by exactly one of the two runs.
    graded = [e.student for e in ledger.entries() if e.event == "graded"]
    assert sorted(graded) == students


def test_a_changed_submission_is_regraded_and_the_rest_skipped(demo_graded, demo, ada, tmp_path):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    src = tmp_path / "class"
    shutil.copytree(demo, src)
    shutil.copy2(ada / "ex1_fanout.ipynb", src / "blank" / "ch11" / "ex1_fanout.ipynb")
    before = gradebook_snapshot(course, "ch11")
    report = grade_class(src, course, BatchOptions(workers=2))
    records = {r.student: r for r in report.records}
    assert {s: r.status for s, r in records.items()} == {
        "ada": "skipped_resume", "blank": "graded", "hal": "skipped_resume", "lin": "skipped_resume"}
    assert records["blank"].per_notebook["ex1_fanout"] == 8.0 and records["blank"].score == 8.0
    after = gradebook_snapshot(course, "ch11")
    assert {s: after[s] for s in ("ada", "hal", "lin")} == {s: before[s] for s in ("ada", "hal", "lin")}
    assert after["blank"] != before["blank"]
    assert "blank,graded,8,0,0,0,0,8,40" in report.csv_path.read_text()


# --------------------------------------------------------------------------- refusals and the CLI


def test_cli_prints_progress_table_and_paths(demo_graded, demo, tmp_path, capsys):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    assert cli_main(["batch", str(demo), "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "[1/4] ada already graded 40/40 (unchanged; skipped)" in out
    assert "lin      skipped_resume  7 " in out and "36.73/40" in out
    assert "0 graded, 4 unchanged since the last run, 0 errors" in out
    assert f"grades:   {course}/reports/ch11-grades.csv" in out
    assert f"report:   {course}/reports/ch11-report.html (and ch11-report.md, 8 PNGs)" in out
    assert cli_main(["batch", str(tmp_path / "missing"), "--course", str(course)]) == 2
    assert "no such folder or zip file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["batch", str(demo), "--course", str(course), "--sandbox", "chroot"])
