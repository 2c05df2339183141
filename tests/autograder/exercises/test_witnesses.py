"""Every contract clause is proven by its witnesses: graded through the real worker, each is caught.

A clause's ``checked_by`` is a claim that those properties fail when the clause is broken.
``exercises/<key>/witnesses.py`` holds, per clause, answers that break it alone
(``exercises/witness.py``). Here each witness is appended to its answer cell of the source
notebook (the reference answer; in practice all of an exercise's witnesses share one
unsandboxed, quiet worker, each in its own namespace: ``witness.side_by_side``) and graded by
the real suite properties, and:

* every witness fails at least one property its clause names, and its cell loses points;
* every property a clause names fails on at least one of that clause's witnesses (a property
  that none of them fails does not check the clause: the mapping is a false claim);
* every clause has a witness.

To stay affordable, a witness is graded on the properties its clause names only (one
``CellSuite`` per cell, with the cell's points): the cell's score is ``points * held / total``
over its properties, so a mapped property failing in the full suite costs the cell points just
as it does here. The witnesses' cells' other properties are the catalogue tests' business.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections import defaultdict
from functools import cache

import pytest
from ch11_autograder.authoring.build import build_notebook
from ch11_autograder.exercises import exercise
from ch11_autograder.exercises.witness import Renamed, Witness, Witnesses, side_by_side, wrapper
from ch11_autograder.trusted.cell_suite import CellSuite
from ch11_autograder.trusted.contract import Clause
from ch11_autograder.trusted.grading import first_report
from ch11_autograder.trusted.registry import get_suite
from ch11_autograder.trusted.submission_cells import worker_cells
from ch11_autograder.trusted.suite import run_suite
from ch11_autograder.trusted.verdicts import CellVerdict
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from support.exercise_grading import ALL_EXERCISES

#: Every exercise has witnesses (tests/autograder/exercises/test_registry.py requires the module), the
#: other course's (tests/other_course/) included.
KEYS = [e.key for e in ALL_EXERCISES]


@cache
def witnesses(key: str) -> Witnesses:
    """The exercise's witnesses, the ones generated from its clause table included (``with_generated``)."""
    importlib.import_module(exercise(key).suite_module)  # registers the suites the clauses name
    written = importlib.import_module(f"{exercise(key).package}.witnesses").WITNESSES
    return written.with_generated(importlib.import_module(exercise(key).reference_module))


CASES = [(key, w) for key in KEYS for w in witnesses(key).witnesses]


@cache
def _source_notebook_json(key: str) -> str:
    import nbformat

    return nbformat.writes(build_notebook(exercise(key).cells()))


def _suites(clause: Clause) -> list[CellSuite]:
    """Per cell the clause names, a suite of the named properties alone, with the cell's points."""
    named: dict[str, list[str]] = defaultdict(list)
    for name in clause.checked_by:
        grade_id, prop = name.split("/")
        named[grade_id].append(prop)
    suites = []
    for grade_id, props in named.items():
        full = get_suite(grade_id)
        suites.append(CellSuite(grade_id, full.points, [p for p in full.properties if p.name in props]))
    return suites


def controls(key: str) -> list[Witness]:
    """Per graded function, the reference wrapped as the witnesses wrap it and changed in nothing.

    Graded beside the witnesses on every property of the function's clauses, each must pass all:
    what a witness fails is then its change, not the wrapping or the shared worker.
    """
    reference = importlib.import_module(exercise(key).reference_module)
    found = witnesses(key)
    out = []
    for function in dict.fromkeys(c.function for c in found.contract):
        cells = {w.answer_cell for w in found.witnesses if w.clause.function == function}
        if len(cells) != 1:
            continue
        clause = Clause(function, "behaviour", "the reference, unchanged", _every_property_of(found.contract, function))
        # Wrapped like the witnesses where the reference library has the function, else as it stands.
        source = wrapper(getattr(reference, function)) if hasattr(reference, function) else "# unchanged\n"
        out.append(Witness(clause, f"control_{function}", cells.pop(), source))
    return out


def _every_property_of(contract: tuple[Clause, ...], function: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for c in contract if c.function == function for n in c.checked_by))


def readings(key: str) -> list[Witness]:
    """The exercise's settled readings, each graded on every property of its function's clauses."""
    found = witnesses(key)
    return [
        dataclasses.replace(w, clause=Clause(w.clause.function, "behaviour", f"a right reading of: {w.clause.text}",
                                             _every_property_of(found.contract, w.clause.function)))
        for w in found.readings
    ]


