"""The batch grader's failure paths, with real nbgrader, kernels and the bwrap sandbox.

Each test grades a tiny class of its own (one or two notebooks), so these run in
the CI tier; the whole-class runs are in ``test_batch.py``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from ch11_autograder.batch import BatchError, BatchOptions, grade_class, gradebook_snapshot
from nbgrader.api import Gradebook
from support import batch_support

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


# --------------------------------------------------------------------------- failures


def test_broken_and_missing_notebooks_are_recorded_and_others_unaffected(ada, tmp_path):
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
    report = grade_class(src, course, BatchOptions(workers=2))
    records = {r.student: r for r in report.records}
    assert records["broken"].status == "error"
    assert "ex2_finite_difference.ipynb" in records["broken"].error and "malformed JSON" in records["broken"].error
    assert records["oldformat"].status == "error" and "wrong nbformat (3)" in records["oldformat"].error
    ok = records["partial"]
    assert ok.status == "graded" and ok.error is None
    # The one notebook it has (a correct answer) gets full marks; the other four are 0 and noted.
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        full = sum(c.max_score for c in gb.find_notebook("ex1_fanout", "ch11").grade_cells if c.cell_type == "code")
    assert ok.per_notebook["ex1_fanout"] == full == 8.0
    assert ok.score == 8.0
    assert sum("not submitted" in n for n in ok.notes) == 4 and any("notes.docx" in n for n in ok.notes)
    # Only the graded student is in the gradebook; the CSV and the summary name the causes.
    assert list(gradebook_snapshot(course, "ch11")) == ["partial"]
    csv = report.csv_path.read_text()
    assert "broken,error," in csv and "malformed JSON" in csv and "partial,graded,8,0,0,0,0,8,40" in csv
    summary = report.summary_path.read_text()
    assert "errors (2):" in summary and "oldformat: oldformat/ch11/ex1_fanout.ipynb: wrong nbformat (3)" in summary


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_time_limit_stops_a_submission_and_leaves_nothing_running(ada, tmp_path, sandbox):
    # Under `none` the kernel and the worker run in sessions of their own (killing nbgrader's
    # process group misses them) with their scratch, hence their working directory, in the
    # submission's work directory: the batch must find and kill them there.
    src = tmp_path / "src" / "slow" / "ch11"
    src.mkdir(parents=True)
    nb = nbformat.read(ada / "ex1_fanout.ipynb", as_version=4)
    sleeper = nbformat.v4.new_code_cell("import time\ntime.sleep(600)")
    sleeper["id"] = "sleeper"
    nb.cells.insert(0, sleeper)  # the kernel is busy when the time limit strikes
    nbformat.write(nb, src / "ex1_fanout.ipynb")
    course = _course(tmp_path)
    report = grade_class(tmp_path / "src", course, BatchOptions(workers=1, timeout=15.0, sandbox=sandbox))
    (record,) = report.records
    assert record.status == "error" and record.error.startswith("time limit: grading took longer than 15 s")
    assert 15.0 <= record.seconds < 60
    assert gradebook_snapshot(course, "ch11") == {}
    time.sleep(1.0)
    assert batch_support.processes_under(course / ".ch11-batch") == []


def test_refusals_happen_before_anything_is_graded(demo, tmp_path):
    course = batch_support.copy_course(batch_support.small_graded_course(tmp_path.parent)[0], tmp_path / "course")
    with pytest.raises(BatchError, match="--docker IMAGE"):
        grade_class(demo, course, BatchOptions(sandbox="docker"))
    with pytest.raises(BatchError, match="unknown sandbox backend"):
        grade_class(demo, course, BatchOptions(sandbox="chroot"))
    (tmp_path / "notacourse").mkdir()
    (tmp_path / "notacourse" / "file.txt").write_text("x")
    with pytest.raises(BatchError, match="not an nbgrader course"):
        grade_class(demo, tmp_path / "notacourse")
    import fcntl

    with open(course / ".ch11-batch" / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(BatchError, match="another batch is grading this course"):
            grade_class(demo, course)
