"""Which catalogued mistake a failure is named after: :func:`name_misconception`, only when it is the
only explanation of what the student's code did (:func:`mismatch_failure`), and kept only when the
answer fails the whole cell as that mistake does (:func:`confirm_names`).

A name is given only where the evidence, history included, is the entry's own. An entry that keeps no
state (:attr:`Misconception.history` false) answers every call as it would fresh, so

* it never explains a failure whose evidence is a sequence of calls on fresh arguments (a repeated-calls
  check: inputs naming ``calls``, or a Mismatch with more than one call to reproduce it); a sequence over
  shared objects (``failing_call``) gives the entry its history in those arguments;
* it explains a failure of the call made last (scalar arguments, the value or exception it gave) only
  if that call fails the same way in a fresh worker whenever the worker had been asked an equal call of
  other types before (``f(True, 3.0)`` after ``f(1, 3.0)``:
  a cache keyed on the value answers the first from the second, a function without input checks
  answers it alike fresh). The fresh worker is started only then, so it costs nothing elsewhere.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..protocol import ProtocolError
from .cell_suite import CellSuite, Property
from .mismatch import Misconception, Mismatch
from .roundtrip import roundtrip
from .signature import same_inputs
from .student import Student, _Aborted
from .verdicts import _FAILING_CALL_INPUT, Failure
from .worker_errors import CallTimeout, StudentError, WorkerCrashed

__all__ = [
    "PROBES_PER_RIVAL",
    "confirm_names",
    "mismatch_failure",
    "name_misconception",
]

#: Inputs, per rival misconception, on which the student's code must agree with the one named.
PROBES_PER_RIVAL = 3


def _predicts(prop: Property, wrong: Misconception, inputs: Mapping[str, Any], got: Any) -> bool:
    ran, output = _output(wrong, inputs)
    if isinstance(output, Mismatch):  # the entry's whole failure: the same inputs, then the same value
        if not same_inputs(output.inputs, inputs):
            return False
        output = output.got
    try:
        return ran and bool(prop.matches(output, got))
    except Exception:  # outputs the property's matcher cannot compare do not match
        return False


def _same_output(prop: Property, first: Any, second: Any) -> bool:
    """Two misconceptions' outputs agree: the same value, or the same failure (inputs and value)."""
    if isinstance(first, Mismatch) or isinstance(second, Mismatch):
        if not (isinstance(first, Mismatch) and isinstance(second, Mismatch)):
            return False
        if not same_inputs(first.inputs, second.inputs):
            return False
        first, second = first.got, second.got
    return bool(prop.matches(first, second))


def _explains(prop: Property, wrong: Misconception, mismatch: Mismatch) -> bool:
    return _predicts(prop, wrong, mismatch.inputs, mismatch.got)


