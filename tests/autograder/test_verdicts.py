"""Scores, outputs nbgrader reads, and the student-facing text of verdicts and properties.

The property engine is exercised with an in-process session double, so that
hypothesis shrinking, misconception matching and the failure kinds can be
checked quickly; the real worker is covered in test_worker_client.py.
"""

from __future__ import annotations

import contextlib
import math
import time

import nbformat
import numpy as np
import pytest
from ch11_autograder.protocol import Record, Reply
from ch11_autograder.trusted.roundtrip import roundtrip
from ch11_autograder.trusted.suite import (
    Call,
    CellSuite,
    Misconception,
    Mismatch,
    Property,
    Student,
    expect_equal,
    hypothesis_property,
    run_property,
    run_suite,
)
from ch11_autograder.trusted.verdicts import CellVerdict, Failure, format_value, score_for, verdict_outputs
from ch11_autograder.trusted.worker_client import CallTimeout, NotDefined, NotRun, StudentError, WorkerCrashed
from ch11_autograder.untrusted.launch import SandboxUnavailable
from hypothesis import strategies as st
from nbgrader.utils import determine_grade
from support import call_outcomes
from trainable_harness import CheckpointCost, TapeNode

# --------------------------------------------------------------------------- a session double


class LocalSession:
    """Calls plain Python functions as if they were the student's, with the worker's error types."""

    def __init__(self, **functions):
        self.functions = functions
        self.report = ()
        self.calls = 0

    def call(self, fn, *args, **kwargs):
        self.calls += 1
        if fn not in self.functions:
            raise NotDefined("NameError", f"{fn} is not defined in your notebook")
        try:
            return roundtrip(self.functions[fn](*args, **kwargs))
        except (CallTimeout, WorkerCrashed, SandboxUnavailable):
            raise
        except Exception as exc:
            raise StudentError(type(exc).__name__, str(exc)) from None

    def call_many(self, calls, *, stop_on_error=False, deadline=None):
        """Each call in order, its outcome not raised, as ``WorkerSession.call_many`` gives it."""
        outcomes = []
        for call in calls:
            if deadline is not None and time.monotonic() > deadline:
                return outcomes + [NotRun("budget")] * (len(calls) - len(outcomes))
            try:
                outcomes.append(Reply(0, True, self.call(call.fn, *call.args, **call.kwargs)))
            except (StudentError, CallTimeout, WorkerCrashed) as exc:
                outcomes.append(exc)
                if stop_on_error or not isinstance(exc, StudentError):
                    return outcomes + [NotRun("stopped")] * (len(calls) - len(outcomes))
        return outcomes


ADDS = Misconception("adds instead of multiplies", "Return 2 * x, not x + 2.", lambda x: x + 2)


@hypothesis_property(
    "doubles",
    "double(x) returns 2 * x for every integer x.",
    given={"x": st.integers(-(10**6), 10**6)},
    max_examples=60,
    misconceptions=[ADDS],
)
def doubles(student, x):
    expect_equal({"x": x}, 2 * x, student.call("double", x))


SUITE = CellSuite("double_tests", 2, [doubles])


# --------------------------------------------------------------------------- scores


@pytest.mark.parametrize(
    ("points", "passed", "total", "score"),
    [
        (2, 2, 2, 2.0),
        (2, 1, 2, 1.0),
        (2, 0, 2, 0.0),
        (1, 1, 3, 0.33),
        (1, 2, 3, 0.67),
        (3, 1, 8, 0.38),  # 0.375 rounds half to even on the exact fraction: 37.5 -> 38
        (1, 999, 1000, 0.99),  # would round to full marks; a failure never gets them
        (5, 0, 0, 0.0),
    ],
)
def test_score_for(points, passed, total, score):
    assert score_for(points, passed, total) == score


def test_naive_rounding_would_give_full_marks_to_a_failing_cell():
    assert round(1 * 999 / 1000, 2) == 1.0  # the wrong variant
    assert score_for(1, 999, 1000) < 1


@pytest.mark.parametrize(("bad", "args"), [("points", (-1, 0, 1)), ("points", (math.inf, 0, 1)), ("passed", (1, 2, 1))])
def test_score_for_rejects_nonsense(bad, args):
    with pytest.raises(ValueError, match=bad):
        score_for(*args)


# --------------------------------------------------------------------------- outputs nbgrader reads


