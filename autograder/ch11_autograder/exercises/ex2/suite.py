"""Hidden suites of Exercise 2: a binary32 finite-difference check of the opening gradient.

Three autograded cells of ``ex2_finite_difference.ipynb``:

* ``ex2_exact_gradient_tests`` (2 points): ``exact_gradient`` against the
  exact gradient, to a relative ``2**-TOLERANCE_EXPONENT`` per component;
* ``ex2_fd_estimate_tests`` (4 points): ``fd_estimate`` against the
  reference bit for bit (the harness fixes the operation order inside ``L``
  and the contract fixes it outside, so binary32 leaves no freedom), dtype
  ``float32``;
* ``ex2_fd_sweep_tests`` (4 points): ``fd_sweep`` field by field (see
  :func:`sweep_difference`).

Tolerances (one number, ``TOL = 2**-44``, also stated in the notebook):

* The three errors of a sweep are exact values rounded once in the reference.
  A student may compute them in float64 instead of fractions. Evaluating the
  quotient ``Q`` over two float32 points in float64 costs at most about
  ``8 u64 max|L| / h_eff`` (four rounded operations per ``L``, two values;
  ``u64 = 2**-53``); the float64 derivative adds ``~u64 |dL|``. So each error
  may differ from the reference by ``TOL * (max|L|/h_eff + |dL|)``; over 150
  random points x 4 schemes x k = 1..26, plain float64 stayed below
  ``2**-51.3`` times that scale (``2**7`` inside the bound). A quotient
  evaluated in float32 is off by about ``2**-24`` times the scale (measured:
  every sweep over k = 1..24 has a k where it is off by more than
  ``2**-23.9`` of it), ``2**20`` times the allowance, so "truncation computed
  in float32" cannot pass. This absolute allowance is relative to the
  *rounding* scale, so at tiny truncation errors (central, large k) float64
  cannot resolve them and the suite does not ask it to.
* ``exact`` (the derivative in the sweep) and ``exact_gradient``: relative
  ``TOL``; the chapter's float64 reverse sweep is within ``2**-51.9``
  (measured), a float32 one is ``~2**-24`` off.
* Everything else (``x, y, ks, h, h_eff, estimate, best_k``, the estimate of
  ``fd_estimate``) is compared exactly: bits and dtypes.

Inputs stay where the contract says the applied step is exact (Sterbenz):
``0.5 <= v <= 4`` and, for the central scheme, ``3 h <= v``. There the exact
``Q`` is the same whether divided by the points' exact distance or by the
float32 ``h_eff``. (``fd_estimate`` alone is graded beyond: its bits are defined
wherever the step rounds.)

Where the bit search looks. Answers that get the applied step *almost* right
(divide by ``h`` or ``2h``; take the central step as ``2 (fl(v+h) - v)``; take
the distance of the points in float64; multiply by ``1/h_eff``) agree with the
contract wherever ``fl(v+h)``, ``fl(v-h)`` are exact and ``h_eff`` is a power
of two, i.e. almost everywhere. ``estimate_bits_at_float32_points`` therefore
draws three cases in four from the families where they differ (see
``_rounding_steps``): ``v + h`` crossing up into the next binade at an odd last
bit, steps of an ulp of ``v`` or less at either parity, and central steps wider
than ``v/3``. Measured over 40 hypothesis seeds per answer (generated examples
only, no explicit ones), the share of seeds that expose each answer, before
(uniform points and k, 120 examples) and now (200 examples):

==================================  ==================  ======  ====
answer                              differs (uniform)   before  now
==================================  ==================  ======  ====
nominal ``h`` or ``2h``             3.33%               98%     100%
central step ``2 (fl(v+h) - v)``    0.78%               45%     100%
step distance in float64            0.12%               2%      100%
times ``1/h_eff``                   0.05%               0%      98%
==================================  ==================  ======  ====

So a 1%-rare difference, found by under half of the seeds before, is found by
every one now. Command: ``.venv/bin/python -m pytest -p no:cacheprovider
tests/autograder/suites/test_ex2.py -s -k bit_search`` (the test also asserts
at least 95% for each).

Contract clauses beyond the value: every Raises entry per argument (bools,
numpy bools, strings, None, nan, inf, a float32 overflow, k outside [0, 149],
unknown choices, an empty ks of each form), every default left out, Python and
numpy floats and ints for x, y and k, ks as lists, tuples, int64/int32 arrays
and lists of numpy ints (ranges and generators have no wire form, so only the
default ks is a range), and sequences of calls with repeats in drawn orders.
``exact_partial`` returns a ``Fraction``, which has no wire form either: its
type is proven by the worker's refusal to send it, its value is seen only
through ``exact_gradient`` and the sweep. :data:`CONTRACT` maps every clause
to its properties.

Each property judges its own clause, so a single mistake costs only the
properties it breaks (as in Exercise 3). Values are compared with the
reference only in the value properties. The defaults properties compare a call
that leaves arguments out with the student's own call that passes the
documented defaults, bit for bit; the accepted forms in the ``rejects``
properties (a numpy ``k``, a tuple of ks) with the student's own answer for
the plain form; the ``calls_independent`` properties every answer with the
student's own answer for the same arguments asked fresh earlier in the
property. A function wrong the same way every time passes those. One limit:
a memo that keeps the first value it computed for a key answers each call the
same way from then on, so only a value property sees it (the worker's calls at
one point with both inputs make ``sweep_caches_exact_by_point`` visible there).
``sweep_calls_independent`` also watches ``ks`` (lists and int64 arrays, the
mutable forms): a sweep must leave the caller's ks as it was.

Where a property makes several calls in a row (per example, or over its fixed list), they
travel in one message and the answers are judged in the order the calls were made
(``Student.batch`` says why the reported failure is the one single calls would report).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from copy import deepcopy
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import assume
from hypothesis import strategies as st
from trainable_harness import opening_objective_exact

from ...api.suite import (
    Call,
    CellSuite,
    Misconception,
    Mismatch,
    Once,
    Property,
    Record,
    Student,
    StudentError,
    Unencodable,
    Watched,
    hypothesis_property,
    register,
    roundtrip,
    wire_equal,
)
from ..catalogue import catalogue, in_order, misconception
from .contract import (
    ESTIMATE_TESTS,
    GRADED_HIGH,
    GRADED_K_MAX,
    GRADED_LOW,
    GRADIENT_TESTS,
    POINTS,
    SWEEP_TESTS,
    TOLERANCE_EXPONENT,
)

__all__ = [
    "ESTIMATE_SUITE",
    "GRADIENT_SUITE",
    "SWEEP_SUITE",
    "TOL",
    "estimate_difference",
    "gradient_difference",
    "same_bits",
    "sweep_difference",
]

TOL = 2.0**-TOLERANCE_EXPONENT

_G = ref.GENERIC_POINT
_FIELDS = tuple(ref.FDSweep.__dataclass_fields__)
_FLOAT32_FIELDS = ("h", "h_eff", "estimate")
_ERROR_FIELDS = ("total_error", "truncation_error", "rounding_error")


def _as_sent(value: Any) -> Any:
    """``value`` as the worker passes it to the student's function: a fresh generator where a ``Once`` was sent."""
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
    return tuple(
        dataclasses.replace(m, implementation=_as_the_worker_calls(m.implementation))
        for m in map(misconception, entries)
    )


