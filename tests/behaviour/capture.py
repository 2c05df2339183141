"""Today's verdicts, captured so that a change of layout or runtime can be shown to keep them.

A grading run leaves two kinds of output a student or instructor sees: the
verdict outputs of every autograded test cell (what nbgrader scores and what
the feedback shows) and the feedback HTML. This module records them for

* the reference solution, the released stubs and every catalogue entry, each
  graded notebook by notebook through the ``TrustedVerdicts`` preprocessor
  configured exactly as ``nbgrader_config.py`` configures it (in-process,
  ``sandbox = "none"``: the sandbox changes where code runs, not what it
  returns), into ``catalogue/<exercise>.json`` (one file per exercise, so that
  work on one exercise rewrites only its own);
* the demo class as ``make demo`` grades it, into ``demo.json`` (per student,
  notebook and cell: the score; per feedback file: its SHA-256).

    python tests/behaviour/capture.py catalogue [ex3 ...]   # rewrite catalogue/<exercise>.json
    python tests/behaviour/capture.py demo COURSE           # rewrite demo.json from a graded course

``test_unchanged.py`` regrades and compares. A change that means to alter a
verdict rewrites the fixture in the same commit and says why.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.pool import Pool
from pathlib import Path

import nbformat
from ch11_autograder.course_layout import FEEDBACK, GRADEBOOK
from ch11_autograder.paths import ASSIGNMENT, COURSE_CONFIG, RELEASE_DIR, SOURCE_DIR
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

HERE = Path(__file__).resolve().parent
CATALOGUE_DIR = HERE / "catalogue"
DEMO_FIXTURE = HERE / "demo.json"


@functools.cache
def course_config() -> Config:
    """The course's own ``nbgrader_config.py``, loaded as nbgrader loads it (once per process)."""
    return PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()


def _exercises() -> Iterator[tuple[str, str]]:
    """(exercise key, notebook stem) in the assignment's order."""
    from ch11_autograder.exercises import EXERCISES

    for exercise in EXERCISES:
        yield exercise.key, exercise.notebook


def _entries(exercise: str):
    from ch11_autograder.exercises.catalogue import catalogue

    return catalogue(exercise)


def submissions() -> Iterator[tuple[str, str, nbformat.NotebookNode]]:
    """(label, notebook stem, notebook): reference, stubs and every catalogue entry, per exercise."""
    from ch11_autograder.authoring.submissions import answer_sources, fill, read

    for exercise, stem in _exercises():
        released = read(RELEASE_DIR / f"{stem}.ipynb")
        answers = answer_sources(read(SOURCE_DIR / f"{stem}.ipynb"))
        yield f"{exercise}/reference", stem, fill(released, answers)
        yield f"{exercise}/stubs", stem, fill(released, {})
        for entry in _entries(exercise):
            yield f"{exercise}/{entry.name}", stem, fill(released, answers, wrong=[entry])


def test_cell_outputs(nb: nbformat.NotebookNode, config: Config) -> dict[str, list[dict]]:
    """grade_id -> the outputs ``TrustedVerdicts`` writes into that autograded test cell."""
    from ch11_autograder.trusted.steps import TrustedVerdicts
    from ch11_autograder.trusted.submission_cells import autograded_test_cells

    step = TrustedVerdicts(config=config)
    step.sandbox = "none"
    graded, _ = step.preprocess(nb, {"metadata": {"path": "."}, "unique_key": "capture"})
    return {
        cell.metadata.nbgrader.grade_id: json.loads(json.dumps(cell.outputs))
        for _, cell in autograded_test_cells(graded)
    }


@functools.cache
def _notebooks() -> dict[str, nbformat.NotebookNode]:
    return {label: nb for label, _stem, nb in submissions()}


def _grade_one(label: str) -> tuple[str, dict[str, list[dict]]]:
    """(label, grade_id -> verdict outputs) of one submission, in this process."""
    return label, test_cell_outputs(_notebooks()[label], course_config())


