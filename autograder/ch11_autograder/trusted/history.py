"""Fresh equals history: what a graded function gives does not depend on the calls made before it.

A contract that says "the result depends on the arguments alone" is broken by an answer that
keeps state between calls: a cache looked up before the input checks (``16.0`` answered with
what ``16`` got, ``True`` with what ``1`` got, where a fresh kernel raises), a running total,
a module-level list handed out and rewritten by the next call. :func:`history_property` builds,
from a suite's declaration of a few good calls of the notebook's graded functions, one
property per tested function that checks two things:

* **Fresh equals history.** A sequence of calls generated from the declared ones (each
  argument replaced in turn by values equal to it of every other number type, by the
  numbers 1 and 0 and their bools, by refused types; the call repeated; the notebook's other
  functions called in between) is made in one fresh fork of the worker; each call of the
  tested function must give what the same call gives alone in another fresh fork: the same
  value bit for bit (type and dtype included) or the same exception type.
* **Results stay what they were.** After the sequence, every value the tested function
  returned is read again where it lives, in the worker (``Call(reread=i)``), and must
  still be what it was when returned: an answer that hands out a shared list, buffer or a
  view into its own state fails.

On a difference the sequence is shrunk: calls are dropped, one at a time, while the
difference remains, and the feedback shows what is left as calls to paste into a fresh kernel
after the notebook's cells. Every sequence is made from the declaration alone, the same for
every submission (no randomness, nothing drawn per student), and a call's fresh outcome is
asked once per distinct call.

The declared calls must be good ones: each must return in a fresh kernel (the reference
does), so an unanswered stub, which raises ``NotImplementedError`` the same way every time,
fails this property as it fails the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..protocol import RngSeed, wire_equal
from .cell_suite import DEFAULT_TIME_BUDGET, Property
from .mismatch import Mismatch
from .student import Student
from .verdicts import format_call
from .worker_batches import Call
from .worker_errors import StudentError

__all__ = ["argument_forms", "history_property", "history_sequence"]

#: Values a number argument is also given: the family of 1 and of 0 (a bool right after its
#: equal number), then refused types. With the argument's own equal-valued forms, these are
#: what a cache keyed on value instead of type answers wrongly.
_UNITS: tuple[Any, ...] = (1, True, np.bool_(True), 0, False, None)


def argument_forms(value: Any) -> list[Any]:
    """``value`` first, then the arguments a call is also given in its place, each once.

    A number: the values equal to it of every other number type (``int``, ``float``, numpy
    ``int64``/``float64``/``float32`` where exact), then the numbers 1 and 0, each followed by
    its bools, and ``None``. A bool: its equal numbers. A string: ``None``. A list or tuple of
    numbers: the other container, and lists whose first item takes each of its forms. A float64
    array: as float32, as a list, and (one dimension) as a row of one, a same-size array of
    another shape. Anything else (chains, generators, records): itself only.
    """
    forms: list[Any] = [value]
    if isinstance(value, bool | np.bool_):
        forms += [int(value), float(value), None]
    elif isinstance(value, int | float | np.integer | np.floating):
        number = float(value)
        if math.isfinite(number):
            forms += [number, np.float64(number)]
            if float(np.float32(number)) == number:
                forms.append(np.float32(number))
            if number.is_integer() and abs(number) < 2**62:
                forms += [int(number), np.int64(int(number))]
        forms += list(_UNITS)
    elif isinstance(value, str):
        forms.append(None)
    elif isinstance(value, list | tuple) and value and isinstance(value[0], int | float | np.integer | np.floating):
        # The sequence in another container, and its first item in each of its own forms.
        rest = list(value[1:])
        forms += [tuple(value) if isinstance(value, list) else list(value)]
        forms += [[first, *rest] for first in argument_forms(value[0])[1:]]
    elif isinstance(value, np.ndarray) and value.dtype == np.float64:
        forms += [value.astype(np.float32), value.tolist()]
        if value.ndim == 1:
            forms.append(value.reshape(1, -1))
    return _distinct(forms)


def _key(value: Any) -> tuple[Any, ...]:
    """What tells two arguments apart: type and exact value (bits for floats and arrays)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float | np.floating):
        return (type(value).__name__, np.asarray(value).tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, bool | int | str | np.integer | np.bool_) or value is None:
        return (type(value).__name__, repr(value))
    return ("object", id(value))


