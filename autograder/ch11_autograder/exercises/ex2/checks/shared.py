"""What more than one of Exercise 2's cells uses: points, bad arguments, bit comparison, the raises
property and the check that every call's answer is the one a fresh worker gives.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from copy import deepcopy
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import strategies as st

from ....api.suite import (
    Call,
    Laid,
    Misconception,
    Mismatch,
    Once,
    Property,
    Record,
    Student,
    StudentError,
    Unencodable,
    call_statement,
    wire_equal,
)
from ...catalogue import catalogue, in_order, misconception
from ..contract import GRADED_HIGH, GRADED_K_MAX, GRADED_LOW, TOLERANCE_EXPONENT

TOL = 2.0**-TOLERANCE_EXPONENT

_G = ref.GENERIC_POINT


def _as_sent(value: Any) -> Any:
    """``value`` as the worker passes it to the student's function: a fresh generator where a ``Once`` was sent,
    the array in its memory layout where a ``Laid`` was."""
    if isinstance(value, Laid):
        return value.array()
    return iter(value.items) if isinstance(value, Once) else value


def _as_the_worker_calls(implementation: Callable[..., Any]) -> Callable[..., Any]:
    """``implementation`` given its arguments as the worker would give them (see :func:`_as_sent`).

    The engine already hands a misconception deep copies of the inputs, so a catalogued answer
    that changes its ``ks`` cannot change what feedback shows.
    """

    @functools.wraps(implementation)
    def run(*args: Any, **kwargs: Any) -> Any:
        return implementation(*map(_as_sent, args), **{k: _as_sent(v) for k, v in kwargs.items()})

    return run


#: Entries whose output depends on the calls made before (a memo in a shared default). Run in the
#: trusted process to name a mistake, they would answer from whatever state earlier naming attempts
#: left there, so the name would depend on what else the grading process graded: they are
#: catalogued and must lose points, but are never offered as a misconception.
STATEFUL = frozenset({"sweep_caches_exact_by_point"})


def _misconceptions(replaces: str, first: Sequence[str] = ()) -> tuple[Misconception, ...]:
    """Catalogue entries for ``replaces`` as misconceptions, entries named in ``first`` tried first."""
    live = (e for e in catalogue("ex2") if e.replaces == replaces and e.name not in STATEFUL)
    entries = in_order("ex2", live, first)
    return tuple(m.rewrapped(_as_the_worker_calls, keep_function=True) for m in map(misconception, entries))


# --------------------------------------------------------------------------- comparisons


def _is_float32_scalar(value: Any) -> bool:
    return isinstance(value, np.generic) and value.dtype == np.float32


def _float_bits_equal(a: Any, b: Any) -> bool:
    """Same dtype and shape, nan at the same places, the same bytes everywhere else."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and a[~nan].tobytes() == b[~nan].tobytes())


def same_bits(a: Any, b: Any) -> bool:
    """Whether two decoded answers are the same bit for bit (any nan equals any nan).

    Clause properties compare the student's answer with the student's own answer to an
    equivalent call, so there is no tolerance to allow: a stateless function that reads its
    defaults as documented gives identical bits. ``wire_equal`` would let ``-0.0`` pass for
    ``0.0``.
    """
    if isinstance(a, Record) or isinstance(b, Record):
        return (
            isinstance(a, Record)
            and isinstance(b, Record)
            and a.type == b.type
            and list(a.fields) == list(b.fields)
            and all(same_bits(a[name], b[name]) for name in a.fields)
        )
    floating = (np.ndarray, np.floating)
    if isinstance(a, floating) and isinstance(b, floating) and np.asarray(a).dtype.kind == "f":
        return _float_bits_equal(a, b)
    if type(a) is float and type(b) is float:
        return _float_bits_equal(np.float64(a), np.float64(b))
    return wire_equal(a, b)


