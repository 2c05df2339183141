"""What differs between two values that print alike (``trusted/differences.py``): one test per case."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from ch11_autograder.protocol import Record
from ch11_autograder.trusted.differences import (
    first_difference,
    float_bits,
    focused_value,
    visible_whitespace,
    with_article,
)
from ch11_autograder.trusted.verdicts import format_value


def _nan(payload: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0]


def test_equal_values_have_no_difference():
    assert first_difference(1.0, 1.0) is None
    assert first_difference(np.array([np.nan, 0.0]), np.array([np.nan, 0.0])) is None
    assert first_difference(Record("R", {"a": [1, 2]}), Record("R", {"a": [1, 2]})) is None
    assert first_difference("a b", "a b") is None


def test_nan_payloads_are_told_apart_by_their_bit_patterns():
    quiet, payload = _nan(0), _nan(1)
    assert repr(quiet) == repr(payload) == "nan"
    found = first_difference(quiet, payload)
    assert found is not None
    assert found.bits == "(0x7ff8000000000000 vs 0x7ff8000000000001)"
    assert found.hidden_by_printing("nan", "nan")


def test_nan_payloads_inside_arrays_are_found_by_index():
    expected = np.array([1.0, _nan(0), _nan(0)])
    got = np.array([1.0, _nan(0), _nan(5)])
    assert format_value(expected) == format_value(got)  # what the page showed before: the same text twice
    found = first_difference(expected, got)
    assert found is not None
    assert found.line() == "index 2: expected nan, got nan (0x7ff8000000000000 vs 0x7ff8000000000005)"


def test_signed_zero_is_shown_in_hex():
    found = first_difference(np.array([0.0, 1.0]), np.array([-0.0, 1.0]))
    assert found is not None
    assert found.line() == "index 0: expected 0.0, got -0.0 (0x0000000000000000 vs 0x8000000000000000)"


def test_a_last_bit_difference_names_field_and_index_with_hex():
    expected = Record("ReplayRun", {"cotangents": np.zeros(2), "total_error": np.array([0.0, 0.0, 0.0, 1.0])})
    got = Record("ReplayRun", {"cotangents": np.zeros(2),
                               "total_error": np.array([0.0, 0.0, 0.0, np.nextafter(1.0, 2.0)])})
    found = first_difference(expected, got)
    assert found is not None
    assert found.line() == ("field total_error, index 3: expected 1.0, got 1.0000000000000002 "
                            "(0x3ff0000000000000 vs 0x3ff0000000000001)")


def test_float32_bits_are_32_bits_and_far_apart_floats_show_no_bits():
    assert float_bits(np.float32(1.0)) == "0x3f800000"
    found = first_difference(1.0, 2.5)
    assert found is not None and found.bits == "" and found.line() == "expected 1.0, got 2.5"
    assert not found.hidden_by_printing("1.0", "2.5")


def test_whitespace_is_made_visible():
    assert visible_whitespace("total ") == "'total\u2420'"
    assert visible_whitespace("a\tb\nc") == "'a\u2409b\u240ac'"
    assert visible_whitespace("a b  c") == "'a b\u2420\u2420c'"
    found = first_difference("graph_class", "graph_class ")
    assert found is not None
    assert found.line() == "expected 'graph_class', got 'graph_class\u2420'"
    assert found.hidden_by_printing("'graph_class'", "'graph_class '")


def test_dict_keys_list_lengths_dtypes_and_shapes():
    assert first_difference({"a": 1}, {"a": 1, "b": 2}).line() == "keys: expected 'a', got 'a', 'b'"
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}).line() == "key 'a', index 1: expected 2, got 3"
    assert first_difference([1, 2], [1, 2, 3]).line() == "length: expected 2, got 3"
    assert first_difference(np.zeros(2), np.zeros(2, np.float32)).line() == "dtype: expected float64, got float32"
    assert first_difference(np.zeros(2), np.zeros(3)).line() == "shape: expected (2,), got (3,)"
    assert first_difference(np.zeros((2, 2)), np.eye(2)).line() == "index 0, 0: expected 0.0, got 1.0"


def test_kinds_take_their_article():
    assert first_difference(1, 1.0).line() == "type: expected an int, got a float"
    assert first_difference(Record("ReplayRun", {}), "a ReplayRun").line() == "type: expected a ReplayRun, got a str"
    assert with_article("int") == "an int" and with_article("float") == "a float" and with_article("None") == "None"


def test_a_long_value_is_rendered_around_the_difference_never_cut_before_it():
    labels = [f"layer {i} of the chain, applied forward" for i in range(12)]
    long = Record("ReplayRun", {"labels": labels, "total_error": np.array([0.0, 1.0, 2.0, 3.0])})
    other = Record("ReplayRun", {"labels": labels, "total_error": np.array([0.0, 1.0, 2.0, 3.5])})
    found = first_difference(long, other)
    assert found is not None
    whole = format_value(other)
    assert "3.5" not in whole  # the usual rendering is cut before the field that differs
    focused = focused_value(other, found.path, format_value, 400)
    assert "3.5" in focused and focused.startswith("ReplayRun(labels=..., total_error=array([..., 1.0, 2.0, 3.5]")


@pytest.mark.parametrize("value", [1.0, _nan(3), -0.0, np.float32(2.5)])
def test_a_value_never_differs_from_itself(value):
    assert first_difference(value, value) is None
