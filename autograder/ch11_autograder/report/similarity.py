"""Similar answers: pairs of students whose answer cells are near-identical, as evidence for the instructor.

For each answer cell (a code cell nbgrader marks ``solution``) of each notebook, every graded student's
source is fingerprinted (:mod:`.fingerprints`: winnowing over Python's tokenizer, names and strings
normalized, comments and docstrings dropped). Set aside before comparing:

* the source notebook's cell (``source/<assignment>/<notebook>.ipynb``): the released stub, its signature
  and docstring, and the reference solution, plus nbgrader's placeholder (``raise NotImplementedError()``).
  Text every student was given, or the instructor's own answer, is shared with the course, not between
  two students;
* fingerprints that more than :func:`common_limit` of the cell's answers hold: a way of writing the answer
  that many found is no evidence about any two of them (MOSS's ``-m``).

What is left of an answer is its own. Two answers whose own fingerprints overlap by a Jaccard index of at
least :data:`THRESHOLD`, each having at least :data:`MIN_FINGERPRINTS`, are a :class:`CellMatch`; the
matches of one pair of students make a :class:`SimilarPair`, shown with both answers side by side and the
lines their shared fingerprints span marked. It is evidence, never a verdict: short or guided answers
converge, and a pair of students may have worked together as the course allows. The report says so.

Everything here is student text: the excerpts keep it as written (tabs expanded), with every character
that does not draw itself made a visible escape (:func:`ch11_autograder.textsafe.escape`: bidi controls
cannot make an excerpt read differently from its bytes); renderers escape it for their format.

:func:`shared_rare_groups` is the second kind of evidence: pairs of students alone (or nearly) in a
failure group, given the groups.
"""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..course_layout import assignment_source
from ..textsafe import escape
from .autograded import autograded_notebooks, read_notebook
from .fingerprints import FingerprintTable, winnowed

__all__ = [
    "MIN_FINGERPRINTS",
    "THRESHOLD",
    "Answer",
    "AnswerReader",
    "CellMatch",
    "Excerpt",
    "SharedRareGroup",
    "SimilarPair",
    "Similarity",
    "answer_cells",
    "common_limit",
    "compare_answers",
    "compared_notebooks",
    "find_similar",
    "fingerprint_all",
    "read_answers",
    "set_aside",
    "shared_rare_groups",
    "similar_pairs",
    "similarity_json",
]

#: Jaccard index of two answers' own fingerprints from which they count as near-identical.
THRESHOLD = 0.8
#: Own fingerprints an answer needs to be compared at all (about 20 tokens of its own beyond what is set aside).
MIN_FINGERPRINTS = 8
#: What nbgrader's release leaves in a solution region.
PLACEHOLDER = "\n# YOUR CODE HERE\nraise NotImplementedError()\n"
#: Excerpts are cut after this many lines (a side-by-side view, not the whole notebook).
MAX_EXCERPT_LINES = 80
#: Longest excerpt line kept, characters.
MAX_LINE_CHARS = 160
#: A failure group of at most this many students is rare.
RARE_GROUP_SIZE = 3
#: Distinct answers from which fingerprinting is shared out over several processes: 2,000 answers are about
#: 0.6 CPU-s of fingerprinting, shared for the cost of starting the processes (forked: little; fresh: 0.1-0.15
#: CPU-s each, importing numpy and the fingerprints only) and of sending the sources out and the arrays back.
POOL_FROM = 2000


@dataclass(frozen=True)
class Answer:
    """One student's source of one answer cell."""

    student: str
    notebook: str
    grade_id: str
    source: str


@dataclass(frozen=True)
class Excerpt:
    """One side of a match: the student's answer as shown (``lines``, escaped as the module says, cut after
    :data:`MAX_EXCERPT_LINES`), ``shared``: 1-based numbers of the lines its shared fingerprints span."""

    student: str
    lines: tuple[str, ...]
    shared: tuple[int, ...]
    cut: bool


@dataclass(frozen=True)
class CellMatch:
    """Two students' answers to one cell, near-identical: ``similarity`` (Jaccard index of their own
    fingerprints), ``shared`` fingerprints, each answer's own count, and the two excerpts (in the pair's
    student order)."""

    notebook: str
    grade_id: str
    similarity: float
    shared: int
    own: tuple[int, int]
    excerpts: tuple[Excerpt, Excerpt]


