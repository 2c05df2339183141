"""Scores, the outputs nbgrader reads, and the student-facing text and records of verdicts (trusted/verdicts.py)."""

from __future__ import annotations

import math

import nbformat
import numpy as np
import pytest
from ch11_autograder.protocol import Record
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
    assert output["traceback"][0] == "0 of 1 checks passed (0 / 2 points)."
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
