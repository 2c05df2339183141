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

__all__ = ["KINDS", "Clause", "ClauseKind", "Drawn", "ends", "missing_properties", "property_names", "scalars"]

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
    """

    label: str
    guard: str


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
            accepted kind) and range ends the clause names; every output promise of the
            function must hold for each (``exercises.witness.promise_witnesses``).
    """

    function: str
    kind: ClauseKind
    text: str
    checked_by: tuple[str, ...]
    argument: str | None = None
    raises: str | None = None
    drawn: tuple[Drawn, ...] = ()

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


def property_names(suites: Iterable[CellSuite]) -> set[str]:
    """``"<grade_id>/<property name>"`` of every property of ``suites``."""
    return {f"{suite.grade_id}/{prop.name}" for suite in suites for prop in suite.properties}


def missing_properties(clauses: Sequence[Clause], suites: Iterable[CellSuite]) -> list[str]:
    """Every ``checked_by`` name of ``clauses`` that no property of ``suites`` has, as ``"function: name"``."""
    known = property_names(suites)
    return [f"{c.function}: {name}" for c in clauses for name in c.checked_by if name not in known]
