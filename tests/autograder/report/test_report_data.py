"""The class report's data layer and renderers on hand-made data (no grading, no gradebook).

The counts of a really graded class are checked in test_report_planted_class.py; here, what
each step does with records of every shape: counting, ordering, refusing malformed records,
escaping student-derived text, and drawing one PNG per figure.
"""

from __future__ import annotations

import html

import pytest
from ch11_autograder.cli import main as cli_main
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.report import data
from ch11_autograder.report.data import ClassReport, Flag, NotebookStats, StudentScores
from ch11_autograder.report.figures import draw_all
from ch11_autograder.report.mistakes import class_mistakes, shown_example
from ch11_autograder.report.render import (
    Contents,
    Heading,
    Table,
    html_text,
    markdown_text,
    md_escape,
    mistake_blocks,
    report_blocks,
)

EX1 = catalogue("ex1")
LWW = next(e for e in EX1 if e.name == "last_writer_wins")


def prop(name: str, outcome: str, misconception: str = "") -> dict[str, str]:
    return {"name": name, "outcome": outcome, "misconception": misconception}


def test_a_record_of_another_shape_is_refused():
    good = {"v": 1, "grade_id": "g", "properties": [prop("a", "passed")]}
    assert data._valid_properties(good, "g") == [{**prop("a", "passed"), "advice": "", "unanswered": False}]
    for bad in (None, [], {**good, "v": 2}, {**good, "grade_id": "other"}, {**good, "properties": "a"},
                {**good, "properties": [prop("a", "won")]}, {**good, "properties": [{"name": 1, "outcome": "passed",
                                                                                    "misconception": ""}]}):
        assert data._valid_properties(bad, "g") is None, bad


def test_a_title_with_where_names_its_entry_and_an_unknown_title_none():
    assert data.entry_for_title(LWW.title, EX1) == LWW
    assert data.entry_for_title(f"{LWW.title} (in extended_tape, which this function reads)", EX1) == LWW
    assert data.entry_for_title(LWW.title + "s", EX1) is None
    assert data.entry_for_title("<script>", EX1) is None


def test_properties_counted_per_outcome_in_suite_order_with_visible_checks_last():
    verdicts = {
        ("ann", "ex1_fanout", "ex1_extended_tape_tests"): [prop("visible_checks", "errored"), prop("a", "failed"),
                                                           prop("b", "timed_out")],
        ("bob", "ex1_fanout", "ex1_extended_tape_tests"): [prop("a", "passed"), prop("b", "passed")],
        ("cy", "ex1_fanout", "ex1_extended_tape_tests"): [prop("a", "errored"), prop("b", "passed")],
    }
    rows = data._property_counts(verdicts, {"ex1_fanout": {"ex1_extended_tape_tests": 3.0}})
    assert [(r.prop, r.outcomes) for r in rows] == [
        ("a", {"passed": 1, "failed": 1, "errored": 1, "timed_out": 0}),
        ("b", {"passed": 2, "failed": 0, "errored": 0, "timed_out": 1}),
        ("visible_checks", {"passed": 0, "failed": 0, "errored": 1, "timed_out": 0}),
    ]


def test_a_misconception_counts_once_per_student_and_a_suites_own_name_gets_its_own_row():
    verdicts = {
        ("ann", "ex1_fanout", "ex1_extended_tape_tests"): [prop("a", "failed", LWW.title)],
        ("ann", "ex1_fanout", "ex1_input_gradient_tests"): [prop("a", "failed", f"{LWW.title} (in extended_tape)")],
        ("bob", "ex1_fanout", "ex1_input_gradient_tests"): [prop("a", "failed", LWW.title),
                                                            {**prop("b", "failed", "A group"), "advice": "Add."}],
    }
    rows = data._misconceptions(verdicts)
    assert rows[0].name == "last_writer_wins" and rows[0].students == ("ann", "bob") and rows[0].advice == LWW.advice
    assert (rows[1].name, rows[1].title, rows[1].advice, rows[1].students) == ("", "A group", "Add.", ("bob",))
    assert all(r.count == 0 for r in rows[2:])
    assert len(rows) == 1 + sum(len(catalogue(f"ex{i}")) for i in range(1, 6))


