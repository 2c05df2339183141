"""The class report's numbers: read from the gradebook, the autograded notebooks and the batch's records.

:func:`collect` is the whole data layer: no plotting, no formatting. Its sources, all
written by trusted code:

* the instructor's ``gradebook.db``: every score (autograded, manual overrides, hand
  marks once entered in formgrader), manual points still pending, nbgrader's late penalty;
* ``autograded/<student>/<assignment>/*.ipynb``: in each autograded test cell's metadata,
  the verdict record ``TrustedVerdicts`` wrote (``trusted.verdicts.CellVerdict.record``:
  every property's outcome, the misconception named and, for a failure, its counterexample
  as the feedback shows it). Outputs are never read; the counterexamples (student output,
  formatted by the trusted side) reach the report's mistake groups (:mod:`.mistakes`);
* ``.ch11-batch/ledger.jsonl`` (each student's last entry: status, seconds, error cause)
  and ``reports/<assignment>-records.json`` (the last batch's records: LMS late flags);
* for the similarity evidence (:mod:`.similarity`), the answer cells' sources of the autograded
  notebooks and of ``source/<assignment>/``: student text, kept only as escaped excerpts.

Each graded student's autograded notebook is read once (:mod:`.autograded`), as JSON, for both its
verdict records and its answer cells.

Student ids and error causes are student-derived text: renderers escape them.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry

from ..batch.course import REPORTS_DIR, STATE_DIR
from ..batch.ledger import Ledger
from ..batch.merge import autograded_cells
from ..course_layout import GRADEBOOK
from ..exercises import course_exercises
from ..exercises.catalogue import catalogue
from ..trusted.verdicts import OUTCOMES, VERDICT_METADATA_KEY
from .autograded import autograded_notebooks
from .mistakes import VISIBLE_CHECKS, ClassMistake, class_mistakes, entry_for_title, shown_example
from .similarity import AnswerReader, Similarity, compare_answers, compared_notebooks, shared_rare_groups

__all__ = [
    "ClassReport",
    "Flag",
    "MisconceptionCount",
    "NotebookStats",
    "PropertyCount",
    "Reteach",
    "StudentScores",
    "TaskAttempts",
    "collect",
    "entry_for_title",
]



@dataclass(frozen=True)
class StudentScores:
    """One student's line: points from the gradebook, status and time from the ledger.

    Attributes:
        student: nbgrader student id.
        status: ``"graded"`` or ``"error"`` (the ledger's last entry; ``"graded"`` for a gradebook
            submission the batch never saw, e.g. a plain ``nbgrader autograde``).
        auto: notebook -> autograded points (manual overrides of test cells count), ``None`` without
            a gradebook submission (an error never graded before).
        manual: notebook -> hand-marked points entered so far (rubric cells).
        manual_pending: rubric points not marked yet (``needs_manual_grade``).
        late_penalty: nbgrader's, summed over notebooks (not subtracted from any total here).
        seconds: grading time of the last entry, ``None`` when the ledger has none.
        lms_late: the last batch's LMS download marked the submission late.
        error: the last entry's cause, ``""`` when graded.
    """

    student: str
    status: str
    auto: dict[str, float] | None
    manual: dict[str, float]
    manual_pending: float
    late_penalty: float
    seconds: float | None
    lms_late: bool = False
    error: str = ""

    @property
    def auto_total(self) -> float | None:
        return None if self.auto is None else round(sum(self.auto.values()), 6)

    @property
    def manual_total(self) -> float:
        return round(sum(self.manual.values()), 6)

    @property
    def total(self) -> float | None:
        """Autograded plus hand-marked points entered so far; ``None`` without a submission."""
        auto = self.auto_total
        return None if auto is None else round(auto + self.manual_total, 6)


@dataclass(frozen=True)
class NotebookStats:
    """Points possible in one notebook: ``auto_max`` (hidden suites) and ``manual_max`` (rubric cells)."""

    notebook: str
    auto_max: float
    manual_max: float


@dataclass(frozen=True)
class PropertyCount:
    """How many students' verdicts of one test cell ended each way on one property.

    ``outcomes`` maps every name of ``trusted.verdicts.OUTCOMES`` to a count of students whose answer
    was tried; ``unanswered`` counts apart the students whose failure there was the stub's placeholder
    (``NotImplementedError``: the task not answered), never as a wrong answer. The ``visible_checks``
    property is recorded only when a student's visible checks failed, so its row counts those students
    alone.
    """

    notebook: str
    grade_id: str
    prop: str
    outcomes: dict[str, int]
    unanswered: int = 0

    @property
    def answered(self) -> int:
        """Students whose answer was tried on the property (its stub's placeholder is no answer)."""
        return sum(self.outcomes.values())


@dataclass(frozen=True)
class MisconceptionCount:
    """A misconception and how many students' verdicts named it (once per student, any cell).

    ``name`` is the catalogue entry's name, ``""`` for a misconception a suite names itself (a group of
    entries); ``students`` are the ids, sorted; ``advice`` is the catalogue's sentence (the suite's for
    its own).
    """

    exercise: str
    notebook: str
    name: str
    title: str
    advice: str
    students: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.students)


