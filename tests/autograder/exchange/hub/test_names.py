"""The hub exchange's names: nbgrader's id rules and one path component each, or a refusal naming field and value."""

from __future__ import annotations

import pytest
from ch11_autograder.exchange.hub.names import MAX_BYTES, MAX_CHARS, BadName, checked


@pytest.mark.parametrize("value", ["ch11", "ps1", "Problem Set 1", "alice@example.org", "o'brien", "x.y", "ü" * 100,
                                   "a" * MAX_CHARS])
def test_ordinary_names_pass_unchanged(value: str) -> None:
    assert checked("student name", value) == value


@pytest.mark.parametrize(("value", "why"), [
    ("", "it is empty"),
    ("a" * (MAX_CHARS + 1), f"longer than {MAX_CHARS} characters"),
    ("\U0001f600" * 51, f"longer than {MAX_BYTES} bytes"),
    (".hidden", "starts with a dot"),
    (".", "starts with a dot"),
    ("..", "starts with a dot"),
    ("a..b", "contains '..'"),
    ("ps1/../x", "contains '..'"),
    ("ps/1", "contains '/'"),
    ("ps\\1", "contains '\\\\'"),
    ("ps+1", "contains '+'"),
    ("ps*", "contains '*'"),
    ("ps?", "contains '?'"),
    ("ps[1]", "contains '['"),
    ("ps\x001", "control character '\\x00'"),
    ("ps\n1", "control character '\\n'"),
    ("ps\x1b[31m", "control character '\\x1b'"),
    ("ps\u202e1", "control character '\\u202e'"),
    (" ps1", "whitespace"),
    ("ps1\t", "whitespace"),
])
def test_each_bad_name_is_refused_with_field_value_and_rule(value: str, why: str) -> None:
    with pytest.raises(BadName) as caught:
        checked("assignment id", value)
    message = str(caught.value)
    assert message.startswith(f"the assignment id {value!r} is refused: ")
    assert why in message
    assert caught.value.field == "assignment id"
    assert caught.value.value == value


def test_the_message_escapes_what_a_terminal_would_act_on() -> None:
    with pytest.raises(BadName) as caught:
        checked("course id", "c\x1b[2J\r")
    assert "\x1b" not in str(caught.value)
    assert "\r" not in str(caught.value)
    assert "'c\\x1b[2J\\r'" in str(caught.value)
