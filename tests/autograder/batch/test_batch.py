"""The batch grader end to end: real nbgrader, real kernels, the bwrap sandbox.

The demo class is graded once per session (``demo_graded``, 2 workers) and
compared with what ``make demo`` computes; the other tests grade small
classes of their own or copies of that course.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import batch_support
import pytest
from ch11_autograder.batch import BatchError, grade_class, gradebook_snapshot
from ch11_autograder.batch.ledger import Ledger
from ch11_autograder.batch.merge import merge_result, read_result
from ch11_autograder.cli import main as cli_main
from nbgrader.api import Gradebook

pytestmark = pytest.mark.slow


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


def _processes_under(path: Path) -> list[int]:
    """Pids whose working directory is inside ``path``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(path)):
                found.append(int(entry))
    return found


# --------------------------------------------------------------------------- the demo class


def test_batch_of_the_demo_class_equals_make_demo(demo_graded, make_demo_course):
    course, report, events = demo_graded
    assert [r.student for r in report.records] == ["ada", "blank", "hal", "lin"]
    assert {r.status for r in report.records} == {"graded"} and not report.problems
    # The gradebook: every cell of every student as plain `nbgrader autograde` of the class left it.
    expected = gradebook_snapshot(make_demo_course, "ch11")
    assert gradebook_snapshot(course, "ch11") == expected
    assert sum(len(cells) for cells in expected.values()) == 4 * 23
    # Feedback is byte for byte what make demo produced.
    assert _feedback_files(course) == _feedback_files(make_demo_course)
    assert len(_feedback_files(course)) == 4 * 5
    scores = {r.student: (r.score, r.per_notebook["ex1_fanout"]) for r in report.records}
    assert scores == {"ada": (40.0, 8.0), "blank": (0.0, 0.0), "hal": (18.0, 8.0), "lin": (35.96, 6.67)}
    csv_lines = report.csv_path.read_text().splitlines()
    assert csv_lines[0].startswith("student,status,ex1_fanout,") and csv_lines[4].startswith("lin,graded,6.67,10,3.29")
    assert "status counts: graded 4, skipped_resume 0, error 0" in report.summary_path.read_text()
    # Progress: one event per submission, counting up, with an ETA until the last.
    done = [e for e in events if e.record is not None]
    assert [e.done for e in done] == [1, 2, 3, 4] and all(e.total == 4 for e in events)
    assert done[0].eta_seconds is not None and done[0].eta_seconds > 0
    # Each submission ran in its own isolated course, now removed; logs are kept.
    assert not any((course / ".ch11-batch" / "work").iterdir())
    assert all(Path(r.log).is_file() for r in report.records)


def test_merging_is_idempotent_and_keeps_manual_grades(demo_graded, tmp_path):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    before = gradebook_snapshot(course, "ch11")
    result = read_result(course, "ch11", "lin")
    assert result.score == 35.96 and result.max_score == 40.0
    merge_result(course, "ch11", result)
    merge_result(course, "ch11", result)
    assert gradebook_snapshot(course, "ch11") == before

    # The same check catches a merge that adds instead of setting (scores counted twice).
    def adding_merge(target: Path) -> None:
        with Gradebook(f"sqlite:///{target / 'gradebook.db'}") as gb:
            for value in result.grades:
                grade = gb.find_grade(value.cell, value.notebook, "ch11", "lin")
                if value.auto_score is not None:
                    grade.auto_score = (grade.auto_score or 0) + value.auto_score
            gb.db.commit()

    wrong = batch_support.copy_course(demo_graded[0], tmp_path / "wrong")
    adding_merge(wrong)
    assert gradebook_snapshot(wrong, "ch11") != before

    # An instructor's manual grade survives a re-merge and is flagged for review, as nbgrader does.
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.find_grade("ex1_derivation", "ex1_fanout", "ch11", "lin").manual_score = 3.5
        gb.db.commit()
    merge_result(course, "ch11", result)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grade = gb.find_grade("ex1_derivation", "ex1_fanout", "ch11", "lin")
        assert grade.manual_score == 3.5 and grade.needs_manual_grade


# --------------------------------------------------------------------------- failures


