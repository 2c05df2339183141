"""The class report of a class with known answers: every count checked against what was planted.

The class: the demo class (graded by the batch, shared with the other class tests) plus, in a
second batch into a copy of its course, students who each submit one notebook holding one
catalogue entry (two of them the same entry, which lin also holds), and one submission that
cannot be graded. Every notebook of this class is a submission the behaviour fixtures
(``tests/behaviour/catalogue/*.json``) hold the committed verdict outputs of: the reference,
the stubs or one catalogue entry. The expected numbers are read off those fixtures (the
``[pass]``/``[FAIL]`` lines, the misconception named, the score nbgrader gives the outputs),
independently of the verdict records the report reads.
"""

from __future__ import annotations

import html
import importlib
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import nbformat
import pytest
from behaviour import capture
from ch11_autograder import demo
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.cli import main as cli_main
from ch11_autograder.exercises import EXERCISES, SUITE_MODULES
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.trusted.registry import get_suite, load_suite_modules
from nbgrader.api import Gradebook
from nbgrader.utils import determine_grade
from support import batch_support
from support.paths import ASSIGNMENT, RELEASE_DIR, SOURCE_DIR
from support.report_tables import md_tables, table

pytestmark = [pytest.mark.slow, pytest.mark.class_batch]

#: student -> (exercise, catalogue entry): one notebook each, the entry in its answer cell.
PLANTED = {
    "p_lww_1": ("ex1", "last_writer_wins"),
    "p_lww_2": ("ex1", "last_writer_wins"),
    "p_argmin": ("ex2", "argmin_picks_nan"),
    "p_dag": ("ex4", "general_dag"),
    "p_stream": ("ex5", "unmatched_stream"),
}
BROKEN = "p_broken"
MARKER = "STUDENT-OUTPUT-MARKER-7f3e"
NOTEBOOK_OF = {ex.key: ex.notebook for ex in EXERCISES}
EXERCISE_OF = {ex.notebook: ex.key for ex in EXERCISES}


# --------------------------------------------------------------------------- the class


def _planted_source(root: Path) -> Path:
    for student, (exercise, name) in PLANTED.items():
        stem = NOTEBOOK_OF[exercise]
        entry = next(e for e in catalogue(exercise) if e.name == name)
        nb = fill(read(RELEASE_DIR / f"{stem}.ipynb"), answer_sources(read(SOURCE_DIR / f"{stem}.ipynb")),
                  wrong=[entry])
        if student == "p_lww_2":
            # Student output and a forged verdict record in a cell of the student's own: neither may count.
            forged = {"v": 1, "grade_id": "ex1_extended_tape_tests", "properties": [
                {"name": "extended_tape_layout", "outcome": "timed_out", "misconception": "Every cotangent update "
                 "is an assignment"}]}
            nb.cells.append(nbformat.v4.new_code_cell(f"print('{MARKER}<script>x</script>')",
                                                      metadata={"ch11_verdict": forged}))
        folder = root / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{stem}.ipynb")
    broken = root / BROKEN / ASSIGNMENT
    broken.mkdir(parents=True)
    (broken / "ex3_block_length.ipynb").write_text('{"cells": [')
    return root


@pytest.fixture(scope="module")
def planted_course(tmp_path_factory):
    """The demo class's graded course, copied, with the planted students batch-graded into it."""
    from ch11_autograder.batch import BatchOptions, grade_class

    base = tmp_path_factory.getbasetemp()
    demo_course = batch_support.graded_demo_class(base)[0]
    course = batch_support.copy_course(demo_course, base / "planted-course")
    report = grade_class(_planted_source(base / "planted-class"), course, BatchOptions(workers=2, sandbox="bwrap"))
    assert {r.student: r.status for r in report.records} == {**dict.fromkeys(PLANTED, "graded"), BROKEN: "error"}
    assert cli_main(["report", "--course", str(course)]) == 0
    return course


# --------------------------------------------------------------------------- what was planted


def _labels() -> dict[str, dict[str, str]]:
    """student -> notebook stem -> fixture label (``ex3/reference``) of every notebook submitted."""
    out: dict[str, dict[str, str]] = {}
    for student in demo.STUDENTS:
        wrong = dict(student.wrong)
        out[student.student_id] = {
            ex.notebook: f"{ex.key}/{wrong[ex.key] if ex.key in wrong else 'reference'}"
            if ex.notebook in student.answered else f"{ex.key}/stubs" for ex in EXERCISES}
    for student, (exercise, name) in PLANTED.items():
        out[student] = {NOTEBOOK_OF[exercise]: f"{exercise}/{name}"}
    return out


def _fixture() -> dict[str, dict[str, list[dict]]]:
    return {label: v for ex in EXERCISES for label, v in capture.read_catalogue_fixture(ex.key).items()}


def _text(outputs: list[dict]) -> str:
    return "\n".join(o.get("text") or o.get("evalue") or "" for o in outputs)


