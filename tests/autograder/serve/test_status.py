"""The pages a student fetches: where a submission stands, and practice feedback without counterexamples."""

from __future__ import annotations

import html
import re

import pytest
from ch11_autograder.serve.budget import Budget
from ch11_autograder.serve.queue import Submission
from ch11_autograder.serve.status import feedback_page, status_page, wait_text
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY, CellVerdict, Failure

HOSTILE = "<script>alert(1)</script>\x1b[31m"


def sub(state: str, reason: str | None = None, stamp: str = "2026-12-02 10:00:00.000000 UTC") -> Submission:
    return Submission(1, f"ann+ch11+{stamp}+r", "ann", stamp, "ab" * 32, ("ex4_audit.ipynb",), 0.0, state, reason,
                      1_800_000_000.0, None, None, None, None, 0)


def no_active_content(page: str) -> None:
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)\s*=", page), "a page loads nothing"


def test_queued_page_shows_position_and_wait() -> None:
    page = status_page(sub("queued"), "ex4_audit", position=3, expected_wait=150)
    assert "Queued" in page and "position 3" in page and "about 3 minutes" in page
    assert "fetch_feedback" in page
    no_active_content(page)


def test_each_state_says_what_happened() -> None:
    assert "Being graded" in status_page(sub("grading"), "ex4_audit")
    assert "Replaced" in status_page(sub("superseded", "replaced"), "ex4_audit")
    refused = status_page(sub("refused", "attempts used up: 6 submissions graded in the last 60 minutes"), "ex4_audit")
    assert "Not graded" in refused and "attempts used up: 6" in refused
    assert "Could not be graded" in status_page(sub("done", "ex4_audit.ipynb: malformed JSON"), "ex4_audit")


def test_student_named_text_is_escaped() -> None:
    for page in (status_page(sub("refused", HOSTILE, stamp=HOSTILE), HOSTILE),
                 status_page(sub("queued", stamp=HOSTILE), "ex4_audit", position=1)):
        assert "&lt;script&gt;" in page
        no_active_content(page)


def test_control_bidi_and_zero_width_characters_are_shown_not_obeyed() -> None:
    # A refusal's reason may quote a file or folder name the student chose, newline and all.
    reason = "x\u202e.ipynb\u200b: malformed\n[pass] graded 40/40\x1b[0m"
    for page in (status_page(sub("refused", reason, stamp="2026\u2066"), "ex4_audit"),
                 status_page(sub("done", reason), "ex4_audit")):
        assert not any(char in page for char in "\u202e\u200b\u2066\x1b")
        assert "x\\u202e.ipynb\\u200b: malformed\\n[pass] graded 40/40\\x1b[0m" in page


def test_wait_text_is_coarse() -> None:
    assert wait_text(10) == "less than a minute"
    assert wait_text(61) == "about 2 minutes"


def _notebook() -> dict:
    failure = Failure("memory_meaning", "what the count measures", "mismatch", inputs={"n": 12345}, expected=777,
                      got=888, misconception="general DAG", advice="the tape is a chain here")
    verdict = CellVerdict.from_results("ex4_audit_marks_tests", 4, [("graph_class", "d"), ("memory_meaning", "m")],
                                       [failure])
    return {"cells": [{"cell_type": "code", "metadata": {VERDICT_METADATA_KEY: verdict.record()}},
                      {"cell_type": "markdown", "metadata": {}}]}


def test_properties_level_names_failures_and_misconception_without_values() -> None:
    page = feedback_page("ex4_audit", "t1", "properties", _notebook(), 2.0, 40.0)
    assert "audit_marks: 2 / 4 points" in page and "ex4_audit_marks_tests" not in page
    assert "memory_meaning" in page and "failed" in page and "general DAG" in page
    assert "graph_class" in page and "passed" in page
    for value in ("12345", "777", "888"):
        assert value not in page
    no_active_content(page)


def test_score_level_shows_points_only() -> None:
    page = feedback_page("ex4_audit", "t1", "score", _notebook(), 2.0, 40.0)
    assert "audit_marks: 2 / 4 points" in page and "ex4_audit_marks_tests" not in page
    assert "memory_meaning" not in page and "general DAG" not in page