# --------------------------------------------------------------------------- comparisons


def _is_float32_scalar(value: Any) -> bool:
    return isinstance(value, np.generic) and value.dtype == np.float32


def estimate_difference(want: Any, got: Any) -> str:
    """Why ``got`` is not the binary32 estimate ``want`` (an ``np.float32``); ``""`` when it is."""
    if not _is_float32_scalar(got):
        kind = f"numpy {got.dtype.name}" if isinstance(got, np.generic) else type(got).__name__
        return f"the estimate must be an np.float32 scalar, got a {kind}: is a float64 value mixed in?"
    if np.isnan(want):
        return "" if np.isnan(got) else (
            "the contract's float32 operations give nan here (the applied step fl(v+h) - (other point) is 0, "
            "or L overflows float32 at both points)"
        )
    if np.isnan(got):
        return "the applied step is not 0 here, so the estimate is a number, not nan"
    if got.tobytes() != want.tobytes():
        if np.isinf(want) or np.isinf(got):
            return "L overflows float32 at one of the points here: the contract's float32 operations give " + (
                f"{float(want)!r}" if np.isinf(want) else "a finite value"
            )
        return "the binary32 bits differ: follow the docstring's operations one float32 operation at a time"
    return ""


def _same_estimate(want: Any, got: Any) -> bool:
    # A misconception's output need not be float32 (a float64 leak): then it must match exactly.
    return estimate_difference(want, got) == "" if _is_float32_scalar(want) else wire_equal(want, got)


def gradient_difference(want: np.ndarray, got: Any) -> str:
    """Why ``got`` is not ``exact_gradient``'s answer ``want`` within the tolerance; ``""`` when it is."""
    if not isinstance(got, np.ndarray) or got.dtype != np.float64 or got.shape != (2,):
        return "return a float64 numpy array of shape (2,): (dL/dx, dL/dy)"
    for i, name in enumerate(("dL/dx", "dL/dy")):
        if not abs(float(got[i]) - float(want[i])) <= TOL * abs(float(want[i])):
            return f"{name} is off by more than a relative 2**-{TOLERANCE_EXPONENT}"
    return ""


def _same_gradient(want: Any, got: Any) -> bool:
    return isinstance(want, np.ndarray) and gradient_difference(want, got) == ""


def _error_scales(want: Record) -> list[float]:
    """Per k: ``max|L|`` over the two evaluation points over ``h_eff``, plus ``|dL|`` (nan where no step)."""
    scales = []
    exact = abs(float(want["exact"]))
    for h in want["h"]:
        upper, lower, h_eff = ref._points(want["x"], want["y"], h, want["scheme"], want["wrt"])
        if h_eff == 0:
            scales.append(math.nan)
            continue
        # The points are float32; float() of each is exact, and the exact objective takes floats.
        size = max(abs(opening_objective_exact(*map(float, upper))), abs(opening_objective_exact(*map(float, lower))))
        scales.append(float(size / Fraction(float(h_eff))) + exact)
    return scales


def _at(ks: np.ndarray, i: int) -> str:
    return f"at k = {int(ks[i])} (position {i})"


def _array_difference(name: str, want: np.ndarray, got: Any, ks: np.ndarray, dtype: str) -> str:
    if not isinstance(got, np.ndarray) or got.dtype.name != dtype or got.shape != want.shape:
        shown = f"{got.dtype.name} array of shape {got.shape}" if isinstance(got, np.ndarray) else type(got).__name__
        return f"{name} must be a {dtype} array of shape {want.shape}, got a {shown}"
    return ""


def sweep_difference(want: Any, got: Any) -> tuple[str, str]:
    """The first field where ``got`` breaks the sweep contract, and why; ``("", "")`` when it holds.

    ``want`` is the reference sweep as it crosses the wire (a ``Record``).
    ``x, y, scheme, wrt, ks, h, h_eff, estimate`` and ``best_k`` must be
    equal (arrays: same dtype, shape and bits; ``nan`` where ``nan``); the
    errors within ``TOL`` times their scale (:func:`_error_scales`), ``nan``
    exactly where the reference has ``nan``; ``exact`` within a relative
    ``TOL``. ``best_k`` may be a Python int or a numpy integer.
    """
    if not isinstance(got, Record) or got.type != "FDSweep":
        kind = f"record of type {got.type!r}" if isinstance(got, Record) else type(got).__name__
        return "", f"return an FDSweep (the record provided in the notebook), got a {kind}"
    if set(got.fields) != set(_FIELDS):
        return "", f"an FDSweep has the fields {', '.join(_FIELDS)}"
    for name in ("x", "y"):
        if not (_is_float32_scalar(got[name]) and got[name].tobytes() == want[name].tobytes()):
            return name, f"{name} is the float32 point actually used: np.float32({float(want[name])!r})"
    for name in ("scheme", "wrt"):
        if not (isinstance(got[name], str) and got[name] == want[name]):
            return name, f"{name} records the choice made: {want[name]!r}"
    ks = want["ks"]
    problem = _array_difference("ks", ks, got["ks"], ks, "int64")
    if problem:
        return "ks", problem
    if not np.array_equal(got["ks"], ks):
        return "ks", "ks lists the exponents in the order given, duplicates kept"
    for name in _FLOAT32_FIELDS:
        problem = _array_difference(name, want[name], got[name], ks, "float32")
        if problem:
            return name, problem
        for i, (w, g) in enumerate(zip(want[name], got[name], strict=True)):
            if not (w.tobytes() == g.tobytes() or (np.isnan(w) and np.isnan(g))):
                hint = " (the sweep records what fd_estimate returns: check fd_estimate first)"
                return name, f"{name} {_at(ks, i)}: expected {w!r}, got {g!r}" + (hint if name == "estimate" else "")
    exact = got["exact"]
    if isinstance(exact, bool) or not isinstance(exact, float | np.float64):
        return "exact", f"exact is the derivative as a float64 (a Python float), got {type(exact).__name__}"
    if not abs(float(exact) - float(want["exact"])) <= TOL * abs(float(want["exact"])):
        return "exact", f"exact is off by more than a relative 2**-{TOLERANCE_EXPONENT}: expected {want['exact']!r}"
    scales = _error_scales(want)
    for name in _ERROR_FIELDS:
        problem = _array_difference(name, want[name], got[name], ks, "float64")
        if problem:
            return name, problem
        for i, (w, g, scale) in enumerate(zip(want[name], got[name], scales, strict=True)):
            if np.isnan(w) or np.isnan(g):
                if not (np.isnan(w) and np.isnan(g)):
                    why = (
                        "it is nan there (the step vanished, or the estimate is nan)"
                        if np.isnan(w)
                        else "it is a number there, not nan"
                    )
                    return name, f"{name} {_at(ks, i)}: {why}"
                continue
            if np.isinf(w) or np.isinf(g):
                if w != g:
                    why = "the estimate overflowed to inf there, so the error is inf" if np.isinf(w) else "it is finite"
                    return name, f"{name} {_at(ks, i)}: expected {float(w)!r}, got {float(g)!r} ({why})"
                continue
            if not abs(float(g) - float(w)) <= TOL * scale:
                return name, (
                    f"{name} {_at(ks, i)}: expected {float(w)!r}, got {float(g)!r} "
                    f"(allowed difference {TOL * scale:.3g})"
                )
    best = got["best_k"]
    ok_type = best is None or (isinstance(best, int | np.integer) and not isinstance(best, bool | np.bool_))
    if not ok_type or (best is None) != (want["best_k"] is None) or (best is not None and int(best) != want["best_k"]):
        return "best_k", (
            f"best_k: expected {want['best_k']!r}, got {best!r} "
            "(the k of the smallest total error, ties to the smallest k, never a nan)"
        )
    return "", ""


