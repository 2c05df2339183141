"""The mutation tool (``mutation/``): its mutants are what it claims, and its verdicts can go either way.

Fast tests check the generation: ids unique and stable across two generations, only
solution regions and signatures of answer cells mutated, never a figure cell, every
mutant compiles and differs from the reference. The slow test grades a handful of
Exercise 3 mutants as ``make mutation`` does (the reference first, a pool of two, the course's
``TrustedVerdicts`` unsandboxed): one known-bad mutant must be killed in the cell it breaks and
one reviewed equivalent must be spared, so a tool that killed everything, or nothing, fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from mutation.mutants import answer_cells, mutants_of_exercise  # noqa: E402
from mutation.run import grade as grade_mutants  # noqa: E402
from mutation.run import read_equivalents, select  # noqa: E402

#: ``_min_peak`` returns one more than the least peak: the assertion in best_block_length fails for every depth.
KNOWN_BAD = "best_block_length._min_peak/number/33ae84a6"
#: The message of an assertion that holds for every depth: nothing observable changes.
KNOWN_EQUIVALENT = "best_block_length/string/587b28f6"


def test_ids_are_unique_and_stable_across_generations():
    first = mutants_of_exercise("ex3")
    second = mutants_of_exercise("ex3")
    assert [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == len(first)
    assert {KNOWN_BAD, KNOWN_EQUIVALENT} <= {m.id for m in first}


def test_only_answer_code_is_mutated_and_every_mutant_compiles():
    from ch11_autograder.exercises import EXERCISES

    figures = {cell for e in EXERCISES for cell in e.worker_skip_cells}
    cells = {cell.grade_id: cell for cell in answer_cells("ex3")}
    assert set(cells) == {"ex3_best_block_length", "ex3_block_table"}
    assert not figures & set(cells)
    for mutant in mutants_of_exercise("ex3"):
        original = cells[mutant.cell].code
        assert mutant.source != original
        compile(mutant.source, mutant.id, "exec")
        assert mutant.line in cells[mutant.cell].mutable_lines, mutant


def test_the_known_equivalent_is_reviewed():
    assert read_equivalents()[KNOWN_EQUIVALENT].exercise == "ex3"


@pytest.mark.slow
def test_a_known_bad_mutant_is_killed_and_a_reviewed_equivalent_spared():
    mutants = select(["ex3"], None, [KNOWN_BAD, KNOWN_EQUIVALENT])
    baseline, outcomes = grade_mutants(mutants, jobs=2, wall_seconds=300, progress=False)
    assert baseline == {"ex3": {}}, "the reference must earn full points"
    status = {o.mutant.id: o for o in outcomes}
    assert status[KNOWN_BAD].status == "killed"
    assert "ex3_best_block_length_tests" in status[KNOWN_BAD].lost
    assert status[KNOWN_EQUIVALENT].status == "equivalent", status[KNOWN_EQUIVALENT].lost
