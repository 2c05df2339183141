"""The readers' corpus (``tests/readers/``): twenty wrong answers, each really wrong and caught by the grader.

The corpus is graded once, as ``tests/support/reader_answers.py`` grades it (a class made from it, graded by
``ch11-grade batch`` into a new course), and the script's table is read back: every answer's notebook scores
below its points, the cell of the function the answer redefines loses points, and each losing cell's page
shows a highlighted first line. The manifest is held to its files and the source notebooks, and the script's
own command line runs.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ch11_autograder.paths import REPO_ROOT
from support import reader_answers
from support.reader_answers import CORPUS, ReaderRow

SCRIPT = REPO_ROOT / "tests" / "support" / "reader_answers.py"
NOTEBOOK_POINTS = {"ex1_fanout": 8.0, "ex2_finite_difference": 10.0, "ex3_block_length": 6.0, "ex4_audit": 4.0,
                   "ex5_replay": 12.0}


def test_the_manifest_names_twenty_answers_about_four_per_exercise():
    answers = reader_answers.answers()
    assert len(answers) == 20
    per_exercise = {ex: sum(a.exercise == ex for a in answers) for ex in ("ex1", "ex2", "ex3", "ex4", "ex5")}
    assert per_exercise == {"ex1": 4, "ex2": 4, "ex3": 4, "ex4": 4, "ex5": 4}
    assert all(a.wrong and "\n" not in a.wrong for a in answers)


def test_no_answer_is_a_catalogue_entry():
    from ch11_autograder.exercises.catalogue import catalogue

    catalogued = {entry.source.strip() for key in ("ex1", "ex2", "ex3", "ex4", "ex5") for entry in catalogue(key)}
    names = {entry.name for key in ("ex1", "ex2", "ex3", "ex4", "ex5") for entry in catalogue(key)}
    for answer in reader_answers.answers():
        assert answer.source.strip() not in catalogued, answer.name
        assert answer.name.split("_", 1)[1] not in names, answer.name


def test_a_manifest_that_does_not_match_its_files_is_refused(tmp_path):
    corpus = tmp_path / "readers"
    (corpus / "answers").mkdir(parents=True)
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    manifest["answers"] = manifest["answers"][:1]
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="has no file"):
        reader_answers.answers(corpus)
    name = manifest["answers"][0]["name"]
    (corpus / "answers" / f"{name}.py").write_text((CORPUS / "answers" / f"{name}.py").read_text())
    (corpus / "answers" / "stray.py").write_text("pass\n")
    with pytest.raises(ValueError, match="not in the manifest"):
        reader_answers.answers(corpus)
    (corpus / "answers" / "stray.py").unlink()
    manifest["answers"][0]["cell"] = "ex1_no_such_cell"
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="no answer cell"):
        reader_answers.answers(corpus)


@functools.cache
def _graded(base: Path) -> tuple[Path, list[ReaderRow]]:
    course = base / "readers-course"
    klass = reader_answers.build_class(base / "readers-class")
    reader_answers.grade(klass, course)
    return course, reader_answers.rows(course)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return _graded(tmp_path_factory.mktemp("readers"))


@pytest.mark.slow
@pytest.mark.class_batch
def test_every_answer_loses_points_in_the_test_cell_of_its_answer_cell(graded):
    _course, table = graded
    assert len(table) == 20
    for row in table:
        assert row.points == NOTEBOOK_POINTS[row.answer.notebook], row.answer.name
        assert row.score < row.points, f"{row.answer.name} earned full marks: {row.score} / {row.points}"
        # The test cell of the answer cell the code went into (exact_partial's is exact_gradient's cell).
        assert f"{row.answer.cell}_tests" in [cell.grade_id for cell in row.losing], (
            f"{row.answer.name}: the test cell of {row.answer.cell} did not lose points; losing: {row.losing}")
        assert all(cell.headline for cell in row.losing), row.answer.name


@pytest.mark.slow
@pytest.mark.class_batch
def test_the_table_names_each_answer_its_mistake_its_score_and_its_first_lines(graded):
    _course, table = graded
    text = reader_answers.render(table)
    for number, row in enumerate(table, start=1):
        assert f"{number:2d}. {row.answer.exercise} {row.answer.name} ({row.answer.function})" in text
        assert f"    wrong: {row.answer.wrong}" in text
        assert f"    autograded score: {row.score:g} / {row.points:g}" in text
        for cell in row.losing:
            assert f"    {cell.task} ({cell.score:g} / {cell.points:g}): {cell.headline}" in text


@pytest.mark.slow
@pytest.mark.class_batch
def test_the_script_prints_the_table_of_a_graded_course(graded):
    course, table = graded
    done = subprocess.run([sys.executable, str(SCRIPT), "--graded", str(course)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == reader_answers.render(table)


def test_the_script_refuses_a_course_without_the_corpus_pages(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--graded", str(tmp_path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0
    assert "no feedback page" in done.stderr
