"""``ch11-grade catalogue draft`` on hostile answers: the draft is the code grading ran, and nothing of it
runs when the catalogue imports it.

Each answer is Exercise 1's reference notebook with one student's change, written where nbgrader keeps
it (``autograded/<student>/ch11/``); the mistake group is written by hand in the mistakes JSON's shape
(the grouping itself is tested in test_mistakes_report.py on a graded class). The draft is imported the
way the catalogue would hold it: executed in a copy of ``exercises/ex1/wrong_answers.py``'s namespace,
in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import nbformat
import pytest
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.cli import main as cli_main
from ch11_autograder.course_layout import AUTOGRADED, student_folder
from ch11_autograder.report.catalogue_draft import DraftError, draft_entry
from support.paths import ASSIGNMENT, RELEASE_DIR, SOURCE_DIR

STEM = "ex1_fanout"
TAPE, PARTS, FIGURE = "ex1_extended_tape", "ex1_contributions_into_a", "ex1_figure"
TAPE_TESTS, PARTS_TESTS = "ex1_extended_tape_tests", "ex1_contributions_into_a_tests"


def write_answer(course: Path, student: str, extra: dict[str, str], added: str = "") -> None:
    """The reference notebook with ``extra[cell]`` appended to each named answer cell, and ``added`` as a
    code cell of the student's own (no nbgrader metadata) after the last answer cell, as graded."""
    answers = answer_sources(read(SOURCE_DIR / f"{STEM}.ipynb"))
    answers = {cell: source + ("\n\n\n" + extra[cell] if cell in extra else "") for cell, source in answers.items()}
    nb = fill(read(RELEASE_DIR / f"{STEM}.ipynb"), answers)
    if added:
        nb.cells.append(nbformat.v4.new_code_cell(added))
    folder = student_folder(course, AUTOGRADED, student, ASSIGNMENT)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{STEM}.ipynb")


def group(student: str, failing: list[tuple[str, str]]) -> dict[str, object]:
    """A group of the mistakes JSON whose representative fails ``failing[0]`` (``(cell, property)``)."""
    cell, prop = failing[0]
    return {
        "index": 0, "id": "0123456789ab", "students": [student], "count": 1, "notebooks": [STEM],
        "cells": sorted({c for c, _p in failing}),
        "properties": [{"cell": c, "property": p, "outcome": "failed", "input": "x=2.0, y=3.0", "obtained": "1.0"}
                       for c, p in failing],
        "representative": {"student": student, "cell": cell, "property": prop, "input": "x=2.0, y=3.0",
                           "expected": "18.0", "obtained": "1.0"},
        "catalogue": None, "named": "",
    }


TAPE_VALUES = [(TAPE_TESTS, "extended_tape_values")]


