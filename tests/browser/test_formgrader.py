"""The formgrader as an instructor uses it: a real Jupyter server, Debian's Chromium, the graded demo class.

25 of the 65 points are rubric cells graded by hand in nbgrader's formgrader. These tests
start ``jupyter server`` (nbgrader's server extensions, the course's own
``nbgrader_config.py``) on a copy of the demo class graded by the batch grader, with two
hostile submissions of the corpus graded into it (``script_in_outputs``,
``script_in_markdown_answer``: ``<script>``, ``onerror``, ``javascript:`` and SVG payloads in
outputs and in a markdown answer), and drive headless Chromium through Playwright:

* the manual-grading view of a graded submission shows the student's answers and, in each
  autograded test cell, the trusted verdict with the score the gradebook holds, and no
  hidden-test text;
* a hostile submission's view runs none of its payloads: no dialog opens, the title stays
  the notebook's name, no element the payload would add exists, no live script, handler
  or ``javascript:`` URL carries its marker;
* a score and a comment entered on a rubric cell are saved, are there after a reload, and
  ``nbgrader export`` counts the score in the student's total;
* the same checks, run against a formgrader whose course config drops the sanitizing
  preprocessors, see the payloads run and the hidden text shown: they can fail.

Screenshots of every view checked go to ``build/formgrader/``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from ch11_autograder.batch import grade_class
from ch11_autograder.nbgrader_cli import run_nbgrader
from nbgrader.api import Gradebook
from support import batch_support
from support import browser as browser_support
from support.hostile_corpus import Context, build_corpus, case
from support.paths import ASSIGNMENT, BUILD_DIR

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.class_batch]

SCREENSHOTS = BUILD_DIR / "formgrader"
#: The cases of the hostile corpus whose payloads target a browser.
HOSTILE = ("script_in_outputs", "script_in_markdown_answer")
#: Text of the hidden test regions (``exercises.cells.HIDDEN_MARKER``) that no view may show.
HIDDEN_TEXTS = ("hidden checks run outside this notebook", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
#: The first line of a trusted verdict (trusted/verdicts.py), as the test cell's output shows it.
VERDICT = re.compile(r"\d+ of \d+ checks passed \((\S+) / (\S+) points\)\.")
#: The rubric cell graded by hand here: (student, notebook, cell, score entered, comment entered).
MANUAL = ("hal", "ex1_fanout", "ex1_derivation", 3.0,
          "The fan-out sum is right; say why each path's contribution is added, not overwritten.")

#: Page facts the payloads would change, read in the page: live script or handlers carrying the
#: marker, and the elements the payload appends (``hostile_corpus.xss_hit``).
LIVE_PAYLOAD_JS = """marker => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    if (el.tagName === 'SCRIPT' && el.textContent.includes(marker)) found.push('script: ' + el.textContent);
    for (const attr of el.attributes) {
      const value = attr.value || '';
      if (!value.includes(marker)) continue;
      if (attr.name.startsWith('on')) found.push(el.tagName + ' ' + attr.name);
      if (/^\\s*(javascript|data):/i.test(value)) found.push(el.tagName + ' ' + attr.name + ' URL');
    }
  }
  for (const el of document.querySelectorAll('hostile-xss')) found.push('appended element #' + el.id);
  return found;
}"""


# --------------------------------------------------------------------------- the course, server and browser


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the demo class graded by the batch, with the two hostile cases graded into it."""
    browser_support.require_browser()
    demo, _report, _events = batch_support.graded_demo_class(tmp_path_factory.getbasetemp())
    work = tmp_path_factory.mktemp("formgrader")
    course = batch_support.copy_course(demo, work / "course")
    hostile = work / "hostile-class"
    build_corpus(hostile, Context(course=course, class_dir=hostile, allowed_root=work), [case(n) for n in HOSTILE])
    report = grade_class(hostile, course, workers=2, sandbox="bwrap", feedback=False)
    assert {r.student: r.status for r in report.records} == dict.fromkeys(HOSTILE, "graded"), report.records
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return course


@pytest.fixture(scope="module")
def server(course, tmp_path_factory) -> Iterator[browser_support.JupyterServer]:
    with browser_support.jupyter_server(course, tmp_path_factory.mktemp("jupyter")) as running:
        yield running


@pytest.fixture(scope="module")
def chromium(course) -> Iterator[Any]:
    # After ``course``, which skips (or, under CI, fails) first when there is no browser.
    with browser_support.chromium() as browser:
        yield browser


