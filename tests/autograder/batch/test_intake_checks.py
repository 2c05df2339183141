"""Student ids made safe for nbgrader (its globs and paths)."""

from __future__ import annotations

import pytest
from ch11_autograder.batch.intake_checks import sanitize_student_id


@pytest.mark.parametrize(("raw", "clean"), [
    ("alice", "alice"),
    ("Jane Doe", "Jane_Doe"),
    ("../../etc", "etc"),
    ("*", "student"),
    ("bob[1]?", "bob_1"),
    ("-rf", "rf"),
    (".hidden", "hidden"),
    ("ümlaut", "mlaut"),
    ("x" * 100, "x" * 64),
])
def test_student_ids_are_sanitized(raw, clean):
    assert sanitize_student_id(raw) == clean


def test_ids_are_safe_for_nbgrader_globs_and_paths():
    for raw in ("a*b", "[ab]", "a?b", "a/b", "a\\b", "a b", "a\0b", ""):
        clean = sanitize_student_id(raw)
        assert clean and set(clean) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