def graded_cell(outputs, points=2):
    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False, "points": points}})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def verdict(passed, failed, points=2.0):
    descriptions = [(n, f"{n} holds.") for n in passed + failed]
    failures = [Failure(n, f"{n} holds.", "mismatch", {"x": 1}, 2, 3) for n in failed]
    return CellVerdict.from_results("cell", points, descriptions, failures)


@pytest.mark.parametrize(
    ("passed", "failed", "expected"),
    [(["a", "b"], [], 2.0), (["a"], ["b"], 1.0), ([], ["a", "b"], 0.0), (["a", "b"], ["c"], 1.33)],
)
def test_nbgrader_records_exactly_the_verdict_score(passed, failed, expected):
    v = verdict(passed, failed)
    assert v.score == expected
    assert determine_grade(graded_cell(verdict_outputs(v))) == (expected, 2.0)


def test_partial_credit_is_a_plain_float_repr():
    outputs = verdict_outputs(verdict(["a"], ["b"]))
    assert [o["output_type"] for o in outputs] == ["stream", "execute_result"]
    assert outputs[1]["data"]["text/plain"] == "1.0"


def test_the_pitfalls_these_outputs_avoid_are_real_in_nbgrader():
    # numpy 2's repr of a partial score is unparseable for nbgrader: it awards full marks.
    numpy_repr = {"output_type": "execute_result", "execution_count": 1, "metadata": {}}
    numpy_repr["data"] = {"text/plain": repr(np.float64(1.0))}
    assert determine_grade(graded_cell([numpy_repr])) == (2.0, 2.0)
    # Any stderr output zeroes a cell, and a value above the points aborts the notebook.
    assert determine_grade(graded_cell([{"output_type": "stream", "name": "stderr", "text": "warn"}])) == (0, 2.0)
    too_much = {**numpy_repr, "data": {"text/plain": "3.0"}}
    with pytest.raises(ValueError, match="greater than maximum"):
        determine_grade(graded_cell([too_much]))


def test_zero_is_a_single_error_output_with_the_message_as_traceback():
    (output,) = verdict_outputs(verdict([], ["a"]))
    assert output["output_type"] == "error" and output["ename"] == "PropertyFailed"
    assert output["traceback"][0] == "0 of 1 checks passed (0 / 2 points)."
    assert "[FAIL] a: a holds." in output["traceback"]


def test_unavailable_verdict_scores_zero():
    v = CellVerdict.unavailable("cell", 3, "No suite.")
    assert determine_grade(graded_cell(verdict_outputs(v), points=3)) == (0, 3.0)


# --------------------------------------------------------------------------- the property engine


def test_correct_code_passes_and_wrong_code_gets_the_shrunk_minimal_counterexample():
    assert run_property(doubles, LocalSession(double=lambda x: 2 * x)) is None
    failure = run_property(doubles, LocalSession(double=lambda x: 2 * x if x < 1234 else 2 * x + 1))
    assert failure.kind == "mismatch"
    assert failure.inputs == {"x": 1234}  # shrunk to the boundary, not some random large value
    assert (failure.expected, failure.got) == (2468, 2469)
    assert failure.misconception == ""


def test_misconception_is_named_only_when_outputs_match_it():
    failure = run_property(doubles, LocalSession(double=lambda x: x + 2))
    assert failure.misconception == "adds instead of multiplies"
    assert "Return 2 * x, not x + 2." in failure.message()
    other = run_property(doubles, LocalSession(double=lambda x: 3 * x))
    assert other.misconception == ""


def test_student_exception_fails_with_the_inputs_of_the_minimal_example():
    def double(x):
        if x > 100:
            raise OverflowError("too big")
        return 2 * x

    failure = run_property(doubles, LocalSession(double=double))
    assert failure.kind == "error" and failure.inputs == {"x": 101}
    assert "your code raised OverflowError: too big" in failure.message()


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


def test_a_call_is_formatted_for_feedback_only_when_a_failure_shows_it(monkeypatch):
    from ch11_autograder.trusted import suite as engine

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


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"grade_id": "g", "points": 1, "properties": []}, "at least one property"),
        ({"grade_id": "g", "points": 0, "properties": [doubles]}, "points must be > 0"),
        ({"grade_id": "g", "points": 1, "properties": [doubles, doubles]}, "unique"),
    ],
)
def test_cell_suite_validation(kwargs, words):
    with pytest.raises(ValueError, match=words):
        CellSuite(**kwargs)


def test_property_description_is_one_line():
    with pytest.raises(ValueError, match="one non-empty line"):
        Property("p", "two\nlines", lambda s: None)