@cache
def graded_all(key: str) -> dict[str, dict[str, CellVerdict]]:
    """Witness name -> {grade_id: verdict on its clause's properties}, every witness of ``key`` in one worker."""
    import nbformat

    found = (*witnesses(key).witnesses, *controls(key), *readings(key))
    cell, names = side_by_side(found, graded=sorted({c.function for c in witnesses(key).contract}))
    nb = nbformat.reads(_source_notebook_json(key), as_version=4)
    cells = worker_cells(nb, skip=set(exercise(key).worker_skip_cells))
    out: dict[str, dict[str, CellVerdict]] = {}
    with WorkerSession([*cells.sources, cell], UnsandboxedLauncher(quiet=True), call_timeout=10.0) as session:
        report = first_report(session)
        assert report and all(outcome.status == "ok" for outcome in report), report
        for witness in found:
            renamed = Renamed(session, names[witness.name])
            suites = _suites(witness.clause)
            out[witness.name] = {suite.grade_id: run_suite(suite, renamed, suite.points) for suite in suites}
    return out


def graded(key: str, name: str) -> dict[str, CellVerdict]:
    """grade_id -> verdict of the witness ``name`` of exercise ``key`` on its clause's properties."""
    return graded_all(key)[name]


def failed_properties(key: str, witness: Witness) -> set[str]:
    """``"<grade_id>/<property>"`` of the clause's properties the witness fails."""
    return {f"{grade_id}/{f.property}" for grade_id, verdict in graded(key, witness.name).items()
            for f in verdict.failures}


def test_every_exercise_has_witnesses_for_every_clause():
    assert KEYS, "no exercise has a witnesses module"
    for key in KEYS:
        table = importlib.import_module(f"{exercise(key).package}.contract").CONTRACT
        found = witnesses(key)
        assert found.contract == table, key
        assert found.without_witness() == [], (key, [f"{c.function}: {c.text}" for c in found.without_witness()])


def test_every_witness_source_compiles():
    for _key, witness in CASES:
        compile(witness.source, witness.name, "exec")


@pytest.mark.slow
@pytest.mark.parametrize(("key", "witness"), CASES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_witness_fails_a_property_its_clause_names_and_loses_points(key, witness):
    verdicts = graded(key, witness.name)
    failed = failed_properties(key, witness)
    assert failed & set(witness.clause.checked_by), (
        f"{witness.name} breaks '{witness.clause.function}: {witness.clause.text}' and passes "
        f"{', '.join(witness.clause.checked_by)}", [v.message() for v in verdicts.values()])
    assert any(v.score < v.points for v in verdicts.values()), [v.message() for v in verdicts.values()]


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_the_reference_wrapped_like_a_witness_passes_every_property(key):
    assert controls(key)
    for control in controls(key):
        verdicts = graded(key, control.name)
        assert all(v.score == v.points for v in verdicts.values()), [v.message() for v in verdicts.values()]


READINGS = [(key, w) for key in KEYS for w in readings(key)]


@pytest.mark.slow
@pytest.mark.parametrize(("key", "reading"), READINGS, ids=lambda v: v if isinstance(v, str) else v.name)
def test_every_settled_reading_passes_every_property_of_its_function(key, reading):
    verdicts = graded(key, reading.name)
    assert all(v.score == v.points for v in verdicts.values()), [v.message() for v in verdicts.values()]


def test_generated_witnesses_cross_every_drawn_kind_with_the_type_and_value_promises():
    for key in KEYS:
        found = witnesses(key)
        for clause in (c for c in found.contract if c.kind == "accepts"):
            for drawn in clause.drawn:
                made = [w for w in found.witnesses if w.name.endswith(f"_broken_for_{clause.argument}_{drawn.label}")
                        and w.clause.function == clause.function]
                assert {w.name.split("_broken_for_")[0].rsplit("_", 1)[1] for w in made} == {"type", "value"}, (
                    key, clause.function, drawn.label)


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_every_mapped_property_fails_on_a_witness_of_its_clause(key):
    found = witnesses(key)
    unproven = []
    for clause in found.contract:
        mine = [w for w in found.witnesses if w.clause == clause]
        assert mine, f"{key} {clause.function}: {clause.text} has no witness"
        failed = set().union(*(failed_properties(key, w) for w in mine))
        unproven += [f"{clause.function}: {clause.text} -> {name}" for name in clause.checked_by if name not in failed]
    assert unproven == []


def test_generated_witnesses_mishandle_every_drawn_layout_and_reshape_every_refused_shape():
    for key in KEYS:
        found = witnesses(key)
        names = {(w.clause.function, w.name) for w in found.witnesses}
        for clause in found.contract:
            for drawn in (d for d in clause.drawn if d.mishandled):
                name = f"{clause.function}_{clause.argument}_mishandles_{drawn.label}"
                assert (clause.function, name) in names, (key, name)
            if clause.reshaped:
                name = f"{clause.function}_{clause.argument}_reshapes_silently_{clause.raises}"
                assert (clause.function, name) in names, (key, name)
