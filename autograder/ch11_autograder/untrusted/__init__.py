"""Untrusted execution: everything that runs a submission's code.

Nothing in this package decides a grade. It starts student code (a notebook
kernel, the verdict worker) under a :class:`~.launch.Launcher` and hands back
bytes that the trusted side treats as hostile data. The scripts under
``runtime/`` are copied or mounted into the sandbox on their own: they import
only the standard library, numpy and the harness, never the rest of
``ch11_autograder`` (whose suites must stay invisible to student code).
"""
