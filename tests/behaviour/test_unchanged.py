"""Verdicts and feedback equal the committed fixtures (``capture.py``): a refactor changes none.

* Every catalogue entry, the reference and the released stubs, graded notebook by
  notebook through ``TrustedVerdicts`` as configured by ``nbgrader_config.py``: the
  outputs of every autograded test cell equal ``catalogue/<exercise>.json`` (the verdict text,
  the partial-credit float, the error), so scores and feedback are unchanged.
* The demo class, graded by the batch grader under bubblewrap: every cell's score and
  every feedback file's bytes (SHA-256) equal ``demo.json``, which ``make demo`` wrote.

A change meant to alter a verdict rewrites the fixture with ``capture.py`` in the same
commit and says why in its message. The fixtures are Python 3.11's; on 3.12 and 3.13 they are
compared exactly after the few changes of CPython's own that ``capture.MESSAGE_CHANGES`` and
``capture.FEEDBACK_CHANGES`` list with their cause. A feedback page's later digest is pinned
against the page's 3.11 digest: a recapture of ``demo.json`` that changes such a page fails here
under any Python (a fast test, without grading) until the page is graded on the later Python and
pinned again.
"""

from __future__ import annotations

import json

import pytest
from behaviour import capture
from support import batch_support

EXERCISES = sorted(path.stem for path in capture.CATALOGUE_DIR.glob("*.json"))
CATALOGUE = {label: v for exercise in EXERCISES for label, v in capture.read_catalogue_fixture(exercise).items()}


def _diff(label: str, expected: dict, got: dict) -> str:
    lines = [f"{label}: verdict outputs changed"]
    for grade_id in sorted(set(expected) | set(got)):
        if expected.get(grade_id) != got.get(grade_id):
            lines.append(f"  {grade_id}:\n    expected {json.dumps(expected.get(grade_id))[:600]}\n"
                         f"    got      {json.dumps(got.get(grade_id))[:600]}")
    return "\n".join(lines)


def test_the_fixture_covers_every_catalogue_entry_reference_and_stubs():
    labels = {label for label, _stem, _nb in capture.submissions()}
    assert labels == set(CATALOGUE)
    assert len(EXERCISES) == 5
    assert all(f"{ex}/reference" in CATALOGUE and f"{ex}/stubs" in CATALOGUE for ex in EXERCISES)


@pytest.fixture(scope="module")
def grading_pool():
    """The interpreters the exercises' catalogues are graded on, started once for the module's tests and
    ended with it (``capture.grading_pool``)."""
    with capture.grading_pool() as pool:
        yield pool


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_catalogue_verdicts_are_unchanged(exercise, grading_pool):
    labels = {label for label in CATALOGUE if label.startswith(exercise + "/")}
    got = capture.grade_catalogue(labels, pool=grading_pool)
    expected = {label: capture.as_on_this_python(CATALOGUE[label]) for label in labels}
    changed = [_diff(label, expected[label], got[label]) for label in sorted(labels) if got[label] != expected[label]]
    assert not changed, "\n".join(changed)


def test_the_later_pythons_feedback_digests_are_pinned_against_the_fixture_s_pages():
    # A later Python's digest of a page is only known for the page it was taken from: once demo.json has
    # another digest for it, what 3.13 must reproduce is unknown and the slow comparison there would fail
    # on a stale pin. Said here, on every Python and in seconds, naming the page.
    stale = capture.stale_feedback_changes()
    assert not stale, "\n".join(stale)


@pytest.mark.slow
@pytest.mark.class_batch
def test_demo_class_scores_and_feedback_are_unchanged(tmp_path_factory):
    course, _report, _events = batch_support.graded_demo_class(tmp_path_factory.getbasetemp())
    expected = capture.expected_demo()
    got = capture.demo_outcome(course)
    assert got["scores"] == expected["scores"]
    assert got["feedback_sha256"] == expected["feedback_sha256"]


def _score(grade_id: str, outputs: list[dict]) -> tuple[float, float]:
    """What nbgrader records for a test cell with these outputs (its own ``determine_grade``)."""
    import importlib

    import nbformat
    from ch11_autograder.exercises import exercise
    from nbgrader.utils import determine_grade

    contract = importlib.import_module(f"{exercise(grade_id.split('_', 1)[0]).package}.contract")
    points = contract.POINTS[grade_id]
    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                "grade_id": grade_id, "points": points}})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    score, _max = determine_grade(cell)
    return float(score), float(points)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_fixture_shows_each_entry_losing_exactly_its_cells(exercise):
    # Read off the committed verdicts, which grading through TrustedVerdicts (visible checks included)
    # produced: the reference keeps every point, the stubs get none, each catalogue entry loses points
    # in exactly the test cells it declares.
    from ch11_autograder.exercises.catalogue import catalogue

    entries = {entry.name: entry for entry in catalogue(exercise)}
    fixture = capture.read_catalogue_fixture(exercise)
    wrong = []
    for label, cells in fixture.items():
        name = label.split("/", 1)[1]
        for grade_id, outputs in cells.items():
            score, points = _score(grade_id, outputs)
            if name == "reference":
                should_lose = False
            elif name == "stubs":
                should_lose = score != 0.0
                if should_lose:
                    wrong.append(f"{label}: {grade_id} scores {score:g}, the stubs must score 0")
                continue
            else:
                should_lose = grade_id in entries[name].loses
            if (score < points) != should_lose:
                wrong.append(f"{label}: {grade_id} scores {score:g} of {points:g}")
    assert not wrong, "\n".join(wrong)
