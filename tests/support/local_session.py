"""A session double for the suite engine's tests, and the doubling property they grade with it.

``LocalSession`` calls plain Python functions as if they were the student's, with the worker's error
types (a ``Session`` as ``trusted/student.py`` states it), so that hypothesis shrinking, misconception
naming and the failure kinds are checked without starting a worker.
"""

from __future__ import annotations

import time

from ch11_autograder.protocol import Reply
from ch11_autograder.trusted.cell_suite import CellSuite
from ch11_autograder.trusted.hypothesis_properties import hypothesis_property
from ch11_autograder.trusted.mismatch import Misconception, expect_equal
from ch11_autograder.trusted.roundtrip import roundtrip
from ch11_autograder.trusted.worker_errors import CallTimeout, NotDefined, NotRun, StudentError, WorkerCrashed
from ch11_autograder.untrusted.launch import SandboxUnavailable
from hypothesis import strategies as st


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


class FreshLocalSession(LocalSession):
    """A ``LocalSession`` over functions that may keep state, made by ``make()``: it records what it was asked
    (``asked``, as ``WorkerSession`` does since its worker started) and answers ``call_fresh`` with new
    functions from ``make()``, as a fresh worker would; ``fresh_calls`` counts those."""

    def __init__(self, make):
        super().__init__(**make())
        self.make = make
        self.asked = []
        self.fresh_calls = 0

    def call(self, fn, *args, **kwargs):
        self.asked.append((fn, tuple(args), dict(kwargs)))
        return super().call(fn, *args, **kwargs)

    def call_fresh(self, fn, *args, **kwargs):
        self.fresh_calls += 1
        return LocalSession(**self.make()).call(fn, *args, **kwargs)
