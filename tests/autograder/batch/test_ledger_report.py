"""The resume ledger, progress lines, the CSV, and the nbgrader error trimming (no grading here)."""

from __future__ import annotations

import json
from pathlib import Path

from ch11_autograder.batch.ledger import Ledger
from ch11_autograder.batch.report import (
    CsvRow,
    format_duration,
    format_progress,
    format_score,
    summary_text,
    write_csv,
)
from ch11_autograder.batch.runner import ProgressEvent, SubmissionRecord, nbgrader_error_line, reachable_by_others


def test_ledger_appends_whole_lines_and_latest_wins(tmp_path):
    ledger = Ledger(tmp_path / "state" / "ledger.jsonl")
    ledger.append({"event": "error", "student": "alice", "sha256": "a1"})
    ledger.append({"event": "graded", "student": "alice", "sha256": "a2", "score": 3.5})
    ledger.append({"event": "graded", "student": "bob", "sha256": "b1", "score": 1.0})
    latest = ledger.latest()
    assert latest["alice"]["event"] == "graded" and latest["alice"]["sha256"] == "a2"
    assert latest["bob"]["score"] == 1.0 and latest["bob"]["v"] == 1
    lines = (tmp_path / "state" / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 3 and all(line.endswith(b"\n") for line in lines)


def test_a_torn_last_line_is_ignored_and_the_next_append_starts_clean(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.append({"event": "graded", "student": "alice", "sha256": "a"})
    with path.open("ab") as handle:  # a kill in the middle of a write
        handle.write(b'{"v": 1, "event": "graded", "student": "bo')
    assert list(ledger.latest()) == ["alice"]
    ledger.append({"event": "graded", "student": "carol", "sha256": "c"})
    assert sorted(ledger.latest()) == ["alice", "carol"]
    # Garbage and foreign versions are skipped, not fatal.
    with path.open("ab") as handle:
        handle.write(b"not json\n" + json.dumps({"v": 99, "student": "x"}).encode() + b"\n")
    assert sorted(ledger.latest()) == ["alice", "carol"]


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


def test_nbgrader_error_line_picks_the_telling_line():
    log = "\n".join([
        "[AutogradeApp | INFO] Sanitizing /c/submitted/alice/ch11/ex2_finite_difference.ipynb",
        "[AutogradeApp | ERROR] There was an error processing assignment: /c/submitted/alice/ch11",
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in f',
        "ch11_autograder.untrusted.launch.SandboxUnavailable: bubblewrap sandbox unusable: no user namespaces",
        "[AutogradeApp | ERROR] Please see the error log above for details.",
    ])
    assert nbgrader_error_line(log) == (
        "ex2_finite_difference.ipynb: ch11_autograder.untrusted.launch.SandboxUnavailable: bubblewrap sandbox "
        "unusable: no user namespaces"
    )
    only_error = "[X | INFO] start\n[X | ERROR] No notebooks found, did you forget to run generate_assignment?"
    assert nbgrader_error_line(only_error).startswith("No notebooks found")
    assert len(nbgrader_error_line("ValueError: " + "x" * 1000)) == 300
    assert nbgrader_error_line("") == "(empty log)"


def test_reachable_by_others_follows_the_directory_modes():
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp())  # under the system temp dir, whose parents others may search
    try:
        top.chmod(0o755)
        inner = top / "a" / "b"
        inner.mkdir(parents=True)
        (inner / "gradebook.db").write_text("x")
        for path in (top / "a", inner):
            path.chmod(0o755)
        (inner / "gradebook.db").chmod(0o644)
        assert all(p.stat().st_mode & 0o001 for p in top.parents), "premise: an open temp dir"
        assert reachable_by_others(inner / "gradebook.db") and reachable_by_others(inner)
        (top / "a").chmod(0o700)  # what the --docker mode does to /grading
        assert not reachable_by_others(inner / "gradebook.db") and not reachable_by_others(inner)
        (top / "a").chmod(0o755)
        (inner / "gradebook.db").chmod(0o600)
        assert not reachable_by_others(inner / "gradebook.db")
    finally:
        shutil.rmtree(top)
