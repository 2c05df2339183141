"""Hidden suites of Exercise 2: a binary32 finite-difference check of the opening gradient.

Three autograded cells of ``ex2_finite_difference.ipynb``:

* ``ex2_exact_gradient_tests`` (2 points): ``exact_gradient`` against the
  exact gradient, to a relative ``2**-TOLERANCE_EXPONENT`` per component;
* ``ex2_fd_estimate_tests`` (4 points): ``fd_estimate`` against the
  reference bit for bit (the harness fixes the operation order inside ``L``
  and the contract fixes it outside, so binary32 leaves no freedom), dtype
  ``float32``;
* ``ex2_fd_sweep_tests`` (4 points): ``fd_sweep`` field by field (see
  :func:`sweep_difference`).

Tolerances (one number, ``TOL = 2**-44``, also stated in the notebook):

* The three errors of a sweep are exact values rounded once in the reference.
  A student may compute them in float64 instead of fractions. Evaluating the
  quotient ``Q`` over two float32 points in float64 costs at most about
  ``8 u64 max|L| / h_eff`` (four rounded operations per ``L``, two values;
  ``u64 = 2**-53``); the float64 derivative adds ``~u64 |dL|``. So each error
  may differ from the reference by ``TOL * (max|L|/h_eff + |dL|)``; over 150
  random points x 4 schemes x k = 1..26, plain float64 stayed below
  ``2**-51.3`` times that scale (``2**7`` inside the bound). A quotient
  evaluated in float32 is off by about ``2**-24`` times the scale (measured:
  every sweep over k = 1..24 has a k where it is off by more than
  ``2**-23.9`` of it), ``2**20`` times the allowance, so "truncation computed
  in float32" cannot pass. This absolute allowance is relative to the
  *rounding* scale, so at tiny truncation errors (central, large k) float64
  cannot resolve them and the suite does not ask it to.
* ``exact`` (the derivative in the sweep) and ``exact_gradient``: relative
  ``TOL``; the chapter's float64 reverse sweep is within ``2**-51.9``
  (measured), a float32 one is ``~2**-24`` off.
* Everything else (``x, y, ks, h, h_eff, estimate, best_k``, the estimate of
  ``fd_estimate``) is compared exactly: bits and dtypes.

Inputs stay where the contract says the applied step is exact (Sterbenz):
``0.5 <= v <= 4`` and, for the central scheme, ``3 h <= v``. There the exact
``Q`` is the same whether divided by the points' exact distance or by the
float32 ``h_eff``. (``fd_estimate`` alone is graded beyond: its bits are defined
wherever the step rounds.)

Where the bit search looks. Answers that get the applied step *almost* right
(divide by ``h`` or ``2h``; take the central step as ``2 (fl(v+h) - v)``; take
the distance of the points in float64; multiply by ``1/h_eff``) agree with the
contract wherever ``fl(v+h)``, ``fl(v-h)`` are exact and ``h_eff`` is a power
of two, i.e. almost everywhere. ``estimate_bits_at_float32_points`` therefore
draws three cases in four from the families where they differ (see
``_rounding_steps``): ``v + h`` crossing up into the next binade at an odd last
bit, steps of an ulp of ``v`` or less at either parity, and central steps wider
than ``v/3``. Measured over 40 hypothesis seeds per answer (generated examples
only, no explicit ones), the share of seeds that expose each answer, before
(uniform points and k, 120 examples) and now (200 examples):

==================================  ==================  ======  ====
answer                              differs (uniform)   before  now
==================================  ==================  ======  ====
nominal ``h`` or ``2h``             3.33%               98%     100%
central step ``2 (fl(v+h) - v)``    0.78%               45%     100%
step distance in float64            0.12%               2%      100%
times ``1/h_eff``                   0.05%               0%      98%
==================================  ==================  ======  ====

So a 1%-rare difference, found by under half of the seeds before, is found by
every one now. Command: ``.venv/bin/python -m pytest -p no:cacheprovider
tests/autograder/suites/test_ex2.py -s -k bit_search`` (the test also asserts
at least 95% for each).

Contract clauses beyond the value: every Raises entry per argument (bools,
numpy bools, strings, None, nan, inf, a float32 overflow, k outside [0, 149],
unknown choices, an empty ks of each form), every default left out, Python and
numpy floats and ints for x, y and k, ks as lists, tuples, int64/int32 arrays
and lists of numpy ints (ranges and generators have no wire form, so only the
default ks is a range), and sequences of calls with repeats in drawn orders.
``exact_partial`` returns a ``Fraction``, which has no wire form either: its
type is proven by the worker's refusal to send it, its value is seen only
through ``exact_gradient`` and the sweep. :data:`CONTRACT` maps every clause
to its properties.

Each property judges its own clause, so a single mistake costs only the
properties it breaks (as in Exercise 3). Values are compared with the
reference only in the value properties. The defaults properties compare a call
that leaves arguments out with the student's own call that passes the
documented defaults, bit for bit; the accepted forms in the ``rejects``
properties (a numpy ``k``, a tuple of ks) with the student's own answer for
the plain form; the ``calls_independent`` properties every answer with the
student's own answer for the same arguments asked fresh earlier in the
property. A function wrong the same way every time passes those. One limit:
a memo that keeps the first value it computed for a key answers each call the
same way from then on, so only a value property sees it (the worker's calls at
one point with both inputs make ``sweep_caches_exact_by_point`` visible there).
``sweep_calls_independent`` also watches ``ks`` (lists and int64 arrays, the
mutable forms): a sweep must leave the caller's ks as it was.

Where a property makes several calls in a row (per example, or over its fixed list), they
travel in one message and the answers are judged in the order the calls were made
(``Student.batch`` says why the reported failure is the one single calls would report).

Layout. One module per graded cell under ``checks/`` (``gradient``, ``estimate``, ``sweep``), each
with its properties, strategies and judges; ``checks.shared`` holds what more than one uses. This
module registers the cells' suites, in notebook order, and names what the rest of the package and
the tests use.
"""

from __future__ import annotations

from ...api.suite import register
from .checks.estimate import ESTIMATE_SUITE, estimate_difference
from .checks.estimate import _rounding_steps as _rounding_steps
from .checks.gradient import _GRADIENT_OK as _GRADIENT_OK
from .checks.gradient import GRADIENT_SUITE, gradient_difference
from .checks.shared import STATEFUL, TOL, same_bits
from .checks.sweep import SWEEP_SUITE, sweep_difference
from .checks.sweep import _applied_step_exact as _applied_step_exact
from .checks.sweep import _error_scales as _error_scales
from .checks.sweep import _first as _first
from .checks.sweep import _graded_ks as _graded_ks

__all__ = [
    "ESTIMATE_SUITE",
    "GRADIENT_SUITE",
    "STATEFUL",
    "SWEEP_SUITE",
    "TOL",
    "estimate_difference",
    "gradient_difference",
    "same_bits",
    "sweep_difference",
]

# Registered here, in the notebook's order: the registry lists the cells as the notebook does.
for _suite in (GRADIENT_SUITE, ESTIMATE_SUITE, SWEEP_SUITE):
    register(_suite)