def failed(name: str, got: str, misconception: str = "") -> dict[str, object]:
    """A failed property as ``CellVerdict.record`` writes it, with its counterexample."""
    return {**prop(name, "failed", misconception),
            "example": {"kind": "mismatch", "inputs": {"x": "2.0"}, "expected": "180.0", "got": got}}


def test_a_group_is_an_entry_s_only_where_it_fails_the_entry_s_cells_and_no_other():
    # last_writer_wins loses points in ex1_input_gradient_tests alone (its kill-table row). ann fails
    # there only, named: her group is the entry. In another class, bob fails the same way, named the
    # same, and fails ex1_extended_tape_tests too, where the entry never loses, and no one makes the
    # entry's mistake alone: his group is that mistake and another, not the entry's, and the report
    # must not file it under the catalogue.
    grad, tape = "ex1_input_gradient_tests", "ex1_extended_tape_tests"
    (ann,) = class_mistakes({("ann", "ex1_fanout", grad): [failed("a", "54.0", LWW.title)]})
    assert ann.entry == LWW and ann.outside == () and ann.known
    (bob,) = class_mistakes({("bob", "ex1_fanout", grad): [failed("a", "54.0", LWW.title)],
                             ("bob", "ex1_fanout", tape): [failed("t", "[]")]})
    assert bob.group.named == LWW.title and bob.entry is None and bob.outside == (tape,) and not bob.known
    (_heading, intro, table) = mistake_blocks([ann, bob])
    assert "2 groups, 1 not in the catalogue" in intro.text
    assert [row[-1] for row in table.rows] == [
        "catalogued: last_writer_wins",
        f"not catalogued (named in feedback: {LWW.title}, which loses no points in {tape})",
    ]


def student(name: str, status: str = "graded", **kw) -> StudentScores:
    base = {"auto": {"ex1_fanout": 4.0}, "manual": {"ex1_fanout": 0.0}, "manual_pending": 4.0, "late_penalty": 0.0,
            "seconds": 10.0}
    base.update(kw)
    return StudentScores(student=name, status=status, **base)


def test_flags_list_errors_then_lms_late_then_penalties():
    students = [student("a", late_penalty=2.0), student("b", "error", auto=None, error="b/ch11/x.ipynb: malformed"),
                student("c", lms_late=True)]
    assert [(f.student, f.kind) for f in data._flags(students)] == [("b", "error"), ("c", "LMS late"),
                                                                    ("a", "late penalty")]


HOSTILE = "<img src=x onerror=alert(1)>|*[link](http://x)*"


def hostile_report() -> ClassReport:
    return ClassReport(
        assignment="ch11",
        notebooks=[NotebookStats("ex1_fanout", 8.0, 4.0)],
        students=[student("ann", seconds=30.0), student("bob", manual={"ex1_fanout": 2.5}),
                  student("zed", "error", auto=None, seconds=1.0, error=HOSTILE)],
        properties=[data.PropertyCount("ex1_fanout", "ex1_extended_tape_tests", "a",
                                       {"passed": 1, "failed": 1, "errored": 0, "timed_out": 0})],
        misconceptions=data._misconceptions({("ann", "ex1_fanout", "g"): [prop("a", "failed", LWW.title)]}),
        flags=[Flag("zed", "error", HOSTILE)],
    )


