"""Another course's exercises (``tests/other_course/``) through the registry mechanism, and the facade alone.

The other course's exercise is added with no file of the engine changed: its folder reaches the
package only through the modules docs/authoring.md names (the suite-author facade
``ch11_autograder.api`` and the exercise kit: the registry, ``cells``, ``catalogue``,
``witness``), checked here from the sources. ``registry()`` makes its exercises known beside the
chapter's; ``course_exercises()`` gives ``nbgrader_config.py`` the set ``$CH11_EXERCISES`` names, and
fails closed on a name that cannot be used. The generic tests (``test_suites.py``,
``test_witnesses.py``) grade the exercise; ``tests/autograder/batch/test_other_course.py`` grades a
class of it with ``ch11-grade batch``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import other_course
import pytest
from ch11_autograder import exercises
from ch11_autograder.exercises import (
    EXERCISES,
    EXERCISES_ENV,
    Exercise,
    RegistryError,
    course_exercises,
    exercise,
    registry,
)
from ch11_autograder.exercises.catalogue import catalogue
from support.paths import REPO_ROOT, TESTS_DIR
from traitlets.config.loader import PyFileConfigLoader

FOLDER = TESTS_DIR / "other_course"

#: What an exercise may import of the package (docs/authoring.md, "The folder"), outside the package too.
FACADE = frozenset({
    "ch11_autograder.api.contract",
    "ch11_autograder.api.suite",
    "ch11_autograder.exercises",
    "ch11_autograder.exercises.catalogue",
    "ch11_autograder.exercises.cells",
    "ch11_autograder.exercises.witness",
})


def engine_imports(source: str) -> set[str]:
    """The modules of ``ch11_autograder`` that ``source`` imports, by absolute name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {n for n in names if n == "ch11_autograder" or n.startswith("ch11_autograder.")}
    return found


def test_the_other_course_imports_only_the_facade():
    modules = sorted(FOLDER.rglob("*.py"))
    assert {p.relative_to(FOLDER).as_posix() for p in modules} >= {
        "__init__.py", "solutions.py", *(f"logsumexp/{n}.py" for n in (
            "__init__", "contract", "notebook", "suite", "wrong_answers", "witnesses"))}
    beyond = {f"{p.relative_to(FOLDER)}: {m}" for p in modules for m in engine_imports(p.read_text()) - FACADE}
    assert beyond == set()
    assert all(p.resolve().is_relative_to(TESTS_DIR.resolve()) for p in modules)


def test_the_import_check_sees_an_engine_import():
    planted = "from ch11_autograder.trusted.suite import CellSuite\nimport ch11_autograder.protocol as p\n"
    assert engine_imports(planted) - FACADE == {"ch11_autograder.trusted.suite", "ch11_autograder.protocol"}
    assert engine_imports("from ..api.suite import register\nfrom .contract import X\n") == set()


def test_the_other_courses_exercise_is_found_beside_the_chapters():
    (found,) = other_course.EXERCISES
    assert exercise("logsumexp") is found
    assert (found.package, found.suite_module, found.reference_module) == (
        "other_course.logsumexp", "other_course.logsumexp.suite", "other_course.solutions")
    assert [e.name for e in catalogue("logsumexp")] == ["exp_overflows", "shift_not_added_back", "shifts_x_in_place"]
    assert exercise("ex1").reference_module == "ch11_solutions.ex1_fanout"


def test_registering_is_idempotent_and_a_taken_key_is_refused():
    assert registry(other_course.EXERCISES) == other_course.EXERCISES
    with pytest.raises(RegistryError, match=r"exercise key 'ex1' of elsewhere is taken by ch11_autograder\.exercises"):
        registry((Exercise("ex1", "ex1_other", home="elsewhere"),))
    with pytest.raises(RegistryError, match="exercise key 'logsumexp' of elsewhere is taken by other_course"):
        registry((Exercise("logsumexp", "logsumexp", home="elsewhere"),))
    with pytest.raises(RegistryError, match="at least one exercise"):
        registry(())


