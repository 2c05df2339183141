"""The student's code as a check sees it (trusted/student.py): calls formatted only when shown, watched
calls and kept objects, and several calls per message (``Student.batch``) against the same calls one by one."""

from __future__ import annotations

import pytest
from ch11_autograder.trusted.cell_suite import Property
from ch11_autograder.trusted.hypothesis_properties import hypothesis_property
from ch11_autograder.trusted.mismatch import Mismatch, expect_equal
from ch11_autograder.trusted.student import Student
from ch11_autograder.trusted.suite import run_property
from ch11_autograder.trusted.worker_batches import Call
from ch11_autograder.trusted.worker_errors import NotDefined, StudentError
from hypothesis import strategies as st
from support import call_outcomes
from support.local_session import LocalSession, doubles


def test_a_call_is_formatted_for_feedback_only_when_a_failure_shows_it(monkeypatch):
    from ch11_autograder.trusted import student as engine

    formatted = []
    real = engine.format_call
    monkeypatch.setattr(engine, "format_call", lambda *call: formatted.append(call) or real(*call))
    session = LocalSession(double=lambda x: 2 * x)
    assert run_property(doubles, session) is None
    assert session.calls >= 60 and formatted == []  # every call held: none was shown, none formatted

    def double(x):
        if x > 100:
            raise OverflowError("too big")
        return 2 * x

    failure = run_property(doubles, LocalSession(double=double))
    assert failure.call == "double(101)" and formatted[-1] == ("double", (101,), {})

# --------------------------------------------------------------------------- purity and shared state, real worker


@hypothesis_property(
    "leaves_its_input_alone",
    "smallest(values) returns the least value and leaves the list as it was.",
    given={"values": st.lists(st.integers(-50, 50), min_size=2, max_size=6)},
    max_examples=20,
)
def leaves_its_input_alone(student, values):
    watched = student.call_watch("smallest", list(values))
    expect_equal({"values": values}, min(values), watched.value)
    if watched.args[0] != values:
        raise Mismatch({"values": values}, "the list unchanged", watched.args[0], "smallest() sorted your argument.")


def _depends_on_earlier_calls(student):
    from trainable_harness import make_chain

    chain = student.keep(make_chain(depth=4, width=3, random_layer=2, seed=1), "chain")
    first, second = student.call("evaluations", chain), student.call("evaluations", chain)
    if first != second:
        raise Mismatch({"chain": chain}, first, second, "the same chain asked twice gave two answers.")


no_memory = Property("no_memory", "evaluations(chain) answers the same for the same chain.", _depends_on_earlier_calls)


@pytest.mark.parametrize(
    ("cells", "failed"),
    [
        (["def smallest(values):\n    return min(values)\n",
          "def evaluations(chain):\n    return chain.depth\n"], set()),
        (["def smallest(values):\n    values.sort()\n    return values[0]\n",
          "def evaluations(chain):\n    chain.forward_evaluations += chain.depth\n"
          "    return chain.forward_evaluations\n"], {"leaves_its_input_alone", "no_memory"}),
    ],
    ids=["pure", "mutates-and-remembers"],
)
def test_watched_calls_and_kept_objects_let_a_property_see_mutation_and_memory(cells, failed):
    from ch11_autograder.trusted.worker_client import WorkerSession
    from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher

    with WorkerSession(cells, UnsandboxedLauncher(quiet=True), call_timeout=5.0) as session:
        failures = {prop.name: run_property(prop, session) for prop in (leaves_its_input_alone, no_memory)}
    assert {name for name, failure in failures.items() if failure is not None} == failed
    if failed:
        assert "sorted your argument" in failures["leaves_its_input_alone"].message()
        assert "chain" in failures["no_memory"].message()

# --------------------------------------------------------------------------- several calls per message


def _recorder(calls_of, *, batched, return_errors=True, seen=None, time_budget=60.0):
    """A property making ``calls_of(student)`` one by one or in one ``batch``; ``seen`` gets what each came to."""

    def check(student):
        calls = calls_of(student)
        if batched:
            seen.extend(list(student.batch(calls, stop_on_error=not return_errors, return_errors=return_errors)))
        else:
            seen.extend(call_outcomes.one_by_one(student, calls, catch=StudentError if return_errors else ()))

    return Property("records_calls", "Records what each call came to.", check, time_budget=time_budget)