def test_student_derived_text_is_escaped_in_both_formats():
    report = hostile_report()
    figures = draw_all(report)
    assert [f.name for f in figures] == ["scores", "properties-ex1_fanout", "misconceptions", "timing"]
    assert all(f.png.startswith(b"\x89PNG\r\n\x1a\n") and f.takeaway for f in figures)
    blocks = report_blocks(report, figures, "ch11-report")
    page = html_text(blocks)
    assert HOSTILE not in page and html.escape(HOSTILE) in page
    assert "<img src=x" not in page and "<script" not in page
    text = markdown_text(blocks)
    assert HOSTILE not in text and md_escape(HOSTILE) in text
    assert "\\<img" in text and "\\|" in text and "\\[link\\]" in text
    assert "| bob | graded | 4 | 4 | 2.5 | 4 | 6.5 |" in text  # autograded 4 + hand marked 2.5


def test_md_escape_keeps_words_readable_and_shows_newlines():
    assert md_escape("ex1_fanout") == "ex1_fanout"
    assert md_escape("_x_ a*b\nc") == "\\_x\\_ a\\*b\\\\nc"


def test_takeaways_are_written_from_the_data():
    figures = {f.name: f for f in draw_all(hostile_report())}
    assert figures["misconceptions"].takeaway.startswith(f"Re-teach first: {LWW.title} (ex1), matched by 1 student;")
    assert figures["timing"].takeaway == "Slowest: ann at 30.0 s (median 10.0 s); 1 error."
    assert "Median autograded total 4 of 8 over 2 students" in figures["scores"].takeaway


