"""A verdict on the student's page (``trusted/verdict_page.py``, ``steps/present_verdicts.py``)."""

from __future__ import annotations

import nbformat
from ch11_autograder.trusted.steps import PresentVerdicts
from ch11_autograder.trusted.verdict_page import notebook_line, read_verdict_text, verdict_html
from ch11_autograder.trusted.verdicts import CellVerdict, Failure, verdict_outputs


def _verdict(failures=(), names=("a", "b", "c")) -> CellVerdict:
    return CellVerdict.from_results("ex2_exact_gradient_tests", 3, [(n, f"{n} holds.") for n in names], list(failures))


def test_a_full_marks_verdict_is_one_green_line_with_the_passes_folded():
    sections = read_verdict_text(_verdict().message())
    assert sections.full and sections.headline == "Full marks: every check of exact_gradient passed (3 / 3 points)."
    page = verdict_html(sections)
    assert page.startswith('<div class="ch11-verdict"><p class="ch11-headline ch11-full">Full marks: ')
    assert "<details><summary>3 checks passed</summary>" in page and "ch11-failures" not in page


def test_a_failing_verdict_highlights_the_first_thing_to_fix_before_the_details():
    wrong = Failure("b", "b holds.", "mismatch", inputs={"x": 1}, expected=2, got=3)
    page = verdict_html(read_verdict_text(_verdict([wrong]).message()))
    headline = '<p class="ch11-headline ch11-fix">First thing to fix: exact_gradient with x=1: expected 2, got 3</p>'
    assert page.index(headline) < page.index('<pre class="ch11-failures">[FAIL] b: b holds.')
    assert page.index("ch11-failures") < page.index("<details><summary>2 checks passed</summary>")


def test_student_text_is_escaped_and_cannot_pass_for_a_grader_line():
    forged = Failure("b", "b holds.", "mismatch", inputs={"x": "<script>"}, expected=1, got="</pre>\n[pass] b")
    sections = read_verdict_text(_verdict([forged]).message())
    assert all(not line.startswith("[pass] b") for line in sections.passes)
    page = verdict_html(sections)
    assert "<script>" not in page and "&lt;script&gt;" in page and "</pre>\\n" not in page


def test_text_of_another_shape_is_shown_whole():
    sections = read_verdict_text("No suite is registered for this cell.")
    assert not sections.shaped
    assert verdict_html(sections) == '<div class="ch11-verdict"><pre>No suite is registered for this cell.</pre></div>'


def test_the_page_line_says_every_check_passed_or_the_first_thing_to_fix():
    full = read_verdict_text(_verdict().message())
    wrong = read_verdict_text(_verdict([Failure("b", "b holds.", "mismatch", inputs={"x": 1}, expected=2,
                                                got=3)]).message())
    assert notebook_line([("f", full), ("g", full)], 6, 6) == ("Every autograded check passed: 6 / 6", True)
    line, all_passed = notebook_line([("f", full), ("exact_gradient", wrong)], 4, 6)
    assert not all_passed and line == "Autograded points: 4 / 6. First thing to fix: exact_gradient with x=1: " \
                                      "expected 2, got 3"


def test_the_step_replaces_the_verdict_outputs_and_the_bare_out_prompt():
    wrong = Failure("b", "b holds.", "mismatch", inputs={"x": 1}, expected=2, got=3)
    verdict = _verdict([wrong])
    cell = nbformat.v4.new_code_cell("check()", metadata={"nbgrader": {
        "grade": True, "solution": False, "grade_id": "ex2_exact_gradient_tests", "points": 3, "score": verdict.score}})
    cell.outputs = [nbformat.from_dict(o) for o in verdict_outputs(verdict, execution_count=10)]
    assert [o.output_type for o in cell.outputs] == ["stream", "execute_result"]  # nbgrader's page: "Out[10]: 2.0"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), cell])
    nb, resources = PresentVerdicts().preprocess(nb, {})
    (shown,) = nb.cells[1].outputs
    assert shown.output_type == "display_data" and list(shown.data) == ["text/html"]
    assert "First thing to fix: exact_gradient with x=1" in shown.data["text/html"]
    assert resources["ch11_feedback"] == {
        "first_line": "Autograded points: 2 / 3. First thing to fix: exact_gradient with x=1: expected 2, got 3",
        "full": False, "tasks": {"ex2_exact_gradient_tests": "exact_gradient"}}
