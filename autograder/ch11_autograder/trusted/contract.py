"""Contract clauses: every rule a stub's docstring states, mapped to the properties that check it.

A hidden suite grades answers written by people who never saw it, so it must
check the contract the student reads, clause by clause, not a list of mistakes
someone imagined. Each exercise declares a table of :class:`Clause` records
next to its suites; ``tests/autograder/test_contract_coverage.py`` derives from
each graded function's docstring and signature the clauses it must contain
(every ``Raises`` entry per argument it names, every default, every parameter's
accepted types, the return types, purity, and any tie-break or tolerance the
text states) and fails when one is missing or names a property that no
registered suite has.

A clause names properties as ``"<grade_id>/<property name>"``. A rule the
grader applies that the docstring does not state is a bug in the docstring:
fix the docstring, then add the clause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    # Only for the annotation: exercises' contracts import this module, and must not load
    # the suite API (hypothesis) with it.
    from .cell_suite import CellSuite

__all__ = [
    "KINDS",
    "LAYOUT_KINDS",
    "Clause",
    "ClauseKind",
    "Drawn",
    "ends",
    "layouts",
    "missing_properties",
    "property_names",
    "scalars",
]

ClauseKind = Literal["raises", "default", "accepts", "returns", "purity", "tie-break", "tolerance", "behaviour"]

#: What each kind of clause promises, as a reviewer reads the table.
KINDS: Mapping[str, str] = {
    "raises": "a bad value of `argument` raises the named exception (and nothing else)",
    "default": "calling without `argument` behaves as the stated default",
    "accepts": "every type the docstring accepts for `argument` works (iterables: lists, tuples, generators)",
    "returns": "the return type, dtype and shape, for every accepted input type",
    "purity": "arguments are left unchanged and the result does not depend on earlier calls",
    "tie-break": "the stated rule among equally good answers",
    "tolerance": "the stated accuracy (exact bits, ulps or a relative bound)",
    "behaviour": "the value the function computes",
}


@dataclass(frozen=True)
class Drawn:
    """One input kind an ``accepts`` clause names, or one end of a range it names.

    The properties that check a function's output promises must draw it (the rule of
    ``exercises/witness.py``'s generated witnesses, which break the promise for this input alone).

    Attributes:
        label: a short identifier, e.g. ``"numpy_int64"`` or ``"k_149"``.
        guard: a Python expression over the function's parameters, true for this kind's inputs
            and evaluated before the call (it must not consume a one-shot iterable).
        mishandled: for a memory layout (:func:`layouts`), a statement run before the call by an answer that
            mishandles this layout alone (raises on it, writes into a read-only input); empty otherwise.
    """

    label: str
    guard: str
    mishandled: str = ""


@dataclass(frozen=True)
class Clause:
    """One rule of a graded function's docstring contract.

    Attributes:
        function: the student-facing function, e.g. ``"best_block_length"``.
        kind: one of :data:`KINDS`.
        text: the rule in a few words, as the docstring states it.
        checked_by: ``"<grade_id>/<property name>"`` of every property that fails when
            the rule is broken; at least one.
        argument: the parameter the clause is about (``raises``, ``default`` and
            ``accepts`` clauses name one; others may).
        raises: for ``raises`` clauses, the exception name the docstring promises.
        drawn: for ``accepts`` clauses, the input kinds (Python and numpy scalars of each
            accepted kind, memory layouts of an array) and range ends the clause names; every output
            promise of the function must hold for each (``exercises.witness.promise_witnesses``).
        reshaped: for a ``raises`` clause about an array argument, the shape it must have (an expression
            over the parameters, e.g. ``"(chain.width,)"``) when an array of the right dtype and size but
            another shape raises this clause's exception; its properties must send one
            (``exercises.witness.layout_witnesses`` writes the answer that reshapes it silently).
    """

    function: str
    kind: ClauseKind
    text: str
    checked_by: tuple[str, ...]
    argument: str | None = None
    raises: str | None = None
    drawn: tuple[Drawn, ...] = ()
    reshaped: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"clause kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.checked_by:
            raise ValueError(f"clause {self.function}: {self.text!r} names no property that checks it")
        if any(name.count("/") != 1 for name in self.checked_by):
            raise ValueError(f"clause {self.function}: properties are named '<grade_id>/<property>'")
        if self.kind in ("raises", "default", "accepts") and not self.argument:
            raise ValueError(f"a {self.kind} clause of {self.function} must name its argument")
        if (self.kind == "raises") != bool(self.raises):
            raise ValueError(f"clause {self.function}: only and every raises clause names its exception")
        if self.drawn and self.kind != "accepts":
            raise ValueError(f"clause {self.function}: only accepts clauses name drawn input kinds")
        if self.reshaped and self.kind != "raises":
            raise ValueError(f"clause {self.function}: only raises clauses name the shape a same-size array must have")


#: Guards of the scalar kinds :func:`scalars` names (over ``{a}``, the argument; ``np`` is numpy).
_SCALAR_GUARDS: Mapping[str, str] = {
    "int": "type({a}) is int",
    "float": "type({a}) is float",
    "int64": "type({a}) is np.int64",
    "int32": "type({a}) is np.int32",
    "float64": "type({a}) is np.float64",
    "float32": "type({a}) is np.float32",
}


def scalars(argument: str, *kinds: str) -> tuple[Drawn, ...]:
    """The drawn kinds of a scalar ``argument``: each of ``kinds`` a key of ``_SCALAR_GUARDS``."""
    return tuple(Drawn(kind, _SCALAR_GUARDS[kind].format(a=argument)) for kind in kinds)


def ends(argument: str, *values: int, high: str | None = None) -> tuple[Drawn, ...]:
    """The drawn ends of an integer ``argument``'s range: ``values``, and ``high`` (an expression) if given."""
    integer = f"isinstance({argument}, (int, np.integer)) and not isinstance({argument}, bool)"
    out = tuple(Drawn(f"at_{v}", f"{integer} and {argument} == {v}") for v in values)
    return out + ((Drawn("at_high_end", f"{integer} and {argument} == {high}"),) if high else ())


