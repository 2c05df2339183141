"""A rerun whose new version of a submission fails: the gradebook keeps the earlier grades, and says so.

One real grading of a one-notebook class (``ex4_audit``, the cheapest), then reruns
that fail at intake (malformed notebook) or in grading (time limit).
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from ch11_autograder.batch import BatchOptions, grade_class, gradebook_snapshot
from ch11_autograder.batch.ledger import Ledger
from ch11_autograder.batch.records import EarlierGrades, SubmissionRecord
from ch11_autograder.batch.report import summary_text
from support import batch_support

pytestmark = pytest.mark.slow

NOTEBOOK = "ex4_audit.ipynb"


def _csv_rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _says_earlier_grades_kept(record: SubmissionRecord, csv_row: dict[str, str], summary: str, sha: str,
                              graded_at: str, cause: str) -> bool:
    """Record, CSV row and summary line all name the cause and the kept grades (short digest, UTC time)."""
    when = graded_at.replace("T", " ").removesuffix("+00:00") + " UTC"
    kept = f"gradebook keeps the grades of the earlier submission {sha[:12]} graded {when}, 4/40 autograded"
    return (
        record.status == "error"
        and record.earlier is not None and record.earlier.sha256 == sha
        and cause in (record.error or "") and kept in (record.error or "")
        and csv_row["status"] == "error" and csv_row["error"] == record.error
        and f"  {record.student}: {record.error}" in summary
        and "the gradebook still holds earlier grades of 1 of them" in summary
    )


@pytest.fixture
def graded_once(demo_inputs, tmp_path):
    """(source, course, first record, ledger entry): ``ada``'s correct ex4 graded into a fresh course."""
    source = tmp_path / "src"
    (source / "ada" / "ch11").mkdir(parents=True)
    shutil.copy2(demo_inputs / "class" / "ada" / "ch11" / NOTEBOOK, source / "ada" / "ch11" / NOTEBOOK)
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    (first,) = grade_class(source, course, BatchOptions(workers=1, feedback=False)).records
    assert first.status == "graded" and first.score == 4.0, first
    (entry,) = Ledger(course / ".ch11-batch" / "ledger.jsonl").entries()
    return source, course, first, entry


def test_a_rerun_that_fails_at_intake_keeps_and_names_the_earlier_grades(graded_once):
    source, course, first, entry = graded_once
    before = gradebook_snapshot(course, "ch11")
    path = source / "ada" / "ch11" / NOTEBOOK
    path.write_text(path.read_text()[:200])  # the new upload is cut off: malformed JSON
    report = grade_class(source, course, BatchOptions(workers=1, feedback=False))
    (record,) = report.records
    rows, summary = _csv_rows(report.csv_path), report.summary_path.read_text()
    assert _says_earlier_grades_kept(record, rows["ada"], summary, first.sha256, entry.at, "malformed JSON")
    assert record.sha256 != first.sha256  # a new version (intake does not digest a refused one: "")
    # Nothing lost: the gradebook still holds the grades of the first version, cell by cell.
    assert gradebook_snapshot(course, "ch11") == before and before["ada"]
    # A second failing run names the same earlier grading (the ledger's last *graded* entry), not the error.
    again = grade_class(source, course, BatchOptions(workers=1, feedback=False))
    assert again.records[0].error == record.error
    assert again.csv_path.read_bytes() == report.csv_path.read_bytes()

    # The check catches a record that stays silent about the kept grades (the behaviour before).
    silent = SubmissionRecord("ada", "error", record.error.split(" (gradebook keeps")[0], None, 40.0,
                              sha256=record.sha256)
    silent_summary = summary_text([silent], elapsed_seconds=1.0, workers=1, sandbox="bwrap", source="s",
                                  intake_notes=[], batch_problems=[])
    silent_row = dict(rows["ada"], error=silent.error)
    assert not _says_earlier_grades_kept(silent, silent_row, silent_summary, first.sha256, entry.at,
                                         "malformed JSON")


def test_a_rerun_that_fails_in_grading_keeps_and_names_the_earlier_grades(graded_once):
    source, course, first, entry = graded_once
    before = gradebook_snapshot(course, "ch11")
    path = source / "ada" / "ch11" / NOTEBOOK
    path.write_text(path.read_text().replace('"nbformat_minor"', '"metadata_x": 1, "nbformat_minor"', 1))
    report = grade_class(source, course, BatchOptions(workers=1, feedback=False, timeout=0.5))
    (record,) = report.records
    rows, summary = _csv_rows(report.csv_path), report.summary_path.read_text()
    assert _says_earlier_grades_kept(record, rows["ada"], summary, first.sha256, entry.at, "time limit")
    assert gradebook_snapshot(course, "ch11") == before

    # The same inputs failing on a retry (--regrade under load): the grades kept are of this same submission.
    path.write_bytes((course / "submitted" / "ada" / "ch11" / NOTEBOOK).read_bytes())
    retry = grade_class(source, course, BatchOptions(workers=1, feedback=False, timeout=0.5, regrade=True)).records[0]
    assert retry.sha256 == first.sha256
    assert "gradebook keeps the grades of this same submission graded" in retry.error


def test_an_error_without_earlier_grades_says_nothing_about_them():
    record = SubmissionRecord("zed", "error", "ex1_fanout.ipynb: malformed JSON (x)", None, 40.0)
    summary = summary_text([record], elapsed_seconds=1.0, workers=1, sandbox="bwrap", source="s", intake_notes=[],
                           batch_problems=[])
    assert "errors (1):" in summary and "gradebook" not in summary
    outside = EarlierGrades("", None, None, None).describe("abc")
    assert outside.startswith("gradebook keeps grades of an earlier submission that this batch did not merge")
