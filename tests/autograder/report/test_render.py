"""The class report's two formats on hostile student text: one escaping rule (``textsafe``) before each
format's own escaping, so the HTML and the Markdown show the same visible text.

A student controls an exception's type name (``type("\\u202eEvil\\x1b[31m", (Exception,), {})``) and its
message; both reach the instructor through the mistake groups' counterexamples and the error causes.
"""

from __future__ import annotations

import html
import unicodedata

from ch11_autograder.report.data import ClassReport, Flag, NotebookStats, StudentScores
from ch11_autograder.report.mistakes import class_mistakes, mistakes_json
from ch11_autograder.report.render import html_text, markdown_text, report_blocks

TYPE_NAME = "\u202eEvil\x1b[31mError\u200b"
MESSAGE = "'ValueError: bad\n[pass] extended_tape: every check passed\x1b[0m'"
CAUSE = "x.ipynb: bad\n[pass] ada graded 40/40\u2066"


def raising(student: str, prop: str, raised: str, got: str = "") -> dict[tuple[str, str, str], list[dict]]:
    example = {"kind": "error", "inputs": {"x": "2.0", "y": "3.0"}, "expected": "18.0", "got": got,
               "raised": raised, "call": "extended_tape"}
    return {(student, "ex1_fanout", "ex1_extended_tape_tests"):
            [{"name": prop, "outcome": "errored", "misconception": "", "example": example}]}


def hostile_report() -> ClassReport:
    verdicts = {**raising("ann", "extended_tape_values", TYPE_NAME),
                **raising("bob", "extended_tape_layout", "ValueError", got=MESSAGE)}
    return ClassReport(
        assignment="ch11",
        notebooks=[NotebookStats("ex1_fanout", 8.0, 0.0)],
        students=[StudentScores("ann", "graded", {"ex1_fanout": 0.0}, {}, 0.0, 0.0, 1.0),
                  StudentScores("bob", "graded", {"ex1_fanout": 0.0}, {}, 0.0, 0.0, 1.0),
                  StudentScores("zed", "error", None, {}, 0.0, 0.0, 1.0, error=CAUSE)],
        properties=[], misconceptions=[], flags=[Flag("zed", "error", CAUSE)],
        mistakes=class_mistakes(verdicts),
    )


def no_raw_unsafe(text: str) -> bool:
    """No control (but the format's own newlines), bidi or zero-width character."""
    return all(c == "\n" or unicodedata.category(c) not in {"Cc", "Cf", "Zl", "Zp"} for c in text)


def test_an_exception_type_and_message_reach_both_formats_escaped_alike():
    blocks = report_blocks(hostile_report(), [], "ch11-report")
    page, text = html_text(blocks), markdown_text(blocks)
    for shown in (page, text):
        assert no_raw_unsafe(shown)
        assert "\\u202eEvil\\x1b[31mError\\u200b" in shown.replace("\\\\", "\\").replace("\\[", "[")
    # The message's newline is shown, not obeyed: no line of either format starts as the grader's own.
    for shown in (page, html.unescape(page), text):
        assert not any(line.lstrip("|<>tdr ").startswith("[pass]") or line.lstrip().startswith("\\[pass")
                       for line in shown.splitlines())
    assert "bad\\n[pass] extended_tape" in html.unescape(page)
    assert "bad\\\\n\\[pass\\] extended" in text


def test_the_exception_type_is_shown_quoted_in_the_group_and_the_json():
    (ann,) = [m for m in hostile_report().mistakes if m.group.students == ("ann",)]
    obtained = ann.group.representative.obtained_text()
    assert obtained == "'\\u202eEvil\\x1b[31mError\\u200b' raised in extended_tape"
    (entry,) = [g for g in mistakes_json([ann])]
    assert entry["representative"]["obtained"] == obtained


def test_an_error_cause_with_a_newline_is_one_line_in_both_formats():
    blocks = report_blocks(hostile_report(), [], "ch11-report")
    page, text = html_text(blocks), markdown_text(blocks)
    assert "x.ipynb: bad\\n[pass] ada graded 40/40\\u2066" in html.unescape(page)
    assert "ada graded" not in "".join(line for line in text.splitlines() if line.startswith("[pass]"))
    assert no_raw_unsafe(page) and no_raw_unsafe(text)
