"""The one escaping helper for student-named text on its way to a terminal or a log (``textsafe.py``)."""

from __future__ import annotations

import pytest
from ch11_autograder.textsafe import escape, escape_html, quoted


@pytest.mark.parametrize(("raw", "shown"), [
    ("alice", "alice"),
    ("Jane Doe-Ümlaut_3.ipynb", "Jane Doe-Ümlaut_3.ipynb"),  # printable text, any script, stays as written
    ("a\nb", "a\\nb"),
    ("a\rb\tc", "a\\rb\\tc"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("\x9b31m", "\\x9b31m"),  # C1 CSI
    ("del\x7f", "del\\x7f"),
    ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # bidi override and pop
    ("\u2066x\u2069\u200f", "\\u2066x\\u2069\\u200f"),  # isolates, right-to-left mark
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("\ud800", "\\ud800"),  # lone surrogate
    ("\U000f0000", "\\U000f0000"),  # private use
])
def test_escape(raw, shown):
    assert escape(raw) == shown


def test_the_result_is_one_line_that_draws_itself():
    hostile = "mal\n[ 1/1] alice graded 40/40\x1b[31m\rRED\u202eevil\x07"
    safe = escape(hostile)
    assert safe.isprintable() and "\n" not in safe and "\x1b" not in safe
    assert escape(safe) == safe  # idempotent on its own output


def test_non_strings_are_escaped_as_their_str():
    assert escape(ValueError("bad\nname")) == "bad\\nname"


def test_a_limit_cuts_the_text_before_escaping_and_marks_the_cut():
    assert escape("x" * 500, limit=10) == "x" * 10 + "..."
    assert escape("a\nb", limit=2) == "a\\n..."
    assert escape("zoë+ch11", limit=8) == "zoë+ch11"


@pytest.mark.parametrize(("raw", "shown"), [
    ("ValueError", "'ValueError'"),
    ("\u202eEvil\x1b[31m", "'\\u202eEvil\\x1b[31m'"),
    ("bad\n[pass] every check passed", "'bad\\n[pass] every check passed'"),
    ("it's \\n", "'it\\'s \\\\n'"),  # the quote and a written backslash cannot end or fake an escape
])
def test_quoted_is_one_line_whose_end_is_unambiguous(raw, shown):
    assert quoted(raw) == shown
    assert quoted(raw).isprintable()


def test_escape_html_shows_the_text_escape_shows_then_escapes_markup():
    assert escape_html("<b>\u202e\n") == "&lt;b&gt;\\u202e\\n"
def test_student_text_in_a_line_stays_one_line():
    from ch11_autograder.textsafe import exception_text, one_line

    assert one_line("no\n[pass] every check passed") == "no\\n[pass] every check passed"
    assert exception_text("ValueError", "bad\r\nvalue\x1b[31m") == 'ValueError: "bad\\r\\nvalue\\x1b[31m"'
    assert exception_text("Bad\u202eName", "") == "Bad\\u202eName"
    assert "\n" not in exception_text("E", "x" * 1000) and exception_text("E", "x" * 1000).endswith('..."')