@dataclass
class View:
    """One browser tab on a formgrader page, with every dialog the page tried to open."""

    page: Any
    dialogs: list[str] = field(default_factory=list)

    def text(self) -> str:
        return self.page.evaluate("document.body.innerText")

    def cell(self, grade_id: str) -> Any:
        """The notebook cell (source and outputs) holding the score or comment box of ``grade_id``."""
        return self.page.locator(f"div.cell:has(#{grade_id}, #{grade_id}-comment)")

    def cell_text(self, grade_id: str) -> str:
        return self.cell(grade_id).inner_text()

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def submission_id(course: Path, student: str, notebook: str) -> str:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return gb.find_submission_notebook(notebook, ASSIGNMENT, student).id


def open_submission(browser: Any, server: browser_support.JupyterServer, student: str, notebook: str) -> View:
    """The manual-grading view of ``student``'s ``notebook``, once its grades and comments are loaded."""
    context = browser.new_context(extra_http_headers=server.auth_headers, viewport={"width": 1280, "height": 900})
    view = View(context.new_page())

    def dismiss(dialog: Any) -> None:
        view.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    view.page.on("dialog", dismiss)
    load(view, f"{server.url}/formgrader/submissions/{submission_id(server.root, student, notebook)}/")
    return view


def load(view: View, url: str | None = None) -> None:
    """Go to ``url`` (or reload) and wait until the page is idle and formgrader's models are loaded."""
    response = view.page.goto(url, wait_until="networkidle") if url else view.page.reload(wait_until="networkidle")
    assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"
    view.page.wait_for_function("window.formgrader && formgrader.grades.loaded && formgrader.comments.loaded",
                                timeout=30_000)


def hidden_texts_shown(view: View) -> list[str]:
    page = view.page.content() + view.text()
    return [text for text in HIDDEN_TEXTS if text in page]


def payload_effects(view: View, notebook: str) -> list[str]:
    """Every sign that a payload ran in ``view``: dialogs, a changed title, live payload markup."""
    effects = [f"dialog {d}" for d in view.dialogs]
    if view.page.title() != notebook:
        effects.append(f"title changed to {view.page.title()!r}")
    effects += view.page.evaluate(LIVE_PAYLOAD_JS, "HOSTILE_XSS")
    return effects


# --------------------------------------------------------------------------- what a notebook holds


