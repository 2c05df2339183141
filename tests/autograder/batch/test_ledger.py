"""The resume ledger: whole fsync'd lines, torn lines, and the entry's JSON, unchanged on disk (no grading here)."""

from __future__ import annotations

import json

from ch11_autograder.batch.ledger import Ledger, LedgerEntry

AT = "2026-11-20T12:00:00+00:00"


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


def test_latest_graded_is_not_hidden_by_a_later_error(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append(_entry("alice", "a1", score=4.0))
    ledger.append(_entry("alice", "a2", event="error", score=None))
    assert ledger.latest()["alice"].event == "error"
    assert ledger.latest_graded()["alice"].sha256 == "a1"


# The lines as the ledger has always written them: ``{"v": 1, **fields, "at": ...}``, keys sorted.
GRADED_LINE = (
    '{"at": "2026-11-20T12:00:00+00:00", "due": "2026-11-22T12:00:00", "error": null, "event": "graded", '
    '"max_score": 40.0, "per_notebook": {"ex1_fanout": 6.67, "ex2_finite_difference": 10.0}, "score": 16.67, '
    '"seconds": 9.842, "sha256": "d1", "student": "lin", "v": 1}'
)
ERROR_LINE = (
    '{"at": "2026-11-20T12:00:00+00:00", "error": "ex1_fanout.ipynb: malformed JSON (line 3)", "event": "error", '
    '"max_score": 40.0, "per_notebook": {}, "score": null, "seconds": 0.0, "sha256": "", "student": "zed", "v": 1}'
)


def test_entries_serialize_byte_for_byte_as_the_ledger_always_wrote_them():
    graded = LedgerEntry("graded", "lin", "d1", score=16.67, max_score=40.0,
                         per_notebook={"ex1_fanout": 6.67, "ex2_finite_difference": 10.0}, error=None, seconds=9.842,
                         due="2026-11-22T12:00:00", at=AT)
    error = LedgerEntry("error", "zed", "", score=None, max_score=40.0, per_notebook={},
                        error="ex1_fanout.ipynb: malformed JSON (line 3)", seconds=0.0, at=AT)
    assert graded.to_json() == GRADED_LINE
    assert error.to_json() == ERROR_LINE  # an error line has no "due" key, not even null
    # The same bytes as the untyped dicts the orchestrator handed to the ledger before.
    old_graded = {"event": "graded", "student": "lin", "sha256": "d1", "error": None, "score": 16.67,
                  "max_score": 40.0, "per_notebook": {"ex1_fanout": 6.67, "ex2_finite_difference": 10.0},
                  "seconds": 9.842, "due": "2026-11-22T12:00:00"}
    assert graded.to_json() == json.dumps({"v": 1, **old_graded, "at": AT}, sort_keys=True, allow_nan=False)
    # A graded entry without a due date still says so (null): resuming compares it.
    assert '"due": null' in LedgerEntry("graded", "lin", "d1", score=1.0, max_score=40.0).to_json()


def test_existing_ledger_lines_read_back_to_the_same_bytes(tmp_path):
    path = tmp_path / "ledger.jsonl"
    path.write_text(GRADED_LINE + "\n" + ERROR_LINE + "\n")
    graded, error = Ledger(path).entries()
    assert graded.per_notebook == {"ex1_fanout": 6.67, "ex2_finite_difference": 10.0} and graded.at == AT
    assert error.score is None and error.due is None
    assert [graded.to_json(), error.to_json()] == [GRADED_LINE, ERROR_LINE]


def test_a_line_written_before_due_existed_reads_as_no_due_date(tmp_path):
    path = tmp_path / "ledger.jsonl"
    old = json.loads(GRADED_LINE)
    del old["due"]
    path.write_text(json.dumps(old, sort_keys=True) + "\n")
    (entry,) = Ledger(path).entries()
    assert entry.event == "graded" and entry.due is None and entry.score == 16.67


def test_append_stamps_the_time_and_writes_the_entry_s_own_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    written = Ledger(path).append(_entry("alice", "a1"))
    assert written.at is not None and written.at.endswith("+00:00")
    assert path.read_text() == written.to_json() + "\n"
    assert list(Ledger(path).entries()) == [written]


def test_compact_keeps_what_resuming_reads_byte_for_byte(tmp_path):
    """Each student's last entry and last graded entry stay, in file order, as the same lines; the rest go."""
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    for entry in [_entry("alice", "a1"), _entry("bob", "b1"), _entry("alice", "a2"), _entry("bob", "b2"),
                  _entry("alice", "a3", event="error", score=None), _entry("carol", "c1", event="error", score=None)]:
        ledger.append(entry)
    with path.open("ab") as handle:
        handle.write(b'{"v": 1, "event": "graded", "student": "da')  # torn by a kill
    lines = path.read_text().splitlines()
    latest, graded = ledger.latest(), ledger.latest_graded()
    assert ledger.compact() == (6, 4)
    assert path.read_text().splitlines() == [lines[2], lines[3], lines[4], lines[5]]
    assert ledger.latest() == latest and ledger.latest_graded() == graded
    before = path.stat()
    assert ledger.compact() == (4, 4)
    assert path.stat().st_ino == before.st_ino, "nothing to drop: the file is left as it is"
    assert not list(tmp_path.glob(".*"))
