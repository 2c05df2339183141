"""A wrong answer as a check reports it (:class:`Mismatch`, :func:`expect_equal`), and a catalogued one
(:class:`Misconception`) the feedback may name for it (see ``trusted/misconception_naming.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..protocol import Laid, Once, RngSeed, wire_equal
from .roundtrip import roundtrip

__all__ = [
    "Misconception",
    "Mismatch",
    "Source",
    "call_statement",
    "expect_equal",
    "pasteable",
]

class Mismatch(Exception):
    """Raised by a check when the student's answer is wrong.

    Args:
        inputs: the inputs that show it, name -> value, as the student would
            write them (shown in feedback).
        expected: the right answer.
        got: the student's answer.
        note: one optional sentence of explanation for the student.
        calls: when the failure shows only after earlier calls, the sequence as Python statements a
            student can paste into a fresh kernel after their notebook's cells, in order, the failing call
            last (``("f(1, 3.0)", "f(True, 3.0)")``, written with :func:`call_statement`); the feedback shows
            them as the way to reproduce it (``Failure.calls``). Leave out earlier calls that raised: pasted
            into one cell, the first raise would stop the cell before the failing call. Write each call of
            the student's functions as a statement of its own (its value, or an attribute read off it:
            ``f(x).cotangents``), names it uses as assignments (``rng = np.random.default_rng(2)``), and what
            the call left in an argument as an expression after it (``z0``): the page's first line counts and
            names the calls alone (``trusted.pasted_calls``).
    """

    def __init__(self, inputs: Mapping[str, Any], expected: Any, got: Any, note: str = "",
                 calls: tuple[str, ...] = ()) -> None:
        self.inputs = dict(inputs)
        self.expected = expected
        self.got = got
        self.note = note
        self.calls = tuple(calls)
        super().__init__(f"mismatch for {sorted(self.inputs)}")


@dataclass(frozen=True)
class Misconception:
    """A named wrong implementation from the catalogue.

    Attributes:
        name: short name shown to the student, e.g. ``"last writer wins"``.
        advice: one or two sentences saying what to change.
        implementation: runs in the trusted process as
            ``implementation(**mismatch.inputs)`` and returns what a submission
            with this mistake would return as ``got``; or, where the mistake shows
            in a check made of several calls (one per argument refused, say), the
            whole :class:`Mismatch` such a submission would be reported with: it
            then explains a failure only when it fails on the same inputs (the
            same refused argument, the same call) with the same ``got``
            (``trusted.signature.same_inputs``), not merely somewhere in the property.
        function: the student's function whose output ``implementation`` predicts,
            called with the same keyword arguments; with it (and a property that can
            draw inputs) the engine checks, before naming this misconception, that the
            student's code agrees with it where it differs from every other one.
            ``""``: the misconception cannot be probed, and is named on the evidence alone.
        fails: what an answer making this mistake fails, graded for real: for each catalogue
            entry the name stands for (one, or several named as one), the properties that entry
            fails in each test cell it loses points in (grade_id -> property names; the
            catalogue's kill table, ``exercises.catalogue.kill_table_row``). A failure keeps this
            name only where the student's answer fails, in the same cell, every property one of
            those entries fails there (``misconception_naming.confirm_names``): an answer that
            fails one property as the entry does, but passes another the entry fails, has made
            another mistake. ``()``: not recorded; the name rests on the failing examples alone.
        history: the entry keeps state between calls (``exercises.catalogue.WrongAnswer.keeps_state``),
            so what it returns may depend on the calls made before. Only such an entry can explain a
            failure whose evidence is a sequence of calls (``misconception_naming``): a stateless one
            answers each call as it would fresh, so it can match the student there only by coincidence.
    """

    name: str
    advice: str
    implementation: Callable[..., Any]
    function: str = ""
    # Not compared or hashed: a misconception is the mistake it names; its kill-table row is evidence about it.
    fails: tuple[Mapping[str, frozenset[str]], ...] = field(default=(), compare=False)
    history: bool = False

    def rewrapped(self, wrap: Callable[[Callable[..., Any]], Callable[..., Any]], *,
                  keep_function: bool = False) -> Misconception:
        """This misconception with ``implementation`` replaced by ``wrap(implementation)``.

        Kept: ``name``, ``advice``, ``fails``, ``history``. Replaced: ``implementation``.
        ``function`` is dropped (set to ``""``, so the misconception is named on the evidence
        alone, never probed) unless ``keep_function``. Drop it when ``wrap`` predicts something
        other than what the student's function returns for the same keyword arguments (an
        outcome such as ``"raised TypeError"``, the last answer of a replayed sequence, what a call
        leaves of its argument): probing would compare the student's return value with a
        prediction of something else. Keep it only when the wrapped implementation still predicts
        that return value (it only adapts how the inputs are passed).
        """
        return replace(self, implementation=wrap(self.implementation),
                       function=self.function if keep_function else "")


def expect_equal(
    inputs: Mapping[str, Any],
    expected: Any,
    got: Any,
    *,
    note: str = "",
    matches: Callable[[Any, Any], bool] = wire_equal,
) -> None:
    """Raise :class:`Mismatch` unless ``matches(roundtrip(expected), got)``.

    ``expected`` is passed through ``roundtrip`` first, so a reference
    dataclass compares with the student's ``Record`` and numpy types keep
    their dtypes.
    """
    wire_expected = roundtrip(expected)
    if not matches(wire_expected, got):
        raise Mismatch(inputs, wire_expected, got, note)




@dataclass(frozen=True)
class Source:
    """Python source a pasted statement shows as written: a name earlier statements set up (``chain``), or an
    expression that builds an argument (``make_chain(16, 5, width=3, seed=11)``)."""

    text: str


def pasteable(value: Any) -> str:
    """``value`` as Python source that rebuilds it in the student's notebook (numpy imported as ``np``).

    numpy 2 writes its scalars as source already (``np.float32(0.75)``, ``np.True_``); what ``repr`` writes that
    does not run is spelt out: a non-finite float (``float('nan')``), an array (``np.array([...], dtype=...)``),
    a generator argument (:class:`~..protocol.Once`: ``iter([...])``), a generator made from a seed
    (:class:`~..protocol.RngSeed`: ``np.random.default_rng(seed)``), an array in another layout
    (:class:`~..protocol.Laid`: ``np.array(np.array([[1.0, 2.0]]), order='F')``). A :class:`Source` is its own
    text.
    """
    if isinstance(value, Source):
        return value.text
    if isinstance(value, RngSeed):
        return repr(value)
    if isinstance(value, Once):
        return f"iter({pasteable(list(value.items))})"
    if isinstance(value, Laid):
        return value.source(pasteable(value.values))
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    if isinstance(value, np.floating) and not np.isfinite(value):
        return f"np.{type(value).__name__}({repr(float(value))!r})"
    if isinstance(value, np.ndarray):
        return f"np.array({pasteable(value.tolist())}, dtype=np.{value.dtype.name})"
    if isinstance(value, list):
        return f"[{', '.join(pasteable(item) for item in value)}]"
    if isinstance(value, tuple):
        inner = ", ".join(pasteable(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{pasteable(k)}: {pasteable(v)}" for k, v in value.items()) + "}"
    return repr(value)


def call_statement(function: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> str:
    """One call as a statement a student pastes into a cell (:attr:`Mismatch.calls`): ``f(1.0, x=np.True_)``."""
    shown = [pasteable(arg) for arg in args]
    shown += [f"{name}={pasteable(value)}" for name, value in (kwargs or {}).items()]
    return f"{function}({', '.join(shown)})"
