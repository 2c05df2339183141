"""Hidden suites of Exercise 1 (a third child d = a**2 at the shared node, L = b*c + d).

Three autograded test cells, one suite each, checked against
:mod:`ch11_solutions.ex1_fanout`:

=================================  ======  ==========================================
grade_id                           points  properties (each worth points / count)
=================================  ======  ==========================================
``ex1_extended_tape_tests``        3       visible tape at (2, 3); layout; node values;
                                           local derivatives; bad inputs
``ex1_contributions_into_a_tests`` 3       visible values and type; values; sum = a-bar;
                                           bad inputs
``ex1_input_gradient_tests``       2       visible values and type; values; bad inputs
=================================  ======  ==========================================

Each function also has three contract properties (``<fn>_bad_inputs``,
``<fn>_number_types``, ``<fn>_repeated_calls``), one per clause of the
docstring other than the value, so a single mistake costs only the properties
it breaks. The last two compare the student with the student: an answer for a
number of another type must have the contract's return type and equal the
student's own answer for float(x), float(y); each repeated call must get the
answer that call got first. A function wrong alike for every type and every
call passes both, and loses only the value properties.

Inputs. Generated coordinates are finite floats in [-1000, 1000] (zeros,
subnormals and round numbers included: a correct answer is right everywhere).
Several named wrong answers are invisible on special sets (last writer wins
drops ``xy(y + 2)``, which vanishes at y = -2; the y-bar slip drops
``x**2 y (y + 1)``; see ``wrong_answers.py``), so every generated property
first tries :data:`PROBE_POINTS`, chosen off all of those sets, and only
then the generated ones.

Tolerances. Every compared quantity (node value, local derivative,
contribution, gradient component) is an integer polynomial in (x, y) with
non-negative coefficients, computed by at most about ten rounded float64
operations in any sensible order. The forward error bound (Higham, *Accuracy
and Stability of Numerical Algorithms*, ch. 3) is then
``gamma_n * P(|x|, |y|)`` with ``gamma_n ~ n u``, ``u = 2**-53``, where
``P(|x|, |y|)`` is the same polynomial at the absolute inputs, which is the
reference evaluated at ``(|x|, |y|)``. The reference's own error is within
the same kind of bound, so student and reference may differ by about 20 u P;
we allow :data:`RELATIVE` = 64 u P, plus :data:`FLOOR` for gradual underflow
(at most 2**-1074 per operation times factors below 1e9). The bound is relative
to P, not to the value, so it stays honest under cancellation (b = xy + x near
y = -1). Every catalogued mistake is off by a whole path term, orders of
magnitude above it at the probe points. The visible properties compare exactly:
at (2, 3) and (1, 2) every value is a small integer, exact in any order.

Tapes. The node order is the contract; values and local derivatives are
compared per node. A node's edges are compared as a map parent -> the *sum* of
its local derivatives: ``d`` recorded as ``((2, a), (2, a))``, as the harness
records ``a * a``, is accepted, because the reverse sweep adds the two entries
and the chapter's point is that contributions add. A parent whose entries sum to
the wrong value, a missing parent or an extra parent fails.

Layout. One module per graded cell under ``checks/`` (``tape``, ``contributions``, ``gradient``),
its properties, strategies and judges together; ``checks.clauses`` holds the three contract
properties every function has and ``checks.shared`` the tolerances, points and vector helpers
the cells share. This module registers the cells' suites, in notebook order, and names what the
rest of the package and the tests use.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...api.suite import CellSuite, register
from .checks.clauses import CALL_ROUNDS
from .checks.clauses import _call_key as _call_key
from .checks.clauses import _expected_error as _expected_error
from .checks.clauses import _outcome as _outcome
from .checks.clauses import _outcome_matches as _outcome_matches
from .checks.clauses import _Raised as _Raised
from .checks.clauses import _replayed as _replayed
from .checks.clauses import _same_outcome as _same_outcome
from .checks.contributions import CONTRIBUTIONS_SUITE
from .checks.gradient import GRADIENT_SUITE
from .checks.shared import (
    BAD_INPUTS,
    FLOOR,
    MAX_EXAMPLES,
    NOT_FINITE,
    NOT_REAL,
    NUMBER_TYPE_EXAMPLES,
    NUMBER_TYPES,
    PROBE_POINTS,
    RELATIVE,
    VISIBLE_POINTS,
    vectors_match,
)
from .checks.shared import _close as _close
from .checks.shared import _contributions_from_tape as _contributions_from_tape
from .checks.shared import _gradient_from_tape as _gradient_from_tape
from .checks.shared import _is_real as _is_real
from .checks.shared import _same_vector as _same_vector
from .checks.tape import TAPE_SUITE, tape_problem, tapes_match
from .checks.tape import _first_difference as _first_difference
from .checks.tape import _same_tape as _same_tape

__all__ = [
    "BAD_INPUTS",
    "CALL_ROUNDS",
    "CONTRIBUTIONS_SUITE",
    "FLOOR",
    "GRADIENT_SUITE",
    "MAX_EXAMPLES",
    "NOT_FINITE",
    "NOT_REAL",
    "NUMBER_TYPES",
    "NUMBER_TYPE_EXAMPLES",
    "PROBE_POINTS",
    "RELATIVE",
    "SUITES",
    "TAPE_SUITE",
    "VISIBLE_POINTS",
    "tape_problem",
    "tapes_match",
    "vectors_match",
]

# Registered here, in the notebook's order: the registry lists the cells as the notebook does.
for _suite in (TAPE_SUITE, CONTRIBUTIONS_SUITE, GRADIENT_SUITE):
    register(_suite)

#: Every suite of this exercise, by grade_id.
SUITES: Mapping[str, CellSuite] = {s.grade_id: s for s in (TAPE_SUITE, CONTRIBUTIONS_SUITE, GRADIENT_SUITE)}
