"""The class's mistakes, grouped by behaviour: the report's "Mistakes not in the catalogue" and
``reports/<assignment>-mistakes.json``.

The groups are ``trusted.mistake_groups.group_answers`` over the verdict records the report reads
(``report.data``); here each group gets its notebook and the catalogue entry its signature is. That is
the grading's own decision, not a reading of the feedback: the records keep, per failure, the
misconception ``trusted.misconception_naming.name_misconception`` named (it needs the entry to fail the
same property on the same inputs with the same value), and a group carries that name only when it was
given to every member (``MistakeGroup.named``). The name leads to its entry (:func:`entry_for_title`),
and the group is that entry's only when it fails no cell outside the entry's ``loses`` (the cells the
entry loses points in, and only those: the catalogue's kill table,
``tests/autograder/exercises/test_suites.py``); a group that also fails elsewhere is that mistake and
another, and is not catalogued. The JSON is a list of groups, largest first::

    [{"index": 0, "id": "3f2a...", "students": [...], "count": 2, "notebooks": ["ex5_replay"],
      "cells": ["ex5_checkpointed_cotangents_tests"],
      "properties": [{"cell": ..., "property": ..., "outcome": ..., "input": ..., "obtained": ...}],
      "representative": {"student", "cell", "property", "input", "expected", "obtained"},
      "catalogue": "block_size_coerced" | null, "named": "<the title feedback gave>" | ""}]

``index`` is the position in this file, ``id`` the signature's hash (the same group keeps it as the
class grows): ``ch11-grade catalogue draft`` takes either. Texts inside are student output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..batch.course import REPORTS_DIR
from ..exercises import course_exercises
from ..exercises.catalogue import WrongAnswer, catalogue
from ..trusted.mistake_groups import MistakeGroup, answer_from_records, group_answers

#: The property that stands for a test cell's visible checks (``trusted.suite.VISIBLE_CHECKS``).
VISIBLE_CHECKS = "visible_checks"

__all__ = [
    "ClassMistake",
    "class_mistakes",
    "entry_for_title",
    "exercise_of",
    "mistakes_json",
    "mistakes_path",
    "read_mistakes",
    "shown_example",
]


def exercise_of() -> dict[str, str]:
    """Notebook stem -> exercise key, for the exercises the course grades (``exercises.course_exercises``)."""
    return {ex.notebook: ex.key for ex in course_exercises()}


def mistakes_path(course: Path, assignment: str) -> Path:
    """``<course>/reports/<assignment>-mistakes.json``."""
    return course / REPORTS_DIR / f"{assignment}-mistakes.json"


def entry_for_title(title: str, entries: Sequence[WrongAnswer]) -> WrongAnswer | None:
    """The catalogue entry a named misconception stands for: its title, or its title and `` (where...)``
    (an upstream entry seen through a downstream function); the longest such title wins."""
    fits = [e for e in entries if title == e.title or title.startswith(e.title + " (")]
    return max(fits, key=lambda e: len(e.title)) if fits else None


#: What a failure of each kind obtained, where it has no value and raised nothing.
_NO_VALUE = {
    "timeout": "no answer within the time limit",
    "budget": "no answer: the cell's time budget ran out",
    "crash": "no answer: the process running the answer died",
    "protocol": "a value the grader cannot read back",
    "unavailable": "not graded (the grader could not run this cell)",
    "internal": "not graded (a fault of the grader)",
}


def shown_example(group: MistakeGroup) -> tuple[str, str, str]:
    """(input, expected, obtained) of the group's representative, never blank: a cell's visible checks have no
    input of their own (they are the notebook's asserts, run as written) and expect them to pass; a failure
    without a value says what its kind means."""
    rep = group.representative
    visible = group.first.prop == VISIBLE_CHECKS
    given = rep.input_text() or ("the asserts of this test cell in the notebook, run as written" if visible
                                 else "(no input)")
    expected = rep.expected or ("every assert passes" if visible else "an answer as the docstring says")
    obtained = rep.obtained_text()
    if not rep.got and not rep.raised:
        obtained = _NO_VALUE.get(rep.kind, obtained) + (f" (in {rep.call})" if rep.call else "")
    return given, expected, obtained


@dataclass(frozen=True)
class ClassMistake:
    """One group of the class, placed.

    Attributes:
        group: the group.
        notebooks: the notebooks of its cells.
        entry: the catalogue entry the group is (``None`` when not catalogued).
        outside: cells the group fails that the entry its feedback named never loses points in: the
            name covers part of the group only (then ``entry`` is ``None``).
    """

    group: MistakeGroup
    notebooks: tuple[str, ...]
    entry: WrongAnswer | None
    outside: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        """A catalogue entry, or a misconception a suite names itself (a name for several entries)."""
        return self.entry is not None or (bool(self.group.named) and not self.outside)


def class_mistakes(verdicts: Mapping[tuple[str, str, str], Sequence[Mapping[str, Any]]]) -> list[ClassMistake]:
    """The groups of a class from its verdict records: ``(student, notebook, grade_id) -> properties``
    (``report.data``'s reading of ``CellVerdict.record``), largest first."""
    per_student: dict[str, list[dict[str, Any]]] = {}
    notebook_of: dict[str, str] = {}
    for (student, notebook, grade_id), props in sorted(verdicts.items()):
        per_student.setdefault(student, []).append({"grade_id": grade_id, "properties": list(props)})
        notebook_of[grade_id] = notebook
    groups = group_answers(answer_from_records(student, records) for student, records in per_student.items())
    keys = exercise_of()
    out = []
    for group in groups:
        notebooks = tuple(sorted({notebook_of[cell] for cell in group.cells if cell in notebook_of}))
        entry: WrongAnswer | None = None
        outside: tuple[str, ...] = ()
        if group.named and len(notebooks) >= 1 and notebooks[0] in keys:
            entry = entry_for_title(group.named, catalogue(keys[notebooks[0]]))
            if entry is not None:
                outside = tuple(cell for cell in group.cells if cell not in entry.loses)
                entry = None if outside else entry
        out.append(ClassMistake(group, notebooks, entry, outside))
    return out


def mistakes_json(mistakes: Sequence[ClassMistake]) -> list[dict[str, Any]]:
    """The JSON file's content (see the module docstring)."""
    out = []
    for index, mistake in enumerate(mistakes):
        group = mistake.group
        given, expected, obtained = shown_example(group)
        out.append({
            "index": index,
            "id": group.id,
            "students": list(group.students),
            "count": len(group.students),
            "notebooks": list(mistake.notebooks),
            "cells": list(group.cells),
            "properties": [{"cell": sig.grade_id, "property": sig.prop, "outcome": sig.outcome,
                            "input": ", ".join(f"{k}={v}" for k, v in sig.inputs), "obtained": sig.obtained}
                           for sig in group.signature],
            "representative": {"student": group.students[0], "cell": group.first.grade_id,
                               "property": group.first.prop, "input": given,
                               "expected": expected, "obtained": obtained},
            "catalogue": mistake.entry.name if mistake.entry is not None else None,
            "named": group.named,
        })
    return out


def read_mistakes(path: Path) -> list[dict[str, Any]]:
    """The groups of a ``<assignment>-mistakes.json`` (``mistakes_json``'s shape).

    Raises:
        FileNotFoundError: no such file (run ``ch11-grade report`` first).
        ValueError: not a list of groups of that shape.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    keys = {"index", "id", "students", "cells", "properties", "representative", "catalogue"}
    if not isinstance(data, list) or not all(isinstance(g, dict) and keys <= set(g) for g in data):
        raise ValueError(f"{path}: not a list of mistake groups (write it with ch11-grade report)")
    return data