def _same_sweep(want: Any, got: Any) -> bool:
    return isinstance(want, Record) and sweep_difference(want, got) == ("", "")


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


def _first(record: Any, field: str) -> Any:
    """``record`` with ``field`` moved to the front, so the shortened feedback shows it first."""
    if not isinstance(record, Record) or field not in record.fields:
        return record
    return Record(record.type, {field: record[field], **{k: v for k, v in record.fields.items() if k != field}})


# --------------------------------------------------------------------------- checks


def _estimate_inputs(x: Any, y: Any, k: int, scheme: str, wrt: str) -> dict[str, Any]:
    return {"x": x, "y": y, "k": k, "scheme": scheme, "wrt": wrt}


def _estimate_call(x: Any, y: Any, k: int, scheme: str, wrt: str) -> Call:
    return Call("fd_estimate", (x, y, k, scheme, wrt))


def _check_estimate(student: Student, x: Any, y: Any, k: int, scheme: ref.Scheme, wrt: ref.Variable) -> None:
    _judge_estimate(student.call("fd_estimate", x, y, k, scheme, wrt), x, y, k, scheme, wrt)


def _judge_estimate(got: Any, x: Any, y: Any, k: int, scheme: ref.Scheme, wrt: ref.Variable) -> None:
    """Raise :class:`Mismatch` unless ``got`` is the estimate's bits for these arguments."""
    want = roundtrip(ref.fd_estimate(x, y, k, scheme, wrt))
    problem = estimate_difference(want, got)
    if problem:
        raise Mismatch(_estimate_inputs(x, y, k, scheme, wrt), want, got, problem)


def _sweep_call(x: Any, y: Any, ks: Sequence[int], scheme: str, wrt: str) -> Call:
    return Call("fd_sweep", (x, y, ks, scheme, wrt))


def _check_sweep(
    student: Student, x: Any, y: Any, ks: Sequence[int], scheme: ref.Scheme, wrt: ref.Variable
) -> None:
    _judge_sweep(student.call("fd_sweep", x, y, ks, scheme, wrt), x, y, ks, scheme, wrt)


def _judge_sweep(got: Any, x: Any, y: Any, ks: Sequence[int], scheme: ref.Scheme, wrt: ref.Variable) -> None:
    """Raise :class:`Mismatch` unless ``got`` is the sweep for these arguments (see :func:`sweep_difference`)."""
    want = roundtrip(ref.fd_sweep(x, y, _as_sent(ks), scheme, wrt))
    field, problem = sweep_difference(want, got)
    if problem:
        inputs = {"x": x, "y": y, "ks": ks, "scheme": scheme, "wrt": wrt}
        raise Mismatch(inputs, _first(want, field), _first(got, field), problem)


def _gradient_call(x: Any, y: Any) -> Call:
    return Call("exact_gradient", (x, y))


def _check_gradient(student: Student, x: Any, y: Any) -> None:
    _judge_gradient(student.call("exact_gradient", x, y), x, y)


def _judge_gradient(got: Any, x: Any, y: Any) -> None:
    """Raise :class:`Mismatch` unless ``got`` is the gradient at ``(x, y)`` within the tolerance."""
    want = roundtrip(ref.exact_gradient(x, y))
    problem = gradient_difference(want, got)
    if problem:
        raise Mismatch({"x": x, "y": y}, want, got, problem)


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

    wrapped = [Misconception(m.name, m.advice, _outcome(m.implementation),
                             fails=m.fails, history=m.history) for m in misconceptions]
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
_ANY_POINT = st.floats(GRADED_LOW, GRADED_HIGH)
_K = st.integers(1, GRADED_K_MAX)
_SCHEME = st.sampled_from(ref._SCHEMES)
_WRT = st.sampled_from(ref._VARIABLES)


def _applied_step_exact(x: float, y: float, k: int, scheme: str, wrt: str) -> bool:
    """Where the contract guarantees an exact applied step (Sterbenz): ``h <= v`` forward, ``3h <= v`` central."""
    v = float(np.float32(x if wrt == "x" else y))
    return 2.0**-k <= v if scheme == "forward" else 3 * 2.0**-k <= v


def _graded_ks(x: Any, y: Any, scheme: str, wrt: str) -> list[int]:
    """``k = 1..GRADED_K_MAX`` without the large steps whose applied step the contract leaves inexact."""
    return [k for k in range(1, GRADED_K_MAX + 1) if _applied_step_exact(x, y, k, scheme, wrt)]



# Where the applied step is not the nominal one. Every plausible way to get the step "almost"
# right (divide by h or 2h, double the forward step for the central one, take the distance of
# the points in float64, multiply by a reciprocal) agrees with the contract wherever
# fl(v + h) and fl(v - h) are exact and h_eff is a power of two: on uniform points each differs
# in 0.03% to 3.5% of cases (measured, see the module docstring). They differ where
#
# * v + h crosses up into the next binade and v's last bit is odd (fl(v + h) rounds away);
# * h is an ulp of v or less (ties and steps that vanish, v's last bit odd or even);
# * 3h > v, central (fl(v + h) - fl(v - h) itself rounds, and is no power of two).
#
# The strategy below draws from these families three times out of four.
_BINADE_TOPS = (1.0, 2.0, 4.0)


def _with_last_bit(v: float, odd: bool) -> float:
    """The float32 ``v`` with its last significand bit set (``odd``) or cleared."""
    bits = np.float32(v).view(np.int32)
    return float(np.int32((bits & ~1) | int(odd)).view(np.float32))


