"""The orchestrator's pure pieces: when a submission is resumed (no grading here)."""

from __future__ import annotations

from dataclasses import replace

from ch11_autograder.batch.intake import StudentSubmission
from ch11_autograder.batch.ledger import LedgerEntry
from ch11_autograder.batch.orchestrate import _resumable


def test_resuming_compares_the_due_date_of_the_last_grading(tmp_path):
    sub = StudentSubmission("ada", "ada", sha256="d1")
    (tmp_path / "autograded" / "ada" / "ch11").mkdir(parents=True)
    entry = LedgerEntry("graded", "ada", "d1", score=4.0, max_score=40.0, due="2026-11-22T12:00:00")
    assert _resumable(entry, sub, tmp_path, {"ada"}, "ch11", "2026-11-22T12:00:00")
    # A check that ignored the due date would skip a student whose extension changed since.
    assert not _resumable(entry, sub, tmp_path, {"ada"}, "ch11", "2026-11-23T12:00:00")
    assert not _resumable(entry, sub, tmp_path, {"ada"}, "ch11", None)
    assert not _resumable(replace(entry, sha256="d0"), sub, tmp_path, {"ada"}, "ch11", "2026-11-22T12:00:00")
