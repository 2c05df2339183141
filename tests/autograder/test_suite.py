"""Running a suite and its properties (trusted/suite.py): failure kinds, the time budget, suite bugs,
a sandbox refusal, the cell's visible checks.

The engine runs over an in-process session double (``support.local_session``), so that the
failure kinds can be checked quickly; the real worker is covered in test_worker_client.py.
"""

from __future__ import annotations

import random
import time

import pytest
from ch11_autograder.trusted.cell_suite import CellSuite, Property
from ch11_autograder.trusted.hypothesis_properties import hypothesis_property
from ch11_autograder.trusted.mismatch import expect_equal
from ch11_autograder.trusted.suite import run_property, run_suite
from ch11_autograder.trusted.verdicts import example_record
from ch11_autograder.trusted.worker_errors import CallTimeout, WorkerCrashed
from ch11_autograder.untrusted.launch import SandboxUnavailable
from hypothesis import strategies as st
from support.local_session import SUITE, LocalSession, doubles


def test_student_exception_fails_with_the_inputs_of_the_minimal_example():
    def double(x):
        if x > 100:
            raise OverflowError("too big")
        return 2 * x

    failure = run_property(doubles, LocalSession(double=double))
    assert failure.kind == "error" and failure.inputs == {"x": 101}
    assert 'your code raised OverflowError: "too big"' in failure.message()


def test_missing_function_is_explained():
    failure = run_property(doubles, LocalSession())
    assert failure.kind == "error" and "double is not defined in your notebook" in failure.detail


def test_timeout_fails_at_once_without_shrinking():
    session = LocalSession()

    def hang(x):
        raise CallTimeout("double", 2.0)

    session.functions["double"] = hang
    started = time.monotonic()
    failure = run_property(doubles, session)
    assert failure.kind == "timeout"
    assert session.calls == 1  # no further calls, no shrinking storm
    assert "did not return within 2 s" in failure.detail
    assert failure.call.startswith("double(")
    assert time.monotonic() - started < 5


def test_crash_fails_only_its_property():
    def crash(x):
        raise WorkerCrashed("the process running your code stopped unexpectedly")

    other = Property("other", "Always holds.", lambda student: None)
    suite = CellSuite("double_tests", 2, [doubles, other])
    v = run_suite(suite, LocalSession(double=crash))
    assert v.passed == ("other",) and [f.kind for f in v.failures] == ["crash"] and v.score == 1.0


def test_time_budget_ends_a_slow_property():
    def slow(x):
        time.sleep(0.05)
        return 2 * x

    prop = hypothesis_property("slow", "Slow.", given={"x": st.integers()}, max_examples=100, time_budget=0.2)(
        lambda student, x: expect_equal({"x": x}, 2 * x, student.call("double", x))
    )
    failure = run_property(prop, LocalSession(double=slow))
    assert failure.kind == "budget" and "longer than 0.2 s in total" in failure.detail


def test_nondeterministic_code_is_reported_with_a_note():
    counter = iter(range(10**6))

    def flaky(x):
        return 2 * x + (next(counter) % 7 == 3)

    failure = run_property(doubles, LocalSession(double=flaky))
    assert failure is not None and failure.kind == "mismatch"


def test_suite_bug_is_internal_and_hides_the_traceback(caplog):
    def buggy(student):
        raise KeyError("reference table missing")

    failure = run_property(Property("buggy", "Holds.", buggy), LocalSession())
    assert failure.kind == "internal"
    assert "KeyError" not in failure.message() and "reference table" not in failure.message()
    assert "reference table missing" in caplog.text  # the instructor's log has it


def test_same_inputs_same_verdict_text():
    session = LocalSession(double=lambda x: x + 2 if x % 3 else 2 * x)
    first = run_suite(SUITE, session).message()
    second = run_suite(SUITE, session).message()
    assert first == second


def test_suite_points_must_match_the_notebook():
    with pytest.raises(ValueError, match="declares 2 points but the notebook cell has 3"):
        run_suite(SUITE, LocalSession(double=lambda x: 2 * x), points=3)


def test_a_sandbox_refusal_stops_grading_instead_of_scoring():
    def refuse(x):
        raise SandboxUnavailable("no user namespaces here")

    session = LocalSession(double=refuse)
    with pytest.raises(SandboxUnavailable, match="no user namespaces"):
        run_suite(SUITE, session)
    assert session.calls == 1  # no shrinking on an infrastructure failure


def test_failing_visible_checks_count_as_one_more_failed_property_listed_first():
    from ch11_autograder.protocol import CellOutcome

    suite = CellSuite("double_tests", points=2, properties=[doubles])
    right = LocalSession(double=lambda x: 2 * x)
    assert run_suite(suite, right, 2.0).descriptions[0][0] == "doubles"  # no checks: nothing extra
    # Passing them adds nothing: the properties keep their weights (a docstring may promise them).
    passed = run_suite(suite, right, 2.0, visible=CellOutcome(3, "ok"))
    assert [name for name, _ in passed.descriptions] == ["doubles"] and passed.score == 2.0
    failed = run_suite(suite, right, 2.0, visible=CellOutcome(3, "error", "AssertionError", "got 5", "line 2"))
    assert [name for name, _ in failed.descriptions] == ["visible_checks", "doubles"]
    assert failed.score == 1.0 and failed.passed == ("doubles",)
    assert 'AssertionError: "got 5" (line 2)' in failed.failures[0].message()


def test_a_failing_example_of_several_calls_reaches_the_page_as_pasteable_code():
    from ch11_autograder.trusted.mismatch import Mismatch

    def cached(student):
        first, second = student.call("double", 1), student.call("double", True)
        if second == first:  # an answer that keeps its result from the earlier call (True == 1)
            raise Mismatch({"x": True}, "TypeError raised", second, calls=("double(1)", "double(True)"))

    prop = Property("no_cache", "double answers each call afresh.", cached)
    failure = run_property(prop, LocalSession(double=lambda x: 2 * x))
    assert failure.calls == ("double(1)", "double(True)")
    assert "    to reproduce, run in a fresh kernel:\n        double(1)\n        double(True)" in failure.message()
    record = run_suite(CellSuite("double_tests", 1.0, [prop]), LocalSession(double=lambda x: 2 * x)).record()
    assert record["properties"][0]["example"]["calls"] == ["double(1)", "double(True)"]


def test_a_wrong_value_that_changes_when_asked_again_is_marked_as_varying():
    """The failing call is asked once more: a value that comes back otherwise is output that varies (the class
    report groups it by the check it fails); a wrong value that comes back the same is not."""
    draws = random.Random(3)
    varying = run_property(doubles, LocalSession(double=lambda x: 2 * x + draws.randint(1, 10**6)))
    assert varying is not None and varying.varies
    assert example_record(varying)["varies"] is True
    fixed = run_property(doubles, LocalSession(double=lambda x: x + 2))
    assert fixed is not None and not fixed.varies and "varies" not in example_record(fixed)
