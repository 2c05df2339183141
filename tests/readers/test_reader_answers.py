"""The readers' corpus (``tests/readers/``): twenty wrong answers, each really wrong and caught by the grader.

The corpus is graded as ``tests/support/reader_answers.py`` grades it (a class made from it, graded by
``ch11-grade batch`` into a new course), and the script's table is read back: every answer's notebook scores
below its points, the cell of the function the answer redefines loses points, and each losing cell's page
shows a highlighted first line. The manifest is held to its files and the source notebooks, and the script's
own command line runs.

Two gradings share these tests: ``make test`` grades the gate (the first answer of each exercise,
:func:`reader_answers.gate`: about a quarter of the time), the ``readers`` tier (``make test-readers``) all twenty.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
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


def _graded(base: Path, names: tuple[str, ...] | None) -> tuple[Path, list[ReaderRow]]:
    course = base / "readers-course"
    klass = reader_answers.build_class(base / "readers-class", names=names)
    reader_answers.grade(klass, course)
    return course, reader_answers.rows(course, names=names)


@dataclass(frozen=True)
class Graded:
    """One grading of the corpus: its answers (``None``: all), its course and its table."""

    names: tuple[str, ...] | None
    course: Path
    table: list[ReaderRow]


@pytest.fixture(scope="module", params=[pytest.param("gate", id="gate"),
                                        pytest.param("all", id="all", marks=pytest.mark.readers)])
def graded(request, tmp_path_factory):
    names = reader_answers.gate() if request.param == "gate" else None
    course, table = _graded(tmp_path_factory.mktemp(f"readers-{request.param}"), names)
    return Graded(names, course, table)


def test_the_gate_is_the_first_answer_of_each_exercise():
    gate = reader_answers.gate()
    answers = reader_answers.answers()
    assert [a.exercise for a in answers if a.name in gate] == ["ex1", "ex2", "ex3", "ex4", "ex5"]
    for name in gate:
        exercise = next(a.exercise for a in answers if a.name == name)
        assert next(a.name for a in answers if a.exercise == exercise) == name
    with pytest.raises(ValueError, match="no answer named"):
        reader_answers.build_class(Path("/nonexistent"), names=["no_such_answer"])


@pytest.mark.slow
@pytest.mark.class_batch
def test_every_answer_loses_points_in_the_test_cell_of_its_answer_cell(graded):
    table = graded.table
    assert [row.answer.name for row in table] == list(graded.names or [a.name for a in reader_answers.answers()])
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
    table = graded.table
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
    selection = [] if graded.names is None else ["--answers", "gate"]
    done = subprocess.run([sys.executable, str(SCRIPT), "--graded", str(graded.course), *selection],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == reader_answers.render(graded.table)


def test_the_script_refuses_a_course_without_the_corpus_pages(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--graded", str(tmp_path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0
    assert "no feedback page" in done.stderr