def answer_lines(course: Path, student: str, notebook: str) -> dict[str, list[str]]:
    """grade_id -> the non-blank lines of each answer cell the student submitted (code: all, markdown: the first)."""
    nb = nbformat.read(course / "submitted" / student / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
            answers[meta["grade_id"]] = lines if cell.cell_type == "code" else lines[:1]
    return answers


def verdict_headlines(course: Path, student: str, notebook: str) -> dict[str, str]:
    """grade_id -> the first line of the trusted verdict in each autograded test cell's output."""
    nb = nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            text = "\n".join(o.get("text", "") or o.get("evalue", "") for o in cell.get("outputs", []))
            match = VERDICT.search(text)
            assert match, f"{student}/{notebook}/{meta['grade_id']}: no verdict in the autograded outputs"
            found[meta["grade_id"]] = match.group(0)
    return found


def gradebook_grade(course: Path, student: str, notebook: str, grade_id: str) -> dict[str, Any]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grade = gb.find_grade(grade_id, notebook, ASSIGNMENT, student)
        comment = gb.find_comment(grade_id.removesuffix("_tests"), notebook, ASSIGNMENT, student) \
            if not grade_id.endswith("_tests") else None
        return {"auto_score": grade.auto_score, "manual_score": grade.manual_score, "score": grade.score,
                "needs_manual_grade": grade.needs_manual_grade,
                "manual_comment": comment.manual_comment if comment is not None else None}


def total_score(course: Path, student: str) -> float:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return gb.find_submission(ASSIGNMENT, student).score


# --------------------------------------------------------------------------- the tests


def test_the_manual_grading_view_shows_answers_and_trusted_verdicts(course, server, chromium):
    """lin's Exercise 1: her answers, each test cell's verdict and auto score, no hidden-test text."""
    student, notebook = "lin", "ex1_fanout"
    view = open_submission(chromium, server, student, notebook)
    view.shot(f"submission-{student}-{notebook}")
    assert view.page.title() == notebook
    page_text = " ".join(view.text().split())

    answers = answer_lines(course, student, notebook)
    assert answers, "the submitted notebook has no answer cells"
    missing = {gid: line for gid, lines in answers.items() for line in lines if " ".join(line.split()) not in page_text}
    assert not missing, f"answer lines the view does not show: {missing}"

    headlines = verdict_headlines(course, student, notebook)
    assert len(headlines) == 3
    for grade_id, headline in headlines.items():
        assert headline in view.cell_text(grade_id), f"{grade_id}: the view does not show the verdict {headline!r}"
        shown = view.page.locator(f"#{grade_id}").get_attribute("placeholder")
        stored = gradebook_grade(course, student, notebook, grade_id)["auto_score"]
        assert float(shown) == stored == float(VERDICT.search(headline).group(1)), (grade_id, shown, stored)
    # The catalogued misconception in lin's input_gradient is a partial verdict, not a pass.
    assert "(1 / 2 points)" in headlines["ex1_input_gradient_tests"]
    view.cell("ex1_input_gradient_tests").screenshot(path=str(SCREENSHOTS / f"verdict-{student}-input_gradient.png"))

    assert not hidden_texts_shown(view)
    assert 'print("visible checks passed")' in page_text, "the test cells' visible checks should still be shown"
    assert view.dialogs == []


@pytest.mark.parametrize("student", HOSTILE)
def test_a_hostile_submission_runs_nothing_in_the_view(course, server, chromium, student):
    notebook = case(student).notebook
    view = open_submission(chromium, server, student, notebook)
    view.page.wait_for_timeout(500)  # an onerror handler fires after its image fails to load
    view.shot(f"hostile-{student}")
    assert payload_effects(view, notebook) == []
    assert not hidden_texts_shown(view)
    # The view is the submission's: its answer (markdown, or the complete audit_marks) is shown, as text.
    answer = "ex4_mathematical_object" if student == "script_in_markdown_answer" else "ex4_audit_marks"
    view.cell(answer).screenshot(path=str(SCREENSHOTS / f"hostile-{student}-answer.png"))
    if student == "script_in_outputs":  # the payload's outputs are in the cell the student added after the answer
        payload_cell = view.page.locator("div.cell:has-text('from IPython.display import HTML')")
        payload_cell.screenshot(path=str(SCREENSHOTS / f"hostile-{student}-outputs.png"))
    assert ("My answer." if student == "script_in_markdown_answer" else "def audit_marks(") in view.cell_text(answer)


def test_a_manual_score_and_comment_are_saved_and_exported(course, server, chromium):
    student, notebook, grade_id, score, comment = MANUAL
    before = gradebook_grade(course, student, notebook, grade_id)
    assert before["manual_score"] is None and before["needs_manual_grade"], before
    total_before = total_score(course, student)

    view = open_submission(chromium, server, student, notebook)
    score_box, comment_box = view.page.locator(f"#{grade_id}"), view.page.locator(f"#{grade_id}-comment")
    assert score_box.input_value() == "" and "needs_manual_grade" in (score_box.get_attribute("class") or "")
    with view.page.expect_response(lambda r: "/api/grade/" in r.url and r.request.method == "PUT") as saved:
        score_box.click()
        score_box.fill(f"{score:g}")
        score_box.press("Tab")  # formgrader saves a score when its box loses focus (a change event)
    assert saved.value.ok
    with view.page.expect_response(lambda r: "/api/comment/" in r.url and r.request.method == "PUT") as saved:
        comment_box.click()
        comment_box.fill(comment)
        comment_box.press("Tab")
    assert saved.value.ok
    view.cell(grade_id).screenshot(path=str(SCREENSHOTS / "rubric-saved.png"))

    load(view)
    assert float(score_box.input_value()) == score
    assert comment_box.input_value() == comment
    assert "needs_manual_grade" not in (score_box.get_attribute("class") or "")
    view.cell(grade_id).screenshot(path=str(SCREENSHOTS / "rubric-after-reload.png"))
    view.shot(f"submission-{student}-{notebook}-graded")

    after = gradebook_grade(course, student, notebook, grade_id)
    assert (after["manual_score"], after["manual_comment"], after["needs_manual_grade"]) == (score, comment, False)
    run_nbgrader(course, "export", check=True, capture_output=True)
    with (course / "grades.csv").open(newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == ASSIGNMENT}
    assert float(rows[student]["score"]) == pytest.approx(total_before + score)


def test_the_checks_see_an_undefended_formgrader(course, chromium, tmp_path):
    """Without the sanitizing preprocessors in the course config, the same checks see payloads run and hidden text."""
    undefended = batch_support.copy_course(course, tmp_path / "course")
    with (undefended / "nbgrader_config.py").open("a") as config:
        config.write("\nc.HTMLExporter.preprocessors = []  # the browser tier's control: no defence\n")
    with browser_support.jupyter_server(undefended, tmp_path / "jupyter") as bare:
        view = open_submission(chromium, bare, "script_in_markdown_answer", "ex4_audit")
        view.page.wait_for_timeout(500)
        view.shot("control-undefended-script_in_markdown_answer")
        effects = payload_effects(view, "ex4_audit")
        assert any(e.startswith("dialog") for e in effects), effects
        assert any(e.startswith("title changed") for e in effects), effects
        assert any(e.startswith("appended element") for e in effects), effects
        assert hidden_texts_shown(view)