@contextlib.contextmanager
def grading_pool(processes: int | None = None) -> Iterator[Pool | None]:
    """``processes`` other interpreters (default: one per core this process may use) for :func:`grade_catalogue`
    to grade submissions on side by side; ``None`` with fewer than two (this process then grades them in turn).

    All of them are started on entry and ended on exit: whoever grades several times (the tests of five
    exercises) holds one pool across them and pays the interpreters' start once, and no interpreter outlives
    its holder. spawn, not fork: fresh interpreters, as ``capture.py catalogue`` starts one.
    """
    if processes is None:
        processes = len(os.sched_getaffinity(0))
    if processes < 2:
        yield None
        return
    pool = multiprocessing.get_context("spawn").Pool(processes)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def grade_catalogue(labels: set[str] | None = None, *, pool: Pool | None = None) -> dict[str, dict[str, list[dict]]]:
    """label -> grade_id -> verdict outputs, for every submission of :func:`submissions`.

    Each submission is graded on its own (its own worker, hypothesis seeded per property), so
    with a ``pool`` (:func:`grading_pool`) the submissions are shared out over its interpreters
    and graded side by side; without one, this process grades them in turn.
    """
    wanted = [label for label in _notebooks() if labels is None or label in labels]
    if pool is None or len(wanted) < 2:
        return dict(map(_grade_one, wanted))
    return dict(pool.imap_unordered(_grade_one, wanted))


def catalogue_fixture(exercise: str) -> Path:
    return CATALOGUE_DIR / f"{exercise}.json"


def read_catalogue_fixture(exercise: str) -> dict[str, dict[str, list[dict]]]:
    """label (``ex3/reference``) -> grade_id -> verdict outputs, as committed."""
    entries = json.loads(catalogue_fixture(exercise).read_text())
    return {f"{exercise}/{name}": outputs for name, outputs in entries.items()}


#: What the fixtures (captured under Python 3.11) read as on a later Python, and why. Nothing else
#: may differ: the comparison under that Python is exact against the fixture so translated.
#:
#: * Python 3.12 reworded the error ``min()``/``max()`` raise on an empty iterable; the verdict
#:   quotes the student's own exception as their code raised it (ex3's ``scan_skips_*`` entries).
MESSAGE_CHANGES: dict[tuple[int, int], tuple[tuple[str, str], ...]] = {
    (3, 12): (("min() arg is an empty sequence", "min() iterable argument is empty"),
              ("max() arg is an empty sequence", "max() iterable argument is empty")),
}


@dataclass(frozen=True)
class FeedbackChange:
    """One feedback file's SHA-256 in ``demo.json`` (Python 3.11's) and what it is on a later Python.

    The later digest holds only for that page: a recapture of ``demo.json`` that changes the page leaves
    ``fixture`` behind, and ``test_unchanged.py`` fails on any Python until the page is graded on the
    later Python again and both digests are pinned anew.
    """

    fixture: str
    later: str


#: Feedback files whose bytes differ on a later Python, their SHA-256 there, and why.
#:
#: * Python 3.12 tokenizes f-strings into parts (PEP 701; seen on 3.13, 3.12 is run by no
#:   test), and IPython colours the source lines of a kernel's traceback from that tokenizer:
#:   the unanswered ex4's traceback in the feedback (hal and blank did not answer ex4) colours
#:   the strings inside f-strings, and no longer colours a docstring's continuation lines as
#:   code. The text and the scores are unchanged.
_EX4_UNANSWERED = FeedbackChange(
    fixture="98b5aa0b2b6fee225dbf5394a0362b5ea7ccde9ba41fee0f71b64b24c066ee15",
    later="05c9caaea7161b5b557add1657007a27797dbb44189efa3ed11d1fd5d12361a5",
)
FEEDBACK_CHANGES: dict[tuple[int, int], dict[str, FeedbackChange]] = {
    (3, 12): {"hal/ch11/ex4_audit.html": _EX4_UNANSWERED, "blank/ch11/ex4_audit.html": _EX4_UNANSWERED},
}


def _since(changes: dict, version: tuple[int, int]) -> list:
    return [changes[since] for since in sorted(changes) if since <= version]


