"""Student-named text in the service's log lines: one visible line, no terminal control."""

from ch11_autograder.serve.escape import shown


def test_control_characters_are_escaped() -> None:
    hostile = "eve\n2026-12-02 graded  ann 40/40\x1b[2J\r\\"
    out = shown(hostile)
    assert "\n" not in out and "\x1b" not in out and "\r" not in out
    assert out == "eve\\n2026-12-02 graded  ann 40/40\\x1b[2J\\r\\\\"


def test_printable_names_are_kept_and_long_ones_cut() -> None:
    assert shown("zoë+ch11") == "zoë+ch11"
    assert shown("x" * 500, limit=10) == "x" * 10 + "..."
