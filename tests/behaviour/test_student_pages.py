"""Every student page the behaviour fixtures give, in plain words, opening with the first thing to fix.

For the reference, the released stubs and every catalogue entry, the committed verdict outputs
(``catalogue/<exercise>.json``) go into the released notebook filled with that answer, and the page is
rendered as ``generate_feedback`` renders it: the course's exporter, template and feedback steps
(``PresentVerdicts`` included), each test cell scored as nbgrader scores its outputs. Each page is checked
against ``support.plain_words`` (no grade id, internal class name, ``case=``, ``failing_call=``, bare
``Out[n]``, and not the two slips), for its first line, and, for the reference, for its size.
The Gradescope text of each cell (the verdict as written) is held to the same words.
"""

from __future__ import annotations

import copy
import functools
import re

import nbformat
import pytest
from behaviour import capture
from nbgrader.utils import determine_grade
from support.plain_words import offences, visible_text

EXERCISES = sorted(path.stem for path in capture.CATALOGUE_DIR.glob("*.json"))

#: Bytes a correct notebook's page may take, the student's own figures aside (none here: the notebooks are
#: not executed). nbgrader's page took 160-260 KB before any figure, 120 KB of it CSS (Bootstrap); what is
#: left is the notebook's highlighted code (up to about 100 KB in ex5) and the verdicts (bench/feedback_pages.py).
CORRECT_PAGE_BUDGET = 150 * 1024


@functools.cache
def _exporter():
    from ch11_autograder.trusted.feedback_pages import FeedbackExporter
    from ch11_autograder.trusted.steps import PresentVerdicts
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

    exporter = FeedbackExporter(config=capture.course_config())
    exporter.split = "off"
    for step in (PresentVerdicts, CSSHTMLHeaderPreprocessor):
        exporter.register_preprocessor(step(config=capture.course_config()), enabled=True)
    return exporter


def _page(stem: str, nb: nbformat.NotebookNode, outputs: dict[str, list[dict]]) -> str:
    """The feedback page of ``nb`` with ``outputs`` (grade_id -> verdict outputs) in its test cells."""
    nb = copy.deepcopy(nb)
    score = max_score = 0.0
    for cell in nb.cells:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("grade_id") in outputs:
            cell.outputs = [nbformat.from_dict(o) for o in outputs[grading["grade_id"]]]
            got, points = determine_grade(cell)
            grading["score"], grading["points"] = float(got or 0), float(points)
            score, max_score = score + grading["score"], max_score + grading["points"]
        elif grading.get("grade") or grading.get("task"):  # graded by hand: not yet (GetGrades' zero)
            grading["score"] = 0.0
    resources = {"nbgrader": {"notebook": stem, "score": score, "max_score": max_score, "late_penalty": 0}}
    body, _resources = _exporter().from_notebook_node(nb, resources=resources)
    return body


@functools.cache
def _pages(exercise: str) -> dict[str, str]:
    fixture = capture.read_catalogue_fixture(exercise)
    return {label: _page(stem, nb, fixture[label]) for label, stem, nb in capture.submissions()
            if label in fixture}


def _top_line(page: str) -> str:
    found = re.search(r'<p class="ch11-top [^"]*">(.*?)</p>', page, re.S)
    return found.group(1) if found else ""


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_page_of_the_catalogue_says_an_internal_word(exercise):
    bad = {label: found for label, page in _pages(exercise).items() if (found := offences(visible_text(page)))}
    assert not bad, "\n".join(f"{label}: {found}" for label, found in bad.items())


@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_verdict_text_of_the_catalogue_says_an_internal_word(exercise):
    # The text as TrustedVerdicts wrote it: what Gradescope shows and the formgrader's cell outputs.
    bad = []
    for label, cells in capture.read_catalogue_fixture(exercise).items():
        for grade_id, outputs in cells.items():
            text = "".join(str(o.get("text") or o.get("evalue") or "") for o in outputs)
            bad += [f"{label} {grade_id}: {found}" for found in offences(text)]
    assert not bad, "\n".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_page_opens_with_one_line_full_marks_or_what_to_fix(exercise):
    pages = _pages(exercise)
    reference = pages[f"{exercise}/reference"]
    assert _top_line(reference).startswith("Every autograded check passed: ")
    assert reference.count("ch11-headline ch11-full") >= 1 and "ch11-headline ch11-fix" not in reference
    assert "<details><summary>" in reference  # the passed checks are folded
    for label, page in pages.items():
        if label.endswith("/reference"):
            continue
        line = _top_line(page)
        assert line.startswith("Autograded points: "), (label, line)
        assert "First thing to fix: " in line or "not answered yet" in line, (label, line)


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_a_correct_notebooks_page_is_within_its_budget(exercise):
    size = len(_pages(exercise)[f"{exercise}/reference"].encode())
    assert size <= CORRECT_PAGE_BUDGET, f"{exercise}: the reference's page is {size} bytes"


def test_the_forbidden_words_catch_the_old_pages_slips():
    # The words as nbgrader's page and the old verdict text said them (issue: internal words, slips).
    old = ("Grade cell: ex2_fd_sweep_tests", "inputs: case={'x': 1.0}", "inputs: calls=[], failing_call=2",
           "got: <RngSeed>", "Out[10]: 3.5", "This matches a known mistake, The gradient ...", "expected a int",
           'This matches a known mistake: "The gradient ...". Exact_gradient raises as exact_partial does')
    assert all(offences(text) for text in old)
    assert not offences("First thing to fix: fd_sweep with x=1.0: expected an int, got a float")
    assert not offences('This matches a known mistake: "The gradient ...". exact_gradient raises as exact_partial '
                        "does. Check the inputs with _exact first.")