@dataclass(frozen=True)
class SimilarPair:
    """Two students (sorted) and every cell where their answers are near-identical."""

    students: tuple[str, str]
    cells: tuple[CellMatch, ...]

    @property
    def top(self) -> float:
        return max(c.similarity for c in self.cells)


@dataclass(frozen=True)
class SharedRareGroup:
    """Two students (sorted) who are both in a failure group of at most :data:`RARE_GROUP_SIZE` students."""

    students: tuple[str, str]
    group: str
    size: int


@dataclass
class Similarity:
    """The similarity evidence of a class: ``pairs`` most cells first (then highest similarity), how many
    ``answers`` were compared in how many ``cells``, the ``threshold`` used, ``rare_groups`` and ``notes``."""

    pairs: list[SimilarPair]
    answers: int
    cells: int
    threshold: float = THRESHOLD
    rare_groups: list[SharedRareGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def answer_cells(nb: Mapping[str, Any]) -> dict[str, str]:
    """grade_id -> source of every answer code cell (nbgrader ``solution``) of a notebook read as JSON."""
    out: dict[str, str] = {}
    cells = nb.get("cells") if isinstance(nb, Mapping) else None
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        grader = meta.get("nbgrader") if isinstance(meta, Mapping) else None
        if not isinstance(grader, Mapping) or grader.get("solution") is not True:
            continue
        grade_id, source = grader.get("grade_id"), cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(grade_id, str) and isinstance(source, str):
            out[grade_id] = source
    return out


def compared_notebooks(course: Path, assignment: str) -> list[str]:
    """The notebooks whose answers are compared: those of ``source/<assignment>/``, sorted."""
    return sorted(p.stem for p in assignment_source(course, assignment).glob("*.ipynb"))


@dataclass
class AnswerReader:
    """Collects the answers of autograded notebooks as the report reads them (:mod:`.autograded`: each notebook
    once, for this and for the verdict records): ``notebooks`` are those compared, ``answers`` in reading order,
    ``unreadable`` counts the notebooks of those that could not be read."""

    notebooks: frozenset[str]
    answers: list[Answer] = field(default_factory=list)
    unreadable: int = 0

    def add(self, student: str, notebook: str, nb: Any | None) -> None:
        """One student's autograded ``notebook`` as read (``None``: unreadable or too large)."""
        if notebook not in self.notebooks:
            return
        if nb is None:
            self.unreadable += 1
            return
        self.answers += [Answer(student, notebook, g, s) for g, s in sorted(answer_cells(nb).items())]

    def notes(self) -> list[str]:
        if not self.unreadable:
            return []
        return [f"similarity: {self.unreadable} autograded notebook(s) unreadable or too large, left out"]


def read_answers(course: Path, assignment: str, students: Iterable[str]) -> tuple[list[Answer], list[str]]:
    """The answer cells of every student's autograded notebooks of ``assignment`` (what was graded), and notes
    on notebooks that could not be read."""
    notebooks = compared_notebooks(course, assignment)
    reader = AnswerReader(frozenset(notebooks))
    for student, notebook, nb in autograded_notebooks(course, assignment, students, notebooks):
        reader.add(student, notebook, nb)
    return reader.answers, reader.notes()


def set_aside(course: Path, assignment: str) -> dict[tuple[str, str], str]:
    """(notebook, grade_id) -> the text set aside before comparing that cell: the source notebook's cell (stub,
    docstring, reference solution) and nbgrader's placeholder."""
    out: dict[tuple[str, str], str] = {}
    for path in sorted(assignment_source(course, assignment).glob("*.ipynb")):
        nb = read_notebook(path)
        for grade_id, source in answer_cells(nb or {}).items():
            out[(path.stem, grade_id)] = source + PLACEHOLDER
    return out


def common_limit(answers: int) -> int:
    """A fingerprint held by more than this many of a cell's ``answers`` is common, not evidence."""
    return max(4, math.ceil(0.05 * answers))


def _excerpt(answer: Answer, spans: Iterable[tuple[int, int]]) -> Excerpt:
    lines = answer.source.split("\n")
    cut = len(lines) > MAX_EXCERPT_LINES
    shown = tuple(escape(line.expandtabs(4), MAX_LINE_CHARS) for line in lines[:MAX_EXCERPT_LINES])
    shared = sorted({n for first, last in spans for n in range(first, last + 1) if n <= len(shown)})
    return Excerpt(answer.student, shown, tuple(shared), cut)


def similar_pairs(answers: Sequence[Answer], aside: Mapping[tuple[str, str], str], *,
                  threshold: float = THRESHOLD, min_fingerprints: int = MIN_FINGERPRINTS) -> list[SimilarPair]:
    """The pairs of students with near-identical answers in at least one cell (see the module)."""
    by_cell: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in answers:
        by_cell[(answer.notebook, answer.grade_id)].append(answer)
    rows, table = fingerprint_all([a.source for a in answers])
    matches: dict[tuple[str, str], list[CellMatch]] = defaultdict(list)
    for (notebook, grade_id), cell_answers in sorted(by_cell.items()):
        boiler = winnowed(aside.get((notebook, grade_id), PLACEHOLDER))[0]
        own = _own_fingerprints(table, [rows[a.source] for a in cell_answers], boiler,
                                common_limit(len(cell_answers)))
        for i, j, shared, similarity in _overlaps(own, len(cell_answers), min_fingerprints, threshold):
            if cell_answers[i].student == cell_answers[j].student:
                continue
            if cell_answers[j].student < cell_answers[i].student:
                i, j = j, i
            mine, theirs = (table.fingerprints(rows[cell_answers[n].source]) for n in (i, j))
            both = set(own.hashes[own.answers == i].tolist()) & set(own.hashes[own.answers == j].tolist())
            excerpts = (_excerpt(cell_answers[i], (s for h in both for s in mine[h])),
                        _excerpt(cell_answers[j], (s for h in both for s in theirs[h])))
            pair = (cell_answers[i].student, cell_answers[j].student)
            matches[pair].append(CellMatch(notebook, grade_id, round(similarity, 3), shared,
                                           (int(own.counts[i]), int(own.counts[j])), excerpts))
    pairs = [SimilarPair(students, tuple(cells)) for students, cells in matches.items()]
    return sorted(pairs, key=lambda p: (-len(p.cells), -p.top, p.students))


@dataclass(frozen=True)
class _Own:
    """The own fingerprints of a cell's answers (numbered in the cell's order): ``(hashes[n], answers[n])`` for
    each fingerprint an answer holds (once however often it occurs), sorted by hash, then answer; ``counts``:
    how many each answer holds."""

    hashes: np.ndarray
    answers: np.ndarray
    counts: np.ndarray


def _own_fingerprints(table: FingerprintTable, rows: Sequence[int], boiler: np.ndarray, limit: int) -> _Own:
    """What is left of each answer's fingerprints (``table``'s ``rows``) once those in ``boiler`` and those more
    than ``limit`` answers hold are set aside (see the module)."""
    hashes = np.concatenate([np.zeros(0, dtype=np.uint64), *(table.hashes_of(r) for r in rows)])
    answers = np.repeat(np.arange(len(rows)), [len(table.hashes_of(r)) for r in rows])
    order = np.argsort(hashes, kind="stable")  # by hash, then answer (the answers are in order)
    hashes, answers = hashes[order], answers[order]
    boiler = np.unique(boiler)
    at = np.minimum(np.searchsorted(boiler, hashes), max(len(boiler) - 1, 0))
    kept = boiler[at] != hashes if len(boiler) else np.ones(len(hashes), dtype=bool)
    kept[1:] &= (hashes[1:] != hashes[:-1]) | (answers[1:] != answers[:-1])  # each (hash, answer) once
    hashes, answers = hashes[kept], answers[kept]
    first = np.ones(len(hashes), dtype=bool)  # the first holder of each hash
    first[1:] = hashes[1:] != hashes[:-1]
    holders = np.diff(np.append(np.flatnonzero(first), len(hashes)))
    kept = np.repeat(holders <= limit, holders)
    hashes, answers = hashes[kept], answers[kept]
    return _Own(hashes, answers, np.bincount(answers, minlength=len(rows)))


def _overlaps(own: _Own, count: int, min_fingerprints: int,
              threshold: float) -> Iterator[tuple[int, int, int, float]]:
    """``(i, j, shared, similarity)`` for each two of ``count`` answers (``i < j``), each holding at least
    ``min_fingerprints`` of ``own``, that share own fingerprints with a Jaccard index of at least ``threshold``.

    Only answers that share a fingerprint are compared: the pairs of the holders of each fingerprint (sorted by
    hash, the holders of one are a run) are counted, the pairs ``d`` apart in a run at step ``d``."""
    compared = own.counts[own.answers] >= min_fingerprints
    hashes, answers = own.hashes[compared], own.answers[compared]
    keys = []
    at = np.arange(len(hashes) - 1)
    step = 1
    while len(at):
        at = at[at + step < len(hashes)]
        at = at[hashes[at + step] == hashes[at]]
        keys.append(answers[at] * count + answers[at + step])
        step += 1
    pairs, shared = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *keys]), return_counts=True)
    first, second = np.divmod(pairs, count)
    # The index as Python computes it from the same integers (float division is correctly rounded either way).
    similarity = shared / (own.counts[first] + own.counts[second] - shared)
    for n in np.flatnonzero(similarity >= threshold).tolist():
        i, j, both = int(first[n]), int(second[n]), int(shared[n])
        yield i, j, both, both / (int(own.counts[i]) + int(own.counts[j]) - both)