@dataclass(frozen=True)
class Flag:
    """An error or a late flag: ``kind`` is ``"error"``, ``"LMS late"`` or ``"late penalty"``."""

    student: str
    kind: str
    cause: str


@dataclass(frozen=True)
class TaskAttempts:
    """Who answered one task (an autograded test cell and the answer it grades).

    ``attempted``: students with a verdict record for the cell whose answer is not the released stub;
    ``stubs``: those whose every property failed on the stub's placeholder (``NotImplementedError``,
    ``trusted.verdicts.Failure.unanswered``), the task not answered. Ids sorted.
    """

    notebook: str
    grade_id: str
    attempted: tuple[str, ...]
    stubs: tuple[str, ...]


@dataclass(frozen=True)
class Reteach:
    """One mistake to re-teach: a mistake group with what the summary shows of it.

    ``title`` is the catalogue's (or a suite's) name for it when every member's feedback named it, else
    the first property it fails; ``advice`` the catalogue's, ``""`` for a mistake not catalogued.
    """

    students: int
    notebooks: tuple[str, ...]
    title: str
    cell: str
    input: str
    expected: str
    obtained: str
    advice: str


@dataclass
class ClassReport:
    """Everything the report shows, as data.

    Attributes:
        assignment: e.g. ``"ch11"``.
        notebooks: per notebook, points possible, in name order.
        students: one per student in the gradebook or the ledger, sorted by id.
        properties: per test cell and property, in notebook, cell and suite order.
        misconceptions: every catalogue entry, and every misconception a suite names itself, with its
            count, most named first (ties: exercise, then catalogue order).
        flags: errors first, then LMS late flags, then late penalties; each sorted by student.
        notes: what the report could not read (cells without a verdict record, unreadable records).
        mistakes: the failing answers grouped by behaviour, largest first (:mod:`.mistakes`).
        similarity: pairs of students with near-identical answers, and pairs alone in an uncatalogued
            failure group (:mod:`.similarity`), for the instructor only; ``None`` when it could not be
            computed (a note says why).
        attempts: per autograded test cell, who answered the task and who left the stub, in notebook and
            cell order.
    """

    assignment: str
    notebooks: list[NotebookStats]
    students: list[StudentScores]
    properties: list[PropertyCount]
    misconceptions: list[MisconceptionCount]
    flags: list[Flag]
    notes: list[str] = field(default_factory=list)
    mistakes: list[ClassMistake] = field(default_factory=list)
    similarity: Similarity | None = None
    attempts: list[TaskAttempts] = field(default_factory=list)

    @property
    def auto_max(self) -> float:
        return round(sum(nb.auto_max for nb in self.notebooks), 6)

    @property
    def manual_max(self) -> float:
        return round(sum(nb.manual_max for nb in self.notebooks), 6)

    @property
    def scored(self) -> list[StudentScores]:
        """Students the gradebook holds scores for."""
        return [s for s in self.students if s.auto is not None]

    def attempted(self, notebook: str) -> tuple[str, ...]:
        """Students who answered at least one task of ``notebook`` (sorted)."""
        return tuple(sorted({s for a in self.attempts if a.notebook == notebook for s in a.attempted}))

    def attempted_scores(self, notebook: str) -> dict[str, float]:
        """:func:`describe` of the autograded points in ``notebook`` of the students who attempted it."""
        who = set(self.attempted(notebook))
        return describe([(s.auto or {}).get(notebook, 0.0) for s in self.scored if s.student in who])

    def reteach(self, n: int = 3) -> list[Reteach]:
        """The ``n`` largest mistake groups, with their name, representative counterexample and advice."""
        advice = {m.title: m.advice for m in self.misconceptions}
        out = []
        for mistake in self.mistakes[:n]:
            group = mistake.group
            given, expected, obtained = shown_example(group)
            named = mistake.entry.title if mistake.entry is not None else group.named
            first = group.first
            out.append(Reteach(
                students=len(group.students), notebooks=mistake.notebooks,
                title=named or f"not catalogued: fails {first.prop}", cell=first.grade_id,
                input=given, expected=expected, obtained=obtained,
                advice=(mistake.entry.advice if mistake.entry is not None else advice.get(group.named, ""))
                if named else ""))
        return out

    def slowest(self, n: int = 5) -> list[StudentScores]:
        """Up to ``n`` students with a grading time, slowest first (ties: student id)."""
        timed = [s for s in self.students if s.seconds]
        return sorted(timed, key=lambda s: (-(s.seconds or 0.0), s.student))[:n]


