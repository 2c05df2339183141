"""Which catalogued mistake a failure names (trusted/misconception_naming.py): only the one explanation,
probing where two candidates agree on the evidence."""

from __future__ import annotations

import pytest
from ch11_autograder.trusted.cell_suite import CellSuite, Property
from ch11_autograder.trusted.hypothesis_properties import hypothesis_property
from ch11_autograder.trusted.mismatch import Misconception, Mismatch, expect_equal
from ch11_autograder.trusted.suite import run_property, run_suite
from ch11_autograder.trusted.worker_errors import StudentError
from hypothesis import strategies as st
from support.local_session import FreshLocalSession, LocalSession, doubles


def test_misconception_is_named_only_when_outputs_match_it():
    failure = run_property(doubles, LocalSession(double=lambda x: x + 2))
    assert failure.misconception == "adds instead of multiplies"
    assert "Return 2 * x, not x + 2." in failure.message()
    other = run_property(doubles, LocalSession(double=lambda x: 3 * x))
    assert other.misconception == ""

# --------------------------------------------------------------------------- misconceptions that agree on common inputs


SQUARE_TWICE = Misconception("twice instead of squared", "Square x; do not double it.", lambda x: 2 * x, "square")


SQUARE_PLUS = Misconception("plus three instead of squared", "Square x; do not add 3.", lambda x: x + 3, "square")


def _listed(pool):
    # One fixed failing input, 3, where both planted mistakes give 6: the evidence cannot tell them apart.
    def check(student):
        got = student.call("square", 3)
        if got != 9:
            raise Mismatch({"x": 3}, 9, got)

    return Property("squares", "square(x) returns x * x.", check, misconceptions=(SQUARE_TWICE, SQUARE_PLUS),
                    probe_inputs=pool)


@pytest.mark.parametrize(
    ("student", "named"),
    [
        (lambda x: x + 3, "plus three instead of squared"),  # the second candidate: probing refutes the first
        (lambda x: 2 * x, "twice instead of squared"),
        (lambda x: 6 if x == 3 else x * x, ""),  # an uncatalogued mistake that agrees with both at 3
    ],
    ids=["plus-three", "twice", "unknown"],
)
def test_a_misconception_is_named_only_when_probing_leaves_it_the_only_explanation(student, named):
    prop = _listed(lambda: [{"x": x} for x in range(-3, 6)])
    failure = run_property(prop, LocalSession(square=student))
    assert failure.misconception == named
    # On the evidence alone (no inputs to probe), the two agree: the failure names neither.
    assert run_property(_listed(None), LocalSession(square=student)).misconception == ""


def test_mistakes_the_drawn_inputs_cannot_tell_apart_are_not_named():
    same = Misconception("also twice", "Square x.", lambda x: x + x, "square")
    prop = Property("squares", "square(x) returns x * x.", _listed(None).check,
                    misconceptions=(SQUARE_TWICE, same), probe_inputs=lambda: [{"x": x} for x in range(5)])
    assert run_property(prop, LocalSession(square=lambda x: 2 * x)).misconception == ""


def test_hypothesis_properties_draw_their_own_probe_inputs():
    @hypothesis_property("squares", "square(x) returns x * x.", given={"x": st.integers(3, 3) | st.integers(-9, 9)},
                         max_examples=5, examples=[{"x": 3}], misconceptions=[SQUARE_TWICE, SQUARE_PLUS])
    def squares(student, x):
        expect_equal({"x": x}, x * x, student.call("square", x))

    pool = squares.probe_inputs()
    assert pool[0] == {"x": 3} and len(pool) > 10 and pool == squares.probe_inputs()  # deterministic
    assert run_property(squares, LocalSession(square=lambda x: x + 3)).misconception == "plus three instead of squared"


# --------------------------------------------------------------------------- a name held to the entry's kill-table row


def _doubling_suite(row):
    """A cell of two properties, ``doubles`` (where a mistake is named) and ``doubles_three``: ``x + 2`` fails both."""
    named = Misconception("adds instead of multiplies", "Return 2 * x, not x + 2.", lambda x: x + 2, fails=row)

    def doubles(student):
        expect_equal({"x": 1}, 2, student.call("double", 1))

    def doubles_three(student):
        expect_equal({"x": 3}, 6, student.call("double", 3))

    return CellSuite("double_tests", 2, [
        Property("doubles", "double(1) returns 2.", doubles, misconceptions=(named,)),
        Property("doubles_three", "double(3) returns 6.", doubles_three),
    ])


