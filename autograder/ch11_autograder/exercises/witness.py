"""Witnesses: for every contract clause, answers that break that clause alone.

A contract table (``exercises/<key>/contract.py``) maps each docstring clause to
the properties that check it; that mapping is a claim. A witness proves it: an
answer equal to the reference except that it breaks one clause, the way a
student plausibly would. ``tests/autograder/exercises/test_witnesses.py``
grades every witness through the real worker and requires that

* every witness fails at least one property its clause names, so its cell loses points;
* every property a clause names fails on at least one of that clause's witnesses;
* every clause of the table has a witness.

A witness's source is appended to the answer cell of the reference notebook,
after the reference's own definition: most wrap the reference function under
a private name (``_reference_<function>``) and change one thing around the
call, so the rest of the answer stays the reference's. The builders below
write the mechanical ones from the clause's kind (an exception swapped or
dropped for each input family a Raises clause names, a default changed or
omitted, an accepted type refused or converted, state kept between calls, an
argument changed); the rest (bit-level rules, tie-breaks, tolerances) are
written by hand in ``exercises/<key>/witnesses.py``.

Two kinds are generated from the clause table alone. :func:`layout_witnesses`: for every memory
layout an array argument's accepts clause draws, an answer that raises on it (or writes into a
read-only input), and for every same-size shape a raises clause refuses, an answer that reshapes it
silently. :func:`promise_witnesses`: every output
promise must hold for every input kind and range end the function's ``accepts`` clauses name
(their ``drawn`` kinds), so for each such kind one witness breaks the function's type promise
(its first ``returns`` clause) and one its value promise (its first ``tolerance`` clause, or its
first ``behaviour`` clause where it states no accuracy), for inputs of that kind only.
:meth:`Witnesses.with_generated` adds them, so a new exercise gets them from its table.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..api.contract import Clause
from ..api.suite import Call, Kept, Session

__all__ = [
    "Family",
    "Renamed",
    "Witness",
    "Witnesses",
    "by_hand",
    "changed_defaults",
    "clause_lookup",
    "converted",
    "find_clause",
    "keeps_state",
    "layout_witnesses",
    "mutates",
    "other_exception",
    "promise_witnesses",
    "refused",
    "side_by_side",
    "wrapper",
]

#: The other exception a Raises clause's input gets in a swapped-exception witness.
_OTHER = {"TypeError": "ValueError", "ValueError": "TypeError"}


@dataclass(frozen=True)
class Witness:
    """One answer that breaks one clause.

    Attributes:
        clause: the clause it breaks (a record of the exercise's ``CONTRACT``).
        name: identifier, unique within its exercise, e.g. ``"depth_float_below_1_raises_ValueError"``.
        answer_cell: grade id of the answer cell whose source it is appended to.
        source: Python source appended to that cell (after the reference's definitions).
    """

    clause: Clause
    name: str
    answer_cell: str
    source: str


@dataclass(frozen=True)
class Family:
    """An input family a clause names, as a guard over the function's arguments.

    Attributes:
        label: a short identifier, e.g. ``"float_below_1"``.
        guard: a Python expression over the function's parameters, true for the family's inputs.
        answer: what a witness that answers instead of raising returns for it, an expression
            over the parameters (a plausible conversion; ``None`` by default).
    """

    label: str
    guard: str
    answer: str = "None"


@dataclass(frozen=True)
class Witnesses:
    """An exercise's witnesses (the test requires at least one for every clause of the contract).

    Attributes:
        contract: the exercise's clause table.
        witnesses: every witness.
        readings: answers of a reading the docstring settles as right where a sentence could be read
            two ways (a numpy integer where an ``int`` is promised, a shared dict): each is a
            :class:`Witness` of the clause it reads and must pass every property of its function's
            clauses (``test_witnesses.py``).
    """

    contract: tuple[Clause, ...]
    witnesses: tuple[Witness, ...]
    readings: tuple[Witness, ...] = ()

    def __post_init__(self) -> None:
        names = [w.name for w in (*self.witnesses, *self.readings)]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"witness names must be unique: {sorted(duplicates)}")
        strangers = [w.name for w in (*self.witnesses, *self.readings) if w.clause not in self.contract]
        if strangers:
            raise ValueError(f"witnesses of clauses not in the contract: {strangers}")

    def with_generated(self, reference: ModuleType) -> Witnesses:
        """These witnesses and the generated ones (:func:`promise_witnesses`, :func:`layout_witnesses`) of
        ``reference``'s functions.

        A function's answer cell is the one its hand-written witnesses use (every clause has one).
        """
        cells = {w.clause.function: w.answer_cell for w in self.witnesses}
        generated = [
            w for function, cell in cells.items() if hasattr(reference, function)
            for make in (promise_witnesses, layout_witnesses)
            for w in make(self.contract, getattr(reference, function), cell)
        ]
        return Witnesses(self.contract, (*self.witnesses, *generated), self.readings)

    def without_witness(self) -> list[Clause]:
        """Clauses of the contract that have no witness."""
        covered = {w.clause for w in self.witnesses}
        return [c for c in self.contract if c not in covered]


def find_clause(contract: Iterable[Clause], function: str, kind: str, *, text: str = "",
                argument: str | None = None, raises: str | None = None) -> Clause:
    """The one clause of ``contract`` with these fields whose text starts with ``text``.

    Raises:
        LookupError: none or several match.
    """
    found = [
        c for c in contract
        if c.function == function and c.kind == kind and c.text.startswith(text)
        and (argument is None or c.argument == argument) and (raises is None or c.raises == raises)
    ]
    if len(found) != 1:
        raise LookupError(f"{len(found)} clauses of {function} match {kind} {text!r} {argument} {raises}")
    return found[0]


def clause_lookup(contract: tuple[Clause, ...]) -> Callable[..., Clause]:
    """:func:`find_clause` over ``contract``: ``lookup(function, kind, text="", argument=..., raises=...)``."""

    def lookup(function: str, kind: str, text: str = "", **fields: str) -> Clause:
        return find_clause(contract, function, kind, text=text, **fields)

    return lookup


# ---- writing a wrapper ----------------------------------------------------------------------


def _parameters(reference: Callable[..., Any], defaults: dict[str, str | None] | None = None) -> tuple[str, str]:
    """(parameter list, forwarding call arguments) of ``reference``'s signature, annotations dropped.

    ``defaults`` replaces the source text of a parameter's default; ``None`` removes it.
    """
    defaults = defaults or {}
    params, call = [], []
    star = False
    for p in inspect.signature(reference).parameters.values():
        text = p.name
        if p.name in defaults:
            if defaults[p.name] is not None:
                text += f"={defaults[p.name]}"
        elif p.default is not p.empty:
            text += f"={_default_source(p.default)}"
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        params.append(text)
        call.append(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else p.name)
    return ", ".join(params), ", ".join(call)


def _default_source(value: Any) -> str:
    text = repr(value)
    if isinstance(value, bool | int | float | str | range | type(None)):
        return text
    raise ValueError(f"cannot write the default {text} as source; pass it in defaults")


def wrapper(reference: Callable[..., Any], before: str = "", *, result: str = "",
            defaults: dict[str, str | None] | None = None, prelude: str = "") -> str:
    """Source of a function named like ``reference`` that calls the reference with its arguments.

    ``before`` runs first (it may raise, return, or rebind arguments); ``result``, if given, is
    an expression over ``result`` (the reference's return value) returned instead. ``prelude``
    goes before the ``def`` (module state). ``defaults``: see :func:`_parameters`.
    """
    name = reference.__name__
    params, call = _parameters(reference, defaults)
    body = textwrap.indent(textwrap.dedent(before).strip(), "    ") + "\n" if before.strip() else ""
    tail = f"    result = _reference_{name}({call})\n    return {result}\n" if result else (
        f"    return _reference_{name}({call})\n")
    head = f"_reference_{name} = {name}\n"
    if prelude:
        head += textwrap.dedent(prelude).strip() + "\n"
    return f"{head}\n\ndef {name}({params}):\n{body}{tail}"


# ---- the mechanical builders, one per clause kind -------------------------------------------


def other_exception(clause: Clause, reference: Callable[..., Any], answer_cell: str,
                    families: Sequence[Family]) -> list[Witness]:
    """For a Raises clause, per family: the other exception, and an answer instead of raising."""
    if clause.raises not in _OTHER:
        raise ValueError(f"no other exception known for {clause.raises}")
    other = _OTHER[clause.raises]
    out = []
    for family in families:
        base = f"{reference.__name__}_{clause.argument}_{family.label}"
        out.append(Witness(clause, f"{base}_raises_{other}", answer_cell, wrapper(
            reference, f"if {family.guard}:\n    raise {other}('{clause.argument} is not valid')")))
        out.append(Witness(clause, f"{base}_returns", answer_cell, wrapper(
            reference, f"if {family.guard}:\n    return {family.answer}")))
    return out


def changed_defaults(clause: Clause, reference: Callable[..., Any], answer_cell: str,
                     others: Sequence[str], *, omit: bool = True) -> list[Witness]:
    """For a default clause: the default replaced by each of ``others`` (source text), and omitted."""
    assert clause.argument is not None
    argument = clause.argument
    out = [
        Witness(clause, f"{reference.__name__}_{argument}_default_{_slug(other)}", answer_cell,
                wrapper(reference, defaults={argument: other}))
        for other in others
    ]
    if omit:
        source = wrapper(reference, defaults={argument: None})
        try:
            compile(source, "omitted default", "exec")
        except SyntaxError:
            return out  # an earlier parameter has a default: Python has no signature without this one's
        out.append(Witness(clause, f"{reference.__name__}_{argument}_no_default", answer_cell, source))
    return out


def refused(clause: Clause, reference: Callable[..., Any], answer_cell: str,
            families: Sequence[Family]) -> list[Witness]:
    """For an accepts clause: each accepted family refused with a TypeError."""
    return [
        Witness(clause, f"{reference.__name__}_{clause.argument}_refuses_{family.label}", answer_cell,
                wrapper(reference, f"if {family.guard}:\n    raise TypeError('{clause.argument}: wrong type')"))
        for family in families
    ]


def converted(clause: Clause, reference: Callable[..., Any], answer_cell: str, label: str, guard: str,
              conversion: str) -> Witness:
    """For an accepts clause: inputs where ``guard`` holds rebound to ``conversion`` (a lossy reading)."""
    argument = clause.argument
    return Witness(clause, f"{reference.__name__}_{argument}_converts_{label}", answer_cell,
                   wrapper(reference, f"if {guard}:\n    {argument} = {conversion}"))


def keeps_state(clause: Clause, reference: Callable[..., Any], answer_cell: str, label: str, key: str) -> Witness:
    """For a purity clause: results memoised under ``key``, an expression coarser than the arguments."""
    name = reference.__name__
    return Witness(clause, f"{name}_remembers_by_{label}", answer_cell, wrapper(
        reference,
        f"key = {key}\nif key in _memo_{name}:\n    return _memo_{name}[key]",
        result=f"_memo_{name}.setdefault(key, result)",
        prelude=f"_memo_{name} = {{}}",
    ))


def mutates(clause: Clause, reference: Callable[..., Any], answer_cell: str, label: str, statement: str,
            *, after: bool = False) -> Witness:
    """For a purity clause: the argument changed by ``statement``, before the call or (``after``) after it."""
    name = reference.__name__
    if after:
        return Witness(clause, f"{name}_{label}", answer_cell, wrapper(
            reference, prelude="", result=f"(result, {statement})[0]"))
    return Witness(clause, f"{name}_{label}", answer_cell, wrapper(reference, statement))


#: Defines ``_spoiled(value, how)``: ``value`` with every number in it changed, records, lists and
#: dicts walked. ``how="type"`` keeps the value and breaks the type or dtype (an int becomes a float,
#: a float (np.float64 too) a np.float32, a np.float32 a np.float64, a Fraction a float, a float64
#: array float32, any other array float64); ``how="value"`` keeps the type and moves the value
#: beyond any tolerance (finite ``v`` to ``v + 1 + |v|``, nan to 1, an infinity to the other one, ints
#: ``v + 1``). Bools, strings and None are left alone.
_SPOILED = """
import dataclasses as _spoil_dc
import fractions as _spoil_fractions
import numpy as _spoil_np


def _spoiled(value, how):
    if value is None or isinstance(value, (bool, _spoil_np.bool_, str)):
        return value
    if _spoil_dc.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: _spoiled(getattr(value, f.name), how) for f in _spoil_dc.fields(value) if f.init}
        copy = object.__new__(type(value))
        for name, field in changed.items():
            object.__setattr__(copy, name, field)
        return copy
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_spoiled(v, how) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_spoiled(v, how) for v in value)
    if isinstance(value, dict):
        return {k: _spoiled(v, how) for k, v in value.items()}
    with _spoil_np.errstate(all="ignore"):
        if isinstance(value, _spoil_np.ndarray):
            if value.dtype.kind not in "iuf":
                return value
            if how == "type":
                return value.astype(_spoil_np.float32 if value.dtype == _spoil_np.float64 else _spoil_np.float64)
            if value.dtype.kind != "f":
                return (value + 1).astype(value.dtype)
            moved = _spoil_np.where(_spoil_np.isnan(value), 1, _spoil_np.where(_spoil_np.isinf(value), -value,
                                                                               value + 1 + abs(value)))
            return moved.astype(value.dtype)
        if isinstance(value, (int, _spoil_np.integer)):
            return float(value) if how == "type" else value + 1
        if isinstance(value, _spoil_fractions.Fraction):
            return float(value) if how == "type" else value + 1 + abs(value)
        if isinstance(value, (float, _spoil_np.floating)):
            if how == "type":
                return _spoil_np.float32(value) if isinstance(value, float) else _spoil_np.float64(value)
            moved = 1.0 if value != value else -value if abs(value) == float("inf") else value + 1 + abs(value)
            return type(value)(moved)
    return value
"""


def promise_witnesses(contract: Sequence[Clause], reference: Callable[..., Any], answer_cell: str) -> list[Witness]:
    """For each input kind ``reference``'s accepts clauses draw, its output promises broken for that kind alone.

    Per ``Drawn`` kind of an ``accepts`` clause of the function: a witness returning the
    reference's result with its types broken (``_spoiled(result, "type")``), a witness of the
    function's first ``returns`` clause, and one with its values moved (``"value"``), a witness of
    its first ``tolerance`` clause or, without one, its first ``behaviour`` clause. The kind's guard
    is evaluated before the call. A property that never draws the kind, or draws it and does not
    check the promise there, passes the witness, and the witness tests fail.
    """
    name = reference.__name__
    mine = [c for c in contract if c.function == name]
    promises = {
        "type": next((c for c in mine if c.kind == "returns"), None),
        "value": next((c for c in mine if c.kind == "tolerance"), None)
        or next((c for c in mine if c.kind == "behaviour"), None),
    }
    out = []
    for accepts in (c for c in mine if c.kind == "accepts"):
        for drawn in accepts.drawn:
            for how, promise in promises.items():
                if promise is None:
                    continue
                source = wrapper(reference, f"_drawn = bool({drawn.guard})",
                                 result=f"_spoiled(result, {how!r}) if _drawn else result", prelude=_SPOILED)
                out.append(Witness(promise, f"{name}_{how}_broken_for_{accepts.argument}_{drawn.label}",
                                   answer_cell, source))
    return out


def layout_witnesses(contract: Sequence[Clause], reference: Callable[..., Any], answer_cell: str) -> list[Witness]:
    """Per memory layout an accepts clause draws, and per shape a raises clause names, the answer mishandling it.

    Per drawn layout (``contract.layouts``): an answer that raises on that layout alone, or (read-only)
    writes its input's elements back into it, a witness of the accepts clause. Per raises clause with a
    ``reshaped`` shape: an answer that quietly reshapes a same-size array of another shape to it and
    answers, a witness of that clause. A property that never draws the layout or the shape passes it.
    """
    name = reference.__name__
    out = []
    for clause in (c for c in contract if c.function == name):
        for drawn in clause.drawn:
            if drawn.mishandled:
                out.append(Witness(clause, f"{name}_{clause.argument}_mishandles_{drawn.label}", answer_cell,
                                   wrapper(reference, drawn.mishandled)))
        if clause.reshaped:
            a, shape = clause.argument, clause.reshaped
            before = (f"if isinstance({a}, np.ndarray) and {a}.shape != tuple({shape}) "
                      f"and {a}.size == int(np.prod({shape})):\n    {a} = {a}.reshape({shape})")
            out.append(Witness(clause, f"{name}_{a}_reshapes_silently_{clause.raises}", answer_cell,
                               wrapper(reference, before, prelude="import numpy as np")))
    return out


def by_hand(clause: Clause, name: str, answer_cell: str, source: str) -> Witness:
    """A witness written out in full (``source`` is dedented)."""
    return Witness(clause, name, answer_cell, textwrap.dedent(source).strip() + "\n")


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_") or "empty"


# ---- grading many witnesses in one worker -------------------------------------------------


def _defined(source: str) -> list[str]:
    """Public top-level functions ``source`` defines (the ones a witness replaces)."""
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def side_by_side(witnesses: Sequence[Witness], graded: Iterable[str] = ()) -> tuple[str, dict[str, dict[str, str]]]:
    """One cell defining every witness beside the reference, and per witness the names it answers under.

    Starting a worker costs seconds, grading a witness's properties a fraction of that, so the
    witnesses of an exercise share one worker: the cell (appended after the notebook's last
    cell) runs each witness's source in a copy of the notebook's namespace, as if appended to
    its answer cell, and binds the functions it defines, and the ``graded`` functions, under
    names of its own (``best_block_length__w3``); :class:`Renamed` sends a property's calls
    there. The notebook's functions are rebound to the copy first (same code, the copy as
    their globals), so a reference function that calls a witnessed one by name calls the
    witness, as it would if the witness were appended to the answer cell.

    Returns:
        (the cell's source, witness name -> {function: the name it is bound to}).
    """
    lines = [
        "import types as _witness_types",
        "_witness_base = dict(globals())",
        "",
        "",
        "def _witness_namespace():",
        "    ns = dict(_witness_base)",
        "    for name, value in _witness_base.items():",
        "        if isinstance(value, _witness_types.FunctionType) and value.__globals__ is globals():",
        "            copy = _witness_types.FunctionType(value.__code__, ns, value.__name__, value.__defaults__,",
        "                                               value.__closure__)",
        "            copy.__kwdefaults__ = value.__kwdefaults__",
        "            copy.__dict__.update(value.__dict__)",
        "            ns[name] = copy",
        "    return ns",
        "",
        "",
    ]
    graded = tuple(graded)
    names: dict[str, dict[str, str]] = {}
    for index, witness in enumerate(witnesses):
        defined = _defined(witness.source)
        if not defined and not graded:
            raise ValueError(f"witness {witness.name} defines no public function")
        renamed = {fn: f"{fn}__w{index}" for fn in dict.fromkeys((*defined, *graded))}
        names[witness.name] = renamed
        lines.append("_witness_ns = _witness_namespace()")
        lines.append(f"exec(compile({witness.source!r}, {witness.name!r}, 'exec'), _witness_ns)")
        lines += [f"{new} = _witness_ns[{fn!r}]" for fn, new in renamed.items()]
    lines.append("del _witness_ns, _witness_base, _witness_namespace, _witness_types")
    return "\n".join(lines) + "\n", names


@dataclass
class Renamed:
    """A session whose calls of some functions go to other names (see :func:`side_by_side`)."""

    session: Session
    names: Mapping[str, str]

    @property
    def report(self) -> Any:
        return self.session.report

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        return self.session.call(self.names.get(fn, fn), *args, **kwargs)

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        return self.session.call_watch(self.names.get(fn, fn), *args, **kwargs)

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Any]:
        """The session's ``call_many`` (``WorkerSession.call_many``) with the calls renamed: one exchange still."""
        renamed = [dataclasses.replace(call, fn=self.names.get(call.fn, call.fn)) for call in calls]
        return self.session.call_many(renamed, stop_on_error=stop_on_error, deadline=deadline)

    def keep(self, value: Any, label: str = "") -> Kept:
        return self.session.keep(value, label)

    def defaults(self, fn: str) -> dict[str, Any]:
        return self.session.defaults(self.names.get(fn, fn))
