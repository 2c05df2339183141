"""Trusted grading: everything that decides a grade runs here, never in the sandbox.

``worker_client`` talks to the sandboxed verdict worker (its batched calls in ``worker_batches``,
its pipes in ``worker_pipe``, its failure model in ``worker_errors``), ``suite`` runs the API
hidden property suites are written against (``cell_suite``, ``mismatch``, ``student``,
``hypothesis_properties``, ``misconception_naming``), ``registry`` maps grade ids to
the suites that modules named in configuration register, ``verdicts`` turns property
results into scores and student-readable messages, ``steps`` plugs all
of it into nbgrader (one step per module), ``feedback`` sanitizes what untrusted execution produced,
and ``submission_cells`` decides which cells of a submission are code to run.
Nothing here imports ``ch11_autograder.exercises``: exercises depend on this
package, never the reverse.
"""
