"""Progress lines, scores and durations, the CSV and the summary (no grading here)."""

from __future__ import annotations

from ch11_autograder.batch.records import ProgressEvent, SubmissionRecord
from ch11_autograder.batch.report import (
    CsvRow,
    format_duration,
    format_progress,
    format_score,
    summary_text,
    write_csv,
)


def _record(**kw) -> SubmissionRecord:
    base = dict(student="alice", status="graded", error=None, score=31.5, max_score=40.0, seconds=9.84)
    base.update(kw)
    return SubmissionRecord(**base)


def test_progress_lines_say_who_what_score_time_and_eta():
    event = ProgressEvent(12, 200, _record(), "", 100.0, 245.0)
    assert format_progress(event) == "[ 12/200] alice graded 31.5/40 in 9.8 s  ETA 4 min 05 s"
    last = ProgressEvent(200, 200, _record(), "", 100.0, 0.0)
    assert "ETA" not in format_progress(last)
    error = ProgressEvent(3, 4, _record(status="error", error="ex1_fanout.ipynb: malformed JSON (x)", score=None,
                                        seconds=0.0), "", 1.0, None)
    assert format_progress(error) == "[3/4] alice ERROR after 0.0 s: ex1_fanout.ipynb: malformed JSON (x)"
    skipped = ProgressEvent(1, 4, _record(status="skipped_resume", seconds=0.0), "", 1.0, None)
    assert "already graded 31.5/40 (unchanged; skipped)" in format_progress(skipped)
    step = ProgressEvent(4, 4, None, "nbgrader generate_feedback", 1.0, None)
    assert format_progress(step) == "[4/4] nbgrader generate_feedback"


def test_scores_and_durations_format_without_float_noise():
    assert format_score(6.67 + 10 + 3.29 + 4 + 12) == "35.96"
    assert format_score(40.0) == "40" and format_score(None) == ""
    assert format_duration(9.84) == "9.8 s" and format_duration(245) == "4 min 05 s"
    assert format_duration(3725) == "1 h 02 min"


def test_csv_columns_and_rows(tmp_path):
    rows = [
        CsvRow("ada", "graded", {"ex1_fanout": 8.0, "ex2": 10.0}, 18.0, 40.0, 4.0, "", 0.0),
        CsvRow("bob", "graded", {"ex1_fanout": 8.0, "ex2": 0.0}, 8.0, 40.0, 4.0, "", 8.0, lms_late=True),
        CsvRow("zed", "error", {"ex1_fanout": None, "ex2": None}, None, 40.0, None, "ex1: malformed JSON, line 3",
               lms_late=True),
    ]
    write_csv(tmp_path / "g.csv", rows)
    assert (tmp_path / "g.csv").read_text() == (
        "student,status,ex1_fanout,ex2,autograded_total,autograded_max,manual_pending,late_penalty,lms_late,error\n"
        "ada,graded,8,10,18,40,4,0,,\n"
        "bob,graded,8,0,8,40,4,8,LATE,\n"
        'zed,error,,,,40,,,LATE,"ex1: malformed JSON, line 3"\n'
    )


def test_summary_lists_the_submissions_the_lms_marked_late_and_says_no_penalty_followed():
    records = [_record(student="ada"), _record(student="bob", lms_late=True),
               _record(student="zed", status="error", error="x", score=None, lms_late=True)]
    summary = summary_text(records, elapsed_seconds=1.0, workers=1, sandbox="bwrap", source="s", intake_notes=[],
                           batch_problems=[])
    assert "marked LATE by the LMS (2): bob, zed" in summary
    assert "nbgrader computed no lateness for these and applied\n  no late penalty" in summary
    # The check catches a summary that drops the flag (records built without it, as before).
    silent = summary_text([_record(student="bob")], elapsed_seconds=1.0, workers=1, sandbox="bwrap", source="s",
                          intake_notes=[], batch_problems=[])
    assert "marked LATE" not in silent