@st.composite
def _rounding_steps(draw: st.DrawFn) -> dict[str, Any]:
    """``fd_estimate`` arguments at float32 points in [0.5, 4], k in 1..26, mostly where a step rounds."""
    scheme, wrt = draw(_SCHEME), draw(_WRT)
    other = draw(_FLOAT32_POINT)
    family = draw(st.sampled_from(("crossing", "sub_ulp", "wide", "uniform")))
    if family == "crossing":
        # v = top - j ulp with j odd and j ulp <= h: v + h lands in the coarser binade above.
        top = draw(st.sampled_from(_BINADE_TOPS))
        k = draw(_K)
        ulp = top * 2.0**-24
        most = max(1, int(2.0**-k / ulp))
        v = top - (2 * draw(st.integers(0, (most - 1) // 2)) + 1) * ulp
    elif family == "sub_ulp":
        # h = 2 ulp, ulp, ulp/2 (a tie) or ulp/4, at either parity and at binade ends.
        v = draw(st.one_of(_FLOAT32_POINT, st.sampled_from((0.5, 1.0, 2.0, 4.0))))
        if v < GRADED_HIGH:
            v = _with_last_bit(v, draw(st.booleans()))
        ulp_k = -math.frexp(float(np.spacing(np.float32(v))))[1] + 1
        k = min(GRADED_K_MAX, max(1, ulp_k + draw(st.integers(-1, 2))))
    elif family == "wide":
        # Central steps wider than v/3: the applied step fl(v + h) - fl(v - h) itself rounds.
        scheme = "central"
        k = draw(st.integers(1, 2))
        v = draw(st.floats(GRADED_LOW, 3 * 2.0**-k, width=32, exclude_max=True))
    else:
        k, v = draw(_K), draw(_FLOAT32_POINT)
    x, y = (v, other) if wrt == "x" else (other, v)
    return _estimate_inputs(x, y, k, scheme, wrt)


#: The forms of a real number the contract accepts for x and y: Python and numpy floats and ints.
_REAL_FORMS: tuple[Callable[[float], Any], ...] = (float, np.float32, np.float64)
_INT_FORMS: tuple[Callable[[int], Any], ...] = (int, np.int64, np.int32)


def _real_in_form(values: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    """``values`` sent as a Python float, np.float32 or np.float64, or a whole number as int, np.int64 or np.int32."""
    as_float = st.tuples(values, st.sampled_from(_REAL_FORMS)).map(lambda pair: pair[1](pair[0]))
    whole = st.tuples(st.integers(1, 4), st.sampled_from(_INT_FORMS)).map(lambda pair: pair[1](pair[0]))
    return st.one_of(as_float, whole)


#: The forms of an integer k: Python int, np.int64, np.int32.
_K_FORM = st.sampled_from(_INT_FORMS)

# --------------------------------------------------------------------------- shared checks

T, V = "TypeError", "ValueError"
#: Bad values of a real argument: what the docstrings refuse and with which exception.
_BAD_REAL = ((True, T), (np.bool_(True), T), ("2.5", T), (None, T), ([2.5], T), (math.nan, V), (math.inf, V))
#: The same for x and y of fd_estimate and fd_sweep, which must also be finite once rounded to float32.
_BAD_REAL_F32 = (*_BAD_REAL, (-math.inf, V), (1e39, V))
_BAD_CHOICE = (("backward", V), ("Forward", V), ("", V), (None, V), (1, V))
_BAD_K = (
    (True, T), (np.bool_(False), T), (1.0, T), (1.5, T), (np.float64(5.0), T), ("5", T), (None, T),
    (-1, V), (150, V), (np.int64(150), V), (2**100, V),
)


def _raises_check(
    fn: str,
    names: Sequence[str],
    cases: Sequence[RaisesCase],
    same: Callable[[Any, Any], bool],
) -> Callable[[Student], None]:
    """The check of :func:`_raises_property`, to combine several functions in one property."""
    return _raises_property("_", "_", fn, names, cases, same).check


def _all_of(name: str, description: str, *checks: Callable[[Student], None], like: Property) -> Property:
    """A property that runs ``checks`` in order (the first failing one is reported), named and matched as ``like``."""

    def run(student: Student) -> None:
        for check in checks:
            check(student)

    return Property(name, description, run, like.misconceptions, like.matches)


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

    return tuple(Misconception(m.name, m.advice, replay(m.implementation),
                               fails=m.fails, history=m.history) for m in misconceptions)


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
            raise Mismatch({"calls": list(made)}, want, got, _STATE_NOTE)


@st.composite
def _call_sequence(draw: st.DrawFn, cases: st.SearchStrategy[Any], pool: int = 3) -> list[Any]:
    """Up to ``pool`` distinct cases, each called once in a drawn order, then some of them again."""
    drawn = draw(st.lists(cases, min_size=2, max_size=pool))
    order = draw(st.permutations(range(len(drawn))))
    again = draw(st.lists(st.integers(0, len(drawn) - 1), min_size=1, max_size=4))
    return [drawn[i] for i in (*order, *again)]


# --------------------------------------------------------------------------- exact_gradient

_GRADIENT_WRONG = _misconceptions("exact_gradient")
_GRADIENT_POINT = _real_in_form(st.one_of(st.floats(0.25, 8.0), st.floats(0.25, 8.0, width=32)))

gradient_visible = _fixed_property(
    "gradient_visible_cases",
    "exact_gradient(2, 3) is the float64 array [144, 132], and the gradient at GENERIC_POINT is right.",
    [{"x": 2.0, "y": 3.0}, {"x": _G[0], "y": _G[1]}],
    _gradient_call,
    _judge_gradient,
    _GRADIENT_WRONG,
    _same_gradient,
)


@hypothesis_property(
    "gradient_matches_exact",
    f"exact_gradient(x, y) is (dL/dx, dL/dy) at the exact inputs given, within a relative 2**-{TOLERANCE_EXPONENT}, "
    "a float64 array of shape (2,) whether x and y are Python or numpy floats or ints, for 0.25 <= x, y <= 8.",
    given={"x": _GRADIENT_POINT, "y": _GRADIENT_POINT},
    max_examples=60,
    examples=[{"x": 2.1, "y": 2.9}, {"x": 2, "y": np.int64(3)}, {"x": np.float32(2.1), "y": np.int32(3)}],
    misconceptions=_GRADIENT_WRONG,
    matches=_same_gradient,
)
def gradient_matches_exact(student: Student, x: Any, y: Any) -> None:
    _check_gradient(student, x, y)


_GRADIENT_OK = ((1e39, 2.0, None), (np.float64(2.5), np.int64(3), None), (np.float32(2.1), 3, None))
_GRADIENT_RAISES = [
    *_bad_arguments({"x": 2.0, "y": 3.0}, {"x": _BAD_REAL, "y": _BAD_REAL}, ("x", "y")),
    *(((x, y), {}, None) for x, y, _ in _GRADIENT_OK),
]
gradient_rejects = _all_of(
    "gradient_rejects_bad_arguments",
    "exact_gradient and exact_partial raise TypeError for an x or y that is no real number (bools too), "
    "ValueError for a nan or infinite one or an unknown wrt, and accept every finite real.",
    _raises_check("exact_gradient", ("x", "y"), _GRADIENT_RAISES, _same_gradient),
    _raises_check(
        "exact_partial",
        ("x", "y", "wrt"),
        _bad_arguments(
            {"x": 2.0, "y": 3.0, "wrt": "y"}, {"x": _BAD_REAL, "y": _BAD_REAL, "wrt": _BAD_CHOICE}, ("x", "y", "wrt")
        ),
        wire_equal,
    ),
    like=_raises_property(
        "_", "_", "exact_gradient", ("x", "y"), (), _same_gradient, _GRADIENT_WRONG
    ),
)


def _partial_is_a_fraction(student: Student) -> None:
    # A Fraction has no wire form: the worker's refusal to send one, naming its type, is the proof of type.
    # Its value reaches the grader only through exact_gradient and the sweep's `exact`.
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((2.0, 3.0), {}),
        ((_G[0], _G[1]), {}),
        ((_G[0], _G[1], "x"), {}),
        ((_G[0], _G[1]), {"wrt": "y"}),
        ((np.float32(0.7), 3), {"wrt": "x"}),
        # Ints for x too, Python and numpy (the contract: any real number).
        ((2, 3.0), {"wrt": "y"}),
        ((np.int64(2), np.float64(3.0)), {}),
        # Every accepted kind of each argument (issue 35): a numpy float64 x, a numpy integer y.
        ((np.float64(2.5), np.int64(3)), {"wrt": "y"}),
    ]
    # Every right answer is a refusal to send (an error reply), so all go in the one message.
    replies = student.batch([Call("exact_partial", args, kwargs) for args, kwargs in cases], stop_on_error=False)
    for args, kwargs in cases:
        inputs = _call_inputs(args, kwargs, ("x", "y", "wrt"))
        try:
            got = replies.take()
        except Unencodable as exc:
            if exc.type == "fractions.Fraction":  # the returned value's type, as the worker names it
                continue
            raise Mismatch(inputs, "a Fraction", f"a value of type {exc.type}",
                           "exact_partial returns the exact derivative as a fractions.Fraction") from None
        raise Mismatch(inputs, "a Fraction", got, "exact_partial returns the exact derivative as a fractions.Fraction")
    # The default's value: a Fraction reaches the grader by type alone, so which partial a call
    # without wrt computes is read where it is declared. A declared choice other than 'x' is the
    # other partial (or an error, which the calls above already report); a sentinel object resolved
    # in the body may well be right and is not judged.
    declared = student.defaults("exact_partial").get("wrt", "x")
    if isinstance(declared, str) and declared != "x":
        raise Mismatch(
            {"x": 2.0, "y": 3.0}, "wrt='x'", f"wrt={declared!r}",
            "exact_partial(x, y) is dL/dx: the default of wrt is 'x', as the signature declares it.",
        )


partial_fraction = Property(
    "partial_returns_a_fraction",
    "exact_partial(x, y) and exact_partial(x, y, wrt) return a fractions.Fraction (wrt defaults to 'x').",
    _partial_is_a_fraction,
    _misconceptions("exact_partial"),
    wire_equal,
)


@hypothesis_property(
    "gradient_calls_independent",
    "exact_gradient gives the same answer for the same point whatever was called before (repeats, any order).",
    given={"calls": _call_sequence(st.builds(lambda x, y: {"x": x, "y": y}, _GRADIENT_POINT, _GRADIENT_POINT))},
    max_examples=20,
    examples=[
        {
            "calls": [
                {"x": 2.1, "y": 2.9},
                {"x": np.float32(2.1), "y": np.float32(2.9)},
                {"x": 2.1, "y": 2.9},
                {"x": 2.9, "y": 2.1},
            ]
        }
    ],
    misconceptions=_replayed(_GRADIENT_WRONG),
    matches=_same_gradient,
)
def gradient_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "exact_gradient", calls)


GRADIENT_SUITE = register(
    CellSuite(
        GRADIENT_TESTS,
        points=POINTS[GRADIENT_TESTS],
        properties=[
            gradient_visible,
            gradient_matches_exact,
            gradient_rejects,
            partial_fraction,
            gradient_calls_independent,
        ],
    )
)


# --------------------------------------------------------------------------- fd_estimate

# At float32 inputs "perturbs the unrounded input" computes what a nominal-step answer computes,
# so the nominal-step entries are tried first there; at inputs that are not float32 values it is
# the likelier explanation and is tried first.
_NOMINAL_FIRST = ["estimate_in_float64", "scheme_ignored", "forward_nominal_step", "central_nominal_2h"]
_ESTIMATE_WRONG = _misconceptions("fd_estimate", first=_NOMINAL_FIRST)
_ESTIMATE_WRONG_ROUNDED = _misconceptions("fd_estimate", first=["perturbs_unrounded_input", *_NOMINAL_FIRST])
_ESTIMATE_NAMES = ("x", "y", "k", "scheme", "wrt")
#: fd_estimate's steps that round, for the explicit examples: float32(2.2) has an odd last bit,
#: so x + 2**-23 and x - 2**-23 are ties that round away; 0.99999994 + 2**-24 crosses up into [1, 2).
_F22 = float(np.float32(2.2))
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))

