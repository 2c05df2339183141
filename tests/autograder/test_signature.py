"""Behavioural signatures (``trusted.signature``): what two failures must share to be the same failure."""

from __future__ import annotations

import numpy as np
from ch11_autograder.trusted.signature import FailureSignature, failure_signatures, obtained_key, same_inputs
from ch11_autograder.trusted.verdicts import CellVerdict, Failure


def test_same_inputs_compares_values_exactly_with_their_types():
    z0 = np.array([0.5, -0.25])
    assert same_inputs({"z0": z0, "refused_argument": "z0"}, {"refused_argument": "z0", "z0": z0.copy()})
    assert not same_inputs({"refused_argument": "z0"}, {"refused_argument": "block_size"})
    assert not same_inputs({"k": 2}, {"k": np.int64(2)})  # another type is another input
    assert not same_inputs({"z0": z0}, {"z0": z0.astype(np.float32)})
    assert not same_inputs({"z0": z0}, {"z0": z0, "k": 1})
    assert same_inputs({"f": print}, {"f": print})  # no wire form: compared by rendering


def test_an_exception_s_text_counts_by_its_type_only():
    assert obtained_key("'TypeError: block_size must be an int'", "") == "TypeError raised"
    assert obtained_key('"ValueError: can\'t"', "") == "ValueError raised"
    assert obtained_key("'no exception: returned a ReplayRun'", "") == "'no exception: returned a ReplayRun'"
    assert obtained_key("", "KeyError") == "raised KeyError"


def test_a_record_s_failures_become_signatures_and_passes_none():
    verdict = CellVerdict.from_results("c_tests", 2, [("p", "P"), ("q", "Q"), ("r", "R")], [
        Failure("p", "P", "mismatch", inputs={"x": 1}, expected=2, got=3, misconception="adds", advice="a"),
        Failure("r", "R", "error", inputs={"x": 0}, raised="ZeroDivisionError", call="f(0)", detail="<msg>")])
    (sig_p, ex_p, named_p), (sig_r, ex_r, named_r) = failure_signatures(verdict.record())
    assert sig_p == FailureSignature("c_tests", "p", "failed", (("x", "1"),), "3") and named_p == "adds"
    assert (ex_p.input_text(), ex_p.expected, ex_p.obtained_text()) == ("x=1", "2", "3")
    assert sig_r.obtained == "raised ZeroDivisionError in f(0)" and named_r == ""
    assert ex_r.obtained_text() == "'ZeroDivisionError' raised in f(0)"  # the type name is the student's: quoted


def test_a_malformed_record_gives_what_it_can():
    assert failure_signatures({"grade_id": 3, "properties": []}) == []
    forged = {"grade_id": "c", "properties": [None, {"name": "p", "outcome": "failed", "example": {"inputs": [1],
              "got": 7}}, {"name": "q", "outcome": "exploded"}]}
    ((sig, example, named),) = failure_signatures(forged)
    assert sig == FailureSignature("c", "p", "failed", (), "") and example.got == "" and named == ""