def describe(values: Sequence[float]) -> dict[str, float]:
    """``n``, ``mean``, ``median``, ``min``, ``max`` of ``values`` (all 0 when empty)."""
    if not values:
        return {"n": 0, "mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {"n": len(values), "mean": statistics.fmean(values), "median": float(statistics.median(values)),
            "min": min(values), "max": max(values)}


def collect(course: Path, assignment: str) -> ClassReport:
    """Read the class report's data from ``course`` (see the module docstring).

    Raises:
        FileNotFoundError: ``course`` has no ``gradebook.db``.
        MissingEntry: the gradebook does not know ``assignment``.
    """
    db = course / GRADEBOOK
    if not db.is_file():
        raise FileNotFoundError(f"{db}: no gradebook (is {course} an nbgrader course graded by ch11-grade batch?)")
    notes: list[str] = []
    latest = Ledger(course / STATE_DIR / "ledger.jsonl").latest()
    lms_late = _lms_late(course / REPORTS_DIR / f"{assignment}-records.json", notes)
    students: list[StudentScores] = []
    with Gradebook(f"sqlite:///{db}") as gb:
        auto_cells = autograded_cells(gb, assignment)
        notebooks = []
        for nb in sorted(gb.find_assignment(assignment).notebooks, key=lambda n: n.name):
            auto = auto_cells.get(nb.name, {})
            manual = sum(float(c.max_score) for c in nb.grade_cells if c.name not in auto)
            notebooks.append(NotebookStats(nb.name, round(sum(auto.values()), 6), round(manual, 6)))
        ids = sorted({s.id for s in gb.students} | set(latest))
        for student in ids:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                sub = None
            entry = latest.get(student)
            status = entry.event if entry is not None and entry.event in ("graded", "error") else "graded"
            if sub is None and entry is None:
                continue  # a student row with no submission of this assignment
            auto_points: dict[str, float] | None = None
            manual_points: dict[str, float] = {}
            pending = penalty = 0.0
            if sub is not None:
                auto_points = {}
                for nb in sub.notebooks:
                    cells = auto_cells.get(nb.name, {})
                    auto_points[nb.name] = round(sum(g.score for g in nb.grades if g.name in cells), 6)
                    manual_points[nb.name] = round(sum(float(g.manual_score) for g in nb.grades
                                                       if g.name not in cells and g.manual_score is not None), 6)
                    pending += sum(float(g.max_score) for g in nb.grades if g.needs_manual_grade)
                penalty = float(sub.late_submission_penalty or 0.0)
            students.append(StudentScores(
                student=student, status=status, auto=auto_points, manual=manual_points,
                manual_pending=round(pending, 6), late_penalty=round(penalty, 6),
                seconds=entry.seconds if entry is not None else None, lms_late=student in lms_late,
                error=(entry.error or "") if entry is not None and entry.event == "error" else "",
            ))
    graded = [s.student for s in students if s.auto is not None]
    answers = AnswerReader(frozenset(compared_notebooks(course, assignment)))
    verdicts = _verdicts(course, assignment, graded, auto_cells, answers, notes)
    mistakes = class_mistakes(verdicts)
    return ClassReport(
        assignment=assignment,
        notebooks=notebooks,
        students=students,
        properties=_property_counts(verdicts, auto_cells),
        attempts=_attempts(verdicts, auto_cells),
        misconceptions=_misconceptions(verdicts),
        flags=_flags(students),
        notes=notes,
        mistakes=mistakes,
        similarity=_similarity(course, assignment, answers, mistakes, notes),
    )


def _similarity(course: Path, assignment: str, answers: AnswerReader, mistakes: Sequence[ClassMistake],
                notes: list[str]) -> Similarity | None:
    """The similarity evidence of the ``answers`` read with the verdict records, or ``None`` with a note: a
    failure there must not cost the rest of the report.

    Beside near-identical answers: pairs of students who share a rare failure group that no catalogue entry
    names (a catalogued mistake is one many make on their own)."""
    try:
        found = compare_answers(course, assignment, answers.answers, answers.notes())
        found.rare_groups = shared_rare_groups(
            (_group_label(m), m.group.students) for m in mistakes if not m.known)
    except Exception as exc:  # evidence only: the scores and counts above stand without it
        notes.append(f"similarity evidence could not be computed: {type(exc).__name__}: {exc}")
        return None
    notes += found.notes
    return found


