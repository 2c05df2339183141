"""The history property (``trusted/history.py``) through a real worker: fresh equals history, results stay."""

from __future__ import annotations

import numpy as np
import pytest
from ch11_autograder.trusted.history import argument_forms, history_property, history_sequence
from ch11_autograder.trusted.suite import run_property
from ch11_autograder.trusted.worker_batches import Call
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher

pytestmark = pytest.mark.slow

CHECKED = (
    "def _checked(x):\n"
    "    if isinstance(x, bool) or not isinstance(x, (int, float)):\n"
    "        raise TypeError('x must be a number')\n"
    "    return float(x)\n"
)
RIGHT = CHECKED + "def square(x):\n    return [_checked(x) ** 2]\n\ndef other(x):\n    return x\n"
CACHED = CHECKED + (
    "_memo = {}\n"
    "def square(x):\n"
    "    if x in _memo:\n"
    "        return _memo[x]\n"
    "    return _memo.setdefault(x, [_checked(x) ** 2])\n"
    "def other(x):\n    return x\n"
)
SHARED = CHECKED + (
    "_out = []\n"
    "def square(x):\n"
    "    _out[:] = [_checked(x) ** 2]\n"
    "    return _out\n"
    "def other(x):\n    return x\n"
)
COUNTED = CHECKED + (
    "_calls = []\n"
    "def square(x):\n"
    "    _calls.append(x)\n"
    "    return [_checked(x) ** 2 + (len(_calls) > 3)]\n"
    "def other(x):\n    return x\n"
)
STUB = "def square(x):\n    raise NotImplementedError\n\ndef other(x):\n    return x\n"

CALLS = (Call("square", (4,)), Call("other", (2.5,)))


def _failure(source: str):
    with WorkerSession([source], UnsandboxedLauncher(quiet=True), call_timeout=10.0) as session:
        return run_property(history_property("square", CALLS), session)


def test_a_right_answer_passes():
    assert _failure(RIGHT) is None


def test_a_cache_before_the_checks_fails_with_the_shortest_sequence_that_shows_it():
    failure = _failure(CACHED)
    assert failure is not None and failure.kind == "mismatch"
    # The first difference: a numpy float32 (refused by this _checked) answered from the int's entry.
    assert failure.inputs == {"calls": "square(4); square(np.float32(4.0))"}
    # The page's "to reproduce, run in a fresh kernel" lines: one pasteable statement per call.
    assert failure.calls == ("square(4)", "square(np.float32(4.0))")
    assert failure.expected == "raised TypeError" and failure.got == [16.0]
    assert "in a fresh kernel after your notebook's cells, run square(4); square(np.float32(4.0))" in failure.note


def test_a_returned_list_rewritten_by_the_next_call_fails():
    failure = _failure(SHARED)
    assert failure is not None and failure.kind == "mismatch"
    assert failure.inputs["calls"].startswith("square(") and failure.inputs["calls"].count(";") == 1
    assert failure.expected != failure.got
    assert "no longer holds the same after the calls that follow it" in failure.note


def test_an_answer_that_drifts_after_a_few_calls_fails_and_the_stub_fails_unanswered():
    drifted = _failure(COUNTED)
    assert drifted is not None and drifted.inputs["calls"].count(";") == 3  # the fourth call drifts
    stub = _failure(STUB)
    assert stub is not None and stub.got == "raised NotImplementedError" and stub.unanswered()


def test_the_forms_of_an_argument_are_equal_values_of_other_types_then_bools_and_refusals():
    forms = argument_forms(16)
    assert forms[0] == 16 and type(forms[0]) is int
    kinds = [type(f).__name__ for f in forms]
    assert {"float", "float64", "float32", "int64", "bool", "NoneType"} <= set(kinds)
    assert any(isinstance(f, np.bool_) for f in forms)
    assert kinds.index("int") < kinds.index("bool")  # 1 before True: a cache answers the bool
    row = argument_forms(np.array([0.5, 1.5]))
    assert [getattr(f, "shape", None) for f in row] == [(2,), (2,), None, (1, 2)]
    assert argument_forms([16, 64])[1] == (16, 64)
    sequence = history_sequence("square", CALLS)
    assert sequence[0] == CALLS[0] and sequence[-1] == CALLS[0]
    assert all(c == CALLS[1] for c in sequence[2:-1:2])  # the other function between every two