def _distinct(values: Sequence[Any]) -> list[Any]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for v in values:
        k = _key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def call_key(call: Call) -> tuple[Any, ...]:
    """What tells two calls apart (the cache key of their fresh outcomes)."""
    return (call.fn, tuple(_key(a) for a in call.args), tuple((k, _key(v)) for k, v in sorted(call.kwargs.items())))


def _positions(call: Call) -> Iterator[int | str]:
    yield from range(len(call.args))
    yield from call.kwargs


def _at(call: Call, position: int | str) -> Any:
    return call.args[position] if isinstance(position, int) else call.kwargs[position]


def _with(call: Call, position: int | str, value: Any) -> Call:
    if isinstance(position, int):
        args = list(call.args)
        args[position] = value
        return replace(call, args=tuple(args))
    return replace(call, kwargs={**call.kwargs, position: value})


def history_sequence(tested: str, calls: Sequence[Call]) -> list[Call]:
    """The calls the history property makes, in order: each declared call of ``tested``, then
    each of its arguments in every form of :func:`argument_forms` (the others as declared), the
    declared call again, with a call of another declared function after each (round robin)."""
    own = [c for c in calls if c.fn == tested]
    others = [c for c in calls if c.fn != tested]
    turn = 0
    out: list[Call] = []
    for base in own:
        out.append(base)
        for position in _positions(base):
            for form in argument_forms(_at(base, position))[1:]:
                out.append(_with(base, position, form))
                if others:
                    out.append(others[turn % len(others)])
                    turn += 1
        out.append(base)
    return out


@dataclass(frozen=True)
class _Outcome:
    """A call's outcome as compared: the value, or the exception type it raised."""

    value: Any = None
    raised: str = ""

    @classmethod
    def of(cls, got: Any) -> _Outcome:
        return cls(raised=got.type) if isinstance(got, StudentError) else cls(value=got)

    def same(self, other: _Outcome) -> bool:
        if self.raised or other.raised:
            return self.raised == other.raised
        return wire_equal(self.value, other.value)

    def shown(self) -> Any:
        return f"raised {self.raised}" if self.raised else self.value


def _pasted(value: Any) -> Any:
    """An argument as the call a student pastes shows it: a seed as the generator it stands for."""
    return _Source(f"np.random.default_rng({value.seed})") if isinstance(value, RngSeed) else value


class _Source(str):
    """Text shown as it is (``format_value`` shows a plain string quoted)."""

    def __repr__(self) -> str:
        return str(self)


def _call_text(call: Call) -> str:
    return format_call(call.fn, [_pasted(a) for a in call.args], {k: _pasted(v) for k, v in call.kwargs.items()})


def _shown_calls(calls: Sequence[Call]) -> str:
    return "; ".join(_call_text(c) for c in calls)


class _Run:
    """One submission's history check for ``tested``: fresh outcomes asked once per distinct call."""

    def __init__(self, student: Student, tested: str) -> None:
        self.student = student
        self.tested = tested
        self.alone: dict[tuple[Any, ...], _Outcome] = {}

    def fresh_alone(self, calls: Sequence[Call]) -> list[_Outcome]:
        """Each call's outcome made first in a fresh kernel, one fork per distinct call."""
        wanted = {call_key(c): c for c in calls if call_key(c) not in self.alone}
        if wanted:
            made = self.student.fresh(list(wanted.values()), apart=True)
            self.alone.update(zip(wanted, map(_Outcome.of, made), strict=True))
        return [self.alone[call_key(c)] for c in calls]

    def in_sequence(self, calls: Sequence[Call]) -> tuple[list[_Outcome], dict[int, _Outcome]]:
        """Each call's outcome in one fresh sequence, and the tested calls' returned values read again at its end."""
        tested = [i for i, c in enumerate(calls) if c.fn == self.tested]
        rereads = [Call(calls[i].fn, reread=i) for i in tested]
        got = self.student.fresh([*calls, *rereads])
        outcomes = [_Outcome.of(g) for g in got[: len(calls)]]
        return outcomes, {i: _Outcome.of(g) for i, g in zip(tested, got[len(calls) :], strict=True)}

    def differs(self, calls: Sequence[Call], index: int) -> _Outcome | None:
        """Call ``index``'s outcome in the sequence ``calls`` when it is not its fresh outcome alone."""
        outcomes, _ = self.in_sequence(calls)
        return None if outcomes[index].same(self.fresh_alone([calls[index]])[0]) else outcomes[index]

    def deterministic(self, call: Call) -> bool:
        """Whether ``call`` gives one outcome in a fresh kernel: made alone once more and compared.

        A call whose answer is random by the contract's own terms (a seed of ``None`` handed to
        ``default_rng``) says nothing about earlier calls, and is left out."""
        return self.fresh_alone([call])[0].same(_Outcome.of(self.student.fresh([call])[0]))

    def changed(self, calls: Sequence[Call], index: int) -> tuple[_Outcome, _Outcome] | None:
        """What call ``index`` returned and what that object holds after ``calls``, when they differ."""
        outcomes, reread = self.in_sequence(calls)
        if outcomes[index].raised or index not in reread or reread[index].same(outcomes[index]):
            return None
        return outcomes[index], reread[index]


