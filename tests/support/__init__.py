"""Modules the tests of several folders share, imported as ``support.<module>``.

``tests/`` is on ``sys.path`` (pytest's ``pythonpath`` option in pyproject.toml), so a
test anywhere imports these by one name, and a module with a once-per-session cache
(``batch_support``) is one module object for the whole session.

* ``paths``: the repository's locations as the tests use them;
* ``batch_support``: the once-per-session graded courses and the grading image;
* ``hostile_corpus``: the hostile corpus (cases, expected outcomes, builders);
* ``tier_gate``: skip a heavy tier whose machinery is missing, or fail under CI.
"""