def _both_ways(backend, calls_of, **options):
    """Run the recording property on two fresh sessions, one by one and batched; then one more call in each.

    Returns, per way, (what the calls came to, the property's failure, ``bump()`` after it, worker starts).
    """
    results = []
    for batched in (False, True):
        seen = []
        with call_outcomes.launched(backend) as launcher, call_outcomes.session(launcher) as session:
            session.start()  # the worker's start is not the property's time
            failure = run_property(_recorder(calls_of, batched=batched, seen=seen, **options), session)
            after = session.call("bump")
            results.append(([call_outcomes.describe(o) for o in seen], failure, after, session.starts))
    return results


@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_student_batch_gives_each_call_what_call_and_call_watch_give(backend):
    alone, together = _both_ways(backend, lambda student: call_outcomes.ordinary_calls(student.keep([], "stack")))
    assert alone == together
    seen, failure, after, starts = together
    assert failure is None and starts == 1 and after == 3  # both bumps of the batch ran, in order
    assert [kind for kind, *_ in seen] == ["ok", "ok", "StudentError", "NotDefined", "NotDefined", "Unencodable"] + [
        "ok"
    ] * 6
    assert seen[6][2:] == (([1, 2, 3],), {"item": 3}, ())  # a Watched: the mutated argument
    assert seen[7][4] == ("UserWarning: careful with 7",)


@pytest.mark.parametrize(
    ("backend", "fatal"),
    # Every ending unsandboxed; under bwrap (slower to start) the hang. test_worker_batches.py makes
    # all three under every backend at the session level.
    [("none", "hang"), ("none", "exits"), ("none", "killed"), ("bwrap", "hang")],
)
def test_a_call_that_hangs_or_ends_the_worker_ends_the_property_at_that_call_as_alone(backend, fatal):
    def calls_of(student):
        ordinary = call_outcomes.ordinary_calls(student.keep([], "stack"))
        return [*ordinary[:9], Call(fatal), *ordinary[9:]]

    alone, together = _both_ways(backend, calls_of)
    assert alone[1:] == together[1:]  # the same failure, the same fresh worker afterwards
    _, failure, after, starts = together
    assert failure.kind == ("timeout" if fatal == "hang" else "crash") and failure.call == f"{fatal}()"
    assert after == 1 and starts == 2


def test_without_return_errors_the_first_student_error_is_raised_at_its_call_and_nothing_after_it_runs():
    calls = [Call("bump"), Call("broken", (4,)), Call("bump")]
    alone, together = _both_ways("none", lambda student: calls, return_errors=False)
    assert alone == together
    _, failure, after, _ = together
    assert failure.kind == "error" and failure.call == "broken(4)" and "ZeroDivisionError" in failure.detail
    assert after == 2  # the third call was not made


def test_the_time_budget_stops_a_batch_where_it_stops_single_calls():
    calls = [Call("nap", (0.2,)) for _ in range(20)]
    alone, together = _both_ways("none", lambda student: calls, time_budget=0.5)
    for _, failure, after, starts in (alone, together):
        assert failure.kind == "budget" and "longer than 0.5 s in total" in failure.detail
        # Naps start at 0, 0.2 and 0.4 s at the soonest: at most 3 begin within the budget (at least 1
        # does: the budget is checked before each call). The worker was not killed.
        assert 2 <= after <= 4 and starts == 1


def test_a_batch_read_whole_is_its_calls_made_in_order():
    student = Student(LocalSession(double=lambda x: 2 * x), 60.0)
    calls = [Call("double", (2,)), Call("missing"), Call("double", (3,))]
    got = list(student.batch(calls, stop_on_error=False, return_errors=True))
    assert got[0] == 4 and isinstance(got[1], NotDefined) and got[2] == 6
    with pytest.raises(NotDefined):
        list(student.batch(calls))
    assert student.last_call == "missing()" and list(student.batch([])) == []


def _judging_each(calls, judge, seen):
    """A property judging each result of a ``batch`` of ``calls`` in turn (``seen`` gets the results judged)."""

    def check(student):
        for got in student.batch(calls, stop_on_error=False, return_errors=True):
            seen.append(got)
            judge(got)

    return Property("judges_each", "Judges each call as it is reached.", check)