def test_the_course_grades_the_chapter_unless_the_variable_names_another_registry(monkeypatch):
    monkeypatch.delenv(EXERCISES_ENV, raising=False)
    assert course_exercises() is EXERCISES
    monkeypatch.setenv(EXERCISES_ENV, " ")
    assert course_exercises() is EXERCISES
    monkeypatch.setenv(EXERCISES_ENV, "other_course")
    assert course_exercises() == other_course.EXERCISES


@pytest.mark.parametrize(("name", "says"), [
    ("no_such_registry", "names 'no_such_registry', which cannot be imported (ModuleNotFoundError"),
    ("json", "names 'json', whose EXERCISES is not a non-empty tuple of Exercise records"),
    ("ch11_autograder.exercises.catalogue", "names 'ch11_autograder.exercises.catalogue', whose EXERCISES is not"),
])
def test_a_registry_that_cannot_be_used_is_refused(monkeypatch, name, says):
    monkeypatch.setenv(EXERCISES_ENV, name)
    with pytest.raises(RegistryError, match=re.escape(f"${EXERCISES_ENV} {says}")):
        course_exercises()


def test_a_list_not_made_by_registry_is_refused(monkeypatch):
    module = type(sys)("_unregistered_exercises")
    module.EXERCISES = (Exercise("unregistered", "unregistered", home="_unregistered_exercises"),)
    monkeypatch.setitem(sys.modules, "_unregistered_exercises", module)
    monkeypatch.setenv(EXERCISES_ENV, "_unregistered_exercises")
    with pytest.raises(RegistryError, match="were not made by registry"):
        course_exercises()


def test_a_registry_whose_reference_the_sandbox_cannot_hide_is_refused(monkeypatch):
    # The sandbox hides the named package's top level and ch11_solutions: a reference elsewhere stays readable.
    monkeypatch.setattr(exercises, "_OTHERS", dict(exercises._OTHERS))
    module = type(sys)("_exposed_exercises")
    module.EXERCISES = registry((Exercise("exposed", "exposed", home="_exposed_exercises",
                                          reference="elsewhere.solutions"),))
    monkeypatch.setitem(sys.modules, "_exposed_exercises", module)
    monkeypatch.setenv(EXERCISES_ENV, "_exposed_exercises")
    with pytest.raises(RegistryError, match=r"exercise 'exposed' has its reference 'elsewhere\.solutions' outside "
                                            r"'_exposed_exercises', where the sandbox cannot hide it"):
        course_exercises()
    module.EXERCISES = registry((Exercise("inside", "inside", home="_exposed_exercises",
                                          reference="_exposed_exercises.solutions"),))
    assert course_exercises() == module.EXERCISES


def _config_lists(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = ("from traitlets.config.loader import PyFileConfigLoader\n"
            f"c = PyFileConfigLoader('nbgrader_config.py', path={str(REPO_ROOT)!r}).load_config()\n"
            "print(c.TrustedVerdicts.suite_modules, c.TrustedVerdicts.worker_skip_cells)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=120)


def test_the_course_config_takes_its_suites_from_the_registry_the_variable_names():
    import os

    env = {**os.environ, EXERCISES_ENV: "other_course", "PYTHONPATH": str(TESTS_DIR)}
    done = _config_lists(env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['other_course.logsumexp.suite'] []"
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert config.TrustedVerdicts.suite_modules == list(exercises.SUITE_MODULES)


def test_the_course_config_stops_on_a_registry_that_does_not_import():
    import os

    done = _config_lists({**os.environ, EXERCISES_ENV: "no_such_registry"})
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("nbgrader_config.py: $CH11_EXERCISES names 'no_such_registry', which cannot be "
                                "imported"), done.stderr
    assert "nothing was done" in lines[-1]


def test_the_other_course_folder_is_no_part_of_the_package():
    import ch11_autograder

    package = Path(ch11_autograder.__file__).resolve().parent
    assert not FOLDER.resolve().is_relative_to(package)
