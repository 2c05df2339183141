"""The catalogue of named wrong answers: misconceptions a student could plausibly code.

Each entry is a real implementation, written as a student might, of one
public function of an exercise. It serves three purposes:

* CI builds a submission whose answer cell holds the wrong implementation and
  proves it loses points in the test cells it targets, and only there;
* a hidden suite compares a failing student's outputs on the counterexample
  with each entry's outputs, and names the misconception in feedback when
  they match;
* the feedback's advice text lives here, next to the code it describes.

Entries are registered per exercise module (``catalogue/ex1.py`` ...) with
:func:`wrong_answer`. The entry function's own name is free (several wrong
versions of one function live in one module); :attr:`WrongAnswer.source`
renames it to the public name it replaces.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["EXERCISE_MODULES", "WrongAnswer", "catalogue", "wrong_answer"]

EXERCISE_MODULES = ("ex1", "ex2", "ex3", "ex4", "ex5")


@dataclass(frozen=True)
class WrongAnswer:
    """One named misconception, as code.

    Attributes:
        name: identifier, e.g. ``"last_writer_wins"``; unique within its exercise.
        title: the misconception's name as a student reads it, e.g. "Last writer wins".
        advice: one or two sentences: what to reconsider (shown in feedback).
        answer_cell: grade_id of the answer cell whose function it replaces.
        replaces: the public function name it stands in for.
        loses: grade_ids of the autograded test cells that must lose points
            when this entry is submitted; every other test cell must keep full marks.
        function: the wrong implementation, callable in the trusted process
            with the same signature as ``replaces``.
    """

    name: str
    title: str
    advice: str
    answer_cell: str
    replaces: str
    loses: tuple[str, ...]
    function: Callable

    @property
    def source(self) -> str:
        """The entry's source with its ``def`` renamed to :attr:`replaces`, decorator removed."""
        text = textwrap.dedent(inspect.getsource(self.function))
        tree = ast.parse(text)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise TypeError(f"catalogue entry {self.name} is not a plain function")
        node.decorator_list = []
        node.name = self.replaces
        return ast.unparse(node)


_REGISTRY: dict[str, list[WrongAnswer]] = {}


def wrong_answer(
    *, exercise: str, name: str, title: str, advice: str, answer_cell: str, replaces: str, loses: tuple[str, ...]
) -> Callable[[Callable], Callable]:
    """Register the decorated function as a catalogue entry of ``exercise``.

    Raises:
        ValueError: an entry of that name already exists for the exercise,
            or ``loses`` is empty (an entry that should lose nothing is not a
            misconception).
    """

    def register(function: Callable) -> Callable:
        entries = _REGISTRY.setdefault(exercise, [])
        if any(entry.name == name for entry in entries):
            raise ValueError(f"catalogue entry {exercise}/{name} is registered twice")
        if not loses:
            raise ValueError(f"catalogue entry {exercise}/{name} must name the test cells it loses points in")
        entries.append(WrongAnswer(name, title, advice, answer_cell, replaces, tuple(loses), function))
        return function

    return register


def catalogue(exercise: str) -> tuple[WrongAnswer, ...]:
    """All entries of ``exercise`` (``"ex1"`` ... ``"ex5"``), in definition order."""
    if exercise not in EXERCISE_MODULES:
        raise ValueError(f"unknown exercise {exercise!r}; expected one of {EXERCISE_MODULES}")
    importlib.import_module(f"{__name__}.{exercise}")
    return tuple(_REGISTRY.get(exercise, ()))
