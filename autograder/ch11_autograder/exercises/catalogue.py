"""The catalogue of named wrong answers: misconceptions a student could plausibly code.

Each entry is a real implementation, written as a student might, of one
public function of an exercise. It serves three purposes:

* CI builds a submission whose answer cell holds the wrong implementation and
  proves it loses points in the test cells it targets, and only there;
* a hidden suite compares a failing student's outputs on the counterexample
  with each entry's outputs, and names the misconception in feedback when
  they match;
* the feedback's advice text lives in the entry, next to the code it describes.

Entries are registered per exercise module (``exercises/ex1/wrong_answers.py`` ...)
with :func:`wrong_answer`. The entry function's own name is free (several wrong
versions of one function live in one module); :attr:`WrongAnswer.source`
renames it to the public name it replaces.

Suites turn entries into :class:`Misconception` objects in three ways, one helper each:
an entry as it is (:func:`misconception`), an upstream entry seen through a correct
downstream function that uses it (:func:`seen_through`), and entries tried in an order
the suite states, checked against the catalogue (:func:`in_order`).

The kill table: beside each exercise's ``wrong_answers.py``, ``kill_table.json`` records, for
every entry, the properties it fails in each test cell when it is submitted (graded for real by
``python -m ch11_autograder.authoring.kill_table``, which ``make release`` runs; the catalogue
test in tests/autograder/exercises/test_suites.py fails when a row is stale). The helpers above
give each misconception its entry's row (:attr:`Misconception.fails`, :func:`kill_table_row`):
feedback keeps an entry's name only for an answer that fails the cell as the entry does.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..api.suite import Misconception
from . import exercise as _exercise

__all__ = [
    "KILL_TABLE",
    "WrongAnswer",
    "catalogue",
    "fails_of",
    "in_order",
    "kill_table_path",
    "kill_table_row",
    "misconception",
    "seen_through",
    "wrong_answer",
]

#: The kill table's file name, beside the exercise's ``wrong_answers.py``.
KILL_TABLE = "kill_table.json"


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
    def keeps_state(self) -> bool:
        """Whether the entry keeps state between calls: a mutable default it writes to (a memo), the
        catalogue's one way of writing a mistake that depends on the calls made before."""
        defaults = (*(self.function.__defaults__ or ()), *(self.function.__kwdefaults__ or {}).values())
        return any(isinstance(value, dict | list | set | bytearray) for value in defaults)

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
    """All entries of ``exercise`` (a registry key, ``"ex1"`` ... ``"ex5"``), in definition order.

    Raises:
        ValueError: ``exercise`` is not in the registry.
    """
    importlib.import_module(_exercise(exercise).wrong_answers_module)
    return tuple(_REGISTRY.get(exercise, ()))


# ---- the kill table ------------------------------------------------------------------------


def kill_table_path(entry: WrongAnswer) -> Path:
    """The kill table of ``entry``'s exercise: :data:`KILL_TABLE` beside the module that registers it."""
    module = sys.modules[entry.function.__module__]
    return Path(str(module.__file__)).with_name(KILL_TABLE)


@functools.cache
def _kill_table(path: Path) -> dict[str, dict[str, frozenset[str]]]:
    """``entry name -> {grade_id -> properties failed}``; ``{}`` where the file does not exist yet.

    Raises:
        ValueError: the file is not a kill table (the message names it).
    """
    if not path.is_file():
        return {}
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        if not all(isinstance(props, list) and all(isinstance(p, str) for p in props)
                   for row in rows.values() for props in row.values()):
            raise TypeError("a cell's properties are not a list of names")
    except (ValueError, AttributeError, TypeError) as error:
        raise ValueError(f"{path} is not a kill table ({error}); rewrite it with "
                         "python -m ch11_autograder.authoring.kill_table") from error
    return {name: {cell: frozenset(props) for cell, props in row.items()} for name, row in rows.items()}


def kill_table_row(entry: WrongAnswer) -> Mapping[str, frozenset[str]] | None:
    """The properties ``entry`` fails, per test cell, as recorded; ``None`` if it has no row yet."""
    return _kill_table(kill_table_path(entry)).get(entry.name)


def fails_of(entries: Iterable[WrongAnswer]) -> tuple[Mapping[str, frozenset[str]], ...]:
    """:attr:`Misconception.fails` for a name that stands for ``entries``: their recorded rows.

    Empty (the name rests on the failing examples alone) unless every entry has a row: a name
    held to some of its entries only would be taken from answers showing the others.
    """
    rows = [kill_table_row(entry) for entry in entries]
    recorded = tuple(row for row in rows if row is not None)
    return recorded if len(recorded) == len(rows) else ()


# ---- entries as misconceptions -----------------------------------------------------------


def misconception(entry: WrongAnswer) -> Misconception:
    """``entry`` as it is: its title, its advice, its function, probed through the function it replaces."""
    return Misconception(entry.title, entry.advice, entry.function, function=entry.replaces, fails=fails_of([entry]),
                         history=entry.keeps_state)


def seen_through(
    entry: WrongAnswer,
    downstream: Callable[[Callable], Callable],
    *,
    where: str | None = None,
    function: str = "",
) -> Misconception:
    """An upstream entry as a correct downstream function reports it.

    ``downstream(entry.function)`` must return what the downstream function returns
    when the upstream one is wrong in the entry's way, called with the downstream
    function's own arguments. ``where``, if given, is added to the title in
    parentheses (e.g. "in extended_tape, which this function reads"). ``function``
    names the downstream function, so that the engine can probe it (see
    ``trusted.misconception_naming.name_misconception``).
    """
    title = entry.title if where is None else f"{entry.title} ({where})"
    return Misconception(title, entry.advice, downstream(entry.function), function=function, fails=fails_of([entry]),
                         history=entry.keeps_state)


def in_order(
    exercise: str, entries: Iterable[WrongAnswer], first: Sequence[str], *, complete: bool = False
) -> tuple[WrongAnswer, ...]:
    """``entries`` with those named in ``first`` first, in that order, the rest in catalogue order.

    Misconceptions are tried in order and the first that explains a failure is named, so
    where two entries give the same output the suite states which wins. With ``complete``
    the order must name every entry.

    Raises:
        RuntimeError: ``first`` names an entry that is not among ``entries`` or, with
            ``complete``, leaves one out: suite and catalogue disagree.
    """
    by_name = {entry.name: entry for entry in entries}
    disagree = set(first) - set(by_name)
    if complete:
        disagree |= set(by_name) - set(first)
    if disagree:
        raise RuntimeError(f"suite and catalogue disagree on {exercise} entries: {sorted(disagree)}")
    rest = [entry for name, entry in by_name.items() if name not in first]
    return (*(by_name[name] for name in first), *rest)
