"""``ch11-grade lms-export`` against rosters shaped like real LMS exports, on a real nbgrader gradebook.

The gradebook is made with nbgrader's own API (an assignment of two notebooks, code and
markdown cells, submissions with autograded, hand-entered and late-penalised scores); the
rosters are laid out as Canvas's "Export Entire Gradebook" (UTF-8 byte-order mark, a
"Manual Posting" row and a "Points Possible" row, Canvas's test student without a login, other assignments and
read-only totals) and Moodle's plain-text grade export with the Username field.
The end-to-end run on a gradebook made by the real loop is in tests/exchange/.
"""

from __future__ import annotations

import csv
import os
import sys
import warnings
from pathlib import Path

import pytest
from ch11_autograder.cli import main
from ch11_autograder.lms import RosterError, export_grades, read_roster, read_scores
from ch11_autograder.lms.export import format_points
from ch11_autograder.lms.roster import find_assignment_column

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Chapter 10 quiz (4410)", "ch11 (4411)",
                 "Assignments Current Points", "Current Score", "Final Score"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The gradebook of :func:`_gradebook`, made once (nbgrader takes seconds to create one); tests only read it."""
    with pytest.MonkeyPatch.context() as mp:
        # nbgrader creates a gradebook by running ``alembic`` from PATH (this venv's, unactivated here).
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        return _gradebook(tmp_path_factory.mktemp("lms") / "course")


def _gradebook(course: Path) -> Path:
    """ada: 8 auto + 4 by hand; bob: 6 auto, a 2-point late penalty, his written answer not graded yet;
    cy: in the gradebook, no submission; dee: submitted, not in any roster (8 auto)."""
    from nbgrader.api import Gradebook

    course.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")
        gb.update_or_create_assignment("ch11")
        gb.update_or_create_assignment("ch12")
        for notebook, cells in (("ex1", (("ex1_code", 10.0, "code"), ("ex1_prose", 5.0, "markdown"))),
                                ("ex2", (("ex2_code", 5.0, "code"),))):
            gb.add_notebook(notebook, "ch11")
            for name, points, kind in cells:
                gb.add_grade_cell(name, notebook, "ch11", max_score=points, cell_type=kind)
        for student in ("ada", "bob", "cy", "dee"):
            gb.add_student(student)
        for student, auto, manual in (("ada", {"ex1_code": 8.0, "ex2_code": 0.0}, {"ex1_prose": 4.0}),
                                      ("bob", {"ex1_code": 6.0, "ex2_code": 0.0}, {}),
                                      ("dee", {"ex1_code": 8.0, "ex2_code": 0.0}, {"ex1_prose": 0.0})):
            gb.add_submission("ch11", student)
            for name, score in auto.items():
                grade = gb.find_grade(name, name.split("_")[0], "ch11", student)
                grade.auto_score, grade.needs_manual_grade = score, False
            prose = gb.find_grade("ex1_prose", "ex1", "ch11", student)
            if "ex1_prose" in manual:
                prose.manual_score, prose.needs_manual_grade = manual["ex1_prose"], False
            else:
                prose.needs_manual_grade = True
        gb.find_submission_notebook("ex1", "ch11", "bob").late_submission_penalty = 2.0
        gb.db.commit()
    return course


def _write(path: Path, rows: list[list[str]], *, bom: bool = False) -> Path:
    with path.open("w", newline="", encoding="utf-8-sig" if bom else "utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def _canvas_roster(path: Path) -> Path:
    return _write(path, [
        CANVAS_HEADER,
        ["", "", "", "", "", "", "Manual Posting", "", "", ""],
        ["    Points Possible", "", "", "", "", "10.00", "20.00", "(read only)", "(read only)", "(read only)"],
        ["Lovelace, Ada", "1001", "S1001", "ada", "CS 101 Section 1", "9.00", "", "9.00", "90.00%", "45.00%"],
        ["Babbage, Bob", "1002", "S1002", "BOB", "CS 101 Section 1", "7.50", "", "7.50", "75.00%", "37.50%"],
        ["Young, Cy", "1003", "S1003", "cy", "CS 101 Section 2", "", "", "0.00", "", "0.00%"],
        ["Noether, Em", "1004", "S1004", "em", "CS 101 Section 2", "10.00", "", "10.00", "100.00%", "50.00%"],
        ["Student, Test", "1099", "", "", "CS 101 Section 1", "", "", "0.00", "", "0.00%"],
    ], bom=True)


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_import_keeps_the_roster_and_fills_the_assignment_column(course, tmp_path):
    out = tmp_path / "canvas_import.csv"
    result = export_grades(course, _canvas_roster(tmp_path / "roster.csv"), out, assignment="ch11")
    assert _rows(out) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (4411)"],
        ["", "", "", "", "", "Manual Posting"],
        ["    Points Possible", "", "", "", "", "20.00"],
        ["Lovelace, Ada", "1001", "S1001", "ada", "CS 101 Section 1", "12"],
        ["Babbage, Bob", "1002", "S1002", "BOB", "CS 101 Section 1", "4"],  # 6 - 2 late; prose not graded yet
        ["Young, Cy", "1003", "S1003", "cy", "CS 101 Section 2", ""],  # in the gradebook, never submitted
        ["Noether, Em", "1004", "S1004", "em", "CS 101 Section 2", ""],  # not in the gradebook at all
        ["Student, Test", "1099", "", "", "CS 101 Section 1", ""],
    ]
    assert result.column == "ch11 (4411)"
    assert result.scored == {"ada": 12.0, "BOB": 4.0}
    assert result.no_submission == ["cy", "em"]
    assert [s.student for s in result.unmatched] == ["dee"]
    assert result.without_login == [8]
    assert result.pending_manual == {"BOB": 1}
    assert result.warnings == []  # 20 points possible in both


def test_the_command_lists_every_unmatched_student_loudly_and_exits_1(course, tmp_path, capsys):
    out = tmp_path / "canvas_import.csv"
    code = main(["lms-export", "--course", str(course), "--roster", str(_canvas_roster(tmp_path / "roster.csv")),
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert "NOT EXPORTED: gradebook student 'dee' (8) is not in the roster" in captured.err
    assert "1 gradebook student(s) are not in the roster" in captured.err
    assert "warning: BOB has 1 cell(s) not yet graded by hand" in captured.err
    assert "2 scored, 2 without a submission (cell left empty)" in captured.out
    assert "no submission: cy" in captured.out and "no submission: em" in captured.out
    assert "roster line 8: no login" in captured.out
    assert out.is_file()


def test_a_roster_listing_everyone_exits_0(course, tmp_path, capsys):
    roster = _write(tmp_path / "roster.csv", [
        [*CANVAS_HEADER[:5], "ch11 (4411)"],
        *[[f"S {s}", str(i), "", s, "A", ""] for i, s in enumerate(("ada", "bob", "cy", "dee"))]])
    code = main(["lms-export", "--course", str(course), "--roster", str(roster), "--out", str(tmp_path / "o.csv")])
    assert code == 0, capsys.readouterr().err
    assert [r[-1] for r in _rows(tmp_path / "o.csv")[1:]] == ["12", "4", "", "8"]


def test_points_possible_that_differ_from_the_gradebook_are_a_warning(course, tmp_path):
    roster = _write(tmp_path / "roster.csv", [[*CANVAS_HEADER[:5], "ch11 (4411)"],
                                              ["    Points Possible", "", "", "", "", "100"],
                                              ["A", "1", "", "ada", "", ""]])
    result = export_grades(course, roster, tmp_path / "o.csv", assignment="ch11")
    assert result.warnings == ["the LMS gives 'ch11 (4411)' 100 points possible, the gradebook 20: the LMS will "
                               "show these scores out of 100"]


def test_moodle_import_matches_by_username(course, tmp_path):
    roster = _write(tmp_path / "moodle.csv", [
        ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "Username",
         "Assignment: Chapter 10 (Real)", "Assignment: ch11 (Real)", "Course total (Real)",
         "Last downloaded from this course"],
        ["Ada", "Lovelace", "S1001", "", "CS", "ada@example.edu", "ada", "9.00", "-", "9.00", "1764460800"],
        ["Cy", "Young", "S1003", "", "CS", "cy@example.edu", "cy", "-", "-", "0.00", "1764460800"],
    ])
    out = tmp_path / "moodle_import.csv"
    result = export_grades(course, roster, out, assignment="ch11", fmt="moodle")
    assert _rows(out) == [
        ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "Username",
         "Assignment: ch11 (Real)"],
        ["Ada", "Lovelace", "S1001", "", "CS", "ada@example.edu", "ada", "12"],
        ["Cy", "Young", "S1003", "", "CS", "cy@example.edu", "cy", ""],
    ]
    assert sorted(s.student for s in result.unmatched) == ["bob", "dee"]


@pytest.mark.parametrize(("rows", "column", "message"), [
    ([["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch10 (1)"]], None,
     "no column for assignment 'ch11' (create the assignment in the LMS"),
    ([["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (1)", "ch11 (2)"]], None,
     "several columns name assignment 'ch11': 'ch11 (1)', 'ch11 (2)'; choose one with --column"),
    ([["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (1)"]], "Homework 11",
     "no column 'Homework 11'; its columns are: 'Student'"),
    ([["Student", "ID", "Section", "ch11 (1)"]], None,
     "not a canvas gradebook export: columns missing: 'SIS User ID', 'SIS Login ID'"),
    ([["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (1)"], ["A", "1", "", "ada", "", ""],
      ["A2", "2", "", "Ada", "", ""]], None, "lines 2 and 3: two rows for login 'Ada'"),
    ([["Student", "Student", "ch11"]], None, "line 1: column names repeated: 'Student'"),
    ([["Student", "ch11"], ["A", "1", "extra"]], None, "line 2: 3 cells but the header has 2"),
])
def test_unusable_rosters_are_refused_naming_what_and_where(course, tmp_path, rows, column, message):
    roster = _write(tmp_path / "roster.csv", rows)
    with pytest.raises(RosterError, match=None) as caught:
        export_grades(course, roster, tmp_path / "o.csv", assignment="ch11", column=column)
    assert str(roster) in str(caught.value) and message in str(caught.value)
    assert not (tmp_path / "o.csv").exists()


def test_refusals_exit_2_with_the_reason(course, tmp_path, capsys):
    roster = _canvas_roster(tmp_path / "roster.csv")
    assert main(["lms-export", "--course", str(tmp_path / "nowhere"), "--roster", str(roster),
                 "--out", str(tmp_path / "o.csv")]) == 2
    assert "no gradebook.db" in capsys.readouterr().err
    assert main(["lms-export", "--course", str(course), "--roster", str(roster), "--out", str(tmp_path / "o.csv"),
                 "--assignment", "ch99", "--column", "ch11 (4411)"]) == 2
    assert "no assignment 'ch99' (the gradebook has: ch11, ch12)" in capsys.readouterr().err
    assert main(["lms-export", "--course", str(course), "--roster", str(tmp_path / "missing.csv"),
                 "--out", str(tmp_path / "o.csv")]) == 2
    assert "cannot read the roster" in capsys.readouterr().err


def test_scores_are_nbgrader_export_s(course, tmp_path):
    """raw = auto, or the hand score where one is entered; score = max(0, raw - penalty); no submission: None."""
    scores = read_scores(course, "ch11")
    assert {s: (v.submitted, v.raw_score, v.late_penalty, v.score, v.needs_manual_grade, v.max_score)
            for s, v in scores.items()} == {
        "ada": (True, 12.0, 0.0, 12.0, 0, 20.0),
        "bob": (True, 6.0, 2.0, 4.0, 1, 20.0),
        "cy": (False, None, None, None, 0, 20.0),
        "dee": (True, 8.0, 0.0, 8.0, 0, 20.0),
    }


def test_column_names_of_both_lms_are_recognised(course, tmp_path):
    roster = read_roster(_write(tmp_path / "r.csv", [["Student", "ch11 (4411)", "Assignment: ch11b (Real)",
                                                      "Quiz: ch12 (Letter)", "ch13"]]))
    assert find_assignment_column(roster, "ch11") == "ch11 (4411)"
    assert find_assignment_column(roster, "ch11b") == "Assignment: ch11b (Real)"
    assert find_assignment_column(roster, "ch12") == "Quiz: ch12 (Letter)"
    assert find_assignment_column(roster, "ch13") == "ch13"


@pytest.mark.parametrize(("points", "text"), [(12.0, "12"), (48.5, "48.5"), (3.333333, "3.33"), (0.0, "0"),
                                              (0.001, "0"), (65.0, "65"), (10.25, "10.25")])
def test_points_are_written_as_the_lms_shows_them(points, text):
    assert format_points(points) == text
