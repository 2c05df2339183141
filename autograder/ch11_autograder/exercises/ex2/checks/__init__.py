"""The checks of Exercise 2's graded cells, one module per cell (see ``ex2.suite``).

``gradient`` (``exact_gradient``), ``estimate`` (``fd_estimate``) and ``sweep`` (``fd_sweep``) each hold
their cell's properties, strategies and judges; ``shared`` what more than one uses: the points and
bad arguments, the raises and defaults properties and the independent-calls check.
"""