estimate_visible = _fixed_property(
    "estimate_visible_cases",
    "The notebook's visible cases: float32 result, 144.0 at (2, 3), nan where the step vanishes, "
    "the rounded step at x = 2.2, central and forward quotients in y, inf where L(x + h, y) overflows.",
    [
        _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 12, "forward", "x"),
        _estimate_inputs(2.0, 3.0, 23, "forward", "x"),
        _estimate_inputs(2.2, 3.0, 23, "forward", "x"),
        _estimate_inputs(_G[0], _G[1], 7, "central", "y"),
        _estimate_inputs(_G[0], _G[1], 11, "forward", "y"),
        _estimate_inputs(1.0, 6e12, 1, "forward", "x"),
    ],
    _estimate_call,
    _judge_estimate,
    _ESTIMATE_WRONG,
    _same_estimate,
)


@hypothesis_property(
    "estimate_bits_at_float32_points",
    "fd_estimate has the contract's binary32 bits (and dtype float32) at float32 points in [0.5, 4], "
    f"k = 1..{GRADED_K_MAX}, both schemes, both inputs, mostly where a step rounds or vanishes.",
    given={"case": _rounding_steps()},
    max_examples=200,
    examples=[
        {"case": _estimate_inputs(_F22, 3.0, 23, "central", "x")},
        {"case": _estimate_inputs(3.0, _F22, 23, "central", "y")},
        {"case": _estimate_inputs(3.0, _F22, 23, "forward", "y")},
        {"case": _estimate_inputs(_BELOW_ONE, 2.9, 24, "central", "x")},
        {"case": _estimate_inputs(2.9, 0.75, 2, "central", "y")},
    ],
    misconceptions=_ESTIMATE_WRONG,
    matches=_same_estimate,
)
def estimate_bits_at_float32_points(student: Student, case: dict[str, Any]) -> None:
    _check_estimate(student, **case)


estimate_bits_at_float32_points = _probing(estimate_bits_at_float32_points, lambda case: dict(case))


@hypothesis_property(
    "estimate_bits_at_rounded_inputs",
    "fd_estimate rounds x and y to float32 before perturbing: right bits and an np.float32 at inputs in [0.5, 4] "
    "that are not float32 values, at Python and numpy floats and ints, and with k a numpy integer.",
    given={
        "x": _real_in_form(_ANY_POINT),
        "y": _real_in_form(_ANY_POINT),
        "k": _K,
        "k_form": _K_FORM,
        "scheme": _SCHEME,
        "wrt": _WRT,
    },
    max_examples=80,
    examples=[
        {**_estimate_inputs(2.1, 2.9, 24, "forward", "x"), "k_form": int},
        {**_estimate_inputs(2.1, 2.9, 24, "central", "y"), "k_form": int},
        {**_estimate_inputs(np.float64(2.1), 3, 12, "central", "x"), "k_form": np.int64},
        # The ends of the range [0, 149]: the nominal step 1 and the subnormal 2**-149.
        {**_estimate_inputs(2.1, np.float32(2.9), 149, "forward", "x"), "k_form": np.int64},
        {**_estimate_inputs(3, 2.9, 0, "forward", "y"), "k_form": int},
    ],
    misconceptions=_ESTIMATE_WRONG_ROUNDED,
    matches=_same_estimate,
)
def estimate_bits_at_rounded_inputs(
    student: Student, x: Any, y: Any, k: int, k_form: Callable[[int], Any], scheme: ref.Scheme, wrt: ref.Variable
) -> None:
    _check_estimate(student, x, y, k_form(k), scheme, wrt)


