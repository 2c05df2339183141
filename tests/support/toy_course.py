"""A temporary nbgrader course on the toy assignment (``tests/autograder/fixtures/toy/``).

Real nbgrader commands (``CH11_SANDBOX=none`` unless ``env`` says otherwise) on a course
whose config is given as text, submissions built from the released notebook, and the
gradebook's scores read back. Shared by the tests that grade the toy end to end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from ch11_autograder.course_layout import CONFIG, GRADEBOOK, RELEASE, SUBMITTED, assignment_source, student_folder
from nbformat.v4 import new_code_cell
from nbgrader.api import Gradebook

from support.paths import REPO_ROOT

__all__ = ["TOY", "make_course", "nbgrader", "scores", "submit"]

TOY = REPO_ROOT / "tests" / "autograder" / "fixtures" / "toy"
BIN = Path(sys.executable).parent


def nbgrader(course: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``nbgrader *args`` in ``course``; fails the test when it fails. ``env`` adds to the environment."""
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CH11_SANDBOX": "none",
            **(env or {})}
    proc = subprocess.run(
        [str(BIN / "nbgrader"), *args], cwd=course, env=full, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def make_course(root: Path, config: str) -> Path:
    """A course in ``root`` with the toy source, ``config`` as its nbgrader_config.py, and the release."""
    assignment_source(root, "toy").mkdir(parents=True)
    shutil.copy(TOY / "toy.ipynb", assignment_source(root, "toy") / "toy.ipynb")
    (root / CONFIG).write_text(config, encoding="utf-8")
    nbgrader(root, "generate_assignment", "toy")
    return root


def submit(course: Path, student: str, code: str | None, extra: list[str], *, delete_test: bool = False) -> None:
    """``submitted/<student>/toy/toy.ipynb``: the release with ``code`` in the solution cell (``None``:
    the stub), ``extra`` code cells after it, and the test cell left out with ``delete_test``."""
    nb = nbformat.read(course / RELEASE / "toy" / "toy.ipynb", as_version=4)
    cells = []
    for cell in nb.cells:
        nbgrader_meta = cell.metadata.get("nbgrader", {})
        if delete_test and nbgrader_meta.get("grade") and not nbgrader_meta.get("solution"):
            continue
        if nbgrader_meta.get("solution") and code is not None:
            cell.source = code
        cells.append(cell)
        if nbgrader_meta.get("solution"):
            cells.extend(new_code_cell(source) for source in extra)
    nb.cells = cells
    target = student_folder(course, SUBMITTED, student, "toy")
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target / "toy.ipynb")


def scores(course: Path) -> dict[str, float]:
    """student -> score of the toy's graded cell, from the course's gradebook."""
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        return {
            grade.student.id: grade.score
            for submission in gb.find_assignment("toy").submissions
            for notebook in submission.notebooks
            for grade in notebook.grades
        }