def as_on_this_python(value, version: tuple[int, int] | None = None):
    """``value`` (verdict outputs, as captured on Python 3.11) with :data:`MESSAGE_CHANGES` of
    ``version`` (default: this interpreter's) applied to every string in it."""
    version = version or sys.version_info[:2]
    pairs = [pair for changes in _since(MESSAGE_CHANGES, version) for pair in changes]
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: as_on_this_python(item, version) for key, item in value.items()}
    if isinstance(value, list):
        return [as_on_this_python(item, version) for item in value]
    return value


def stale_feedback_changes(version: tuple[int, int] | None = None) -> list[str]:
    """The pins of :data:`FEEDBACK_CHANGES` (of every later Python, or of those up to ``version``) whose
    ``fixture`` digest is no longer ``demo.json``'s: the page was recaptured after its later digest was
    taken, so that digest says nothing. One line each; empty when every pin holds."""
    fixture = json.loads(DEMO_FIXTURE.read_text())["feedback_sha256"]
    return [f"{name}: pinned for Python {since[0]}.{since[1]} against {change.fixture[:12]}, "
            f"demo.json has {fixture.get(name, 'no such file')[:12]}"
            for since, changes in sorted(FEEDBACK_CHANGES.items()) if version is None or since <= version
            for name, change in sorted(changes.items()) if fixture.get(name) != change.fixture]


def expected_demo(version: tuple[int, int] | None = None) -> dict:
    """``demo.json`` as this Python (or ``version``) must reproduce it: :data:`FEEDBACK_CHANGES` applied.

    Raises:
        ValueError: a pin this Python needs is stale (:func:`stale_feedback_changes`): what it must reproduce
            is not known.
    """
    version = version or sys.version_info[:2]
    stale = stale_feedback_changes(version)
    if stale:
        raise ValueError("feedback digests pinned for a later Python against an older demo.json (grade the demo "
                         "class on that Python, then pin both digests again):\n" + "\n".join(stale))
    expected = json.loads(DEMO_FIXTURE.read_text())
    for changes in _since(FEEDBACK_CHANGES, version):
        expected["feedback_sha256"].update({name: change.later for name, change in changes.items()})
    return expected


def demo_outcome(course: Path) -> dict:
    """Scores per student, notebook and cell, and the SHA-256 of every feedback file, of a graded course."""
    from nbgrader.api import Gradebook

    scores: dict[str, dict[str, dict[str, float]]] = {}
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        for student in sorted(gb.students, key=lambda s: s.id):
            submission = gb.find_submission(ASSIGNMENT, student.id)
            scores[student.id] = {
                nb.name: {grade.name: grade.score for grade in sorted(nb.grades, key=lambda g: g.name)}
                for nb in sorted(submission.notebooks, key=lambda n: n.name)
            }
    feedback = {
        path.relative_to(course / FEEDBACK).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((course / FEEDBACK).rglob("*.html"))
    }
    return {"scores": scores, "feedback_sha256": feedback}


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    cat = sub.add_parser("catalogue", help="grade reference, stubs and catalogue entries; rewrite their fixtures")
    cat.add_argument("exercises", nargs="*", help="exercise keys (ex1 ...); default: all")
    demo = sub.add_parser("demo", help="read a course graded by `make demo`; rewrite demo.json")
    demo.add_argument("course", type=Path)
    args = parser.parse_args(argv)
    if args.what == "catalogue":
        wanted = set(args.exercises or [exercise for exercise, _stem in _exercises()])
        with grading_pool() as pool:
            graded = grade_catalogue({label for label in _notebooks() if label.split("/")[0] in wanted}, pool=pool)
        for exercise in sorted(wanted):
            prefix = exercise + "/"
            entries = {label.removeprefix(prefix): v for label, v in graded.items() if label.startswith(prefix)}
            _write(catalogue_fixture(exercise), entries)
    else:
        _write(DEMO_FIXTURE, demo_outcome(args.course))
        for line in stale_feedback_changes():
            print(f"stale, pin again from this Python's grading: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