estimate_bits_at_rounded_inputs = _probing(
    estimate_bits_at_rounded_inputs,
    lambda x, y, k, k_form, scheme, wrt: _estimate_inputs(x, y, k_form(k), scheme, wrt),
)


#: Points where L overflows float32 at one evaluation point or both (L(x, y) is about x**2 y**3, and
#: float32 ends at 3.4e38): the contract's float32 operations give inf, -inf or nan there.
_OVERFLOW_CASES = (
    _estimate_inputs(1.0, 6e12, 1, "forward", "x"),
    _estimate_inputs(1.0, 6e12, 1, "central", "x"),
    _estimate_inputs(-1.0, 6e12, 1, "central", "x"),
    _estimate_inputs(1.0, 1e13, 1, "forward", "x"),
    _estimate_inputs(1e19, 1.0, 1, "forward", "y"),
    _estimate_inputs(1e19, 1.0, 2, "central", "y"),
)

estimate_overflow = _fixed_property(
    "estimate_where_L_overflows",
    "Where L overflows float32 at an evaluation point (x = 1, y = 6e12; x = 1e19, y = 1), fd_estimate gives what "
    "the contract's float32 operations give: inf, -inf, or nan where both points overflow.",
    _OVERFLOW_CASES,
    _estimate_call,
    _judge_estimate,
    _ESTIMATE_WRONG,
    _same_estimate,
)

#: Where numpy would warn unless told not to: a step that vanishes (0 / 0), and overflow.
_QUIET_CASES = (
    _estimate_inputs(2.0, 3.0, 23, "forward", "x"),
    _estimate_inputs(3.0, 2.0, 24, "central", "y"),
    *_OVERFLOW_CASES,
)


def _check_no_warnings(student: Student) -> None:
    replies = student.batch([Call("fd_estimate", tuple(case.values()), watch=True) for case in _QUIET_CASES])
    for case in _QUIET_CASES:
        watched = replies.take()
        if watched.warnings:
            note = (
                "fd_estimate must emit no warning, also where the step vanishes or L overflows "
                "(numpy's floating-point warnings can be silenced around the computation with np.errstate)"
            )
            raise Mismatch(case, [], list(watched.warnings), note)


estimate_quiet = Property(
    "estimate_emits_no_warnings",
    "fd_estimate emits no warning where the applied step is 0 (x = 2, k = 23) or L overflows float32.",
    _check_no_warnings,
)


_ESTIMATE_VALID = {"x": 2.5, "y": 3.0, "k": 5, "scheme": "central", "wrt": "y"}
estimate_rejects = _raises_property(
    "estimate_rejects_bad_arguments",
    "fd_estimate raises what its docstring says for a bad x, y, k, scheme or wrt (each alone: bools, strings, None, "
    "nan, a float32 overflow, k out of [0, 149]), and accepts k = 0, 149 and numpy integers.",
    "fd_estimate",
    _ESTIMATE_NAMES,
    [
        *_bad_arguments(
            _ESTIMATE_VALID,
            {"x": _BAD_REAL_F32, "y": _BAD_REAL_F32, "k": _BAD_K, "scheme": _BAD_CHOICE, "wrt": _BAD_CHOICE},
            _ESTIMATE_NAMES,
        ),
        ((2.5, 3.0, 0, "central", "y"), {}, None),
        ((2.5, 3.0, 0, "forward", "x"), {}, None),
        ((2.5, 3.0, 149, "forward", "x"), {}, None),
        ((2.5, 3.0, np.int64(12), "central", "x"), {}, None),
        ((2.5, 3.0, np.int32(12), "forward", "y"), {}, None),
    ],
    _same_estimate,
    _ESTIMATE_WRONG,
)

#: How a call leaves out the defaulted arguments: (positional names, keyword names) passed.
_ESTIMATE_FORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "no scheme, no wrt": (("x", "y", "k"), ()),
    "no wrt": (("x", "y", "k", "scheme"), ()),
    "no scheme": (("x", "y", "k"), ("wrt",)),
    "all by keyword": ((), _ESTIMATE_NAMES),
}


#: The documented defaults, passed explicitly to get the student's own answer to compare with.
_ESTIMATE_DEFAULTS = MappingProxyType({"scheme": "forward", "wrt": "x"})


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


@hypothesis_property(
    "estimate_defaults",
    "fd_estimate called without scheme and/or wrt gives the bits of your own fd_estimate called with "
    "scheme='forward', wrt='x'; every argument works by keyword.",
    given={"case": _rounding_steps(), "form": st.sampled_from(tuple(_ESTIMATE_FORMS))},
    max_examples=40,
    examples=[{"case": _estimate_inputs(_G[0], _G[1], 12, "central", "y"), "form": f} for f in _ESTIMATE_FORMS],
    misconceptions=_ESTIMATE_WRONG,
    matches=_same_estimate,
)
def estimate_defaults(student: Student, case: dict[str, Any], form: str) -> None:
    inputs, calls = _defaults_calls("fd_estimate", _ESTIMATE_NAMES, _ESTIMATE_DEFAULTS, case, _ESTIMATE_FORMS[form])
    replies = student.batch(calls)
    got, own = replies.take(), replies.take()
    if not same_bits(own, got):
        explicit = "scheme='forward', wrt='x'" if form != "all by keyword" else "x, y, k by position"
        note = f"called with {form}, your fd_estimate answers otherwise than with {explicit} given explicitly"
        raise Mismatch(inputs, own, got, note)


@hypothesis_property(
    "estimate_calls_independent",
    "fd_estimate gives the same bits for the same arguments whatever was called before (repeats, any order).",
    given={"calls": _call_sequence(_rounding_steps())},
    max_examples=25,
    examples=[
        {
            "calls": [
                _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
                _estimate_inputs(_G[0], _G[1], 12, "forward", "y"),
                _estimate_inputs(_G[0], _G[1], 7, "central", "y"),
                _estimate_inputs(_G[0], _G[1], 12, "forward", "x"),
            ]
        }
    ],
    misconceptions=_replayed(_ESTIMATE_WRONG),
    matches=_same_estimate,
)
def estimate_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "fd_estimate", calls)


ESTIMATE_SUITE = register(
    CellSuite(
        ESTIMATE_TESTS,
        points=POINTS[ESTIMATE_TESTS],
        properties=[
            estimate_visible,
            estimate_bits_at_float32_points,
            estimate_bits_at_rounded_inputs,
            estimate_overflow,
            estimate_quiet,
            estimate_rejects,
            estimate_defaults,
            estimate_calls_independent,
        ],
    )
)


# --------------------------------------------------------------------------- fd_sweep

_SWEEP_WRONG = _misconceptions("fd_sweep")
_DEFAULT_KS = list(range(1, 25))
_SWEEP_NAMES = ("x", "y", "ks", "scheme", "wrt")
#: The forms of ks the contract's Iterable[int] accepts that can travel to the worker.
_KS_FORMS: dict[str, Callable[[list[int]], Any]] = {
    "list": list,
    "tuple": tuple,
    "int64 array": lambda ks: np.array(ks, dtype=np.int64),
    "int32 array": lambda ks: np.array(ks, dtype=np.int32),
    "list of numpy ints": lambda ks: [np.int64(k) if i % 2 else np.int32(k) for i, k in enumerate(ks)],
    # Read once: a sweep that iterates its ks twice sees nothing the second time.
    "generator": lambda ks: Once(tuple(ks)),
    # The range spanning the drawn ks (a range is the default's own form).
    "range": lambda ks: range(min(ks), max(ks) + 1),
}


