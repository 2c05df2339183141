"""A submission's nbgrader cell metadata against the released notebook, checked before nbgrader runs.

``nbgrader autograde`` (0.9.6, with this course's ``OverwriteCells.add_missing_cells``)
first *sanitizes* each submitted notebook against the gradebook, which holds the
released notebook's cells. Some changes to a cell's ``metadata.nbgrader`` it repairs;
others make it fail with an error that names no cell (``KeyError: 'grade_id'``,
``MissingEntry: No such grade cell``, ``Notebook failed to validate ... Please see the
above traceback``) or grade a cell in a role the instructor did not give it.
:func:`check_submission` finds the second kind in the submission itself and says, per
cell, what is wrong and what to do, so that the batch records an error a TA can act on
instead of running nbgrader.

Left to nbgrader, which restores them from the gradebook (the submission is graded):

* a changed ``locked`` flag, ``points`` of a grade cell (any number), ``checksum``,
  cell type, or the source of a read-only or test cell (``OverwriteCells``);
* a deleted test cell or manually graded answer, when nbgrader can put it back (below);
* deleted answer and read-only cells (not restored; the student's loss), moved cells,
  cells the student added without nbgrader metadata, the notebook's kernelspec.

Reported (the submission is not graded), each naming the notebook, the cell's
position (1-based, in the submitted notebook) and grade_id:

* ``nbgrader`` metadata that is not an object, or has no grade_id (nbgrader: ``KeyError``);
* a grade_id the released notebook does not have (nbgrader drops it, then fails on the
  cell: ``KeyError: 'grade_id'``), e.g. a renamed test cell;
* a grade_id on more than one cell (nbgrader clears all but the last, then fails the
  same way), e.g. a copied cell, which keeps its metadata;
* ``grade``, ``solution`` or ``task`` flags that differ from the released cell's: nbgrader
  does not restore them; it fails (a cell made a grade cell has no grade row:
  ``MissingEntry``; a test cell made an answer: inconsistent checksums; a manually
  graded answer without ``solution``: invalid metadata) or treats the cell in the
  changed role (an answer code cell no longer marked ``solution`` is graded, but
  nbgrader gives it no comment and formgrader no longer shows it as an answer);
* ``points`` of a grade cell that is not a number, and metadata that nbgrader's own
  schema rejects once nbgrader has restored what it restores (``schema_version`` other
  than 3, unknown keys, values of the wrong type);
* a deleted grade cell that nbgrader cannot put back: it inserts it right after the
  cell released before it, and fails (``KeyError``) unless that cell is an answer or
  grade cell present in the submission. A deleted manually graded answer that follows
  a read-only prompt cell is such a case.

The released notebook is read from the course's ``source/<assignment>/``: nbgrader
makes the released notebook and the gradebook's cells from it, with the same cells and
nbgrader flags (the tests check this against ``assignments/ch11``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbformat.notebooknode import from_dict
from nbgrader.nbgraderformat import MetadataValidator

__all__ = [
    "CellProblem",
    "ReleasedCell",
    "ReleasedNotebook",
    "check_cells",
    "check_submission",
    "describe",
    "load_released",
    "released_notebook",
]

#: Problems listed per notebook before the rest are only counted.
MAX_LISTED = 5
_ROLE_FLAGS = ("grade", "solution", "task")  # flags nbgrader does not restore


@dataclass(frozen=True)
class ReleasedCell:
    """A cell nbgrader tracks (grade, answer, read-only or task cell) as released.

    Attributes:
        position: 1-based position among all cells of the released notebook.
        grade_id: nbgrader's id of the cell.
        cell_type: ``code``, ``markdown`` or ``raw``.
        grade, solution, locked, task: nbgrader's flags.
        points: points of a grade cell, else ``None``.
    """

    position: int
    grade_id: str
    cell_type: str
    grade: bool
    solution: bool
    locked: bool
    task: bool
    points: float | None

    @property
    def role(self) -> str:
        return _role(self.grade, self.solution, self.locked, self.task, self.points)


@dataclass(frozen=True)
class ReleasedNotebook:
    """The cells nbgrader tracks in one released notebook, in notebook order (nbgrader's source cells)."""

    name: str
    cells: tuple[ReleasedCell, ...]

    def by_id(self) -> dict[str, ReleasedCell]:
        return {cell.grade_id: cell for cell in self.cells}


@dataclass(frozen=True)
class CellProblem:
    """One thing wrong with a submitted notebook's cell metadata.

    Attributes:
        position: 1-based position of the cell in the submitted notebook; for a
            released cell missing from it, ``None``.
        grade_id: the cell's grade_id, or ``None`` when it has none.
        text: what is wrong and what to do, naming the cell.
    """

    position: int | None
    grade_id: str | None
    text: str


def _brief(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: a submission's values go into records, CSV and feedback."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _flag(value: Any) -> str:
    """A flag as the notebook's JSON spells it (``true``), or any other value, briefly."""
    return "true" if value is True else "false" if value is False else _brief(value)


def _points(value: Any) -> str:
    """``4 points``, ``1 point``, ``'abc' points`` (a value from a submission is shown as it is)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g} point" + ("" if value == 1 else "s")
    return f"{_brief(value)} points"


def _role(grade: Any, solution: Any, locked: Any, task: Any, points: Any) -> str:
    if task:
        return "a task cell"
    if grade and solution:
        return f"a manually graded answer worth {_points(points)}"
    if grade:
        return f"a test cell worth {_points(points)}"
    if solution:
        return "an answer cell"
    if locked:
        return "a read-only cell"
    return "a cell without an nbgrader role"


def _meta_role(meta: Mapping[str, Any]) -> str:
    return _role(meta.get("grade"), meta.get("solution"), meta.get("locked"), meta.get("task"), meta.get("points"))


def released_notebook(path: Path) -> ReleasedNotebook:
    """The tracked cells of the notebook at ``path`` (a source or released notebook of the course).

    Raises:
        ValueError: the file is not a notebook with nbgrader metadata nbgrader could have released.
    """
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = []
        for position, cell in enumerate(nb["cells"], 1):
            meta = cell.get("metadata", {}).get("nbgrader")
            if not meta:
                continue
            flags = {f: bool(meta.get(f, False)) for f in ("grade", "solution", "locked", "task")}
            # nbgrader's is_locked: a grade cell that is not an answer is read-only whatever its flag says.
            tracked = flags["grade"] or flags["solution"] or flags["locked"] or flags["task"]
            if not tracked:
                continue
            points = float(meta["points"]) if flags["grade"] else None
            cells.append(ReleasedCell(position, str(meta["grade_id"]), str(cell["cell_type"]), points=points,
                                      **flags))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a notebook nbgrader could release ({type(exc).__name__}: {exc})") from exc
    return ReleasedNotebook(Path(path).name, tuple(cells))


def load_released(source_dir: Path, notebooks: Iterable[str]) -> dict[str, ReleasedNotebook]:
    """File name -> :class:`ReleasedNotebook` for each of ``notebooks`` in ``source_dir`` (``source/<assignment>``)."""
    return {name: released_notebook(Path(source_dir) / name) for name in notebooks}


def _is_locked(meta: Mapping[str, Any]) -> Any:
    """nbgrader's ``utils.is_locked`` on a cell's nbgrader metadata."""
    if meta.get("solution", False):
        return False
    if meta.get("grade", False):
        return True
    return meta.get("locked", False)


def _schema_problem(meta: Mapping[str, Any], released: ReleasedCell) -> str | None:
    """Why nbgrader's metadata validator (run after its sanitize steps) rejects ``meta``, or ``None``.

    The metadata is first repaired as ``OverwriteCells`` repairs it (cell type, locked,
    points, checksum), so that only what nbgrader keeps from the submission is judged.
    The answer depends only on ``meta``'s JSON text and ``released``, and most cells of a
    class carry their released metadata: each answer is kept (:func:`_judged`) for the next
    submission, as nbgrader's validator builds and checks its schema anew on every call.
    """
    try:
        text = json.dumps(meta, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (parsed notebooks always are): judged, not kept
        return _judge(meta, released)
    return _judged(text, released)


@functools.lru_cache(maxsize=4096)
def _judged(meta_json: str, released: ReleasedCell) -> str | None:
    """:func:`_judge` of the metadata ``meta_json`` encodes (JSON tells ``true`` from ``1``, as the schema does)."""
    return _judge(json.loads(meta_json), released)


def _judge(meta: Mapping[str, Any], released: ReleasedCell) -> str | None:
    repaired = dict(meta)
    if _is_locked(repaired) != released.locked:
        repaired["locked"] = released.locked
    if released.grade and float(repaired["points"]) != released.points:
        repaired["points"] = released.points
    repaired["checksum"] = "0" * 32  # nbgrader always writes the gradebook's checksum
    cell = from_dict({"cell_type": released.cell_type, "metadata": {"nbgrader": repaired}, "source": ""})
    try:
        MetadataValidator().validate_cell(cell)
    except Exception as exc:  # jsonschema, nbgrader's schema version errors, or a comparison of odd types
        return str(getattr(exc, "message", None) or exc).splitlines()[0][:200]
    return None


def _grade_id_of(cell: Any) -> Any:
    """A cell's grade_id, or ``None`` (also for cells and metadata that are not JSON objects)."""
    if not isinstance(cell, dict) or not isinstance(cell.get("metadata"), dict):
        return None
    meta = cell["metadata"].get("nbgrader")
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def check_cells(nb: Mapping[str, Any], released: ReleasedNotebook) -> list[CellProblem]:
    """Problems of the submitted notebook ``nb`` (parsed JSON) against ``released`` (see the module docstring).

    An empty list means nbgrader's sanitize steps will accept the notebook's cell
    metadata (repairing what they repair). Cells that are not JSON objects are
    skipped (nbgrader's reader reports those).
    """
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return []
    known = released.by_id()
    submitted_ids = {_grade_id_of(cell) for cell in cells}
    missing = [c.grade_id for c in released.cells if c.grade_id not in submitted_ids]
    hint = ""  # for a cell with an unknown grade_id: it may be a released one renamed
    if missing:
        hint = f"; the released cell{'s' if len(missing) > 1 else ''} " + ", ".join(map(repr, missing[:3])) + \
            (" and more" if len(missing) > 3 else "") + (" are" if len(missing) > 1 else " is") + \
            " missing from the submission"
    problems: list[CellProblem] = []
    seen: dict[str, list[int]] = {}
    present: set[str] = set()  # nbgrader's index of answer and grade cells, used to restore deleted grade cells
    for position, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("metadata"), dict):
            continue
        if "nbgrader" not in cell["metadata"]:
            continue
        meta = cell["metadata"]["nbgrader"]
        if not isinstance(meta, dict):
            problems.append(CellProblem(position, None, (
                f"cell {position} has nbgrader metadata that is not an object ({type(meta).__name__}): restore the "
                "cell from the released notebook, or, if the student added it, delete its nbgrader metadata")))
            continue
        grade_id = meta.get("grade_id")
        if grade_id is None:
            problems.append(CellProblem(position, None, (
                f"cell {position} has nbgrader metadata without a grade_id (marked as {_meta_role(meta)}): restore "
                "the cell from the released notebook, or, if the student added it, delete its nbgrader metadata")))
            continue
        if not isinstance(grade_id, str) or grade_id not in known:
            problems.append(CellProblem(position, _brief(grade_id), (
                f"cell {position} has grade_id {_brief(grade_id)}, which the released notebook does not have "
                f"(marked as {_meta_role(meta)}){hint}: restore the released cell in its place, or, if the student "
                "added this cell, delete its nbgrader metadata")))
            continue
        seen.setdefault(grade_id, []).append(position)
        if meta.get("grade", False) or meta.get("solution", False):
            present.add(grade_id)
        rel = known[grade_id]
        changed = [f for f in _ROLE_FLAGS if meta.get(f, False) is not getattr(rel, f)]
        if changed:
            shown = ", ".join(f"{f}={_flag(meta.get(f, False))}" for f in changed)
            problems.append(CellProblem(position, grade_id, (
                f"cell {position} (grade_id {grade_id!r}) is marked as {_meta_role(meta)} ({shown}) but was released "
                f"as {rel.role}: restore its nbgrader metadata from the released notebook")))
            continue
        if rel.grade:
            try:
                float(meta["points"])
            except (KeyError, TypeError, ValueError):
                shown = "no points" if "points" not in meta else f"points {_brief(meta['points'])}, not a number"
                problems.append(CellProblem(position, grade_id, (
                    f"cell {position} (grade_id {grade_id!r}, {rel.role}) has {shown}: restore its nbgrader "
                    "metadata from the released notebook")))
                continue
        why = _schema_problem(meta, rel)
        if why:
            problems.append(CellProblem(position, grade_id, (
                f"cell {position} (grade_id {grade_id!r}) has nbgrader metadata that nbgrader rejects ({why}): "
                "restore its nbgrader metadata from the released notebook")))

    for grade_id, positions in seen.items():
        if len(positions) > 1:
            listed = ", ".join(str(p) for p in positions[:-1]) + f" and {positions[-1]}"
            rel = known[grade_id]
            copies = "copy" if len(positions) == 2 else "copies"
            problems.append(CellProblem(positions[0], grade_id, (
                f"cells {listed} {'both' if len(positions) == 2 else 'all'} have grade_id {grade_id!r} ({rel.role}, "
                f"released once, as cell {rel.position}): delete the extra {copies}, keeping one cell as released (a "
                "copied cell keeps its nbgrader metadata)")))

    # nbgrader puts a deleted grade cell back right after the tracked cell released before it, looked up
    # among the submission's answer and grade cells (restored ones included); absent there, it fails.
    order = list(released.cells)
    for index, rel in enumerate(order):
        if not rel.grade or rel.grade_id in present:
            continue
        if index > 0 and order[index - 1].grade_id not in present:
            before = order[index - 1]
            where = "a read-only cell, which nbgrader does not look up" if not (before.grade or before.solution) \
                else "missing from the submission too"
            problems.append(CellProblem(None, rel.grade_id, (
                f"the released cell {rel.grade_id!r} ({rel.role}, released as cell {rel.position}) is missing, and "
                f"nbgrader cannot put it back: it inserts a deleted grade cell after the cell released before it, "
                f"{before.grade_id!r} (cell {before.position}), only when that is an answer or grade cell of the "
                f"submission, and here it is {where}: restore {rel.grade_id!r} from the released notebook")))
        present.add(rel.grade_id)  # restored by nbgrader, or by the TA as asked: later cells follow it
    return problems


def describe(name: str, problems: list[CellProblem]) -> str:
    """One notebook's problems as one text: the notebook, then each problem (at most :data:`MAX_LISTED`)."""
    shown = [p.text for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        shown.append(f"and {len(problems) - MAX_LISTED} more")
    return f"{name}: nbgrader cell metadata differs from the released notebook: " + "; ".join(shown)


def check_submission(files: Mapping[str, Path], released: Mapping[str, ReleasedNotebook]) -> str | None:
    """``None`` when every notebook of ``files`` (name -> staged path) passes :func:`check_cells`,
    else the error for the submission's record: each notebook's problems, and that nbgrader did not run.

    Notebooks not in ``released`` are not checked (intake takes only the assignment's notebooks).
    The files must be JSON (intake checked them).
    """
    parts = []
    for name, path in sorted(files.items()):
        if name not in released:
            continue
        problems = check_cells(json.loads(Path(path).read_text(encoding="utf-8")), released[name])
        if problems:
            parts.append(describe(name, problems))
    if not parts:
        return None
    return ". ".join(parts) + ". Not graded: nbgrader was not run, as it would fail on these cells or grade them " \
        "in a role the released notebook does not give them; fix them, then grade the submission again"
