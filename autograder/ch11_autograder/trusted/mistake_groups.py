"""A class's failing answers grouped by behaviour: one group per way of failing, largest first.

Input: per student, the failures of every autograded test cell as
``trusted.signature.failure_signatures`` reads them from the verdict records. An answer's
signature is the set of its failures' signatures (:class:`~.signature.FailureSignature`);
students with the same set fail the same way on the same inputs and share a group.

A student who makes two mistakes shows both: the failures of each mistake's cells, and in a
cell that calls both functions (Exercise 5's report calls the student's store-all, replay and
comparison) a combination of the two. Such an answer is put in the group of each mistake
whose failures it repeats, where the properties allow it:

* groups are made from the smallest signatures up; a signature is a *component* of a larger
  one when every cell it fails is failed there too and at least one of its cells is failed
  there in exactly the same way (the same failures, on the same inputs, with the same values);
* of those, the components agreeing on the most cells are kept (one agreeing on a subset of
  another's cells is the smaller mistake seen inside the larger one);
* the student is a member of each component's group; failures in cells no component fails
  make a group of their own (the *residual*), which students who make only that mistake share;
  cells a component fails differently are where the mistakes meet, and join no group;
* a signature with no component is a group of its own.

Answers that lose no points, and failures that are the stub's placeholder, are in no group.
Everything here is pure data: the texts are student output, and callers escape them.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .signature import Example, FailureSignature, failure_signatures

__all__ = ["Answer", "MistakeGroup", "answer_from_records", "group_answers"]


@dataclass(frozen=True)
class Answer:
    """One student's failures, in record order: ``(signature, example, misconception named)``."""

    student: str
    failures: tuple[tuple[FailureSignature, Example, str], ...]

    @property
    def signature(self) -> frozenset[FailureSignature]:
        return frozenset(sig for sig, _example, _named in self.failures)


def answer_from_records(student: str, records: Iterable[Mapping[str, object]]) -> Answer:
    """A student's :class:`Answer` from the verdict records of their autograded test cells (any order)."""
    found = [failure for record in records for failure in failure_signatures(record)]
    return Answer(student, tuple(found))


@dataclass(frozen=True)
class MistakeGroup:
    """Students whose answers fail one way.

    Attributes:
        id: 12 hex digits of the signature's SHA-256: the same group keeps its id as the class grows.
        signature: the failures that define it, sorted.
        students: the members' ids, sorted.
        representative: the counterexample of the group's first failure, from the first member (by id)
            whose answer shows the whole signature; when none does (every member combines it with
            another mistake), the first member's first failure of the group.
        named: the misconception title the feedback of every member named on these failures, when
            that is one title (a group whose signature is a catalogue entry's), ``""`` otherwise.
    """

    id: str
    signature: tuple[FailureSignature, ...]
    students: tuple[str, ...]
    representative: Example
    named: str

    @property
    def cells(self) -> tuple[str, ...]:
        return tuple(sorted({sig.grade_id for sig in self.signature}))

    @property
    def properties(self) -> tuple[tuple[str, str], ...]:
        """``(grade_id, property)`` of every failure, cell by cell."""
        return tuple(dict.fromkeys((sig.grade_id, sig.prop) for sig in self.signature))

    @property
    def first(self) -> FailureSignature:
        return self.signature[0]


Key = frozenset[FailureSignature]
#: One cell's failures in a key: (grade_id, the failures of that cell).
Cell = tuple[str, frozenset[FailureSignature]]


def _by_cell(key: Key) -> dict[str, frozenset[FailureSignature]]:
    cells: dict[str, set[FailureSignature]] = defaultdict(set)
    for sig in key:
        cells[sig.grade_id].add(sig)
    return {cell: frozenset(sigs) for cell, sigs in cells.items()}