def imported(draft: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``draft`` as the catalogue would hold it, in a fresh interpreter; it prints the entry's
    function name when the import succeeded."""
    script = tmp_path / "import_draft.py"
    script.write_text(
        "import sys\n"
        "import ch11_autograder.exercises.ex1.wrong_answers as module\n"
        "namespace = dict(vars(module))\n"
        "exec(compile(open(sys.argv[1]).read(), 'draft.py', 'exec'), namespace)\n"
        "from ch11_autograder.exercises.catalogue import catalogue\n"
        "print(catalogue('ex1')[-1].replaces)\n")
    path = tmp_path / "draft.py"
    path.write_text(draft, encoding="utf-8")
    return subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


def the_function(draft: str) -> ast.FunctionDef:
    (node,) = [n for n in ast.parse(draft).body if isinstance(n, ast.FunctionDef)]
    return node


def test_a_default_that_runs_code_at_import_is_removed_and_named(tmp_path):
    marker = tmp_path / "default-ran"
    # The hook sits past column 300 of a long signature line, as a student hid it.
    literal_params = ", ".join(f"option_{i}={i}" for i in range(30))
    hostile = (f"_tape_as_graded = extended_tape\n\n\n"
               f"@staticmethod.__func__ if False else (lambda f: f)\n"
               f"def extended_tape(x: float, y: float, {literal_params}, "
               f"_hook=open({str(marker)!r}, 'w').close(), *, _ann: print('annotation ran') = None) -> list:\n"
               f"    note = 'looks \u202e harmless'\n"
               f"    return _tape_as_graded(x, y)\n")
    course = tmp_path / "course"
    write_answer(course, "mallory", {TAPE: hostile})
    draft = draft_entry(course, ASSIGNMENT, group("mallory", TAPE_VALUES))
    assert max(len(line) for line in draft.splitlines()) <= 100
    assert all(char == "\n" or unicodedata.category(char)[0] != "C" for char in draft)
    node = the_function(draft)
    assert [a.arg for a in node.args.args][:3] == ["x", "y", "option_0"]
    assert all(a.annotation is None for a in (*node.args.args, *node.args.kwonlyargs)) and node.returns is None
    defaults = [*node.args.defaults, *node.args.kw_defaults]
    assert all(d is None or isinstance(ast.literal_eval(d), int | type(None)) for d in defaults)
    header = "\n".join(line for line in draft.splitlines() if line.startswith("#"))
    assert "_hook" in header and "_ann" in header and "decorator" in header
    run = imported(draft, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "extended_tape"
    assert not marker.exists() and "annotation ran" not in run.stdout


def test_an_identifier_outside_ascii_is_renamed_visibly_and_flagged(tmp_path):
    cyrillic = "v\u0430lue"  # CYRILLIC SMALL LETTER A
    hostile = f"def extended_tape(x, y):\n    {cyrillic} = float(x) * 0\n    return [{cyrillic}]\n"
    course = tmp_path / "course"
    write_answer(course, "mallory", {TAPE: hostile})
    draft = draft_entry(course, ASSIGNMENT, group("mallory", TAPE_VALUES))
    assert draft.isascii()
    assert "U+0430" in draft and "CYRILLIC SMALL LETTER A" in draft
    body = ast.unparse(the_function(draft))
    assert "v_u0430_lue = float(x) * 0" in body and "return [v_u0430_lue]" in body
    assert imported(draft, tmp_path).returncode == 0


def test_the_draft_is_the_definition_grading_ran_not_a_later_one_in_the_figure_cell(tmp_path):
    # The figure cell is not run by the verdict worker (worker_skip_cells): its redefinition was never
    # graded. A cell the student added after the answers is run, and its definition is the graded one.
    course = tmp_path / "course"
    write_answer(course, "fig", {TAPE: "def extended_tape(x, y):\n    return 'GRADED'\n",
                                 FIGURE: "def extended_tape(x, y):\n    return 'FIGURE_ONLY'\n"})
    draft = draft_entry(course, ASSIGNMENT, group("fig", TAPE_VALUES))
    assert "'GRADED'" in draft and "FIGURE_ONLY" not in draft
    assert f"answer_cell={TAPE!r}" in draft
    write_answer(course, "added", {TAPE: "def extended_tape(x, y):\n    return 'IN_ANSWER_CELL'\n"},
                 added="def extended_tape(x, y):\n    return 'ADDED_CELL'\n")
    draft = draft_entry(course, ASSIGNMENT, group("added", TAPE_VALUES))
    assert "'ADDED_CELL'" in draft and "IN_ANSWER_CELL" not in draft
    assert f"answer_cell={TAPE!r}" in draft


def test_a_graded_name_bound_by_an_assignment_is_refused(tmp_path):
    course = tmp_path / "course"
    write_answer(course, "alias", {TAPE: "extended_tape = lambda x, y: []\n"})
    with pytest.raises(DraftError, match="not by a def"):
        draft_entry(course, ASSIGNMENT, group("alias", TAPE_VALUES))


def test_a_group_failing_its_visible_checks_first_is_drafted(tmp_path):
    course = tmp_path / "course"
    write_answer(course, "vis", {TAPE: "def extended_tape(x, y):\n    return 'VISIBLE'\n"})
    draft = draft_entry(course, ASSIGNMENT, group("vis", [(TAPE_TESTS, "visible_checks")]))
    assert "'VISIBLE'" in draft and "replaces='extended_tape'" in draft


def test_a_fault_in_a_callee_drafts_the_callee(tmp_path):
    # contributions_into_a calls extended_tape; the broken extended_tape fails its own cell too, and the
    # group's first failing property (cells sort by name) is contributions_into_a's.
    course = tmp_path / "course"
    write_answer(course, "callee", {TAPE: "def extended_tape(x, y):\n    return 'BROKEN_TAPE'\n"})
    failing = [(PARTS_TESTS, "contributions_into_a_values"), (TAPE_TESTS, "extended_tape_values")]
    draft = draft_entry(course, ASSIGNMENT, group("callee", failing))
    assert "replaces='extended_tape'" in draft and "'BROKEN_TAPE'" in draft
    assert "contributions_into_a" in "\n".join(line for line in draft.splitlines() if line.startswith("#"))
    # The caller failing alone is the caller's fault.
    draft = draft_entry(course, ASSIGNMENT, group("callee", failing[:1]))
    assert "replaces='contributions_into_a'" in draft


def test_the_command_writes_a_visible_check_group_s_draft(tmp_path, capsys):
    course = tmp_path / "course"
    write_answer(course, "vis", {TAPE: "def extended_tape(x, y):\n    return 'VISIBLE'\n"})
    path = course / "reports" / f"{ASSIGNMENT}-mistakes.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([group("vis", [(TAPE_TESTS, "visible_checks")])]))
    assert cli_main(["catalogue", "draft", "--course", str(course), "--group", "0"]) == 0
    assert "'VISIBLE'" in capsys.readouterr().out
