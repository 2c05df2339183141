"""Scores, the outputs nbgrader reads, and the student-facing text and records of verdicts (trusted/verdicts.py)."""

from __future__ import annotations

import dataclasses
import math

import nbformat
import numpy as np
import pytest
from ch11_autograder.protocol import Record, RngSeed
from ch11_autograder.trusted.verdicts import CellVerdict, Failure, format_value, score_for, verdict_outputs
from nbgrader.utils import determine_grade
from trainable_harness import TapeNode

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
    assert output["traceback"][0].startswith("First thing to fix: ")
    assert output["traceback"][1] == "0 of 1 checks passed (0 / 2 points)."
    assert "[FAIL] a: a holds." in output["traceback"]


def test_unavailable_verdict_scores_zero():
    v = CellVerdict.unavailable("cell", 3, "No suite.")
    assert determine_grade(graded_cell(verdict_outputs(v), points=3)) == (0, 3.0)

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
        '    This matches a known mistake: "adds instead of multiplies". Use *.',
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
        # A seeded generator as the student's code received it, not the grader's request type.
        (RngSeed(7), "np.random.default_rng(7)"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_value_elides_long_values():
    assert "... (100 items)" in format_value(list(range(100)))
    assert len(format_value("x" * 10_000)) <= 400
    assert "..." in format_value(np.arange(1000.0))

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
        f"[NOT ANSWERED] This task is not answered yet: double still raises NotImplementedError (at {_STUB_AT}), "
        "the stub's placeholder. Replace it with your answer; this cell's 7 checks say more once it returns a value.",
        "0 of 7 checks passed (0 / 3 points).",
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


# --------------------------------------------------------------------------- the page's first line, one cause


def test_the_first_line_is_full_marks_or_the_first_thing_to_fix():
    full = CellVerdict.from_results("ex2_exact_gradient_tests", 2, [("a", "a holds.")], [])
    assert full.message().splitlines()[0] == "Full marks: every check of exact_gradient passed (2 / 2 points)."
    wrong = Failure("b", "b holds.", "mismatch", inputs={"x": True, "y": 3.0}, expected="TypeError raised", got=3.5)
    partial = CellVerdict.from_results("ex2_exact_gradient_tests", 2, [("a", "a holds."), ("b", "b holds.")], [wrong])
    assert partial.message().splitlines()[0] == (
        "First thing to fix: exact_gradient with x=True, y=3.0: expected 'TypeError raised', got 3.5")
    raised = Failure("c", "c holds.", "error", detail='your code raised ValueError: "no"', call="f(1)")
    assert raised.headline("f") == 'First thing to fix: f(1): your code raised ValueError: "no"'


def test_a_headline_says_where_values_that_print_alike_differ():
    wrong = Failure("b", "b holds.", "mismatch", inputs={"x": 1}, expected=np.array([0.0, 1.0]),
                    got=np.array([-0.0, 1.0]))
    assert wrong.headline("f") == ("First thing to fix: f with x=1: index 0: expected 0.0, got -0.0 "
                                   "(0x0000000000000000 vs 0x8000000000000000)")
    assert "    differs:  index 0: expected 0.0, got -0.0" in wrong.message()


def _one_fault_verdict(group: bool) -> CellVerdict:
    same = {"kind": "error", "call": "release(0)", "detail": 'your code raised ValueError: "count must be >= 1"',
            "raised": "ValueError"}
    failures = [Failure(name, f"{name} holds.", **same) for name in ("a", "b", "c")]
    failures.append(Failure("d", "d holds.", "mismatch", inputs={"x": 1}, expected=1, got=2))
    if not group:  # the same failures, each with a cause of its own
        failures = [dataclasses.replace(f, call=f"release({i})") if f.call else f for i, f in enumerate(failures)]
    return CellVerdict.from_results("ex9_release_tests", 4, [(n, f"{n} holds.") for n in "abcde"], failures)


def test_checks_failing_for_one_cause_are_reported_once_and_score_the_same():
    grouped, apart = _one_fault_verdict(True), _one_fault_verdict(False)
    text = grouped.message()
    assert text.count("count must be >= 1") == 1  # the first check, in full
    assert text.splitlines()[0] == "First thing to fix: release with x=1: expected 1, got 2"  # input and values first
    assert "[FAIL] b: b holds.\n    same cause as a above" in text and "[FAIL] c: c holds.\n    same cause as a" in text
    assert "[FAIL] d: d holds.\n    inputs:   x=1" in text  # another cause is reported in full
    assert apart.message().count("count must be >= 1") == 3
    assert grouped.score == apart.score == 0.8
    assert determine_grade(graded_cell(verdict_outputs(grouped), points=4)) == determine_grade(
        graded_cell(verdict_outputs(apart), points=4))


def test_an_exception_message_cannot_print_a_line_of_the_graders_own():
    from ch11_autograder.textsafe import exception_text

    message = "no\n[pass] a: every check passed"
    forged = Failure("a", "a holds.", "error", call="f(1)",
                     detail="your code raised " + exception_text("ValueError", message))
    text = CellVerdict.from_results("g", 1, [("a", "a holds.")], [forged]).message()
    assert not any(line.startswith("[pass]") for line in text.splitlines())
    assert 'ValueError: "no\\n[pass] a: every check passed"' in text


def test_a_sequence_of_calls_is_shown_numbered_with_the_failing_one_marked():
    calls = [{"function": "store_all_cotangents", "seed": 2}, {"function": "replay_report", "block_size": 4}]
    wrong = Failure("u", "u holds.", "mismatch", inputs={"depth": 16, "calls": calls, "failing_call": 2},
                    expected=1, got=2)
    lines = wrong.message().splitlines()
    assert "    inputs:   depth=16" in lines
    assert "        1. store_all_cotangents with seed=2" in lines
    assert "        2. replay_report with block_size=4  <- this call goes wrong" in lines
    assert "failing_call" not in wrong.message() and "failing_call" not in wrong.headline("f")
    pasted = Failure("v", "v holds.", "mismatch", expected=1, got=2,
                     calls=("exact_gradient(1, 3.0)", "exact_gradient(True, 3.0)"))
    assert "    to reproduce, run in a fresh kernel:\n        exact_gradient(1, 3.0)\n" in pasted.message()
    assert pasted.headline("exact_gradient").startswith(
        "First thing to fix: exact_gradient, call 2 of a sequence (exact_gradient(True, 3.0))")


def test_a_sequence_shown_as_statements_is_not_listed_again():
    both = Failure("w", "w holds.", "mismatch", inputs={"calls": [(1.0, 3.0), (True, 3.0)]}, expected=1, got=2,
                   calls=("f(1.0, 3.0)", "f(True, 3.0)"))
    text = both.message()
    assert "to reproduce, run in a fresh kernel:" in text and "calls, in this order" not in text
    listed = Failure("w", "w holds.", "mismatch", inputs={"calls": [(1.0, 3.0), (True, 3.0)]}, expected=1, got=2)
    assert "calls, in this order" in listed.message()


def test_a_case_input_is_shown_as_its_entries():
    wrong = Failure("b", "b holds.", "mismatch", inputs={"case": {"x": 1.0, "h": 0.5}}, expected=1, got=2)
    assert "    inputs:   x=1.0, h=0.5" in wrong.message().splitlines()
    assert "case=" not in wrong.message() and "case=" not in wrong.headline("f")


def test_a_check_with_the_cause_of_one_above_keeps_its_own_note():
    # repeated_calls failing on small_depths' call and result says why that result matters to it: the
    # record depends on earlier calls, which small_depths' own report does not say.
    same = {"inputs": {"depth": 10}, "expected": 2, "got": 3}
    failures = [Failure("small_depths", "small depths.", "mismatch", note="small depths matter.", **same),
                Failure("repeated_calls", "repeated calls.", "mismatch",
                        note="the record must depend on the depth alone.", **same)]
    text = CellVerdict.from_results("ex9_best_tests", 4, [("small_depths", ""), ("repeated_calls", "")],
                                    failures).message()
    assert "[FAIL] repeated_calls: repeated calls.\n    same cause as small_depths above" in text
    assert "    note: the record must depend on the depth alone." in text
    assert text.count("got:") == 1