def test_mismatch_from_a_plain_check():
    def check(student):
        got = student.call("cost", 16, 4)
        expect_equal({"depth": 16, "block_size": 4}, CheckpointCost(16, 4, 4, 8, 12), got)

    prop = Property("cost", "cost(L, k) matches the count model.", check)
    assert run_property(prop, LocalSession(cost=lambda L, k: CheckpointCost(L, k, 4, 8, 12))) is None
    failure = run_property(prop, LocalSession(cost=lambda L, k: CheckpointCost(L, k, 4, 9, 12)))
    assert isinstance(failure.got, Record)
    assert "peak_state_units=9" in failure.message() and "peak_state_units=8" in failure.message()


# --------------------------------------------------------------------------- text


def test_failure_message_layout():
    failure = Failure(
        "doubles",
        "double(x) returns 2 * x.",
        "mismatch",
        {"x": 0, "y": np.float32(0.5)},
        expected=0,
        got=2,
        note="Check the operator.",
        misconception="adds instead of multiplies",
        advice="Use *.",
    )
    assert failure.message().split("\n") == [
        "[FAIL] doubles: double(x) returns 2 * x.",
        "    inputs:   x=0, y=np.float32(0.5)",
        "    expected: 0",
        "    got:      2",
        "    note: Check the operator.",
        "    This matches a known mistake, adds instead of multiplies: Use *.",
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (math.nan, "nan"),
        (np.float32(0.1), "np.float32(0.1)"),
        ((1, 2.5), "(1, 2.5)"),
        ((1,), "(1,)"),
        ({"a": [1]}, "{'a': [1]}"),
        (np.array([0.5, 1.0], dtype=np.float32), "array([0.5, 1. ], dtype=float32, shape=(2,))"),
        (Record("CheckpointCost", {"depth": 4}), "CheckpointCost(depth=4)"),
        ([TapeNode(2.0), TapeNode(6.0, ((0, 3.0),))], "tape of 2 nodes [#0: 2.0; #1: 6.0 <- [(0, 3.0)]]"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_value_elides_long_values():
    assert "... (100 items)" in format_value(list(range(100)))
    assert len(format_value("x" * 10_000)) <= 400
    assert "..." in format_value(np.arange(1000.0))


def test_mismatch_keeps_its_fields():
    m = Mismatch({"x": 1}, 2, 3, "note")
    assert (m.inputs, m.expected, m.got, m.note) == ({"x": 1}, 2, 3, "note")


def _drawn_examples(prop):
    seen = []
    run_property(prop, LocalSession(double=lambda x: seen.append(x) or 2 * x))
    return seen


def _import_local_module(directory, name, source):
    import importlib.util
    import sys

    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def test_examples_do_not_depend_on_which_local_modules_are_imported(tmp_path, monkeypatch):
    prop = hypothesis_property("draws", "Draws.", given={"x": st.integers(-(10**6), 10**6)}, max_examples=200)(
        lambda student, x: student.call("double", x)
    )
    before = _drawn_examples(prop)
    constants = "\n".join(f"C{i} = {424_240 + i}" for i in range(50))
    _import_local_module(tmp_path, "ch11_unrelated_constants_a", constants)
    assert _drawn_examples(prop) == before

    # Without the guard hypothesis mixes the new module's literals into its examples.
    from ch11_autograder.trusted import suite as suite_module

    monkeypatch.setattr(suite_module, "_without_local_constants", contextlib.nullcontext)
    unguarded = _drawn_examples(prop)
    more_constants = "\n".join(f"D{i} = {525_250 + i}" for i in range(50))
    _import_local_module(tmp_path, "ch11_unrelated_constants_b", more_constants)
    assert _drawn_examples(prop) != unguarded


def test_explicit_examples_are_always_tried():
    def double(x):
        return 2 * x + (x == 777_777)  # wrong at one point random search will not find

    def check(student, x):
        expect_equal({"x": x}, 2 * x, student.call("double", x))

    strategies = {"x": st.integers(-(10**6), 10**6)}
    searched = hypothesis_property("p", "P.", given=strategies, max_examples=50)(check)
    assert run_property(searched, LocalSession(double=double)) is None  # the gap a fixed example closes
    pinned = hypothesis_property("p", "P.", given=strategies, max_examples=50, examples=[{"x": 777_777}])(check)
    failure = run_property(pinned, LocalSession(double=double))
    assert failure.inputs == {"x": 777_777}


def test_a_sandbox_refusal_stops_grading_instead_of_scoring():
    def refuse(x):
        raise SandboxUnavailable("no user namespaces here")

    session = LocalSession(double=refuse)
    with pytest.raises(SandboxUnavailable, match="no user namespaces"):
        run_suite(SUITE, session)
    assert session.calls == 1  # no shrinking on an infrastructure failure


@pytest.mark.parametrize(
    ("given", "examples", "words"),
    [({"student": st.integers()}, (), "first parameter"), ({"x": st.integers()}, [{"y": 1}], "must name exactly")],
)
def test_hypothesis_property_checks_its_declaration(given, examples, words):
    with pytest.raises(ValueError, match=words):
        hypothesis_property("p", "P.", given=given, examples=examples)(lambda student, **kw: None)


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
    assert "AssertionError: got 5 (line 2)" in failed.failures[0].message()


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


# --------------------------------------------------------------------------- the verdict record


def test_record_lists_every_property_in_suite_order_with_its_outcome_and_misconception():
    wrong = Failure("b", "B holds", "mismatch", misconception="adds", advice="Multiply.")
    verdict = CellVerdict.from_results(
        "cell_tests", 4, [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D"), ("e", "E")],
        [Failure("d", "D", "timeout"), wrong, Failure("e", "E", "budget"), Failure("c", "C", "error")])
    record = verdict.record()
    assert record["grade_id"] == "cell_tests" and record["v"] == 1 and record["score"] == verdict.score
    assert [(p["name"], p["outcome"], p["misconception"]) for p in record["properties"]] == [
        ("a", "passed", ""), ("b", "failed", "adds"), ("c", "errored", ""), ("d", "timed_out", ""),
        ("e", "timed_out", "")]
    assert record["properties"][1]["advice"] == "Multiply."
    unavailable = CellVerdict.unavailable("x_tests", 2, "no suite").record()
    assert [(p["name"], p["outcome"]) for p in unavailable["properties"]] == [("grading", "errored")]


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
    # Every ending unsandboxed; under bwrap (slower to start) the hang. test_worker_client.py makes
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


# --------------------------------------------------------------------------- an unanswered task

_STUB_AT = 'line 3 of the code cell starting "def double(x):"'


def _stub_failure(name: str) -> Failure:
    return Failure(name, f"{name} holds.", "error", inputs={"x": 1}, call="double(1)",
                   detail=f"your code raised NotImplementedError (at {_STUB_AT})",
                   raised="NotImplementedError", where=_STUB_AT)


def test_an_unanswered_task_is_said_once_not_once_per_property():
    names = ["visible_checks", "a", "b", "c", "d", "e", "f"]
    failures = [_stub_failure(n) for n in names[:-1]]
    failures.append(Failure("f", "f holds.", "mismatch", expected="raises TypeError", got="raised NotImplementedError"))
    failures[-2] = Failure("e", "e holds.", "mismatch", expected="TypeError", got="NotImplementedError: ")
    verdict = CellVerdict.from_results("g", 3, [(n, f"{n} holds.") for n in names], failures)
    text = verdict.message()
    assert text.count("NotImplementedError") == 1 and "[FAIL]" not in text
    assert text.splitlines() == [
        "0 of 7 checks passed (0 / 3 points).",
        f"[NOT ANSWERED] This task is not answered yet: double still raises NotImplementedError (at {_STUB_AT}), "
        "the stub's placeholder. Replace it with your answer; this cell's 7 checks say more once it returns a value.",
    ]
    assert determine_grade(nbformat.from_dict({"cell_type": "code", "source": "", "metadata": {"nbgrader": {
        "grade": True, "solution": False, "points": 3}}, "outputs": verdict_outputs(verdict)})) == (0, 3)


def test_a_half_answered_cell_keeps_its_other_failures_and_names_the_unanswered_checks():
    wrong = Failure("b", "b holds.", "mismatch", inputs={"x": 2}, expected=4, got=5)
    other_error = Failure("c", "c holds.", "error", detail="your code raised ValueError: no", raised="ValueError")
    verdict = CellVerdict.from_results("g", 4, [("a", "a holds."), ("b", "b holds."), ("c", "c holds."),
                                                ("d", "d holds.")], [wrong, other_error, _stub_failure("d")])
    text = verdict.message()
    assert "[pass] a: a holds." in text and "[FAIL] b: b holds." in text and "[FAIL] c: c holds." in text
    assert "This task is not answered yet" not in text
    assert "[FAIL] not answered yet: double still raises NotImplementedError" in text and "in 1 check (d)" in text