def _group_label(mistake: ClassMistake) -> str:
    """``<id>: <cell>/<property>, ...``: the group as the mistakes section and JSON name it."""
    return f"{mistake.group.id}: " + ", ".join(f"{cell}/{prop}" for cell, prop in mistake.group.properties)


def _lms_late(path: Path, notes: list[str]) -> set[str]:
    """Students the last batch's records mark ``lms_late``; empty when there are no records."""
    if not path.is_file():
        return set()
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
        return {r["student"] for r in records if isinstance(r, dict) and r.get("lms_late") is True}
    except (ValueError, TypeError, KeyError) as exc:
        notes.append(f"{path.name} unreadable ({type(exc).__name__}): LMS late flags not shown")
        return set()


#: (student, notebook, grade_id) -> the validated verdict record's properties.
Verdicts = dict[tuple[str, str, str], list[dict[str, Any]]]


def _verdicts(course: Path, assignment: str, students: Sequence[str], auto_cells: Mapping[str, Mapping[str, float]],
              answers: AnswerReader, notes: list[str]) -> Verdicts:
    """The verdict records of every autograded test cell of every graded student's notebooks; each notebook is
    read once (:mod:`.autograded`), and ``answers`` takes its answer cells for the similarity evidence."""
    tested = {notebook: set(cells) for notebook, cells in auto_cells.items() if cells}
    found: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for student, notebook, nb in autograded_notebooks(course, assignment, students, {*tested, *answers.notebooks}):
        if notebook in tested:
            found[(student, notebook)] = _records(nb, tested[notebook])
        answers.add(student, notebook, nb)
    out: Verdicts = {}
    missing: Counter[str] = Counter()
    for student in students:
        for notebook, cells in sorted(tested.items()):
            records = found.get((student, notebook), {})
            for grade_id in sorted(cells):
                record = records.get(grade_id)
                if record is None:
                    missing[notebook] += 1
                else:
                    out[(student, notebook, grade_id)] = record
    for notebook, count in sorted(missing.items()):
        notes.append(f"{notebook}: {count} test cell verdict(s) not recorded (notebook not submitted, or graded "
                     "before verdicts were recorded); they are left out of the property and misconception counts")
    return out


