"""Merging a graded submission into the instructor's gradebook: set, never add; manual grades kept.

Uses one small graded course (one student, two notebooks) per session.
"""

from __future__ import annotations

from pathlib import Path

import batch_support
import pytest
from ch11_autograder.batch import gradebook_snapshot
from ch11_autograder.batch.merge import install_files, merge_result, read_result
from nbgrader.api import Gradebook


@pytest.fixture
def small(tmp_path_factory) -> Path:
    return batch_support.small_graded_course(tmp_path_factory.getbasetemp())[0]


@pytest.mark.slow
def test_merging_is_idempotent_and_keeps_manual_grades(small, tmp_path):
    course = batch_support.copy_course(small, tmp_path / "course")
    before = gradebook_snapshot(course, "ch11")
    result = read_result(course, "ch11", "lin")
    assert result.score == 9.96 and result.max_score == 40.0
    assert result.per_notebook == {"ex1_fanout": 6.67, "ex2_finite_difference": 0.0, "ex3_block_length": 3.29,
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
