"""The resume ledger: whole fsync'd lines, torn lines (no grading here)."""

from __future__ import annotations

import json

from ch11_autograder.batch.ledger import Ledger, LedgerEntry


def _entry(student: str, sha256: str, event: str = "graded", score: float | None = 1.0) -> LedgerEntry:
    return LedgerEntry(event, student, sha256, score=score, max_score=40.0)


def test_ledger_appends_whole_lines_and_latest_wins(tmp_path):
    ledger = Ledger(tmp_path / "state" / "ledger.jsonl")
    ledger.append(_entry("alice", "a1", event="error", score=None))
    ledger.append(_entry("alice", "a2", score=3.5))
    ledger.append(_entry("bob", "b1", score=1.0))
    latest = ledger.latest()
    assert latest["alice"].event == "graded" and latest["alice"].sha256 == "a2"
    lines = (tmp_path / "state" / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    assert latest["bob"].score == 1.0 and json.loads(lines[2])["v"] == 1
    assert len(lines) == 3 and all(line.endswith(b"\n") for line in lines)


def test_a_torn_last_line_is_ignored_and_the_next_append_starts_clean(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.append(_entry("alice", "a"))
    with path.open("ab") as handle:  # a kill in the middle of a write
        handle.write(b'{"v": 1, "event": "graded", "student": "bo')
    assert list(ledger.latest()) == ["alice"]
    ledger.append(_entry("carol", "c"))
    assert sorted(ledger.latest()) == ["alice", "carol"]
    # Garbage and foreign versions are skipped, not fatal.
    with path.open("ab") as handle:
        handle.write(b"not json\n" + json.dumps({"v": 99, "student": "x"}).encode() + b"\n")
    assert sorted(ledger.latest()) == ["alice", "carol"]
