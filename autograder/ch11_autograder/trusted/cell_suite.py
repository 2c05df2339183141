"""What a suite is made of: :class:`Property` (one checkable statement) and :class:`CellSuite` (the
properties that grade one autograded test cell)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol import wire_equal
from .mismatch import Misconception
from .student import Student

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "CellSuite",
    "Property",
]

#: Default wall-clock budget of one property, seconds (all its calls together).
DEFAULT_TIME_BUDGET = 60.0


@dataclass(frozen=True)
class Property:
    """One checkable statement about the student's code.

    Attributes:
        name: identifier, unique within its suite, shown to students.
        description: one line for students, stating what must hold.
        check: ``check(student)``; returns on success, raises
            :class:`Mismatch` on a wrong answer.
        misconceptions: catalogued wrong implementations, tried in order
            when a :class:`Mismatch` is raised; one is named when it
            reproduces the student's output on every failing example seen.
        matches: ``matches(wrong_output, got)`` decides whether the student's
            output equals a misconception's (default: exact wire equality).
        time_budget: wall-clock seconds for the whole property; when spent,
            the property fails (kind ``budget``) before the next call.
        probe_inputs: inputs (keyword name -> value) among which the engine looks for
            ones that tell two misconceptions apart (see :func:`name_misconception`);
            called only when a misconception is about to be named. A
            :func:`hypothesis_property` draws them from its strategies.
    """

    name: str
    description: str
    check: Callable[[Student], None]
    misconceptions: tuple[Misconception, ...] = ()
    matches: Callable[[Any, Any], bool] = wire_equal
    time_budget: float = DEFAULT_TIME_BUDGET
    probe_inputs: Callable[[], Sequence[Mapping[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"property name {self.name!r} must be an identifier")
        if not self.description or "\n" in self.description:
            raise ValueError(f"property {self.name}: the description must be one non-empty line")
        object.__setattr__(self, "misconceptions", tuple(self.misconceptions))


@dataclass(frozen=True)
class CellSuite:
    """The properties that grade one autograded test cell.

    Attributes:
        grade_id: nbgrader ``grade_id`` of the test cell.
        points: the cell's points; must equal the gradebook's value.
        properties: at least one, with unique names; order is feedback order. Any
            sequence is accepted; it is stored as a tuple.
    """

    grade_id: str
    points: float
    properties: Sequence[Property] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", tuple(self.properties))
        object.__setattr__(self, "points", float(self.points))
        if not self.properties:
            raise ValueError(f"suite {self.grade_id}: needs at least one property")
        names = [p.name for p in self.properties]
        if len(set(names)) != len(names):
            raise ValueError(f"suite {self.grade_id}: property names must be unique, got {names}")
        if not self.points > 0:
            raise ValueError(f"suite {self.grade_id}: points must be > 0")