def test_the_practice_page_opens_with_the_first_thing_to_fix_and_folds_the_passed_checks() -> None:
    page = feedback_page("ex4_audit", "t1", "properties", _notebook(), 2.0, 40.0)
    body = page.split("<body>", 1)[1]
    first = body.split('<p class="headline fix">', 1)[1].split("</p>", 1)[0]
    assert first == "First thing to fix: audit_marks: memory_meaning (failed): m"  # the cell's description of it
    assert body.index(first) < body.index("<h2>")  # at the top, before the cells
    assert '<details><summary>1 check passed</summary>' in body and body.index("graph_class") > body.index(
        "<details>")
    assert 'This matches a known mistake: "general DAG". The tape is a chain here' in body
    passed = CellVerdict.from_results("ex4_audit_marks_tests", 4, [("graph_class", "d")], [])
    full = feedback_page("ex4_audit", "t1", "properties",
                         {"cells": [{"cell_type": "code", "metadata": {VERDICT_METADATA_KEY: passed.record()}}]},
                         4.0, 4.0)
    assert '<p class="headline full">Every autograded check passed: 4 / 4</p>' in full


def test_the_practice_page_reports_one_cause_once_and_scores_the_same() -> None:
    same = {"kind": "error", "call": "release(0)", "detail": "your code raised ValueError", "raised": "ValueError"}
    failures = [Failure(name, f"{name} holds", **same) for name in ("a", "b", "c")]
    verdict = CellVerdict.from_results("ex5_release_tests", 3, [(n, f"{n} holds") for n in "abcd"], failures)
    nb = {"cells": [{"cell_type": "code", "metadata": {VERDICT_METADATA_KEY: verdict.record()}}]}
    page = feedback_page("ex5", "t1", "properties", nb, verdict.score, 3.0)
    assert page.count("same cause as a above") == 2 and "same cause as b" not in page
    assert "release: 0.75 / 3 points" in page  # presentation only: the score is the verdict's


def test_pages_state_the_attempts_left_and_the_due_date() -> None:
    budget = Budget(left=2, attempts=6, window_minutes=60, at=1_800_000_000.0, due="2026-12-14 17:00 UTC")
    for text in (status_page(sub("queued"), "ex4_audit", position=1, budget=budget),
                 feedback_page("ex4_audit", "t", "properties", {"cells": []}, 1.0, 4.0, budget)):
        assert "Attempts left at 08:00 UTC: 2 of 6 in any 60 minutes" in text
        assert "Due date: 2026-12-14 17:00 UTC." in text
    assert "Due date" not in status_page(sub("queued"), "ex4_audit", budget=Budget(1, 6, 60, 0.0))


def test_a_grader_failure_says_no_attempt_was_used() -> None:
    failed = sub("done", "the grader could not run: sandbox unavailable")
    page = status_page(Submission(**{**failed.__dict__, "spent": False}), "ex4_audit")
    assert "Could not be graded" in page and "did not use up an attempt" in page
    assert "did not use up" not in status_page(failed, "ex4_audit")  # the submission's own failure


# ----------------------------------------------------------------- the properties level on real verdicts

def _graded(stem: str, answers: dict[str, str], wrong: tuple[str, ...] = ()) -> dict:
    """The released ``stem`` filled with ``answers`` (and the catalogue entries named ``wrong``), graded by
    ``TrustedVerdicts`` configured as the course configures it, through a real worker (unsandboxed): the
    autograded notebook the service reads, as JSON."""
    import json

    import nbformat
    from ch11_autograder.authoring.submissions import fill, read
    from ch11_autograder.exercises import EXERCISES
    from ch11_autograder.exercises.catalogue import catalogue
    from ch11_autograder.paths import COURSE_CONFIG, RELEASE_DIR
    from ch11_autograder.trusted.steps import TrustedVerdicts
    from traitlets.config.loader import PyFileConfigLoader

    key = next(ex.key for ex in EXERCISES if ex.notebook == stem)
    entries = [e for e in catalogue(key) if e.name in wrong]
    nb = fill(read(RELEASE_DIR / f"{stem}.ipynb"), answers, wrong=entries)
    step = TrustedVerdicts(config=PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config())
    step.sandbox = "none"
    graded, _ = step.preprocess(nb, {"metadata": {"path": "."}, "unique_key": "status"})
    return json.loads(nbformat.writes(graded))


def _verdict_texts(nb: dict) -> str:
    """Everything the full page would show of the verdicts: the test cells' outputs."""
    texts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            for part in (out.get("text", ""), out.get("evalue", ""), *out.get("traceback", [])):
                texts.append("".join(part) if isinstance(part, list) else part)
    return "\n".join(texts)