def test_broken_and_missing_notebooks_are_recorded_and_others_unaffected(demo_graded, ada, tmp_path):
    src = tmp_path / "src"
    broken = src / "broken" / "ch11"
    shutil.copytree(ada, broken)
    text = (broken / "ex2_finite_difference.ipynb").read_text()
    (broken / "ex2_finite_difference.ipynb").write_text(text[: len(text) // 2])  # cut off mid-way
    old = src / "oldformat" / "ch11"
    old.mkdir(parents=True)
    (old / "ex1_fanout.ipynb").write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": []}))
    partial = src / "partial" / "ch11"
    partial.mkdir(parents=True)
    shutil.copy2(ada / "ex1_fanout.ipynb", partial / "ex1_fanout.ipynb")
    (partial / "notes.docx").write_bytes(b"PK\x03\x04 not really")

    course = _course(tmp_path)
    report = grade_class(src, course, workers=2)
    records = {r.student: r for r in report.records}
    assert records["broken"].status == "error"
    assert "ex2_finite_difference.ipynb" in records["broken"].error and "malformed JSON" in records["broken"].error
    assert records["oldformat"].status == "error" and "wrong nbformat (3)" in records["oldformat"].error
    ok = records["partial"]
    assert ok.status == "graded" and ok.error is None
    # The one notebook it has scores as in the demo class; the other four are 0 and noted.
    ada = next(r for r in demo_graded[1].records if r.student == "ada")
    assert ok.per_notebook["ex1_fanout"] == ada.per_notebook["ex1_fanout"] == 8.0
    assert ok.score == 8.0
    assert sum("not submitted" in n for n in ok.notes) == 4 and any("notes.docx" in n for n in ok.notes)
    # Only the graded student is in the gradebook; the CSV and the summary name the causes.
    assert list(gradebook_snapshot(course, "ch11")) == ["partial"]
    csv = report.csv_path.read_text()
    assert "broken,error," in csv and "malformed JSON" in csv and "partial,graded,8,0,0,0,0,8,40" in csv
    summary = report.summary_path.read_text()
    assert "errors (2):" in summary and "oldformat: oldformat/ch11/ex1_fanout.ipynb: wrong nbformat (3)" in summary


def test_time_limit_stops_a_submission_and_leaves_nothing_running(ada, tmp_path):
    src = tmp_path / "src" / "slow" / "ch11"
    src.mkdir(parents=True)
    shutil.copy2(ada / "ex1_fanout.ipynb", src / "ex1_fanout.ipynb")
    course = _course(tmp_path)
    report = grade_class(tmp_path / "src", course, workers=1, timeout=3.0)
    (record,) = report.records
    assert record.status == "error" and record.error.startswith("time limit: grading took longer than 3 s")
    assert 3.0 <= record.seconds < 30
    assert gradebook_snapshot(course, "ch11") == {}
    time.sleep(1.0)
    assert _processes_under(course / ".ch11-batch") == []


# --------------------------------------------------------------------------- resume and determinism


_ORCHESTRATOR = """
import sys
from pathlib import Path
from ch11_autograder.batch import grade_class
grade_class(Path(sys.argv[1]), Path(sys.argv[2]), workers=2, sandbox="bwrap")
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
        if any(e["event"] == "graded" for e in ledger.entries()):
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the batch ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)  # the orchestrator only: its nbgrader children must die with it
    proc.wait()
    merged_before = [e["student"] for e in ledger.entries() if e["event"] == "graded"]
    assert len(merged_before) == 1
    time.sleep(2.0)
    assert _processes_under(course / ".ch11-batch") == [], "graders outlived the killed orchestrator"

    report = grade_class(source, course, workers=2, sandbox="bwrap")
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
    graded = [e["student"] for e in ledger.entries() if e["event"] == "graded"]
    assert sorted(graded) == students


def test_a_changed_submission_is_regraded_and_the_rest_skipped(demo_graded, demo, ada, tmp_path):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    src = tmp_path / "class"
    shutil.copytree(demo, src)
    shutil.copy2(ada / "ex1_fanout.ipynb", src / "blank" / "ch11" / "ex1_fanout.ipynb")
    before = gradebook_snapshot(course, "ch11")
    report = grade_class(src, course, workers=2)
    records = {r.student: r for r in report.records}
    assert {s: r.status for s, r in records.items()} == {
        "ada": "skipped_resume", "blank": "graded", "hal": "skipped_resume", "lin": "skipped_resume"}
    assert records["blank"].per_notebook["ex1_fanout"] == 8.0 and records["blank"].score == 8.0
    after = gradebook_snapshot(course, "ch11")
    assert {s: after[s] for s in ("ada", "hal", "lin")} == {s: before[s] for s in ("ada", "hal", "lin")}
    assert after["blank"] != before["blank"]
    assert "blank,graded,8,0,0,0,0,8,40" in report.csv_path.read_text()


# --------------------------------------------------------------------------- refusals and the CLI


def test_refusals_happen_before_anything_is_graded(demo_graded, demo, tmp_path):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    with pytest.raises(BatchError, match="--docker IMAGE"):
        grade_class(demo, course, sandbox="docker")
    with pytest.raises(BatchError, match="unknown sandbox backend"):
        grade_class(demo, course, sandbox="chroot")
    (tmp_path / "notacourse").mkdir()
    (tmp_path / "notacourse" / "file.txt").write_text("x")
    with pytest.raises(BatchError, match="not an nbgrader course"):
        grade_class(demo, tmp_path / "notacourse")
    import fcntl

    with open(course / ".ch11-batch" / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(BatchError, match="another batch is grading this course"):
            grade_class(demo, course)


def test_cli_prints_progress_table_and_paths(demo_graded, demo, tmp_path, capsys):
    course = batch_support.copy_course(demo_graded[0], tmp_path / "course")
    assert cli_main(["batch", str(demo), "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "[1/4] ada already graded 40/40 (unchanged; skipped)" in out
    assert "lin      skipped_resume  6.67" in out and "35.96/40" in out
    assert "0 graded, 4 unchanged since the last run, 0 errors" in out
    assert f"grades:   {course}/reports/ch11-grades.csv" in out
    assert cli_main(["batch", str(tmp_path / "missing"), "--course", str(course)]) == 2
    assert "no such folder or zip file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["batch", str(demo), "--course", str(course), "--sandbox", "chroot"])