def fingerprint_all(sources: Iterable[str], processes: int | None = None) -> tuple[dict[str, int], FingerprintTable]:
    """Every distinct source's :func:`~.fingerprints.winnowed` fingerprints, once (a class's stubs and copies of
    the reference are many): ``(source -> its row, the table)``. From :data:`POOL_FROM` distinct sources on,
    over ``processes`` processes (default: the cores this process may use, at most 4): tokenizing is the
    pass's cost, and it is one answer at a time."""
    distinct = sorted(set(sources))
    rows = {source: row for row, source in enumerate(distinct)}
    if processes is None:
        processes = min(4, len(os.sched_getaffinity(0)))
    if processes < 2 or len(distinct) < POOL_FROM:
        return rows, FingerprintTable.of(distinct)
    # fork (the workers start with the package loaded) only from a process with no other thread: after a
    # batch the report may share its process with threads that hold locks; there, fresh interpreters.
    method = "fork" if threading.active_count() == 1 else "spawn"
    size = -(-len(distinct) // (processes * 8))
    chunks = [distinct[start:start + size] for start in range(0, len(distinct), size)]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context(method)) as pool:
        return rows, FingerprintTable.concatenate(list(pool.map(FingerprintTable.of, chunks)))


def shared_rare_groups(groups: Iterable[tuple[str, Sequence[str]]],
                       max_size: int = RARE_GROUP_SIZE) -> list[SharedRareGroup]:
    """Pairs of students who share a failure group of at most ``max_size`` students; ``groups`` are
    ``(name, students)``. Sorted by group size, then students."""
    out = []
    for name, students in groups:
        members = sorted(set(students))
        if 2 <= len(members) <= max_size:
            out += [SharedRareGroup((a, b), name, len(members)) for a, b in itertools.combinations(members, 2)]
    return sorted(out, key=lambda g: (g.size, g.students, g.group))


def find_similar(course: Path, assignment: str, students: Iterable[str]) -> Similarity:
    """The similarity evidence of ``students``' graded answers in ``course`` (see the module)."""
    return compare_answers(course, assignment, *read_answers(course, assignment, students))


def compare_answers(course: Path, assignment: str, answers: Sequence[Answer], notes: Sequence[str]) -> Similarity:
    """The similarity evidence of ``answers`` read from ``course`` (:func:`read_answers`, or an
    :class:`AnswerReader`), with the reading's ``notes``."""
    aside = set_aside(course, assignment)
    cells = {(a.notebook, a.grade_id) for a in answers}
    return Similarity(similar_pairs(answers, aside), len(answers), len(cells), notes=list(notes))


def similarity_json(similarity: Similarity) -> str:
    """``reports/<assignment>-similarity.json``: the same evidence as data (sorted keys, stable)."""
    data = asdict(similarity)
    data["v"] = 1
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