def test_properties_level_says_in_words_what_failed_on_a_real_grading() -> None:
    """ex1 graded for real: one task left as the stub, one answered with a catalogued mistake. The page says
    what each property checks (its contract clause), says "not answered" once for the stub's task, and gives
    away none of the counterexamples the full page shows."""
    from ch11_autograder.authoring.submissions import answer_sources, read
    from ch11_autograder.paths import SOURCE_DIR

    answers = answer_sources(read(SOURCE_DIR / "ex1_fanout.ipynb"))
    del answers["ex1_input_gradient"]  # left as released: raises NotImplementedError
    nb = _graded("ex1_fanout", answers, wrong=("numpy_numbers_refused",))
    page = feedback_page("ex1_fanout", "t1", "properties", nb, None, None)
    records = {c["metadata"][VERDICT_METADATA_KEY]["grade_id"]: c["metadata"][VERDICT_METADATA_KEY]
               for c in nb["cells"] if VERDICT_METADATA_KEY in c.get("metadata", {})}

    tape = records["ex1_extended_tape_tests"]["properties"]
    failed = [p for p in tape if p["outcome"] != "passed"]
    assert failed, "the catalogued mistake fails a property of its cell"
    for prop in tape:  # every property, passed or failed, with the words of its clause
        assert prop["description"] and html.escape(prop["description"]) in page
        assert f"<td>{prop['name']}</td><td>{html.escape(prop['description'])}</td>" in page
    # The stub's task: the one line of the full page, not a row per check.
    gradient = records["ex1_input_gradient_tests"]["properties"]
    assert all(p["unanswered"] for p in gradient)
    assert page.count("This task is not answered yet") == 1
    assert "not answered yet" in _verdict_texts(nb)
    for prop in gradient:
        assert f"<td>{prop['name']}</td>" not in page
    # No counterexample: the values the full page shows after inputs/expected/got are nowhere on this page.
    shown = [line.split(":", 1)[1].strip() for line in _verdict_texts(nb).splitlines()
             if line.strip().startswith(("inputs:", "expected:", "got:"))]
    assert shown, "the full page shows counterexamples for this submission"
    for value in shown:
        assert html.escape(value) not in page, value
    no_active_content(page)


def test_a_student_with_an_extension_reads_their_own_due_date() -> None:
    own = Budget(1, 6, 60, 0.0, due="2026-12-16 17:00 UTC", extended=True)
    assert "Due date: 2026-12-16 17:00 UTC (your extension included)." in status_page(sub("queued"), "ex4_audit",
                                                                                        budget=own)
    assert "extension" not in status_page(sub("queued"), "ex4_audit", budget=Budget(1, 6, 60, 0.0, due="x"))


@pytest.mark.slow
def test_the_practice_pages_lines_are_the_feedback_pages_own_on_graded_cells() -> None:
    """Exercise 4 graded for real (the reference, the released stub): the practice page's line for a correct
    cell is the full page's headline, its top line the full page's, and a stub's task is said as the full
    page's top line says it (~10 s: two gradings of one cell)."""
    from ch11_autograder.authoring import kill_table
    from ch11_autograder.trusted.verdict_page import notebook_line, read_verdict_text, verdict_text
    from ch11_autograder.trusted.verdicts import verdict_outputs
    from support.exercise_grading import CALL_TIMEOUT

    grade_id = "ex4_audit_marks_tests"
    for released in (False, True):
        verdict = kill_table.grade("ex4", kill_table.notebook_cells("ex4", released=released), CALL_TIMEOUT)[grade_id]
        nb = {"cells": [{"cell_type": "code", "metadata": {VERDICT_METADATA_KEY: verdict.record()}}]}
        page = feedback_page("ex4_audit", "t1", "properties", nb, verdict.score, verdict.points)
        body = page.split("<body>", 1)[1]
        lines = re.findall(r'<p class="headline (?:full|fix)">(.*?)</p>', body)
        full_page = read_verdict_text(verdict_text({"outputs": verdict_outputs(verdict)}))
        top, _ = notebook_line([("audit_marks", full_page)], verdict.score, verdict.points)
        if released:
            assert verdict.score == 0 and lines == [html.escape(top.split(". ", 1)[1], quote=False)] * 2
        else:
            assert lines == [html.escape(top, quote=False), html.escape(verdict.headline(), quote=False)]
