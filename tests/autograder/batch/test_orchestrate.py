"""The orchestrator's pure pieces: the batch plan, and when a submission is resumed (no grading here)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest
from ch11_autograder.batch.intake_records import StudentSubmission
from ch11_autograder.batch.ledger import LedgerEntry
from ch11_autograder.batch.orchestrate import BatchOptions, BatchPlan, _resumable


def _plan(source: Path, course: Path) -> BatchPlan:
    return BatchPlan(source, course, BatchOptions(workers=2, sandbox="bwrap", timeout=60.0), progress=None,
                     started=0.0)


def test_a_plan_holds_its_sandbox_resolved(tmp_path):
    assert _plan(tmp_path, tmp_path).sandbox == "bwrap"
    with pytest.raises(ValueError, match="sandbox resolved"):
        BatchPlan(tmp_path, tmp_path, BatchOptions(), progress=None, started=0.0)


def test_the_plan_places_the_batch_s_files_in_the_course(tmp_path):
    plan = _plan(tmp_path / "downloads" / "class.zip", tmp_path / "course")
    state = tmp_path / "course" / ".ch11-batch"
    assert (plan.state, plan.logs, plan.work_root) == (state, state / "logs", state / "work")
    assert (plan.template, plan.ledger) == (state / "template.db", state / "ledger.jsonl")
    assert plan.reports == tmp_path / "course" / "reports"
    assert plan.log_for("ada") == state / "logs" / "ada.log"


def test_the_plan_knows_a_source_inside_the_course(tmp_path):
    course = tmp_path / "course"
    assert not _plan(tmp_path / "class", course).source_inside_course
    assert not _plan(tmp_path / "course-2", course).source_inside_course  # a sibling with the same prefix
    assert _plan(course, course).source_inside_course
    assert _plan(course / "submitted", course).source_inside_course


def test_the_plan_and_its_options_are_frozen(tmp_path):
    plan = _plan(tmp_path / "class", tmp_path / "course")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.source = tmp_path  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.options.workers = 3  # type: ignore[misc]
    more = replace(plan, options=replace(plan.options, workers=3))
    assert more.options.workers == 3 and plan.options.workers == 2


def test_resuming_compares_the_due_date_of_the_last_grading(tmp_path):
    sub = StudentSubmission("ada", "ada", sha256="d1")
    (tmp_path / "autograded" / "ada" / "ch11").mkdir(parents=True)
    entry = LedgerEntry("graded", "ada", "d1", score=4.0, max_score=40.0, due="2026-11-22T12:00:00")
    assert _resumable(entry, sub, tmp_path, {"ada"}, "ch11", "2026-11-22T12:00:00")
    # A check that ignored the due date would skip a student whose extension changed since.
    assert not _resumable(entry, sub, tmp_path, {"ada"}, "ch11", "2026-11-23T12:00:00")
    assert not _resumable(entry, sub, tmp_path, {"ada"}, "ch11", None)
    assert not _resumable(replace(entry, sha256="d0"), sub, tmp_path, {"ada"}, "ch11", "2026-11-22T12:00:00")