def _ks_values(ks: Any) -> list[int]:
    """The exponents a form of ks stands for, in order."""
    return [int(k) for k in (ks.items if isinstance(ks, Once) else ks)]


def _sweep_inputs(x: Any, y: Any, ks: Sequence[int], scheme: str, wrt: str) -> dict[str, Any]:
    return {"x": x, "y": y, "ks": list(ks), "scheme": scheme, "wrt": wrt}


sweep_visible = _fixed_property(
    "sweep_visible_cases",
    "The notebook's visible sweeps: forward in x and central in y at GENERIC_POINT, forward in x at (2, 3).",
    [
        _sweep_inputs(_G[0], _G[1], _DEFAULT_KS, "forward", "x"),
        _sweep_inputs(_G[0], _G[1], _DEFAULT_KS, "central", "y"),
        _sweep_inputs(2.0, 3.0, _DEFAULT_KS, "forward", "x"),
    ],
    _sweep_call,
    _judge_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)

sweep_full = _fixed_property(
    "sweep_full_range",
    f"Full sweeps k = 1..{GRADED_K_MAX} (central: 3h <= the perturbed input), both schemes and both inputs, "
    "at GENERIC_POINT, (2, 3), (0.7, 3.3) and (3.7, 0.6): every field as the contract states it.",
    [
        _sweep_inputs(x, y, _graded_ks(x, y, scheme, wrt), scheme, wrt)
        for x, y in (_G, (2.0, 3.0), (np.float32(0.7), np.float32(3.3)), (np.float32(3.7), np.float32(0.6)))
        for scheme in ref._SCHEMES
        for wrt in ref._VARIABLES
    ],
    _sweep_call,
    _judge_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)


@hypothesis_property(
    "sweep_at_generated_points",
    "fd_sweep at float32 points in [0.5, 4] (Python or numpy floats, ints) with short ks (lists, tuples, ranges, "
    "generators, numpy arrays; any order, repeats), both schemes and inputs: exact fields, errors within "
    f"2**-{TOLERANCE_EXPONENT}.",
    given={
        "x": _real_in_form(_FLOAT32_POINT),
        "y": _real_in_form(_FLOAT32_POINT),
        "ks": st.lists(_K, min_size=1, max_size=5),
        "ks_form": st.sampled_from(tuple(_KS_FORMS)),
        "scheme": _SCHEME,
        "wrt": _WRT,
    },
    max_examples=40,
    examples=[
        # Steps that round: float32(2.2) + 2**-23 and - 2**-23 are ties that round away from 2.2.
        {**_sweep_inputs(_F22, 3.0, [23, 22, 24], "central", "x"), "ks_form": "list"},
        {**_sweep_inputs(3.0, _F22, [22, 23], "forward", "y"), "ks_form": "tuple"},
        {**_sweep_inputs(np.float32(2.1), 3, [12, 7, 12], "central", "y"), "ks_form": "int64 array"},
        {**_sweep_inputs(2.5, 3.0, [5, 3, 5], "central", "y"), "ks_form": "generator"},
        {**_sweep_inputs(2.5, 3.0, [4, 7], "forward", "x"), "ks_form": "range"},
        # The range's ends: h = 1 and the subnormal 2**-149 (a float32 2**k overflows from k = 128).
        {**_sweep_inputs(2.5, 3.0, [149, 0, 12], "forward", "x"), "ks_form": "list"},
        {**_sweep_inputs(3.5, 1.5, [0, 149], "central", "x"), "ks_form": "int64 array"},
        {**_sweep_inputs(2.5, 3.0, [9, 4, 9], "forward", "y"), "ks_form": "list of numpy ints"},
    ],
    misconceptions=_SWEEP_WRONG,
    matches=_same_sweep,
)
def sweep_at_generated_points(
    student: Student, x: Any, y: Any, ks: list[int], ks_form: str, scheme: ref.Scheme, wrt: ref.Variable
) -> None:
    sent = _KS_FORMS[ks_form](ks)
    assume(all(_applied_step_exact(x, y, k, scheme, wrt) for k in _ks_values(sent)))
    _check_sweep(student, x, y, sent, scheme, wrt)


sweep_at_generated_points = _probing(
    sweep_at_generated_points,
    lambda x, y, ks, ks_form, scheme, wrt: {"x": x, "y": y, "ks": _KS_FORMS[ks_form](ks), "scheme": scheme, "wrt": wrt},
)


sweep_ties = _fixed_property(
    "sweep_best_k_ties_and_nan",
    "best_k takes the smallest k among tied minima whatever the order of ks, skips nan, and is None "
    "when every error is nan.",
    [
        _sweep_inputs(2.0, 3.0, [15, 12, 20, 13], "forward", "x"),
        _sweep_inputs(2.0, 3.0, list(range(20, 9, -1)), "forward", "x"),
        _sweep_inputs(2.0, 3.0, [23, 24, 22], "forward", "x"),
        _sweep_inputs(2.0, 3.0, [23, 24], "forward", "x"),
        _sweep_inputs(_G[0], _G[1], [12, 11, 11, 12], "forward", "x"),
    ],
    _sweep_call,
    _judge_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)

sweep_overflow = _fixed_property(
    "sweep_where_L_overflows",
    "Where the estimate overflowed to inf or -inf, total_error and rounding_error are inf, where it is nan they "
    "are nan; best_k takes the smallest k among tied inf errors and is None when every error is nan.",
    [
        _sweep_inputs(1.0, 6e12, [1, 2, 30], "forward", "x"),
        _sweep_inputs(-1.0, 6e12, [3, 1], "central", "x"),
        _sweep_inputs(1e19, 1.0, [2, 1], "central", "y"),
        _sweep_inputs(1.0, 1e13, [1], "forward", "x"),
    ],
    _sweep_call,
    _judge_sweep,
    _SWEEP_WRONG,
    _same_sweep,
)

_SWEEP_VALID = {"x": 2.5, "y": 3.0, "ks": [3, 5], "scheme": "central", "wrt": "y"}
_BAD_KS: tuple[tuple[Any, str], ...] = (
    ([], V), ((), V), (np.array([], dtype=np.int64), V), ([1, 150], V), ([-1], V), ([1, True], T),
    ([2.5], T), ([np.float64(2.0)], T), (["3"], T), ([3, None], T),
)
sweep_rejects = _raises_property(
    "sweep_rejects_bad_arguments",
    "fd_sweep raises what its docstring says for a bad x, y, ks (empty, a k out of range or not an integer), scheme "
    "or wrt, each alone, and accepts k = 0 and 149, tuples and numpy arrays.",
    "fd_sweep",
    _SWEEP_NAMES,
    [
        *_bad_arguments(
            _SWEEP_VALID,
            {"x": _BAD_REAL_F32, "y": _BAD_REAL_F32, "ks": _BAD_KS, "scheme": _BAD_CHOICE, "wrt": _BAD_CHOICE},
            _SWEEP_NAMES,
        ),
        ((2.5, 3.0, [0, 149], "central", "y"), {}, None),
        ((2.5, 3.0, (5, 3), "forward", "x"), {}, None),
        ((2.5, 3.0, np.array([7, 3, 7], dtype=np.int64), "central", "x"), {}, None),
    ],
    _same_sweep,
    _SWEEP_WRONG,
)