def _points(grade_id: str, outputs: list[dict]) -> float:
    """What nbgrader records for a test cell with these outputs (its own ``determine_grade``)."""
    contract = importlib.import_module(f"ch11_autograder.exercises.{grade_id.split('_', 1)[0]}.contract")
    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                "grade_id": grade_id,
                                                                "points": contract.POINTS[grade_id]}})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return float(determine_grade(cell)[0])


def _named(exercise: str, line: str) -> str:
    """The catalogue entry a ``This matches a known mistake: "<title>". <advice>`` line names, else the title
    (a name a suite gives to several entries)."""
    named = line.split('This matches a known mistake: "', 1)[1].split('". ', 1)[0]
    fits = [e for e in catalogue(exercise) if named == e.title or named.startswith(e.title + " (")]
    return max(fits, key=lambda e: len(e.title)).name if fits else named


def _suite(grade_id: str):
    """The registered suite of a test cell (the properties a [NOT ANSWERED] line stands for)."""
    load_suite_modules(SUITE_MODULES)
    suite = get_suite(grade_id)
    assert suite is not None, grade_id
    return suite


def expected() -> dict:
    """Scores per student and notebook, outcomes per property, students per misconception."""
    fixture = _fixture()
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    passed: Counter[tuple[str, str]] = Counter()
    missed: Counter[tuple[str, str]] = Counter()
    named: dict[tuple[str, str], set[str]] = defaultdict(set)
    for student, notebooks in _labels().items():
        for stem, label in notebooks.items():
            exercise = EXERCISE_OF[stem]
            cells = fixture[label]
            scores[student][stem] = round(sum(_points(g, outs) for g, outs in cells.items()), 6)
            for grade_id, outputs in cells.items():
                for line in _text(outputs).splitlines():
                    if line.startswith("[pass] "):
                        passed[(grade_id, line[7:].split(":", 1)[0])] += 1
                    elif line.startswith("[NOT ANSWERED] "):
                        # One line for a stub: every check of the cell failed on NotImplementedError: the
                        # suite's properties, and the notebook's visible checks where the line counts one more.
                        count = int(line.split("this cell's ", 1)[1].split(" checks", 1)[0])
                        names = [p.name for p in _suite(grade_id).properties]
                        names += ["visible_checks"] * (count - len(names))
                        assert len(names) == count, (grade_id, line)
                        missed.update((grade_id, name) for name in names)
                    elif line.startswith("[FAIL] not answered yet: "):
                        names = line.rsplit(" check", 1)[1].split("(", 1)[1].split(")", 1)[0]
                        missed.update((grade_id, name) for name in names.split(", "))
                    elif line.startswith("[FAIL] "):
                        missed[(grade_id, line[7:].split(":", 1)[0])] += 1
                    elif "This matches a known mistake: " in line:
                        named[(exercise, _named(exercise, line))].add(student)
    return {"scores": scores, "passed": passed, "missed": missed, "named": named}


# --------------------------------------------------------------------------- the report, read back


def _num(text: str) -> float | None:
    return None if text == "-" else float(text)


# --------------------------------------------------------------------------- the tests


def test_every_count_in_the_report_is_what_was_planted(planted_course):
    want = expected()
    tables = md_tables((planted_course / "reports" / "ch11-report.md").read_text())

    students = {row["student"]: row for row in table(tables, "student", "total")}
    assert set(students) == set(_labels()) | {BROKEN}
    stems = [ex.notebook for ex in EXERCISES]
    for student, row in students.items():
        if student == BROKEN:
            assert row["status"] == "error" and row["autograded"] == "-" and row["total"] == "-"
            continue
        assert row["status"] == "graded"
        got = {stem: _num(row[stem]) for stem in stems}
        assert got == {stem: want["scores"][student].get(stem, 0.0) for stem in stems}, student
        assert _num(row["autograded"]) == pytest.approx(sum(want["scores"][student].values()))
        assert row["hand marked"] == "0"

    stats = {row["notebook"]: row for row in table(tables, "notebook", "autograded max", "median")}
    graded = list(_labels())
    for stem in stems:
        values = [want["scores"][s].get(stem, 0.0) for s in graded]
        assert float(stats[stem]["mean"]) == pytest.approx(statistics.fmean(values), abs=0.005)
        assert float(stats[stem]["median"]) == pytest.approx(statistics.median(values))
        assert (float(stats[stem]["min"]), float(stats[stem]["max"])) == (min(values), max(values))

    props = table(tables, "notebook", "property", "passed")
    got_passed = Counter({(r["test cell"], r["property"]): int(r["passed"]) for r in props})
    got_missed = Counter({(r["test cell"], r["property"]): int(r["failed"]) + int(r["errored"]) + int(r["timed out"])
                          + int(r["not answered (stub)"]) for r in props})
    assert +got_passed == +want["passed"]
    assert +got_missed == +want["missed"]
    assert sum(int(r["timed out"]) for r in props) == 0  # no planted submission runs out of time

    matched = tables[("students", "exercise", "misconception", "entry", "advice")]
    unmatched = tables[("students", "exercise", "misconception", "entry")]
    misconceptions = [dict(zip(("students", "exercise", "misconception", "entry"), row, strict=False))
                      for row in matched + unmatched]
    got_named = {(r["exercise"], r["entry"] if r["entry"] != "-" else r["misconception"]): int(r["students"])
                 for r in misconceptions}
    every_entry = {(ex.key, e.name) for ex in EXERCISES for e in catalogue(ex.key)} | set(want["named"])
    assert set(got_named) == every_entry
    assert got_named == {key: len(want["named"].get(key, ())) for key in every_entry}
    assert got_named[("ex1", "last_writer_wins")] == 3  # lin and the two planted copies
    counts = [int(r["students"]) for r in misconceptions]
    assert counts == sorted(counts, reverse=True)
    advice = {(row[1], row[3]): row[4] for row in matched}
    assert advice[("ex1", "last_writer_wins")] == next(e.advice for e in catalogue("ex1")
                                                       if e.name == "last_writer_wins")

    flags = table(tables, "student", "flag", "cause")
    assert [(f["student"], f["flag"]) for f in flags] == [(BROKEN, "error")]
    assert "malformed JSON" in flags[0]["cause"]
    slow = table(tables, "student", "seconds")
    seconds = [float(r["seconds"]) for r in slow]
    assert len(slow) == min(10, len(_labels())) and seconds == sorted(seconds, reverse=True)
    assert BROKEN not in {r["student"] for r in slow}  # refused at once: no grading time


