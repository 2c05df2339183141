"""The checks of the ``fd_sweep`` cell: the whole sweep, ties, overflow, refusals, defaults and
independent calls (the ``ks`` it is given left unchanged).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
from ch11_solutions import ex2_finite_difference as ref
from hypothesis import assume
from hypothesis import strategies as st
from trainable_harness import opening_objective_exact

from ....api.suite import (
    Call,
    CellSuite,
    Laid,
    Mismatch,
    Once,
    Property,
    Record,
    Student,
    Watched,
    hypothesis_property,
    laid,
    pasteable,
    roundtrip,
    wire_equal,
)
from ..contract import GRADED_K_MAX, POINTS, SWEEP_TESTS, TOLERANCE_EXPONENT
from .shared import (
    _BAD_CHOICE,
    _BAD_REAL_F32,
    _F22,
    _FLOAT32_POINT,
    _G,
    _K,
    _SCHEME,
    _WRT,
    TOL,
    T,
    V,
    _as_sent,
    _bad_arguments,
    _call_sequence,
    _check_calls,
    _defaults_calls,
    _fixed_property,
    _fresh,
    _is_float32_scalar,
    _misconceptions,
    _probing,
    _raises_property,
    _real_in_form,
    _replayed,
    same_bits,
)

_FIELDS = tuple(ref.FDSweep.__dataclass_fields__)
_FLOAT32_FIELDS = ("h", "h_eff", "estimate")
_ERROR_FIELDS = ("total_error", "truncation_error", "rounding_error")


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


def _first(record: Any, field: str) -> Any:
    """``record`` with ``field`` moved to the front, so the shortened feedback shows it first."""
    if not isinstance(record, Record) or field not in record.fields:
        return record
    return Record(record.type, {field: record[field], **{k: v for k, v in record.fields.items() if k != field}})


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


def _applied_step_exact(x: float, y: float, k: int, scheme: str, wrt: str) -> bool:
    """Where the contract guarantees an exact applied step (Sterbenz): ``h <= v`` forward, ``3h <= v`` central."""
    v = float(np.float32(x if wrt == "x" else y))
    return 2.0**-k <= v if scheme == "forward" else 3 * 2.0**-k <= v


def _graded_ks(x: Any, y: Any, scheme: str, wrt: str) -> list[int]:
    """``k = 1..GRADED_K_MAX`` without the large steps whose applied step the contract leaves inexact."""
    return [k for k in range(1, GRADED_K_MAX + 1) if _applied_step_exact(x, y, k, scheme, wrt)]


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
    # The other memory layouts of a one-dimensional array (api.suite.laid).
    "strided int64 array": lambda ks: laid(np.array(ks, dtype=np.int64), "strided"),
    "read-only int32 array": lambda ks: laid(np.array(ks, dtype=np.int32), "read_only"),
}


def _ks_values(ks: Any) -> list[int]:
    """The exponents a form of ks stands for, in order."""
    return [int(k) for k in (ks.items if isinstance(ks, Once) else ks.values if isinstance(ks, Laid) else ks)]


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
        {**_sweep_inputs(np.float32(1.3), 2.0, [6, 11, 6], "central", "x"), "ks_form": "strided int64 array"},
        {**_sweep_inputs(3.0, np.float32(0.9), [3, 8], "forward", "y"), "ks_form": "read-only int32 array"},
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
    # Integer arrays of the right size in two dimensions: their rows are arrays, not ks (refused, not flattened).
    (np.array([[4, 7]], dtype=np.int64), T), (np.array([[4], [7]], dtype=np.int64), T),
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
        # The caller's ks as a name, so that the last statement shows what the call left in it.
        arguments = ", ".join(f"{name}={'ks' if name == 'ks' else pasteable(value)}" for name, value in call.items())
        raise Mismatch(dict(call), sent, left, note, calls=(f"ks = {pasteable(sent)}", f"fd_sweep({arguments})", "ks"))
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
        *(m.rewrapped(_ks_left) for m in _SWEEP_WRONG),
    ),
    matches=_same_sweep_or_ks,
)
def sweep_calls_independent(student: Student, calls: list[dict[str, Any]]) -> None:
    _check_calls(student, "fd_sweep", calls, _sweep_left_ks, watch=True)


SWEEP_SUITE = CellSuite(
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