#: Calls leaving out defaulted arguments, at points where the default ks = 1..24 keeps the
#: central applied step exact (3 * 2**-1 <= v): (case, (positional names, keyword names)).
_SWEEP_DEFAULT_CALLS = [
    (_sweep_inputs(_G[0], _G[1], [], "", ""), (("x", "y"), ())),
    (_sweep_inputs(np.float32(3.7), np.float32(1.6), [12, 5, 9], "", ""), (("x", "y", "ks"), ())),
    (_sweep_inputs(np.float32(3.7), np.float32(1.6), [5, 9, 12], "central", ""), (("x", "y", "ks", "scheme"), ())),
    (_sweep_inputs(_G[0], _G[1], [], "central", ""), (("x", "y"), ("scheme",))),
    (_sweep_inputs(np.float32(1.6), np.float32(3.7), [], "", "y"), (("x", "y"), ("wrt",))),
    (_sweep_inputs(_G[0], _G[1], [7, 8], "", "y"), (("x", "y"), ("ks", "wrt"))),
    (_sweep_inputs(_G[0], _G[1], [7, 8], "central", "y"), ((), _SWEEP_NAMES)),
]


#: The documented defaults: ks = range(1, 25) travels as the list it stands for (a range has no wire form).
_SWEEP_DEFAULTS = MappingProxyType({"ks": _DEFAULT_KS, "scheme": "forward", "wrt": "x"})


def _first_difference(want: Any, got: Any) -> str:
    """The first field in which two FDSweep records differ bit for bit (``""``: none, or not records)."""
    if not (isinstance(want, Record) and isinstance(got, Record)):
        return ""
    return next((name for name in want.fields if name in got.fields and not same_bits(want[name], got[name])), "")


def _check_sweep_defaults(student: Student) -> None:
    planned = [
        _defaults_calls("fd_sweep", _SWEEP_NAMES, _SWEEP_DEFAULTS, case, form) for case, form in _SWEEP_DEFAULT_CALLS
    ]
    # Every pair in one message, judged pair by pair in order: the first pair that differs is reported.
    replies = student.batch([call for _, calls in planned for call in calls])
    for inputs, _ in planned:
        got, own = replies.take(), replies.take()
        if not same_bits(own, got):
            left_out = [n for n in _SWEEP_DEFAULTS if n not in inputs]
            given = ", ".join(f"{n}={_SWEEP_DEFAULTS[n]!r}" if n != "ks" else "ks=range(1, 25)" for n in left_out)
            field = _first_difference(own, got)
            where = f" ({field} differs)" if field else ""
            note = f"leaving out {', '.join(left_out) or 'nothing'}, your fd_sweep answers otherwise than with "
            note += f"{given or 'x, y, ks by position'} given explicitly{where}"
            raise Mismatch(inputs, _first(own, field), _first(got, field), note)


sweep_defaults = Property(
    "sweep_defaults",
    "fd_sweep called without ks, scheme and/or wrt gives the sweep your own fd_sweep gives with ks=range(1, 25), "
    "scheme='forward', wrt='x'; every argument works by keyword.",
    _check_sweep_defaults,
    _SWEEP_WRONG,
    _same_sweep,
)


#: The mutable forms of ks: a function that changes its ks in place changes the caller's list or array.
_MUTABLE_KS_FORMS = ("list", "int64 array")


@st.composite
def _sweep_calls(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Sweeps at two shared points (x, y, scheme, ks varied), called in a drawn order with repeats.

    ks is a list or an int64 array, in any order, so that a sweep that sorts or rewrites the
    caller's ks shows it.
    """
    points = draw(st.lists(st.tuples(_FLOAT32_POINT, _FLOAT32_POINT), min_size=1, max_size=2))
    case = st.builds(
        lambda p, ks, form, scheme, wrt: {**_sweep_inputs(p[0], p[1], ks, scheme, wrt), "ks": _KS_FORMS[form](ks)},
        st.sampled_from(points),
        st.lists(st.integers(1, 20), min_size=1, max_size=3),
        st.sampled_from(_MUTABLE_KS_FORMS),
        _SCHEME,
        _WRT,
    )
    return draw(_call_sequence(case))


def _ks_left(implementation: Callable[..., Any]) -> Callable[..., Any]:
    """What ``implementation`` leaves in the ks it is given (on a copy), for naming a mistake that changes it."""

    def run(x: Any, y: Any, ks: Any, scheme: str, wrt: str) -> Any:
        mine = deepcopy(ks)
        # A fresh copy: a catalogued memo must not carry state from one naming attempt to the next.
        _fresh(inspect.unwrap(implementation))(x, y, mine, scheme, wrt)
        return mine

    return run


def _same_sweep_or_ks(want: Any, got: Any) -> bool:
    """Sweeps compare as sweeps; the ks a call left behind compares exactly."""
    return _same_sweep(want, got) if isinstance(want, Record) else wire_equal(want, got)


def _sweep_left_ks(call: Mapping[str, Any], watched: Watched) -> Any:
    """A watched sweep's value, failing at once when it changed the caller's ks (the docstring reads ks only)."""
    sent, left = roundtrip(call["ks"]), watched.kwargs.get("ks")
    if not wire_equal(sent, left):
        note = "fd_sweep changed the ks it was given: read ks (or a copy of it), leave the caller's list or array alone"
        raise Mismatch(dict(call), sent, left, note)
    return watched.value


@hypothesis_property(
    "sweep_calls_independent",
    "fd_sweep leaves the ks it is given unchanged (lists and numpy arrays), and gives the sweep your own fd_sweep "
    "gave for the same arguments asked fresh, whatever was swept before (same point, other input or scheme).",
    given={"calls": _sweep_calls()},
    max_examples=15,
    examples=[
        {
            "calls": [
                _sweep_inputs(_G[0], _G[1], [12, 10], "forward", "x"),
                _sweep_inputs(_G[0], _G[1], [12, 10], "forward", "y"),
                {**_sweep_inputs(_G[0], _G[1], [7, 3, 7], "central", "x"), "ks": np.array([7, 3, 7], dtype=np.int64)},
                _sweep_inputs(_G[0], _G[1], [12, 10], "forward", "x"),
            ]
        }
    ],
    misconceptions=(
        *_replayed(_SWEEP_WRONG),
        *(Misconception(m.name, m.advice, _ks_left(m.implementation),
                        fails=m.fails, history=m.history) for m in _SWEEP_WRONG),
    ),
    matches=_same_sweep_or_ks,
)
def sweep_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "fd_sweep", calls, _sweep_left_ks, watch=True)


SWEEP_SUITE = register(
    CellSuite(
        SWEEP_TESTS,
        points=POINTS[SWEEP_TESTS],
        properties=[
            sweep_visible,
            sweep_full,
            sweep_at_generated_points,
            sweep_ties,
            sweep_overflow,
            sweep_rejects,
            sweep_defaults,
            sweep_calls_independent,
        ],
    )
)
