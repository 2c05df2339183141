"""Merging a graded submission into the instructor's gradebook: set, never add; manual grades kept.

Uses one small graded course (one student, two notebooks) per session.
"""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from ch11_autograder.batch import gradebook_snapshot, merge
from ch11_autograder.batch.merge import GradeValue, SubmissionResult, install_files, merge_result, read_result
from nbgrader.api import Gradebook, MissingEntry
from support import batch_support


@pytest.fixture
def small(tmp_path_factory) -> Path:
    return batch_support.small_graded_course(tmp_path_factory.getbasetemp())[0]


@pytest.mark.slow
def test_merging_is_idempotent_and_keeps_manual_grades(small, tmp_path):
    course = batch_support.copy_course(small, tmp_path / "course")
    before = gradebook_snapshot(course, "ch11")
    result = read_result(course, "ch11", "lin")
    assert result.score == 10.73 and result.max_score == 40.0
    assert result.per_notebook == {"ex1_fanout": 7.0, "ex2_finite_difference": 0.0, "ex3_block_length": 3.73,
                                   "ex4_audit": 0.0, "ex5_replay": 0.0}
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

    wrong = batch_support.copy_course(small, tmp_path / "wrong")
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


def test_install_files_replaces_exactly_the_source_files(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    dest.mkdir()
    (src / "a.ipynb").write_text("new a")
    (src / "b.ipynb").write_text("new b")
    (src / "link.ipynb").symlink_to(tmp_path / "elsewhere")
    (dest / "a.ipynb").write_text("old a")
    (dest / "stale.ipynb").write_text("from an earlier grading")
    assert install_files(src, dest) == ["a.ipynb", "b.ipynb"]
    assert sorted(p.name for p in dest.iterdir()) == ["a.ipynb", "b.ipynb"]
    assert (dest / "a.ipynb").read_text() == "new a" and not (dest / "link.ipynb").exists()


# --------------------------------------------------------------------------- all or nothing


def _dump(course: Path) -> list[str]:
    """Every row of the gradebook, as SQL: the whole database, not only the grades."""
    with contextlib.closing(sqlite3.connect(course / "gradebook.db")) as db:
        return list(db.iterdump())


def _full_result(course: Path, student: str, when: datetime) -> SubmissionResult:
    """A result for ``student`` that sets every grade, comment and penalty of the assignment."""
    result = SubmissionResult(student=student, timestamp=when)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for nb in gb.find_assignment("ch11").notebooks:
            answers = {c.name for c in nb.solution_cells}
            for cell in nb.grade_cells:
                auto = cell.cell_type == "code" and cell.name not in answers
                result.grades.append(GradeValue(nb.name, cell.name, float(cell.max_score) if auto else None,
                                                not auto, float(cell.max_score), auto))
            result.comments += [(nb.name, c.name, "checked") for c in nb.solution_cells]
            result.penalties[nb.name] = 0.0
    return result


@pytest.fixture
def assigned(tmp_path) -> Path:
    """A course whose gradebook has the assignment and one student, ``ada``, merged earlier."""
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    merge_result(course, "ch11", _full_result(course, "ada", datetime(2026, 11, 20, 12, 0)))
    return course


def _fail_at_penalties(monkeypatch) -> None:
    """The database fails at the merge's last step, after the rows are made and the grades set."""
    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Gradebook, "find_submission_notebook", broken)


@pytest.mark.slow
@pytest.mark.parametrize("student", ["zed", "ada"], ids=["new student", "student graded before"])
def test_a_merge_that_fails_midway_leaves_the_gradebook_unchanged(assigned, student, monkeypatch):
    result = _full_result(assigned, student, datetime(2026, 11, 27, 9, 30))
    before = _dump(assigned)

    # A grade row the course does not have (its assignment changed since grading): fails after the
    # student and submission rows are made and some grades are set.
    bogus = GradeValue("ex4_audit", "no_such_cell", 1.0, False, 1.0, True)
    broken = SubmissionResult(student, result.timestamp, [*result.grades[:3], bogus], result.comments,
                              result.penalties)
    with pytest.raises(MissingEntry):
        merge_result(assigned, "ch11", broken)
    assert _dump(assigned) == before

    with monkeypatch.context() as patch:
        _fail_at_penalties(patch)
        with pytest.raises(Exception, match="disk I/O error"):
            merge_result(assigned, "ch11", result)
    assert _dump(assigned) == before

    # The same result merges once nothing fails; the check sees a merge's rows.
    merge_result(assigned, "ch11", result)
    assert _dump(assigned) != before
    assert gradebook_snapshot(assigned, "ch11")[student][("ex4_audit", "ex4_audit_marks_tests")] == (4.0, None, False)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission, as in merge_result
@pytest.mark.parametrize("student", ["zed", "ada"], ids=["new student", "student graded before"])
def test_the_same_failure_without_one_transaction_leaves_partial_rows(assigned, student):
    # The merge's steps with nbgrader committing after each (the merge before it was made one
    # transaction): the failing grade leaves the student, the submission or its new timestamp behind.
    result = _full_result(assigned, student, datetime(2026, 11, 27, 9, 30))
    before = _dump(assigned)
    bogus = GradeValue("ex4_audit", "no_such_cell", 1.0, False, 1.0, True)
    with Gradebook(f"sqlite:///{assigned / 'gradebook.db'}") as gb, pytest.raises(MissingEntry):
        merge._apply(gb, "ch11", SubmissionResult(student, result.timestamp, [bogus]))
    assert _dump(assigned) != before