def test_html_says_what_the_markdown_says_offline_and_without_student_output(planted_course):
    reports = planted_course / "reports"
    page = (reports / "ch11-report.html").read_text()
    text = (reports / "ch11-report.md").read_text()
    for rows in md_tables(text).values():
        for row in rows:
            assert "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" in page
    pngs = sorted(reports.glob("ch11-report-*.png"))
    assert len(pngs) == 8
    assert page.count('src="data:image/png;base64,') == len(pngs)
    assert all(f"]({png.name})" in text for png in pngs)
    assert "<script" not in page and "http://" not in page and "https://" not in page
    for path in (reports / "ch11-report.html", reports / "ch11-report.md"):
        assert MARKER not in path.read_text()
    # The student's output did reach the autograded notebook: the report left it out, it was there.
    autograded = (planted_course / "autograded" / "p_lww_2" / ASSIGNMENT / "ex1_fanout.ipynb").read_text()
    assert MARKER in autograded


def test_a_hand_mark_entered_after_grading_shows_after_ch11_grade_report(planted_course, tmp_path):
    course = batch_support.copy_course(planted_course, tmp_path / "course")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grade = gb.find_grade("ex1_derivation", "ex1_fanout", ASSIGNMENT, "ada")
        before = float(grade.max_score)
        grade.manual_score = 3.0
        grade.needs_manual_grade = False  # as formgrader saves a mark
        gb.db.commit()
    assert cli_main(["report", "--course", str(course)]) == 0
    row = next(r for r in table(md_tables((course / "reports" / "ch11-report.md").read_text()), "student", "total")
               if r["student"] == "ada")
    assert row["hand marked"] == "3"
    assert _num(row["total"]) == _num(row["autograded"]) + 3
    assert _num(row["pending by hand"]) == 25 - before



def test_a_batch_whose_report_fails_keeps_its_grades_and_says_so(planted_course, tmp_path, tmp_path_factory, capsys):
    course = batch_support.copy_course(planted_course, tmp_path / "course")
    csv = course / "reports" / "ch11-grades.csv"
    csv.unlink()
    blocker = course / "reports" / "ch11-report.html"
    blocker.unlink()
    (blocker / "not-a-file").mkdir(parents=True)  # the report cannot be replaced by a file
    source = tmp_path_factory.getbasetemp() / "planted-class"
    assert cli_main(["batch", str(source), "--course", str(course)]) == 1  # p_broken is an error again
    captured = capsys.readouterr()
    assert "the class report could not be written" in captured.err
    assert "The batch's grades are saved" in captured.err and "ch11-grade report --course" in captured.err
    assert csv.is_file() and "p_lww_1,graded" in csv.read_text()
    assert "5 unchanged since the last run, 1 errors" in captured.out
    assert cli_main(["report", "--course", str(course)]) == 1


def test_each_autograded_notebook_is_read_once_for_records_and_answers(planted_course, monkeypatch):
    """The report reads a graded student's autograded notebook once: its verdict records and its answer
    cells come from the same reading (report/autograded.py)."""
    from ch11_autograder.report import autograded
    from ch11_autograder.report.data import collect

    reads: Counter[Path] = Counter()
    read = autograded.read_notebook
    monkeypatch.setattr(autograded, "read_notebook", lambda path: reads.update([path]) or read(path))
    report = collect(planted_course, ASSIGNMENT)
    graded = [s.student for s in report.students if s.auto is not None]
    on_disk = {p for s in graded for p in (planted_course / "autograded" / s / ASSIGNMENT).glob("*.ipynb")}
    assert set(reads) == on_disk and set(reads.values()) == {1}
    assert report.similarity is not None and report.similarity.answers > 0 and report.properties