def test_a_batch_iterated_reports_a_wrong_answer_before_a_later_call_of_the_exchange_that_hangs():
    # double(2) is judged wrong before the hang's timeout is looked at, as calls made one by one stop there.
    def judge(got):
        expect_equal({"x": 2}, 5, got)

    seen: list = []
    with call_outcomes.launched("none") as launcher, call_outcomes.session(launcher) as session:
        failure = run_property(_judging_each([Call("double", (2,)), Call("hang"), Call("bump")], judge, seen), session)
        hung = not session.alive  # the hang was made in the same exchange (and cost its limit)
        batched = run_property(_recorder(lambda student: [Call("double", (2,)), Call("hang")], batched=True,
                                         seen=[]), session)  # fmt: skip
    assert failure.kind == "mismatch" and failure.expected == 5 and failure.got == 4 and seen == [4]
    assert hung
    assert batched.kind == "timeout"  # read whole, the batch has no earlier result to judge first


def test_after_a_mismatch_a_batch_makes_each_call_only_when_the_loop_reaches_it():
    # Hypothesis replays the failing example: from then on a call after the wrong answer is not made at all.
    @hypothesis_property("stops_early", "Stops at the first wrong answer.", given={"x": st.just(2)}, max_examples=3)
    def stops_early(student, x):
        for got in student.batch([Call("double", (x,)), Call("hang")]):
            expect_equal({"x": x}, 5, got)

    with call_outcomes.launched("none") as launcher, call_outcomes.session(launcher) as session:
        failure = run_property(stops_early, session)
        starts, alive = session.starts, session.alive
    assert failure.kind == "mismatch" and failure.got == 4
    # Only the first, batched, example made the hang; the replays stopped at double(2) in a fresh worker.
    assert starts == 2 and alive


def _judged_in_order(calls, expected, *, stop_on_error=True, catch=()):
    """A property taking ``calls`` from one ``Student.batch`` in order, each answer judged against ``expected``."""

    def check(student):
        replies = student.batch(calls, stop_on_error=stop_on_error)
        for call, want in zip(calls, expected, strict=True):
            try:
                got = replies.take()
            except catch:
                continue
            expect_equal({"call": call.fn}, want, got)

    return Property("judged_in_order", "Each answer is judged before the next call.", check)


def test_a_batch_judged_in_order_reports_a_wrong_answer_before_a_later_call_that_hangs_or_raises():
    # One by one the check would stop at the wrong double(2) and never make the hang or the error.
    with call_outcomes.launched("none") as launcher, call_outcomes.session(launcher) as session:
        for after in (Call("hang"), Call("broken", (1,))):
            failure = run_property(_judged_in_order([Call("double", (2,)), after], [5, None]), session)
            assert failure.kind == "mismatch" and (failure.expected, failure.got) == (5, 4)
        # The later calls were made all the same: the hang cost its limit and the first worker.
        assert session.starts == 2 and session.call("bump") == 1
        # Taken up to it, the hang ends the property at that call, with its own limit.
        failure = run_property(_judged_in_order([Call("double", (2,)), Call("hang"), Call("bump")], [4, 0, 0]), session)
        assert failure.kind == "timeout" and failure.call == "hang()"


def test_a_batch_goes_on_after_an_error_the_check_catches_as_single_calls_would():
    calls = [Call("bump"), Call("broken", (1,)), Call("bump"), Call("bump")]
    with call_outcomes.launched("none") as launcher, call_outcomes.session(launcher) as session:
        failure = run_property(_judged_in_order(calls, [1, None, 2, 3], catch=StudentError), session)
        assert failure is None and session.call("bump") == 4  # the calls after the error were made, once each
        failure = run_property(_judged_in_order(calls, [5, None, 6, 7]), session)
        assert failure.kind == "error" and failure.call == "broken(1)" and session.call("bump") == 6


def test_a_batch_is_sent_when_first_taken_and_read_in_order():
    made = []
    student = Student(LocalSession(double=lambda x: made.append(x) or 2 * x), 60.0)
    replies = student.batch([Call("double", (1,)), Call("double", (2,))])
    assert len(replies) == 2 and made == []
    assert replies.take() == 2 and made == [1, 2]
    assert next(replies) == 4
    with pytest.raises(IndexError):
        replies.take()
    assert list(replies) == []