def _output(wrong: Misconception, inputs: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(True, output)`` of ``wrong`` on ``inputs``, or ``(False, None)`` when it cannot run on them.

    The entry runs on copies: an entry whose mistake is to change its argument (emptying
    the caller's list) must not change the inputs the feedback shows or the next one sees.
    """
    try:
        output = wrong.implementation(**copy.deepcopy(dict(inputs)))
        if isinstance(output, Mismatch):
            return True, Mismatch(output.inputs, output.expected, roundtrip(output.got), output.note)
        return True, roundtrip(output)
    except Exception:  # a catalogue entry that cannot run on these inputs does not explain them
        return False, None


def _separating(
    prop: Property, first: Misconception, second: Misconception, pool: Sequence[Mapping[str, Any]], limit: int
) -> list[Mapping[str, Any]]:
    """Up to ``limit`` inputs of ``pool`` on which ``first`` and ``second`` both run and disagree."""
    found = []
    for inputs in pool:
        ran_first, out_first = _output(first, inputs)
        ran_second, out_second = _output(second, inputs)
        if ran_first and ran_second and not _same_output(prop, out_first, out_second):
            found.append(inputs)
            if len(found) == limit:
                break
    return found


def name_misconception(
    prop: Property, evidence: Sequence[Mismatch], student: Student | None = None
) -> Misconception | None:
    """The catalogued mistake the failing examples show, if it is the only explanation; else ``None``.

    A candidate must reproduce the student's output on every failing example seen
    (``evidence``, the reported one first): that rules out every misconception that
    disagrees with the student somewhere, and an uncatalogued mistake shows as no
    candidate at all. Agreeing there is not enough when two mistakes agree on every
    example the search happened to try (``3 * x`` and ``x + 2`` at ``x = 1``): then each
    other candidate is set against it on up to :data:`PROBES_PER_RIVAL` inputs, drawn by
    the property, where the two disagree, and the student's code must answer as the one
    named does there. A rival that cannot be told apart on the drawn inputs, or a
    candidate that cannot be probed (no ``function``, no ``student``, or a property that
    draws no inputs), leaves the failure ambiguous: nothing is named. Candidates are tried
    in order; one the student's code contradicts gives way to the next.
    """
    offered = prop.misconceptions
    if any(_is_a_sequence(example) for example in evidence):
        offered = tuple(w for w in offered if w.history)
    candidates = [w for w in offered if all(_explains(prop, w, example) for example in evidence)]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    if student is None or prop.probe_inputs is None or not all(w.function for w in candidates):
        return None
    pool = prop.probe_inputs()
    for wrong in candidates:
        if _agrees_where_rivals_differ(prop, wrong, candidates, pool, student):
            return wrong
    return None


def _agrees_where_rivals_differ(
    prop: Property,
    wrong: Misconception,
    candidates: Sequence[Misconception],
    pool: Sequence[Mapping[str, Any]],
    student: Student,
) -> bool:
    for rival in candidates:
        if rival is wrong:
            continue
        probes = _separating(prop, wrong, rival, pool, PROBES_PER_RIVAL)
        if not probes:
            return False  # the same output everywhere we can look: either could be the student's
        for inputs in probes:
            if not _student_agrees(prop, wrong, inputs, student):
                return False
    return True


def _student_agrees(prop: Property, wrong: Misconception, inputs: Mapping[str, Any], student: Student) -> bool:
    try:
        # Positional where the stub's signature allows: the student may have renamed a parameter.
        bound = inspect.signature(wrong.implementation).bind(**inputs)
        got = student.call(wrong.function, *bound.args, **bound.kwargs)
    except (TypeError, ValueError, StudentError, _Aborted):
        return False
    return _predicts(prop, wrong, inputs, got)


def mismatch_failure(
    prop: Property,
    mismatch: Mismatch,
    note: str = "",
    evidence: Sequence[Mismatch] = (),
    student: Student | None = None,
) -> Failure:
    """The failure for ``mismatch``, naming a misconception only when it is the only explanation.

    See :func:`name_misconception`: the reported counterexample and every other failing
    example seen while searching (``evidence``) must agree with it, and, where the student's
    code can be probed, so must the inputs that tell it apart from the other misconceptions.
    """
    made = student.made if student is not None else None
    wrong = name_misconception(prop, [mismatch, *evidence], student)
    if wrong is not None and student is not None and not wrong.history and not _stands_alone(
        prop, mismatch, student, made
    ):
        wrong = None
    name, advice = (wrong.name, wrong.advice) if wrong is not None else ("", "")
    notes = " ".join(text for text in (mismatch.note, note) if text)
    return Failure(
        prop.name,
        prop.description,
        "mismatch",
        inputs=mismatch.inputs,
        expected=mismatch.expected,
        got=mismatch.got,
        note=notes,
        misconception=name,
        advice=advice,
        calls=mismatch.calls,
    )


def _is_a_sequence(mismatch: Mismatch) -> bool:
    """Whether ``mismatch``'s evidence is a sequence of calls on fresh arguments (a repeated-calls check: the
    calls share nothing but what the function keeps), not one call. A sequence over shared objects (inputs
    naming the ``failing_call``: Exercise 5's chain and generator) carries its history in those arguments,
    which an entry's implementation is given, so any entry may explain it; so does a sequence whose statements
    pass one name they set up to more than one call (``rng = ...``, then two calls given ``rng``)."""
    if _FAILING_CALL_INPUT in mismatch.inputs or _shares_an_object(mismatch.calls):
        return False
    return "calls" in mismatch.inputs or sum(map(_is_a_call, mismatch.calls)) > 1


def _shares_an_object(statements: Sequence[str]) -> bool:
    """Whether two or more calls of ``statements`` are given one name the statements assign: the calls share
    that object (a generator, a chain), whose state carries the history."""
    assigned: set[str] = set()
    given: dict[str, int] = {}
    for statement in statements:
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            return False  # unreadable: counted as a sequence on fresh arguments, never as fewer calls
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                assigned.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.Call):
                names = {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
                for name in names:
                    given[name] = given.get(name, 0) + 1
    return any(given.get(name, 0) > 1 for name in assigned)


def _is_a_call(statement: str) -> bool:
    """Whether one of :attr:`Mismatch.calls`' statements calls something: ``ks = [1, 2]`` and a bare ``ks``
    (an argument set up, then read back) are one call's evidence, not earlier calls. A statement that does
    not parse counts as a call, so that it never makes a sequence look shorter than it is."""
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        return True
    return any(isinstance(node, ast.Call) for node in ast.walk(tree)) and not all(
        isinstance(node, ast.Assign) for node in tree.body)


def _alike(first: Any, second: Any) -> bool:
    """Equal as a cache compares its keys (``==``: ``True`` and ``1``, ``16.0`` and ``np.int64(16)``); never raises."""
    try:
        if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
            return np.shape(first) == np.shape(second) and bool(np.array_equal(first, second))
        return bool(first == second)
    except Exception:  # values that do not compare are not alike
        return False


#: Arguments a cache keyed on the value compares by ``==`` and hash: numbers, bools, strings, None.
_KEYS = (int, float, complex, str, bytes, type(None), np.number, np.bool_)


def _asked_alike(made: tuple[str, tuple[Any, ...], dict[str, Any]], asked: Sequence[tuple[str, tuple[Any, ...],
                 dict[str, Any]]]) -> bool:
    """Whether ``asked`` holds a call of ``made``'s function with equal arguments of other types or spellings."""
    fn, args, kwargs = made
    spelled = {**{str(i): value for i, value in enumerate(args)}, **kwargs}
    if not all(isinstance(value, _KEYS) for value in spelled.values()):
        return False  # a cache keyed on such a call needs hashable scalars; other calls are not judged so
    for other_fn, other_args, other_kwargs in asked:
        if other_fn != fn or len(other_args) != len(args) or set(other_kwargs) != set(kwargs):
            continue
        other = {**{str(i): value for i, value in enumerate(other_args)}, **other_kwargs}
        if all(_alike(spelled[key], other[key]) for key in spelled) and not same_inputs(spelled, other):
            return True
    return False


def _stands_alone(
    prop: Property, mismatch: Mismatch, student: Student, made: tuple[str, tuple[Any, ...], dict[str, Any]] | None
) -> bool:
    """Whether the failure of the call ``made`` is its own and not what an earlier equal call left behind.

    Without an equal call of other types before it in the worker, it is taken as its own (as it is, when
    the session does not say what it was asked). With one, the call is made again as the first call of
    a fresh worker: its own only if it fails there as here (the same value, or the same exception named).
    """
    asked = student.asked_before()
    if made is None or asked is None or not student.gave(mismatch.got) or not _asked_alike(made, asked):
        return True  # not a failure of the call made last, or no equal call before it: the rule does not apply
    fn, args, kwargs = made
    try:
        fresh: Any = student.call_fresh(fn, *args, **kwargs)
    except StudentError as error:
        return isinstance(mismatch.got, str) and error.type in mismatch.got
    except (NotImplementedError, CallTimeout, WorkerCrashed, ProtocolError, TypeError):
        return False  # no fresh answer to hold the failure to: it is not shown to be the entry's own
    if isinstance(mismatch.got, str) and not isinstance(fresh, str):
        return False
    try:
        return bool(prop.matches(fresh, mismatch.got))
    except Exception:  # outputs the property's matcher cannot compare do not match
        return False


def _shows(named: Sequence[Misconception], grade_id: str, failed: frozenset[str]) -> bool:
    """Whether an answer failing ``failed`` in cell ``grade_id`` fails it as one of ``named``'s entries does."""
    if not named or any(not m.fails for m in named):
        return True  # no kill-table row to hold the answer to: the failing examples decide alone
    return any(grade_id in row and row[grade_id] <= failed for m in named for row in m.fails)


def confirm_names(suite: CellSuite, failures: Sequence[Failure]) -> list[Failure]:
    """``failures`` with each misconception name kept only where the whole cell agrees with it.

    A property names a mistake from its own failing examples (:func:`name_misconception`); two
    mistakes can fail one property on the same input with the same value and part elsewhere.
    The entry's kill-table row (:attr:`Misconception.fails`) says which properties of this cell
    an answer with its mistake fails: a name stays only if the student's answer fails each of
    them too (more is allowed: a second mistake fails more). Otherwise the failure stays, with
    its counterexample, and loses the name and the advice. Decided once every property of the
    cell has run, on the cell's own outcomes alone: what the answer does in other cells (an
    unanswered task, a downstream function written otherwise) never takes a name away here.
    """
    failed = frozenset(f.property for f in failures)
    properties = {p.name: p for p in suite.properties}
    kept = []
    for failure in failures:
        prop = properties.get(failure.property)
        if failure.misconception and prop is not None:
            named = [m for m in prop.misconceptions if m.name == failure.misconception]
            if not _shows(named, suite.grade_id, failed):
                failure = dataclasses.replace(failure, misconception="", advice="")
        kept.append(failure)
    return kept
