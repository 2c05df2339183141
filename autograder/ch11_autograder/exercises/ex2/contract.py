"""Exercise 2's contract: the notebook, its cells' grade ids and points, and the graded input ranges.

The ranges and the tolerance are stated to students in the notebook's prose and used by
the hidden suite, so both read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

NOTEBOOK = "ex2_finite_difference"

GRADIENT_CELL = "ex2_exact_gradient"
GRADIENT_TESTS = "ex2_exact_gradient_tests"
ESTIMATE_CELL = "ex2_fd_estimate"
ESTIMATE_TESTS = "ex2_fd_estimate_tests"
SWEEP_CELL = "ex2_fd_sweep"
SWEEP_TESTS = "ex2_fd_sweep_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex2_figure"
INTERPRETATION = "ex2_interpretation"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType(
    {GRADIENT_TESTS: 2, ESTIMATE_TESTS: 4, SWEEP_TESTS: 4, INTERPRETATION: 4}
)

#: Where the hidden suite samples its inputs; the prose promises this range.
#: Inside it the applied step is exact (Sterbenz) for every k the suite uses, so the
#: exact quotient Q has one meaning whether it is divided by the exact distance of the
#: two points or by the float32 ``h_eff``.
GRADED_LOW, GRADED_HIGH = 0.5, 4.0
GRADED_K_MAX = 26
#: The float64 errors and derivatives of a sweep may be off by 2**-TOLERANCE_EXPONENT
#: times their scale (see the suite); the prose states the same number.
TOLERANCE_EXPONENT = 44
