"""The catalogue's kill table, graded for real: the properties each catalogue entry fails, per test cell.

    python -m ch11_autograder.authoring.kill_table            # every exercise the course grades
    python -m ch11_autograder.authoring.kill_table ex3 ex5    # those exercises

Each entry is graded as the exercises' tests grade it: the exercise's source notebook with the
entry's source pasted after its answer cell (so its definition wins over the reference's), every
cell run in a verdict worker, every suite of the notebook run on it. The row kept is, per test
cell the entry loses points in, the names of the properties it fails there (``visible_checks``
included when the notebook's own checks raise). Rows are written to ``kill_table.json`` beside
the exercise's ``wrong_answers.py`` (``exercises.catalogue.kill_table_path``), keys sorted, so a
change shows as a diff. ``make release`` runs this; ``tests/autograder/exercises/test_suites.py``
grades every entry again and fails on a stale row.

Feedback reads the rows (``exercises.catalogue.fails_of``) to keep an entry's name only for an
answer that fails the cell as the entry does. Grading a suite change can change a row: rewrite the
table in the same commit.

The worker is unsandboxed: what runs in it is the course's own reference and catalogue, never a
submission. The exercises are the course's (``exercises.course_exercises``: the chapter's unless
``$CH11_EXERCISES`` names another course's package).
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import warnings
from collections.abc import Mapping, Sequence

from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions
from traitlets.config.loader import PyFileConfigLoader

from ..exercises import Exercise, course_exercises, exercise
from ..exercises.catalogue import WrongAnswer, catalogue, kill_table_path
from ..paths import COURSE_CONFIG
from ..trusted.cell_suite import CellSuite
from ..trusted.grading import grade_suites
from ..trusted.registry import get_suite, load_suite_modules
from ..trusted.submission_cells import WorkerCells, autograded_test_cells, worker_cells
from ..trusted.verdicts import CellVerdict
from ..trusted.worker_client import WorkerSession
from ..untrusted.backends.unsandboxed import UnsandboxedLauncher
from .build import build_notebook

__all__ = [
    "course_call_timeout",
    "entry_row",
    "entry_verdicts",
    "grade",
    "kill_table",
    "main",
    "notebook_cells",
    "row",
    "source_notebook",
    "suites",
]


@functools.cache  # the course's config file, read once (every entry's grading asks)
def course_call_timeout() -> float:
    """Seconds one call of a student function may take: the course's ``TrustedVerdicts.call_timeout``."""
    config = PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()
    return float(config.TrustedVerdicts.call_timeout)


@functools.cache
def _built(key: str) -> NotebookNode:
    return build_notebook(exercise(key).cells())


def source_notebook(key: str) -> NotebookNode:
    """The exercise's source notebook (solutions and hidden tests in), a fresh copy each time."""
    return copy.deepcopy(_built(key))


def suites(key: str) -> list[CellSuite]:
    """The exercise's registered suites, one per autograded test cell, in notebook order.

    Raises:
        LookupError: a test cell of the notebook has no registered suite.
    """
    load_suite_modules([exercise(key).suite_module])
    found = []
    for _, cell in autograded_test_cells(_built(key)):
        grade_id = cell.metadata.nbgrader.grade_id
        suite = get_suite(grade_id)
        if suite is None:
            raise LookupError(f"{key}: no suite is registered for test cell {grade_id!r}")
        found.append(suite)
    return found


def notebook_cells(
    key: str,
    append: Mapping[str, str] | None = None,
    *,
    replace: Mapping[str, str] | None = None,
    released: bool = False,
) -> WorkerCells:
    """The cells the worker runs for the exercise's notebook.

    Args:
        append: cell id -> source pasted at the end of that cell (after the reference's own,
            so its definitions win), as a student adds to an answer.
        replace: cell id -> the cell's whole source.
        released: start from the released notebook (stubs, no hidden tests' solutions).
    """
    nb = source_notebook(key)
    if released:
        nb, _ = ClearSolutions().preprocess(nb, {})
    for cell in nb.cells:
        if replace and cell.id in replace:
            cell.source = replace[cell.id]
        if append and cell.id in append:
            cell.source += "\n\n\n" + append[cell.id]
    return worker_cells(nb, skip=set(exercise(key).worker_skip_cells))


def grade(key: str, cells: WorkerCells, call_timeout: float | None = None) -> dict[str, CellVerdict]:
    """grade_id -> verdict of each of the exercise's suites on ``cells``, in a fresh unsandboxed worker.

    ``call_timeout``: seconds per call of a student function; ``None``: the course's.
    """
    timeout = course_call_timeout() if call_timeout is None else call_timeout
    launcher = UnsandboxedLauncher(quiet=True)
    with WorkerSession(list(cells.sources), launcher, call_timeout=timeout) as session:
        return grade_suites(cells, suites(key), session)


def entry_verdicts(key: str, entry: WrongAnswer, call_timeout: float | None = None) -> dict[str, CellVerdict]:
    """The verdicts of the reference with ``entry`` pasted after its answer cell."""
    return grade(key, notebook_cells(key, {entry.answer_cell: entry.source}), call_timeout)


def row(verdicts: Mapping[str, CellVerdict]) -> dict[str, list[str]]:
    """grade_id -> the sorted names of the properties failed there, for each cell with a failure."""
    return {
        grade_id: sorted({f.property for f in verdict.failures})
        for grade_id, verdict in sorted(verdicts.items())
        if verdict.failures
    }


def entry_row(key: str, entry: WrongAnswer) -> dict[str, list[str]]:
    """``entry``'s kill-table row, graded now."""
    return row(entry_verdicts(key, entry))


def kill_table(key: str, progress: bool = False) -> dict[str, dict[str, list[str]]]:
    """Every catalogue entry of exercise ``key`` -> its row, graded now (one worker per entry)."""
    table = {}
    entries = catalogue(key)
    for number, entry in enumerate(entries, 1):
        table[entry.name] = entry_row(key, entry)
        if progress:
            print(f"{key}: {number}/{len(entries)} {entry.name}", file=sys.stderr, flush=True)
    return dict(sorted(table.items()))


def render(table: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """The file's text (JSON): an entry a block, a cell a line, keys sorted, a newline at the end."""
    blocks = []
    for name in sorted(table):
        lines = [f"    {json.dumps(cell)}: {json.dumps(sorted(props))}" for cell, props in sorted(table[name].items())]
        cells = ",\n".join(lines)
        blocks.append(f"  {json.dumps(name)}: {{\n{cells}\n  }}")
    return "{\n" + ",\n".join(blocks) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercises", nargs="*", metavar="KEY", help="exercise keys (default: every one)")
    args = parser.parse_args(argv)
    # The catalogue's wrong answers overflow on purpose when the trusted process runs them to name a mistake.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    known = {e.key: e for e in course_exercises()}
    unknown = [k for k in args.exercises if k not in known]
    if unknown:
        parser.error(f"unknown exercise(s) {', '.join(unknown)}; the course has {', '.join(known)}")
    chosen: list[Exercise] = [known[k] for k in args.exercises] if args.exercises else list(known.values())
    for ex in chosen:
        entries = catalogue(ex.key)
        if not entries:
            continue
        path = kill_table_path(entries[0])
        path.write_text(render(kill_table(ex.key, progress=True)), encoding="utf-8")
        print(f"wrote {path} ({len(entries)} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
