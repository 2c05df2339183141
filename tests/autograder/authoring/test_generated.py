"""Everything derived is regenerated and compared: source notebooks, the release, the demo class, README points.

And the release leaks nothing: no solution, hidden test, rubric, reference
import or answer key reaches a student.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import nbformat
import pytest
from ch11_autograder.authoring import build, points, release
from ch11_autograder.authoring.submissions import strip_solution_markers
from ch11_autograder.exercises.cells import HIDDEN_MARKER
from ch11_autograder.nbgrader_cli import run_nbgrader
from ch11_solutions import ex4_audit
from support.paths import ASSIGNMENT, DEMO_CLASS_DIR, README, RELEASE_DIR, REPO_ROOT, SOURCE_DIR

RELEASED = sorted(RELEASE_DIR.glob("*.ipynb"))
SOURCES = sorted(SOURCE_DIR.glob("*.ipynb"))


def _run_module(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO_ROOT)


def test_source_notebooks_match_their_generator():
    done = _run_module("ch11_autograder.authoring.build", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_mode_catches_a_stale_source_notebook(tmp_path):
    for name, text in build.rendered_notebooks().items():
        (tmp_path / name).write_text(text)
    assert build.main(["--check", "--out", str(tmp_path)]) == 0
    victim = tmp_path / "ex3_block_length.ipynb"
    victim.write_text(victim.read_text().replace("smallest", "largest", 1))
    assert build.main(["--check", "--out", str(tmp_path)]) == 1


@pytest.mark.slow
def test_release_is_exactly_what_nbgrader_generates():
    done = _run_module("ch11_autograder.authoring.release", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_release_check_catches_a_hand_edit(tmp_path):
    generated = release.generate(tmp_path)
    assert release.differences(generated, RELEASE_DIR) == []
    edited = tmp_path / "edited"
    edited.mkdir()
    for nb in RELEASED:
        (edited / nb.name).write_text(nb.read_text())
    (edited / "ex1_fanout.ipynb").write_text(RELEASED[0].read_text() + " ")
    (edited / "notes.txt").write_text("stray file")
    problems = release.differences(generated, edited)
    assert "differs: ex1_fanout.ipynb" in problems
    assert "not produced by nbgrader: notes.txt" in problems


def test_demo_class_matches_its_generator():
    done = _run_module("ch11_autograder.demo", "build", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_readme_points_table_matches_the_notebooks():
    assert points.main(["--check"]) == 0
    table = points.render(points.graded_cells())
    assert table in README.read_text()


def test_points_add_up():
    cells = points.graded_cells()
    per_notebook = {}
    for cell in cells:
        per_notebook[cell.notebook] = per_notebook.get(cell.notebook, 0) + cell.points
    assert len(per_notebook) == 5
    assert sum(per_notebook.values()) == sum(c.points for c in cells)
    assert all(c.points > 0 for c in cells)


# ---- the release leaks nothing ---------------------------------------------------------------

FORBIDDEN = [
    "### BEGIN SOLUTION",
    "### END SOLUTION",
    "BEGIN HIDDEN TESTS",
    HIDDEN_MARKER.splitlines()[1],
    "Rubric for graders",
    "ch11_solutions",
    "ch11_autograder",
]


def _solution_regions(source: str) -> list[str]:
    return re.findall(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", source, re.DOTALL)


def _leaks(released_text: str, source_nb: nbformat.NotebookNode) -> list[str]:
    found = [marker for marker in FORBIDDEN if marker in released_text]
    # Code the notebook provides outside solution regions may share lines with a solution
    # (the same input check, say); only lines found nowhere else are secrets.
    provided = "\n".join(
        re.sub(r"### BEGIN SOLUTION\n.*?\n\s*### END SOLUTION", "", cell.source, flags=re.DOTALL)
        for cell in source_nb.cells
    )
    for cell in source_nb.cells:
        for region in _solution_regions(cell.source):
            # Distinctive lines only: a bare `return x` says nothing.
            for line in region.splitlines():
                secret = line.strip()
                if len(secret) >= 40 and secret not in provided and secret in released_text:
                    found.append(f"solution line: {secret[:60]}")
    for key in ex4_audit.ANSWER_KEYS.values():
        for field_key in key.fields.values():
            if field_key.rationale in released_text:
                found.append(f"answer-key rationale: {field_key.rationale[:60]}")
    return found


@pytest.mark.parametrize("released", RELEASED, ids=lambda p: p.stem)
def test_release_contains_no_solution_hidden_test_rubric_or_key(released):
    source = nbformat.read(SOURCE_DIR / released.name, as_version=4)
    text = "\n".join(cell.source for cell in nbformat.read(released, as_version=4).cells)
    assert _leaks(text, source) == []


def test_leak_check_catches_a_leaked_solution_and_a_leaked_key():
    source = nbformat.read(SOURCES[0], as_version=4)
    leaked = "\n".join(strip_solution_markers(cell.source) for cell in source.cells)
    assert _leaks(leaked, source), "a notebook carrying its solutions must be caught"
    rationale = next(iter(ex4_audit.ANSWER_KEYS["chen2016"].fields.values())).rationale
    assert _leaks(f"# note\n{rationale}\n", source)


STUDENT_MODULES = {"numpy", "matplotlib", "trainable_harness"}


@pytest.mark.parametrize("released", RELEASED, ids=lambda p: p.stem)
def test_released_notebooks_need_only_the_harness_numpy_and_matplotlib(released):
    imported = set()
    for cell in nbformat.read(released, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {name for name in imported if name not in sys.stdlib_module_names}
    assert third_party <= STUDENT_MODULES, f"{released.name} imports {sorted(third_party - STUDENT_MODULES)}"


# ---- what a student sees: nbgrader validate ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("student", "passes"), [("ada", True), ("blank", False)])
def test_nbgrader_validate_reports_clearly(student, passes):
    notebook = DEMO_CLASS_DIR / student / ASSIGNMENT / "ex3_block_length.ipynb"
    done = run_nbgrader(REPO_ROOT, "validate", str(notebook), capture_output=True, text=True, timeout=300)
    report = done.stdout + done.stderr
    if passes:
        assert "Success! Your notebook passes all the tests." in report, report
    else:
        assert "VALIDATION FAILED" in report and "NotImplementedError" in report, report