def _records(nb: Any, grade_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """grade_id -> the properties of its verdict record, for the test cells of one autograded notebook read as
    JSON (``None``: unreadable, so no records; the report notes them as missing).

    Only cells whose nbgrader ``grade_id`` is one of ``grade_ids`` count, in a notebook of nbformat 4 (what
    nbgrader writes); a record that is not of the documented shape (``CellVerdict.record``) is skipped as if
    absent.
    """
    cells = nb.get("cells") if isinstance(nb, Mapping) and nb.get("nbformat") == 4 else None
    found: dict[str, list[dict[str, Any]]] = {}
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata") if isinstance(cell, Mapping) else None
        if not isinstance(meta, Mapping):
            continue
        grader = meta.get("nbgrader")
        grade_id = grader.get("grade_id") if isinstance(grader, Mapping) else None
        if not isinstance(grade_id, str) or grade_id not in grade_ids:
            continue
        props = _valid_properties(meta.get(VERDICT_METADATA_KEY), grade_id)
        if props is not None:
            found[grade_id] = props
    return found


def _valid_properties(record: Any, grade_id: str) -> list[dict[str, Any]] | None:
    if not isinstance(record, Mapping) or record.get("v") != 1 or record.get("grade_id") != grade_id:
        return None
    props = record.get("properties")
    if not isinstance(props, list):
        return None
    out = []
    for prop in props:
        if not isinstance(prop, Mapping) or prop.get("outcome") not in OUTCOMES:
            return None
        if not all(isinstance(prop.get(k), str) for k in ("name", "misconception")):
            return None
        advice = prop.get("advice", "")
        example = prop.get("example")
        out.append({"name": prop["name"], "outcome": prop["outcome"], "misconception": prop["misconception"],
                    "advice": advice if isinstance(advice, str) else "",
                    "unanswered": prop.get("unanswered") is True and prop["outcome"] != "passed",
                    **({"example": example} if isinstance(example, Mapping) else {})})
    return out


def _property_counts(verdicts: Verdicts, auto_cells: Mapping[str, Mapping[str, float]]) -> list[PropertyCount]:
    """Per (notebook, grade_id, property): outcome -> students; cells by name, properties in suite order."""
    counts: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(dict)
    for (_student, notebook, grade_id), props in sorted(verdicts.items()):
        per_cell = counts[(notebook, grade_id)]
        for prop in props:
            outcome = "unanswered" if prop.get("unanswered") else prop["outcome"]
            per_cell.setdefault(prop["name"], Counter())[outcome] += 1
    rows = []
    for notebook, cells in sorted(auto_cells.items()):
        for grade_id in sorted(cells):
            per_cell = counts.get((notebook, grade_id), {})
            # Records are in suite order; visible_checks (recorded only when failing) goes last.
            names = sorted(per_cell, key=lambda n: (n == VISIBLE_CHECKS, list(per_cell).index(n)))
            rows += [PropertyCount(notebook, grade_id, name, {o: per_cell[name].get(o, 0) for o in OUTCOMES},
                                   per_cell[name].get("unanswered", 0))
                     for name in names]
    return rows


def _is_stub(props: Sequence[Mapping[str, Any]]) -> bool:
    """Every property of the cell but the visible checks failed on the stub's placeholder: not answered."""
    graded = [p for p in props if p["name"] != VISIBLE_CHECKS]
    return bool(graded) and all(p.get("unanswered") for p in graded)


def _attempts(verdicts: Verdicts, auto_cells: Mapping[str, Mapping[str, float]]) -> list[TaskAttempts]:
    """Per autograded test cell (notebook, then cell order), the students who answered it and those who left the
    stub (:func:`_is_stub`); a student without a record for the cell is in neither."""
    out = []
    for notebook, cells in sorted(auto_cells.items()):
        for grade_id in sorted(cells):
            records = {student: props for (student, nb, cell), props in verdicts.items()
                       if nb == notebook and cell == grade_id}
            stubs = tuple(sorted(s for s, props in records.items() if _is_stub(props)))
            out.append(TaskAttempts(notebook, grade_id, tuple(sorted(set(records) - set(stubs))), stubs))
    return out


def _misconceptions(verdicts: Verdicts) -> list[MisconceptionCount]:
    """Every catalogue entry of every exercise the course grades (``exercises.course_exercises``), and every other
    misconception a suite named, with the students whose verdicts named it.

    A name that is a catalogue entry's title (or that title with `` (where...)``) counts for the entry, with
    the catalogue's advice. A suite may also name a misconception of its own (e.g. one name for several
    entries whose outputs never differ): it gets a row of its own (``name`` ``""``) with the advice its
    verdicts gave. Sorted by count, most first; ties by exercise, then catalogue order, then name.
    """
    graded = course_exercises()
    by_notebook = {ex.notebook: ex.key for ex in graded}
    notebook_of = {ex.key: ex.notebook for ex in graded}
    order = {ex.key: i for i, ex in enumerate(graded)}
    named: dict[tuple[str, str], set[str]] = defaultdict(set)
    own: dict[tuple[str, str], str] = {}  # (exercise, title) -> advice, for names outside the catalogue
    for (student, notebook, _grade_id), props in verdicts.items():
        key = by_notebook.get(notebook)
        if key is None:
            continue
        entries = catalogue(key)
        for prop in props:
            if not prop["misconception"]:
                continue
            entry = entry_for_title(prop["misconception"], entries)
            if entry is None:
                own.setdefault((key, prop["misconception"]), prop.get("advice", ""))
                named[(key, "\0" + prop["misconception"])].add(student)
            else:
                named[(key, entry.name)].add(student)
    rows = []
    for ex in graded:
        for position, entry in enumerate(catalogue(ex.key)):
            students = tuple(sorted(named.get((ex.key, entry.name), ())))
            rows.append(((-len(students), order[ex.key], position, ""),
                         MisconceptionCount(ex.key, ex.notebook, entry.name, entry.title, entry.advice, students)))
    for (key, title), advice in own.items():
        students = tuple(sorted(named[(key, "\0" + title)]))
        rows.append(((-len(students), order[key], len(rows), title),
                     MisconceptionCount(key, notebook_of[key], "", title, advice, students)))
    return [row for _key, row in sorted(rows, key=lambda r: r[0])]


def _flags(students: Sequence[StudentScores]) -> list[Flag]:
    flags = [Flag(s.student, "error", s.error) for s in students if s.status == "error"]
    flags += [Flag(s.student, "LMS late", "the LMS download marked the submission LATE; no penalty applied")
              for s in students if s.lms_late]
    flags += [Flag(s.student, "late penalty", f"nbgrader's late penalty {s.late_penalty:g} points")
              for s in students if s.late_penalty]
    return flags