def _agreement(part: Mapping[str, frozenset[FailureSignature]],
               whole: Mapping[str, frozenset[FailureSignature]]) -> frozenset[str]:
    """Cells ``part`` fails exactly as ``whole`` does (both by cell), if ``whole`` fails every cell ``part``
    fails; else empty."""
    if not part.keys() <= whole.keys():
        return frozenset()
    return frozenset(cell for cell, sigs in part.items() if whole[cell] == sigs)


class _Groups:
    """The groups made so far, in order, indexed by each of their cells' failures: a group can be a component
    of a key only if it fails one of the key's cells exactly as the key does, so only the groups filed under
    one of the key's cells are compared with it (not every group)."""

    def __init__(self) -> None:
        self.keys: list[Key] = []
        self.cells: list[dict[str, frozenset[FailureSignature]]] = []
        self.filed: dict[Cell, list[int]] = defaultdict(list)

    def add(self, key: Key) -> None:
        cells = _by_cell(key)
        for cell in cells.items():
            self.filed[cell].append(len(self.keys))
        self.keys.append(key)
        self.cells.append(cells)

    def decompose(self, key: Key) -> tuple[list[Key], Key]:
        """(the components of ``key`` among the groups, in the groups' order, and the residual failures no
        component accounts for)."""
        cells = _by_cell(key)
        candidates = sorted({n for cell in cells.items() for n in self.filed.get(cell, ())})
        agreeing = {self.keys[n]: found for n in candidates
                    if self.keys[n] != key and (found := _agreement(self.cells[n], cells))}
        kept = [g for g, found in agreeing.items() if not any(found < other for other in agreeing.values())]
        if not kept:
            return [], key
        touched = {sig.grade_id for group in kept for sig in group}
        residual = frozenset(sig for sig in key if sig.grade_id not in touched)
        return kept, residual


def _group_id(key: Key) -> str:
    text = json.dumps([[s.grade_id, s.prop, s.outcome, [list(i) for i in s.inputs], s.obtained] for s in sorted(key)])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _named(key: Key, answers: Sequence[Answer]) -> str:
    """The one title every member's feedback named on the group's failures, else ``""``.

    Naming is decided per failure and per student (``trusted.misconception_naming.name_misconception``
    may probe the student's own code), so students who fail alike can still be told different things; the group
    carries a name only when that decision gave it to each of them, and no other.
    """
    per_member = [{n for sig, _e, n in a.failures if sig in key and n} for a in answers]
    titles = set().union(*per_member)
    return titles.pop() if len(titles) == 1 and all(per_member) else ""


def group_answers(answers: Iterable[Answer]) -> list[MistakeGroup]:
    """The class's mistake groups, largest first (ties: cells, then id). See the module docstring."""
    by_key: dict[Key, list[Answer]] = defaultdict(list)
    for answer in answers:
        if answer.failures:
            by_key[answer.signature].append(answer)
    groups = _Groups()
    members: dict[Key, list[Answer]] = defaultdict(list)
    # Smallest first: a mistake seen alone is a group before the answers that combine it are read.
    for key in sorted(by_key, key=lambda k: (len(k), sorted(k))):
        components, residual = groups.decompose(key)
        for group in components:
            members[group] += by_key[key]
        if residual:
            if residual not in members:
                groups.add(residual)
            members[residual] += by_key[key]
    out = []
    for key, answers_in in members.items():
        students = sorted({a.student for a in answers_in})
        # A member that combines this mistake with another may fail some of its cells otherwise: the
        # representative comes from a member showing the whole signature (a residual's members all do).
        holders = [a for a in answers_in if key <= a.signature] or answers_in
        first = min(holders, key=lambda a: a.student)
        order = {sig: i for i, (sig, _e, _n) in enumerate(first.failures)}
        signature = tuple(sorted(key, key=lambda sig: (sig.grade_id, order.get(sig, len(order)), sig)))
        held = {sig: e for sig, e, _n in first.failures}
        example = next(held[sig] for sig in signature if sig in held)
        out.append(MistakeGroup(_group_id(key), signature, tuple(students), example, _named(key, answers_in)))
    return sorted(out, key=lambda g: (-len(g.students), g.cells, g.id))
