"""The exercise registry (``ch11_autograder.exercises``) is the single list of exercises.

Checks that every list the course uses derives from it, that importing it or a suite stays
cheap (no nbformat, no notebook builder), that dependencies run one way (``trusted/`` never
imports ``exercises/``), that each contract's grade ids and points are the notebook's, and
the catalogue helpers suites use to turn entries into misconceptions.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from ch11_autograder import exercises
from ch11_autograder.authoring.build import build_notebook
from ch11_autograder.demo import ALL
from ch11_autograder.exercises import EXERCISES, NOTEBOOKS, SUITE_MODULES, WORKER_SKIP_CELLS, exercise
from ch11_autograder.exercises.catalogue import WrongAnswer, catalogue, in_order, misconception, seen_through
from support.paths import PACKAGE_DIR, REPO_ROOT
from traitlets.config.loader import PyFileConfigLoader

KEYS = [e.key for e in EXERCISES]


def _imported_after(statement: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``statement``."""
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    return set(result.stdout.split())


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "nbformat" or m.startswith("nbformat.") or m.endswith(".notebook")}


# --------------------------------------------------------------------------- one source


def test_nbgrader_config_lists_are_the_registrys():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert config.TrustedVerdicts.suite_modules == list(SUITE_MODULES)
    assert config.TrustedVerdicts.worker_skip_cells == list(WORKER_SKIP_CELLS)


def test_every_list_derives_from_the_registry():
    assert KEYS == ["ex1", "ex2", "ex3", "ex4", "ex5"]
    assert SUITE_MODULES == tuple(f"ch11_autograder.exercises.{key}.suite" for key in KEYS)
    assert ALL == NOTEBOOKS == tuple(e.notebook for e in EXERCISES)
    assert list(exercises.notebook_builders()) == list(NOTEBOOKS)
    assert WORKER_SKIP_CELLS == ("ex1_figure", "ex2_figure", "ex3_figure", "ex5_figure")


def test_every_exercise_package_is_registered_and_complete():
    on_disk = sorted(p.parent.name for p in (PACKAGE_DIR / "exercises").glob("*/contract.py"))
    assert on_disk == sorted(KEYS)
    for key in KEYS:
        files = {p.name for p in (PACKAGE_DIR / "exercises" / key).glob("*.py")}
        assert {"contract.py", "notebook.py", "suite.py", "wrong_answers.py", "witnesses.py"} <= files, key


def test_unknown_exercise_is_refused():
    expected = r"unknown exercise 'ex9'; expected one of \('ex1', 'ex2', 'ex3', 'ex4', 'ex5'\)"
    with pytest.raises(ValueError, match=expected):
        exercise("ex9")
    with pytest.raises(ValueError, match="unknown exercise 'ex9'"):
        catalogue("ex9")


@pytest.mark.parametrize("key", KEYS)
def test_contract_grade_ids_and_points_are_the_notebooks(key):
    import importlib

    contract = importlib.import_module(f"ch11_autograder.exercises.{key}.contract")
    nb = build_notebook(exercise(key).cells())
    graded = {
        c.metadata.nbgrader.grade_id: c.metadata.nbgrader.points for c in nb.cells if c.metadata.nbgrader.grade
    }
    assert list(graded.items()) == list(contract.POINTS.items())
    ids = {c.metadata.nbgrader.grade_id for c in nb.cells}
    assert set(exercise(key).worker_skip_cells) <= ids
    assert contract.NOTEBOOK == exercise(key).notebook


# --------------------------------------------------------------------------- cheap imports, one-way imports


def test_importing_the_registry_loads_no_builder_suite_or_nbformat():
    loaded = _imported_after("import ch11_autograder.exercises")
    assert not _heavy(loaded)
    assert not {m for m in loaded if m.endswith((".suite", ".wrong_answers")) and ".exercises." in m}


@pytest.mark.parametrize("module", SUITE_MODULES)
def test_importing_a_suite_loads_no_notebook_builder_or_nbformat(module):
    assert not _heavy(_imported_after(f"import {module}"))


def test_trusted_never_imports_exercises():
    offenders = []
    for path in sorted((PACKAGE_DIR / "trusted").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [f"{path.name}: {n}" for n in names if "exercises" in n.split(".")]
    assert not offenders


# --------------------------------------------------------------------------- catalogue helpers


def _entry(name: str, function=lambda x: x + 1) -> WrongAnswer:
    return WrongAnswer(name, f"Title {name}", f"Advice {name}.", "cell", "f", ("cell_tests",), function)


def test_misconception_is_the_entry_as_it_is():
    entry = _entry("a")
    m = misconception(entry)
    assert (m.name, m.advice, m.implementation) == (entry.title, entry.advice, entry.function)


def test_seen_through_applies_the_downstream_function_and_says_where():
    entry = _entry("a")
    plain = seen_through(entry, lambda f: lambda xs: [f(x) for x in xs])
    assert (plain.name, plain.advice) == (entry.title, entry.advice)
    assert plain.implementation([1, 2]) == [2, 3]
    named = seen_through(entry, lambda f: f, where="in f, which this reads")
    assert named.name == "Title a (in f, which this reads)"


def test_in_order_puts_the_named_entries_first_and_checks_them():
    entries = [_entry(n) for n in ("a", "b", "c")]
    assert [e.name for e in in_order("exN", entries, ["c", "a"])] == ["c", "a", "b"]
    assert [e.name for e in in_order("exN", entries, ["b", "c", "a"], complete=True)] == ["b", "c", "a"]
    with pytest.raises(RuntimeError, match=r"suite and catalogue disagree on exN entries: \['b'\]"):
        in_order("exN", entries, ["c", "a"], complete=True)
    with pytest.raises(RuntimeError, match=r"suite and catalogue disagree on exN entries: \['z'\]"):
        in_order("exN", entries, ["z"])