#: The memory layouts an accepted array argument is drawn in besides C order (``Laid`` in a suite):
#: label -> (guard over ``{a}``, the statement of an answer that mishandles it). The guards tell the
#: layouts apart as the worker builds them (``protocol.lay_out``); arrays with fewer than two elements
#: along two axes (for Fortran order and transposed views) or fewer than two elements (strided) have
#: no distinct layout and are drawn C-ordered.
LAYOUT_KINDS: Mapping[str, tuple[str, str]] = {
    "fortran": (
        "isinstance({a}, np.ndarray) and {a}.base is None and {a}.flags.f_contiguous and not {a}.flags.c_contiguous",
        "if {guard}:\n    raise ValueError('{a} must be C-contiguous')",
    ),
    "transposed": (
        "isinstance({a}, np.ndarray) and {a}.base is not None and {a}.flags.writeable and {a}.flags.f_contiguous "
        "and not {a}.flags.c_contiguous",
        "if {guard}:\n    raise ValueError('{a} must be C-contiguous')",
    ),
    "strided": (
        "isinstance({a}, np.ndarray) and not ({a}.flags.c_contiguous or {a}.flags.f_contiguous)",
        "if {guard}:\n    raise ValueError('{a} must be contiguous')",
    ),
    # Writing the elements back unchanged: harmless on a writeable array, a ValueError on a read-only one.
    "read_only": (
        "isinstance({a}, np.ndarray) and not {a}.flags.writeable",
        "if isinstance({a}, np.ndarray):\n    {a}[...] = {a}",
    ),
}


def layouts(argument: str, *, ndim: int) -> tuple[Drawn, ...]:
    """The drawn memory layouts of an array ``argument`` of up to ``ndim`` dimensions (:data:`LAYOUT_KINDS`).

    One-dimensional arrays have no Fortran order or transposed view of their own; they are drawn
    strided and read-only.
    """
    kinds = [k for k in LAYOUT_KINDS if ndim >= 2 or k in ("strided", "read_only")]
    out = []
    for kind in kinds:
        guard, mishandled = LAYOUT_KINDS[kind]
        guard = guard.format(a=argument)
        out.append(Drawn(f"layout_{kind}", guard, mishandled.format(a=argument, guard=guard)))
    return tuple(out)


def property_names(suites: Iterable[CellSuite]) -> set[str]:
    """``"<grade_id>/<property name>"`` of every property of ``suites``."""
    return {f"{suite.grade_id}/{prop.name}" for suite in suites for prop in suite.properties}


def missing_properties(clauses: Sequence[Clause], suites: Iterable[CellSuite]) -> list[str]:
    """Every ``checked_by`` name of ``clauses`` that no property of ``suites`` has, as ``"function: name"``."""
    known = property_names(suites)
    return [f"{c.function}: {name}" for c in clauses for name in c.checked_by if name not in known]