def test_collect_and_the_command_refuse_a_course_without_gradebook(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no gradebook"):
        data.collect(tmp_path, "ch11")
    assert cli_main(["report", "--course", str(tmp_path)]) == 2
    assert "no gradebook.db" in capsys.readouterr().err


def stub(name: str) -> dict[str, object]:
    """A property failed on the released stub: its NotImplementedError."""
    return {**prop(name, "errored"), "unanswered": True,
            "example": {"kind": "error", "inputs": {}, "expected": "", "got": "", "raised": "NotImplementedError",
                        "call": "extended_tape(2.0, 3.0)", "unanswered": True}}


TAPE = "ex1_extended_tape_tests"


def stub_class() -> dict[tuple[str, str, str], list[dict]]:
    """ann and dee left the stub, bob fails one property, cy passes both (records as the report reads them)."""
    rows = {"ann": [stub("a"), stub("b")], "dee": [stub("a"), stub("b")],
            "bob": [failed("a", "54.0", LWW.title), prop("b", "passed")],
            "cy": [prop("a", "passed"), prop("b", "passed")]}
    out = {}
    for name, props in rows.items():
        valid = data._valid_properties({"v": 1, "grade_id": TAPE, "properties": props}, TAPE)
        assert valid is not None
        out[(name, "ex1_fanout", TAPE)] = valid
    return out


def test_stubs_are_counted_apart_from_wrong_answers():
    verdicts = stub_class()
    rows = data._property_counts(verdicts, {"ex1_fanout": {TAPE: 3.0}})
    assert [(r.prop, r.outcomes["passed"], r.outcomes["failed"], r.outcomes["errored"], r.unanswered, r.answered)
            for r in rows] == [("a", 1, 1, 0, 2, 2), ("b", 2, 0, 0, 2, 2)]
    (task,) = data._attempts(verdicts, {"ex1_fanout": {TAPE: 3.0}})
    assert (task.attempted, task.stubs) == (("bob", "cy"), ("ann", "dee"))
    assert class_mistakes(verdicts)[0].group.students == ("bob",)  # a stub is in no mistake group


def summary_report() -> ClassReport:
    verdicts = stub_class()
    auto = {"ann": 0.0, "dee": 0.0, "bob": 2.0, "cy": 3.0}
    return ClassReport(
        assignment="ch11", notebooks=[NotebookStats("ex1_fanout", 3.0, 0.0)],
        students=[student(s, auto={"ex1_fanout": v}) for s, v in auto.items()],
        properties=data._property_counts(verdicts, {"ex1_fanout": {TAPE: 3.0}}),
        misconceptions=data._misconceptions(verdicts), flags=[],
        mistakes=class_mistakes(verdicts), attempts=data._attempts(verdicts, {"ex1_fanout": {TAPE: 3.0}}))


def test_the_summary_counts_who_attempted_and_scores_only_them():
    report = summary_report()
    assert report.attempted("ex1_fanout") == ("bob", "cy")
    assert report.attempted_scores("ex1_fanout") == {"n": 2, "mean": 2.5, "median": 2.5, "min": 2.0, "max": 3.0}
    (first,) = report.reteach()
    assert (first.students, first.title, first.cell, first.input, first.expected, first.obtained, first.advice) == (
        1, LWW.title, TAPE, "x=2.0", "180.0", "54.0", LWW.advice)
    figure = {f.name: f for f in draw_all(report)}["properties-ex1_fanout"]
    assert figure.takeaway == ("Most missed in ex1_fanout: a (ex1_extended_tape_tests), not passed by 1 of the 2 "
                               "who answered it; 2 more left the stub.")


def test_the_first_screen_is_the_summary_with_contents_and_the_details_follow():
    blocks = report_blocks(summary_report(), [], "ch11-report")
    headings = [b.text for b in blocks if isinstance(b, Heading) and b.level == 2]
    assert headings[0] == "Summary" and headings[1] == "Scores"
    assert headings[-1] == "Appendix: scores per student"
    (contents,) = [b for b in blocks if isinstance(b, Contents)]
    assert contents.headings == tuple(headings[1:])
    summary = blocks[:blocks.index(Heading("Scores"))]
    tables = [b for b in summary if isinstance(b, Table)]
    assert tables[0].rows == (("ex1_fanout", "2 of 4", "3", "2.50", "2.5", "2", "3"),)
    assert tables[1].rows == (("ex1_fanout", TAPE, "2", "2"),)
    assert tables[2].rows[0][:3] == ("1", LWW.title, TAPE)
    # No per-student row before the appendix.
    appendix = blocks.index(Heading("Appendix: scores per student"))
    per_student = [i for i, b in enumerate(blocks) if isinstance(b, Table) and "hand marked" in b.headers]
    assert per_student and all(i > appendix for i in per_student)
    page = html_text(blocks)
    assert '<a href="#appendix-scores-per-student">' in page and '<h2 id="appendix-scores-per-student">' in page


def test_a_group_never_shows_a_blank_input_expected_or_obtained():
    # A cell's visible checks have no input or expected value of their own; a timeout has no value.
    visible = {"name": "visible_checks", "outcome": "errored", "misconception": "", "advice": "",
               "example": {"kind": "error", "inputs": {}, "expected": "", "got": "", "raised": "AssertionError",
                           "call": ""}}
    slow = {"name": "a", "outcome": "timed_out", "misconception": "", "advice": "",
            "example": {"kind": "timeout", "inputs": {"x": "2.0"}, "expected": "180.0", "got": "", "raised": "",
                        "call": "extended_tape(2.0, 3.0)"}}
    groups = class_mistakes({("ann", "ex1_fanout", TAPE): [visible], ("bob", "ex1_fanout", TAPE): [slow]})
    shown = {m.group.students: shown_example(m.group) for m in groups}
    assert shown[("ann",)] == ("the asserts of this test cell in the notebook, run as written", "every assert passes",
                               "'AssertionError' raised")
    assert shown[("bob",)] == ("x=2.0", "180.0", "no answer within the time limit (in extended_tape(2.0, 3.0))")
    (_heading, _intro, table) = mistake_blocks(groups)
    assert all(all(cell.strip() for cell in row) for row in table.rows)


def test_a_notebook_every_answer_passes_says_how_many_left_the_stub():
    verdicts = {k: [p for p in v if p["name"] == "b"] for k, v in stub_class().items()}
    report = summary_report()
    report.properties = data._property_counts(verdicts, {"ex1_fanout": {TAPE: 3.0}})
    figure = {f.name: f for f in draw_all(report)}["properties-ex1_fanout"]
    assert figure.takeaway == "Every recorded property of ex1_fanout passed for the 2 who answered it; 2 left the stub."
