"""What every exercise's hidden suites must do, for each exercise of the registry, through a real worker.

* the reference solutions earn full marks, with no failure, within :data:`CPU_SECONDS`;
* the released stubs earn nothing, each failure an error or mismatch that says the task
  is not answered yet (``NotImplementedError``);
* each catalogue entry loses points in exactly the cells its ``loses`` names, and keeps
  full marks elsewhere, with no failure of the grader's own (``internal``), failing there the
  properties its kill-table row records (``kill_table.json``, which feedback's naming reads);
* the kill table has a row for each entry and no other, and every misconception a suite may
  name carries its entries' rows.

An exercise's own ``exN/test_suite.py`` adds what only it promises (which misconception
feedback names, which properties a mistake must leave alone), reading the same gradings
(``support.exercise_grading``). A new exercise is covered here by its registry entry alone; the
other course's exercise (``tests/other_course/``) is graded here beside the chapter's.
"""

from __future__ import annotations

import json
import resource
import time

import pytest
from ch11_autograder.authoring.kill_table import row
from ch11_autograder.exercises.catalogue import catalogue, kill_table_path, kill_table_row
from support import exercise_grading
from support.exercise_grading import ALL_EXERCISES

pytestmark = pytest.mark.slow

KEYS = [e.key for e in ALL_EXERCISES]
ENTRIES = [(key, entry.name) for key in KEYS for entry in catalogue(key)]

#: CPU seconds (this process's and the worker's) the reference's grading may take, all suites of
#: one notebook together. The largest of the wall-time bounds the exercises had each (10 to 20 s;
#: ex1's and ex5's suites were given 20), now counted in CPU time, which a machine busy with other
#: work does not stretch.
CPU_SECONDS = 20.0


def _messages(verdicts) -> str:
    return "\n".join(v.message() for v in verdicts.values())


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.mark.parametrize("key", KEYS)
def test_the_reference_earns_full_marks_within_its_cpu_time(key):
    start = _cpu_seconds()
    verdicts = exercise_grading.grade(key, exercise_grading.cells(key))
    spent = _cpu_seconds() - start
    assert {g: v.score for g, v in verdicts.items()} == {s.grade_id: s.points for s in exercise_grading.suites(key)}
    assert all(not v.failures for v in verdicts.values()), _messages(verdicts)
    assert spent < CPU_SECONDS, f"{key}: {spent:.1f} CPU-s for the reference's suites"


@pytest.mark.parametrize("key", KEYS)
def test_the_released_stubs_earn_nothing(key):
    verdicts = exercise_grading.grade(key, exercise_grading.cells(key, released=True))
    assert verdicts and all(v.score == 0.0 for v in verdicts.values()), _messages(verdicts)
    for verdict in verdicts.values():
        assert verdict.failures, verdict.message()
        for failure in verdict.failures:
            assert failure.kind in ("error", "mismatch"), verdict.message()
            assert "NotImplementedError" in failure.message(), verdict.message()


@pytest.mark.parametrize(("key", "name"), ENTRIES, ids=[f"{key}-{name}" for key, name in ENTRIES])
def test_each_catalogue_entry_loses_exactly_the_cells_it_names(key, name):
    entry = exercise_grading.entry(key, name)
    verdicts = exercise_grading.graded_entry(key, name)
    lost = {g for g, v in verdicts.items() if v.score < v.points}
    assert lost == set(entry.loses), _messages(verdicts)
    assert not any(f.kind == "internal" for v in verdicts.values() for f in v.failures), _messages(verdicts)
    recorded = {cell: sorted(props) for cell, props in (kill_table_row(entry) or {}).items()}
    assert recorded == row(verdicts), (
        f"{kill_table_path(entry)}: the row of {name} is stale; rewrite it with "
        f"python -m ch11_autograder.authoring.kill_table {key}"
    )


@pytest.mark.parametrize("key", KEYS)
def test_the_kill_table_has_a_row_for_each_entry_and_no_other(key):
    entries = catalogue(key)
    path = kill_table_path(entries[0])
    assert sorted(json.loads(path.read_text(encoding="utf-8"))) == sorted(e.name for e in entries), path


@pytest.mark.parametrize("key", KEYS)
def test_every_misconception_a_suite_may_name_carries_its_entries_rows(key):
    # A suite that rebuilds a misconception (to run it as its property reports) must keep the rows,
    # or feedback would name the mistake on one property's evidence alone.
    for suite in exercise_grading.suites(key):
        for prop in suite.properties:
            for wrong in prop.misconceptions:
                assert wrong.fails, f"{suite.grade_id}/{prop.name}: {wrong.name!r} has no kill-table row"
                # Offered where none of its entries loses points, a name could never be kept.
                assert any(suite.grade_id in fails for fails in wrong.fails), (suite.grade_id, prop.name, wrong.name)