def _shrunk(calls: list[Call], index: int, keep: Callable[[list[Call], int], bool]) -> tuple[list[Call], int]:
    """``calls`` with every call but ``index`` dropped, one at a time from the end, while ``keep`` still holds."""
    position = len(calls) - 1
    while position >= 0:
        if position != index:
            candidate = calls[:position] + calls[position + 1 :]
            moved = index - (position < index)
            if keep(candidate, moved):
                calls, index = candidate, moved
        position -= 1
    return calls, index


def history_property(
    tested: str,
    calls: Sequence[Call],
    *,
    name: str | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> Property:
    """The property that ``tested``'s calls give what they give in a fresh kernel and their results stay.

    Args:
        tested: the graded function this property holds to the contract.
        calls: good calls of the notebook's graded functions (at least one of ``tested``), each
            returning in a fresh kernel; the sequence is generated from them
            (:func:`history_sequence`), the others called in between.
        name: the property's name (default ``"<tested>_history"``).
        time_budget: as for :class:`Property`.
    """
    calls = tuple(calls)
    if not any(c.fn == tested for c in calls):
        raise ValueError(f"history_property({tested!r}): no declared call of {tested}")
    sequence = history_sequence(tested, calls)

    def check(student: Student) -> None:
        run = _Run(student, tested)
        declared = [c for c in calls if c.fn == tested]
        for call, alone in zip(declared, run.fresh_alone(declared), strict=True):
            if alone.raised:
                shown = _call_text(call)
                note = f"{shown} must return in a fresh kernel."
                raise Mismatch({"calls": shown}, "a value", alone.shown(), note=note)
        outcomes, reread = run.in_sequence(sequence)
        mine = [i for i, c in enumerate(sequence) if c.fn == tested]  # the other functions' calls only come between
        fresh = dict(zip(mine, run.fresh_alone([sequence[i] for i in mine]), strict=True))
        for index in mine:
            call, got, alone = sequence[index], outcomes[index], fresh[index]
            if not got.same(alone) and run.deterministic(call):
                kept, at = _shrunk(list(sequence[: index + 1]), index, lambda c, i: run.differs(c, i) is not None)
                differing = run.differs(kept, at) or got
                shown = _shown_calls(kept)
                raise Mismatch(
                    {"calls": shown},
                    alone.shown(),
                    differing.shown(),
                    note=f"in a fresh kernel after your notebook's cells, run {shown}: the last call should give "
                    "what it gives alone in a fresh kernel (expected), but the calls before it changed its "
                    "answer (got). The result may depend on the arguments only, never on earlier calls.",
                    calls=tuple(_call_text(c) for c in kept),
                )
        for index, call in enumerate(sequence):
            if call.fn != tested or index not in reread or outcomes[index].raised:
                continue
            if not reread[index].same(outcomes[index]) and run.deterministic(call):
                kept, at = _shrunk(list(sequence), index, lambda c, i: run.changed(c, i) is not None)
                found = run.changed(kept, at)
                returned, later = found if found is not None else (outcomes[index], reread[index])
                shown = _shown_calls(kept)
                first = _call_text(kept[at])
                raise Mismatch(
                    {"calls": shown},
                    returned.shown(),
                    later.shown(),
                    note=f"in a fresh kernel after your notebook's cells, run {shown}: what {first} returned "
                    "(expected) no longer holds the same after the calls that follow it (got). Return a new "
                    "object each call, never one your code keeps and changes later.",
                    calls=tuple(_call_text(c) for c in kept),
                )

    return Property(
        name or f"{tested}_history",
        f"Each call of {tested} gives what it gives in a fresh kernel, whatever was called before it (equal "
        "arguments of other types, bools, bad arguments, the notebook's other functions), and what it "
        "returned still holds the same after later calls.",
        check,
        time_budget=time_budget,
    )
