"""Picking the telling line of a failed nbgrader run's log (pure; no nbgrader runs here)."""

from __future__ import annotations

from ch11_autograder.batch.nbgrader_log import nbgrader_error_line


def test_nbgrader_error_line_picks_the_telling_line():
    log = "\n".join([
        "[AutogradeApp | INFO] Sanitizing /c/submitted/alice/ch11/ex2_finite_difference.ipynb",
        "[AutogradeApp | ERROR] There was an error processing assignment: /c/submitted/alice/ch11",
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in f',
        "ch11_autograder.untrusted.launch.SandboxUnavailable: bubblewrap sandbox unusable: no user namespaces",
        "[AutogradeApp | ERROR] Please see the error log above for details.",
    ])
    assert nbgrader_error_line(log) == (
        "ex2_finite_difference.ipynb: ch11_autograder.untrusted.launch.SandboxUnavailable: bubblewrap sandbox "
        "unusable: no user namespaces"
    )
    only_error = "[X | INFO] start\n[X | ERROR] No notebooks found, did you forget to run generate_assignment?"
    assert nbgrader_error_line(only_error).startswith("No notebooks found")
    assert len(nbgrader_error_line("ValueError: " + "x" * 1000)) == 300
    assert nbgrader_error_line("") == "(empty log)"



def test_generic_error_lines_give_way_to_a_specific_one():
    log = "\n".join([
        "[AutogradeApp | INFO] Autograding /c/autograded/bob/ch11/ex4_audit.ipynb",
        "[AutogradeApp | ERROR] Timeout waiting for execute reply (30s).",
        "[AutogradeApp | ERROR] There was an error processing assignment: /c/submitted/bob/ch11",
        "[AutogradeApp | ERROR] Please see the error log above for details.",
    ])
    assert nbgrader_error_line(log) == "ex4_audit.ipynb: Timeout waiting for execute reply (30s)."


def test_without_an_exception_or_error_line_the_last_line_is_kept():
    assert nbgrader_error_line("[X | INFO] start\n\n   \nKilled\n") == "Killed"


def test_the_notebook_is_not_named_twice():
    log = ("[X | INFO] Converting notebook /c/submitted/a/ch11/ex1_fanout.ipynb\n"
           "nbformat.ValidationError: ex1_fanout.ipynb is not valid")
    assert nbgrader_error_line(log) == "nbformat.ValidationError: ex1_fanout.ipynb is not valid"


def test_the_limit_cuts_with_an_ellipsis():
    line = nbgrader_error_line("RuntimeError: " + "y" * 100, limit=40)
    assert len(line) == 40 and line.endswith("...") and line.startswith("RuntimeError: yyy")
    assert nbgrader_error_line("RuntimeError: short", limit=40) == "RuntimeError: short"