#: ``x + 2``, as graded: it fails both properties of the cell.
BOTH = ({"double_tests": frozenset({"doubles", "doubles_three"})},)


@pytest.mark.parametrize(
    ("student", "row", "named"),
    [
        (lambda x: x + 2, BOTH, "adds instead of multiplies"),  # the entry's own behaviour: the whole row fails
        # Fails `doubles` at x=1 exactly as x + 2 does (3), but passes doubles_three, which x + 2 fails.
        (lambda x: x + 2 if x == 1 else 2 * x, BOTH, ""),
        (lambda x: x + 2 if x == 1 else 2 * x, (), "adds instead of multiplies"),  # no row: the evidence alone
        # A row for another cell only: the entry loses no points here, so it names nothing here.
        (lambda x: x + 2, ({"other_tests": frozenset({"doubles"})},), ""),
        # A name standing for two entries: one of their rows is enough.
        (lambda x: x + 2 if x == 1 else 2 * x, (*BOTH, {"double_tests": frozenset({"doubles"})}),
         "adds instead of multiplies"),
    ],
    ids=["whole-row", "one-property-alike", "no-row", "other-cell", "either-entry"],
)
def test_a_name_stays_only_where_the_answer_fails_every_property_the_entry_fails_in_the_cell(student, row, named):
    verdict = run_suite(_doubling_suite(row), LocalSession(double=student))
    (doubles_failure,) = [f for f in verdict.failures if f.property == "doubles"]
    assert doubles_failure.got == 3  # the counterexample stays whatever the name
    assert doubles_failure.misconception == named
    assert (doubles_failure.advice != "") == bool(named)
    assert ("This matches a known mistake" in verdict.message()) == bool(named)


# --------------------------------------------------------------------------- a name only for the entry's own evidence

#: The catalogue's kind of entry that keeps no state: ``f(True, 3.0)`` is ``f(1, 3.0)``, called fresh or not.
UNCHECKED = Misconception("without the input checks", "Check x first: a bool is no number.",
                          lambda x, y: float(x) * y, "f")


def _unchecked():
    return {"f": lambda x, y: float(x) * y}


def _cached():
    """Checks its input, but after a cache keyed on the value: True finds what 1 left (True == 1)."""
    seen = {}

    def f(x, y):
        if (x, y) in seen:
            return seen[(x, y)]
        if isinstance(x, bool):
            raise TypeError("x must be a number, not a bool")
        seen[(x, y)] = float(x) * y
        return seen[(x, y)]

    return {"f": f}


def _rejects(earlier):
    """f(x, 3.0) for each x of ``earlier``, then f(True, 3.0), which must raise TypeError."""

    def check(student):
        for x in earlier:
            student.call("f", x, 3.0)
        try:
            got = student.call("f", True, 3.0)
        except StudentError as error:
            if error.type == "TypeError":
                return
            raise
        raise Mismatch({"x": True, "y": 3.0}, "TypeError", got, "use the input checks")

    return Property("rejects_bools", "f raises TypeError for a bool x.", check, misconceptions=(UNCHECKED,))


@pytest.mark.parametrize(
    ("make", "earlier", "named", "fresh_calls"),
    [
        # The cache answers f(True, 3.0) from f(1, 3.0): fresh, the call raises; the entry is not the cause.
        (_cached, [1], "", 1),
        # No input checks: fresh, f(True, 3.0) gives 3.0 as it did here; the entry's own evidence.
        (_unchecked, [1], "without the input checks", 1),
        # No equal call of another type before: the failure is the call's own, no fresh worker needed.
        (_unchecked, [2], "without the input checks", 0),
        (_unchecked, [], "without the input checks", 0),
    ],
    ids=["cache-after-equal-call", "unchecked-after-equal-call", "unchecked-after-other-call", "unchecked-alone"],
)
def test_a_stateless_entry_is_named_only_where_the_call_fails_so_in_a_fresh_worker(make, earlier, named, fresh_calls):
    session = FreshLocalSession(make)
    failure = run_property(_rejects(earlier), session)
    assert failure.got == 3.0 and failure.inputs == {"x": True, "y": 3.0}  # the evidence stays, named or not
    assert failure.misconception == named
    assert session.fresh_calls == fresh_calls


