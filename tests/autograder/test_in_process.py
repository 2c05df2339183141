"""``in_process_student``: trusted functions called as the worker calls a submission's.

Exercise 5's judges run on it to predict what a catalogued mistake reports; these tests
pin what makes those predictions the worker's: arguments through the wire form, one
object per kept marker, errors as ``StudentError``, batches made in order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pytest
from ch11_autograder.api.suite import Call, Record, StudentError, in_process_student
from ch11_autograder.trusted.in_process import InProcessSession
from ch11_autograder.trusted.worker_errors import NotRun


def _append(items, item):
    items.append(item)
    return len(items)


def _halve(x):
    if x == 0:
        raise ValueError("x must not be 0")
    return x / 2


FUNCTIONS = {"append": _append, "halve": _halve, "scale": lambda a, k=2.0: a * np.float32(k)}


def test_each_call_gets_its_own_copy_of_the_arguments_and_a_kept_object_is_shared():
    student = in_process_student(FUNCTIONS)
    items = [1]
    assert student.call("append", items, 2) == 2 and student.call("append", items, 2) == 2
    assert items == [1]  # the caller's list went over the wire, as to the worker
    kept = student.keep([], "stack")
    assert [student.call("append", kept, n) for n in range(3)] == [1, 2, 3]


def test_values_come_back_as_the_wire_gives_them_and_a_watched_call_shows_its_arguments():
    student = in_process_student(FUNCTIONS)
    got = student.call("scale", np.arange(3, dtype=np.float32))
    assert got.dtype == np.float32 and got.tolist() == [0.0, 2.0, 4.0]
    watched = student.call_watch("append", [7], 8)
    assert watched.value == 2 and watched.args == ([7, 8], 8) and watched.kwargs == {} and watched.warnings == ()
    assert student.defaults("scale") == {"k": 2.0}


def test_an_exception_is_a_student_error_with_its_type_and_message():
    student = in_process_student(FUNCTIONS)
    with pytest.raises(StudentError) as caught:
        student.call("halve", 0)
    assert (caught.value.type, caught.value.message) == ("ValueError", "x must not be 0")


def test_a_batch_is_made_in_order_and_stops_or_goes_on_after_an_error_as_asked():
    student = in_process_student(FUNCTIONS)
    calls = [Call("halve", (4,)), Call("halve", (0,)), Call("halve", (2,), watch=True)]
    first, error, last = student.batch(calls, stop_on_error=False, return_errors=True)
    assert first == 2.0 and isinstance(error, StudentError) and last.value == 1.0 and last.args == (2,)
    session = InProcessSession(FUNCTIONS)
    stopped = session.call_many(calls, stop_on_error=True)
    assert stopped[0].value == 2.0 and isinstance(stopped[1], StudentError)
    assert isinstance(stopped[2], NotRun) and stopped[2].reason == "stopped"
    spent = session.call_many(calls, deadline=time.monotonic() - 1)
    assert [o.reason for o in spent] == ["budget"] * 3


@dataclass
class Point:
    x: int


def test_records_come_back_as_records():
    student = in_process_student({"point": lambda x: Point(x)})
    assert student.call("point", 3) == Record("Point", {"x": 3})
