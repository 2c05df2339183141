"""The other course's log-sum-exp exercise (``tests/other_course/logsumexp/``): what only it promises.

Graded through the real worker as the generic tests grade it (``support.exercise_grading``): which
properties each catalogue entry fails and which misconception the feedback names there, and right
answers written differently from the reference that must still earn full marks.
"""

from __future__ import annotations

import pytest
from ch11_autograder.exercises.catalogue import catalogue
from other_course.logsumexp.contract import ANSWER_CELL, POINTS, TESTS
from support import exercise_grading

pytestmark = pytest.mark.slow

KEY = "logsumexp"

#: entry -> (the properties it fails, in feedback order; those whose failure names it).
FAILS = {
    "exp_overflows": (["visible_checks", "finite_where_exp_overflows_or_underflows"],
                      ["finite_where_exp_overflows_or_underflows"]),
    # The purity property compares values too, but its misconceptions are not tried: unnamed there.
    "shift_not_added_back": (["visible_checks", "matches_the_exact_value", "finite_where_exp_overflows_or_underflows",
                              "leaves_x_alone_and_forgets_earlier_calls"],
                             ["matches_the_exact_value", "finite_where_exp_overflows_or_underflows"]),
    # Its mistake shows in the argument after the call, which no catalogue function returns: failed, not named.
    "shifts_x_in_place": (["leaves_x_alone_and_forgets_earlier_calls"], []),
}


def test_every_catalogue_entry_is_described_here():
    assert [e.name for e in catalogue(KEY)] == list(FAILS)


@pytest.mark.parametrize("name", list(FAILS))
def test_each_entry_fails_its_properties_and_is_named_where_it_shows(name):
    entry = exercise_grading.entry(KEY, name)
    verdict = exercise_grading.graded_entry(KEY, name)[TESTS]
    failed, named_in = FAILS[name]
    assert [f.property for f in verdict.failures] == failed, verdict.message()
    assert verdict.score < POINTS[TESTS]
    naming = [f.property for f in verdict.failures if f.misconception == entry.title]
    assert naming == named_in, verdict.message()


DIFFERENT = {
    "logaddexp": """
def logsumexp(x):
    values = np.array(x, dtype=np.float64)
    if len(values) == 0 or np.isnan(values).any() or np.isinf(values).any():
        raise ValueError("empty or not finite")
    return np.logaddexp.reduce(values)
""",
    "python_loop": """
def logsumexp(x):
    items = [float(v) for v in x]
    if not items or not all(math.isfinite(v) for v in items):
        raise ValueError("empty or not finite")
    top = max(items)
    return top + math.log(math.fsum(math.exp(v - top) for v in items))
""",
}


@pytest.mark.parametrize("name", list(DIFFERENT))
def test_a_right_answer_written_differently_earns_full_marks(name):
    verdicts = exercise_grading.grade(KEY, exercise_grading.cells(KEY, replace={ANSWER_CELL: DIFFERENT[name]}))
    assert verdicts[TESTS].score == POINTS[TESTS], verdicts[TESTS].message()
