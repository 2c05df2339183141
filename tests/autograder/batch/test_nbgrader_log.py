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