def test_without_a_fresh_worker_an_equal_earlier_call_leaves_the_failure_unnamed():
    # A session that cannot start a fresh worker gives no answer to hold the failure to.
    class NoFresh(FreshLocalSession):
        call_fresh = None

    assert run_property(_rejects([1]), NoFresh(_unchecked)).misconception == ""


def _repeated(misconceptions):
    """f(1, 3.0) then f(True, 3.0): the second must raise as f(True, 3.0) asked first does (the student's own)."""

    def check(student):
        calls = [(1, 3.0), (True, 3.0)]
        outcomes = []
        for x, y in calls:
            try:
                outcomes.append(student.call("f", x, y))
            except StudentError as error:
                outcomes.append(error.type)
        if not isinstance(outcomes[-1], str):
            raise Mismatch({"calls": calls}, "TypeError", outcomes[-1], "the same call answered otherwise fresh")

    return Property("repeated_calls", "f answers each call as fresh.", check, misconceptions=misconceptions)


def _replay(implementation):
    def run(calls):
        return [implementation(x, y) for x, y in calls][-1]

    return run


def test_evidence_of_a_sequence_of_calls_names_only_an_entry_that_keeps_state():
    def memo(x, y, _seen={}):  # noqa: B006 - the memo is the mistake
        return _seen.setdefault((x, y), float(x) * y)

    stateless = Misconception(UNCHECKED.name, UNCHECKED.advice, _replay(UNCHECKED.implementation))
    stateful = Misconception("cached by value", "Check before the cache.", _replay(memo), history=True)
    assert run_property(_repeated((stateless,)), FreshLocalSession(_cached)).misconception == ""
    assert run_property(_repeated((stateless, stateful)), FreshLocalSession(_cached)).misconception == \
        "cached by value"


def test_an_argument_set_up_and_read_back_is_one_call_not_a_sequence():
    """Exercise 2's ``ks`` check shows ``ks = [...]``, the call, then ``ks``: one call's evidence, which a
    stateless entry (``ks.sort()`` in place) explains; two calls of the function are a sequence."""
    from ch11_autograder.trusted.misconception_naming import _is_a_sequence

    one = Mismatch({"ks": [12, 10]}, [12, 10], [10, 12], "changed the ks it was given",
                   calls=("ks = np.array([12, 10])", "fd_sweep(x=2.0, y=3.0, ks=ks)", "ks"))
    two = Mismatch({"x": True}, "TypeError", 3.0, "answered otherwise fresh", calls=("f(1, 3.0)", "f(True, 3.0)"))
    unparsed = Mismatch({"x": 1}, 1, 2, "again", calls=("f(1, 3.0)", "f(1, 3.0"))
    assert not _is_a_sequence(one)
    assert _is_a_sequence(two)
    assert _is_a_sequence(unparsed)


def test_calls_sharing_an_object_the_statements_set_up_are_not_a_sequence_on_fresh_arguments():
    """Exercise 5's used-generator check shows ``rng = ...`` and two calls given ``rng``: the history is in the
    generator both calls are given, which an entry's implementation is given too, so a stateless entry (a replay
    rebuilt from the seed) may explain it; two calls on fresh arguments stay a sequence."""
    from ch11_autograder.trusted.misconception_naming import _is_a_sequence

    shared = Mismatch({"seed": 2}, 1.0, 2.0, "drew before",
                      calls=("rng = np.random.default_rng(2)", "f(make_chain(4, 1), rng)",
                             "f(make_chain(4, 1), rng).cotangents"))
    fresh = Mismatch({"seed": 2}, 1.0, 2.0, "kept", calls=("rng = np.random.default_rng(2)",
                                                           "f(make_chain(4, 1), np.random.default_rng(2))",
                                                           "f(make_chain(4, 1), np.random.default_rng(3))"))
    assert not _is_a_sequence(shared)
    assert _is_a_sequence(fresh)