def _fixed_property(
    name: str,
    description: str,
    cases: Iterable[Mapping[str, Any]],
    ask: Callable[..., Call],
    judge: Callable[..., None],
    misconceptions: Sequence[Misconception],
    matches: Callable[[Any, Any], bool],
) -> Property:
    """A property over a fixed list of cases, judged in order (the first failing one is reported).

    ``ask(**case)`` is the case's call, ``judge(got, **case)`` raises :class:`Mismatch` on a wrong
    answer. The calls go in one message; the answers are judged as they come, in order, so the
    failure reported is the one the calls made one by one would show.
    """
    fixed = [dict(case) for case in cases]

    def run(student: Student) -> None:
        replies = student.batch([ask(**case) for case in fixed])
        for case in fixed:
            judge(replies.take(), **case)

    # The cases themselves tell two catalogued mistakes apart when both explain the failure.
    return Property(name, description, run, tuple(misconceptions), matches, probe_inputs=lambda: fixed)


def _probing(prop: Property, flatten: Callable[..., dict[str, Any]]) -> Property:
    """``prop`` probing with its drawn inputs as the student's function takes them.

    A property may draw helpers (a whole case, the form of k or ks) that are not arguments of
    the function; ``flatten(**drawn)`` turns each drawn input into the call a misconception
    and the student's code are probed with, so two mistakes that agree on every failing
    example can still be told apart.
    """
    drawn = prop.probe_inputs
    if drawn is None:
        return prop
    return dataclasses.replace(prop, probe_inputs=lambda: [flatten(**inputs) for inputs in drawn()])


#: A call of a raises property: (args, kwargs, the exception class it raises or ``None``: it returns).
RaisesCase = tuple[tuple[Any, ...], Mapping[str, Any], str | None]


def _call_inputs(args: Sequence[Any], kwargs: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The call's arguments by parameter name, as feedback shows them."""
    return {**dict(zip(names, args, strict=False)), **kwargs}


def _outcome(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``'s value, or the name of the exception it raises (how a raises property reports it)."""

    def run(**kwargs: Any) -> Any:
        try:
            return function(**kwargs)
        except Exception as exc:  # the catalogue entry's own exception is its answer here
            return type(exc).__name__

    return run


def _same_outcome(want: Any, got: Any, same: Callable[[Any, Any], bool]) -> bool:
    """Both raised the same exception (class names), or both returned the same value under ``same``."""
    if isinstance(want, str) or isinstance(got, str):
        return isinstance(want, str) and isinstance(got, str) and want == got
    return same(want, got)


def _raises_property(
    name: str,
    description: str,
    fn: str,
    names: Sequence[str],
    cases: Sequence[RaisesCase],
    same: Callable[[Any, Any], bool],
    misconceptions: Sequence[Misconception] = (),
) -> Property:
    """Each call ``fn(*args, **kwargs)`` raises exactly the exception class named next to it.

    A case naming no exception (``None``) is a value the contract accepts next to the bad
    ones (a range's end, a numpy integer, a tuple of ks): it must not raise, and where it is
    another form of plainer arguments (:func:`_plain`) it must give the bits the student's own
    function gives for those. Its value is the value properties' business, so a wrong answer
    that is wrong alike in every form passes here. A raised exception is reported by its class
    name, and ``misconceptions`` are compared the same way, under ``same``.
    """

    # Each case's call, followed by the plain form's call where the case is another form of it. The
    # plain call is made one by one only when the case's call returned, and a case that raises where
    # it should return fails the property there: so in one message it comes right after its case.
    plan: list[tuple[dict[str, Any], str | None, Call | None]] = []
    calls: list[Call] = []
    for args, kwargs, error in cases:
        inputs = _call_inputs(args, kwargs, names)
        plain_call = None
        if error is None:
            plain_args, plain_kwargs = _plain(args), {k: _plain(v) for k, v in kwargs.items()}
            if _call_key(_call_inputs(plain_args, plain_kwargs, names)) != _call_key(inputs):
                plain_call = Call(fn, tuple(plain_args), plain_kwargs)
        plan.append((inputs, error, plain_call))
        calls += [Call(fn, tuple(args), dict(kwargs)), *([plain_call] if plain_call else [])]

    def run(student: Student) -> None:
        replies = student.batch(calls, stop_on_error=False)
        for inputs, error, plain_call in plan:
            try:
                got = replies.take()
            except Unencodable:
                raise  # not a raise: a value the grader cannot read fails the property as it is
            except StudentError as exc:
                if exc.type != error:
                    want = error or "a value"
                    promise = f"raises {error}" if error else "accepts this"
                    note = f"the contract {promise} here; your code raised {exc.type}: {exc.message}"
                    raise Mismatch(inputs, want, exc.type, note) from None
                continue
            if error is not None:
                raise Mismatch(inputs, error, got, f"the contract raises {error} here; use the provided input checks")
            if plain_call is None:
                continue
            own = replies.take()
            if not same_bits(own, got):
                plain = ", ".join(repr(v) for v in (*plain_call.args, *plain_call.kwargs.values()))
                note = f"the contract accepts this argument: the answer must be the one your code gives for ({plain})"
                raise Mismatch(inputs, own, got, note)

    wrapped = [m.rewrapped(_outcome) for m in misconceptions]
    return Property(name, description, run, tuple(wrapped), lambda want, got: _same_outcome(want, got, same))


def _plain(value: Any) -> Any:
    """``value`` in the plainest form the contract treats alike: Python ints and floats, lists for sequences.

    A numpy float becomes the Python float of the same value (exact for float32 and float64),
    a numpy integer an int, a tuple or integer array a list; everything else is unchanged.
    """
    if isinstance(value, np.bool_ | bool):
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, tuple | list | np.ndarray) and not isinstance(value, str):
        return [_plain(v) for v in value]
    return value


def _bad_arguments(
    valid: Mapping[str, Any], bad: Mapping[str, Sequence[tuple[Any, str]]], names: Sequence[str]
) -> list[RaisesCase]:
    """One call per bad value: ``valid`` positionally up to that argument, the bad value in its place."""
    calls: list[RaisesCase] = []
    for argument, values in bad.items():
        for value, error in values:
            args = tuple(value if n == argument else valid[n] for n in names)
            calls.append((args, {}, error))
    return calls


# --------------------------------------------------------------------------- strategies

_FLOAT32_POINT = st.floats(GRADED_LOW, GRADED_HIGH, width=32)
_K = st.integers(1, GRADED_K_MAX)
_SCHEME = st.sampled_from(ref._SCHEMES)
_WRT = st.sampled_from(ref._VARIABLES)


#: The forms of a real number the contract accepts for x and y: Python and numpy floats and ints.
_REAL_FORMS: tuple[Callable[[float], Any], ...] = (float, np.float32, np.float64)
_INT_FORMS: tuple[Callable[[int], Any], ...] = (int, np.int64, np.int32)


def _real_in_form(values: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    """``values`` sent as a Python float, np.float32 or np.float64, or a whole number as int, np.int64 or np.int32."""
    as_float = st.tuples(values, st.sampled_from(_REAL_FORMS)).map(lambda pair: pair[1](pair[0]))
    whole = st.tuples(st.integers(1, 4), st.sampled_from(_INT_FORMS)).map(lambda pair: pair[1](pair[0]))
    return st.one_of(as_float, whole)

# --------------------------------------------------------------------------- shared checks


T, V = "TypeError", "ValueError"
#: Bad values of a real argument: what the docstrings refuse and with which exception.
_BAD_REAL = ((True, T), (np.bool_(True), T), ("2.5", T), (None, T), ([2.5], T), (math.nan, V), (math.inf, V))
#: The same for x and y of fd_estimate and fd_sweep, which must also be finite once rounded to float32.
_BAD_REAL_F32 = (*_BAD_REAL, (-math.inf, V), (1e39, V))
_BAD_CHOICE = (("backward", V), ("Forward", V), ("", V), (None, V), (1, V))


def _fresh(function: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of ``function`` with its own copy of its default values (a memo in a default starts empty)."""
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        deepcopy(function.__defaults__),
        function.__closure__,
    )
    copy.__kwdefaults__ = deepcopy(function.__kwdefaults__)
    return copy


def _replayed(misconceptions: Sequence[Misconception]) -> tuple[Misconception, ...]:
    """``misconceptions`` for a call sequence: each replays ``calls`` on a fresh copy, returning the last answer."""

    def replay(implementation: Callable[..., Any]) -> Callable[..., Any]:
        # The catalogue's own function, not a wrapper: a fresh copy must own fresh defaults (a memo).
        fresh_from = inspect.unwrap(implementation)

        def run(calls: Sequence[Mapping[str, Any]]) -> Any:
            fresh = _fresh(fresh_from)
            return [fresh(**deepcopy(call)) for call in calls][-1]

        return run

    return tuple(m.rewrapped(replay) for m in misconceptions)


def _call_key(call: Mapping[str, Any]) -> str:
    """One key per distinct call (reprs keep types apart: 2.1 and np.float32(2.1) are different calls)."""
    return repr([(name, type(value).__name__, value) for name, value in sorted(call.items())])


_STATE_NOTE = (
    "the same arguments gave another answer when asked fresh, earlier in this check: "
    "does your code keep state between calls?"
)


def _check_calls(
    student: Student,
    fn: str,
    calls: Sequence[Mapping[str, Any]],
    answer: Callable[[Mapping[str, Any], Any], Any] | None = None,
    *,
    watch: bool = False,
) -> None:
    """Each call of ``calls`` answers as the student's own code did for the same arguments asked fresh.

    First every distinct call is asked once, in order of first appearance: the student's own
    answers. Then ``calls`` run in their drawn order, repeats included, and each must give the
    bits of its fresh answer. A function that is wrong the same way every time passes: its
    values are the value properties' business. The mismatch reports every call made up to it,
    so a catalogued mistake can be replayed on a fresh copy. ``answer(call, reply)`` reads one
    reply (default: the value itself; ``watch``: the calls are watched, and it gets a ``Watched``).

    All of them go in one message and are judged in the order they are made, so the failure
    reported is the one the calls made one by one would show.
    """
    read = answer or (lambda call, reply: reply)
    firsts: dict[str, Mapping[str, Any]] = {}
    for call in calls:
        firsts.setdefault(_call_key(call), call)
    asked = [*firsts.values(), *calls]
    replies = student.batch([Call(fn, kwargs=call, watch=watch) for call in asked])
    fresh: dict[str, Any] = {}
    made: list[Mapping[str, Any]] = []
    for call in firsts.values():
        made.append(call)
        fresh[_call_key(call)] = read(call, replies.take())
    for call in calls:
        made.append(call)
        got = read(call, replies.take())
        want = fresh[_call_key(call)]
        if not same_bits(want, got):
            raise Mismatch({"calls": list(made)}, want, got, _STATE_NOTE,
                           calls=tuple(call_statement(fn, kwargs=c) for c in made))


@st.composite
def _call_sequence(draw: st.DrawFn, cases: st.SearchStrategy[Any], pool: int = 3) -> list[Any]:
    """Up to ``pool`` distinct cases, each called once in a drawn order, then some of them again."""
    drawn = draw(st.lists(cases, min_size=2, max_size=pool))
    order = draw(st.permutations(range(len(drawn))))
    again = draw(st.lists(st.integers(0, len(drawn) - 1), min_size=1, max_size=4))
    return [drawn[i] for i in (*order, *again)]


#: fd_estimate's steps that round, for the explicit examples: float32(2.2) has an odd last bit,
#: so x + 2**-23 and x - 2**-23 are ties that round away; 0.99999994 + 2**-24 crosses up into [1, 2).
_F22 = float(np.float32(2.2))


def _defaults_calls(
    fn: str,
    names: Sequence[str],
    defaults: Mapping[str, Any],
    case: Mapping[str, Any],
    form: tuple[tuple[str, ...], tuple[str, ...]],
) -> tuple[dict[str, Any], list[Call]]:
    """(inputs as passed, [the call in ``form``, the call with every argument given]), made in that order.

    The argument ``form`` leaves out takes its documented default in the explicit call, the
    others keep ``case``'s values; the explicit call passes the first three positionally and
    the defaulted ones by keyword, as the docstring spells the call. Nothing is judged between
    the two, so they travel together.
    """
    positional, keywords = form
    passed = {**{n: case[n] for n in positional}, **{n: case[n] for n in keywords}}
    explicit = {n: passed.get(n, defaults.get(n)) for n in names}
    return passed, [
        Call(fn, tuple(case[n] for n in positional), {n: case[n] for n in keywords}),
        Call(fn, tuple(explicit[n] for n in names if n not in defaults), {n: explicit[n] for n in defaults}),
    ]
