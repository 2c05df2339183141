"""What the exchange tier's students and instructor do with files: user configs and Exercise 4 answers.

Shared by ``tests/exchange/test_course_loop.py`` (the course loop) and
``tests/exchange/test_serve_loop.py`` (grade on submit).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nbformat
from ch11_autograder.authoring.submissions import answer_sources, fill
from ch11_autograder.course_layout import CONFIG
from ch11_autograder.exercises.catalogue import catalogue

from support import course_users
from support.course_users import User
from support.paths import SOURCE_DIR
from support.toy_course import BIN

ASSIGNMENT = "ch11"
NOTEBOOK = "ex4_audit"


def write_user_config(user: User, exchange: Path, course_id: str, extra: str = "") -> None:
    """What a hub puts in each user's nbgrader config: the exchange and the course id (plus ``extra`` lines)."""
    folder = user.home / ".jupyter"
    folder.mkdir(exist_ok=True)
    (folder / CONFIG).write_text(
        f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n"
        f"c.CourseDirectory.course_id = {course_id!r}\n{extra}")
    course_users.chown_tree(folder, user)


def exercise4_answered(released: str, marker: str, *, wrong: str | None = None, extra_code: str = "") -> str:
    """The released Exercise 4 notebook's text ``released``, filled as :func:`answer_exercise4` fills it."""
    answers = answer_sources(nbformat.read(SOURCE_DIR / f"{NOTEBOOK}.ipynb", as_version=4))
    answers["ex4_mathematical_object"] = f"My reading of the paper. {marker}"
    mistakes = [e for e in catalogue("ex4") if e.name == wrong] if wrong else []
    answers["ex4_audit_marks"] += extra_code
    nb = fill(nbformat.reads(released, as_version=4), answers, wrong=mistakes)
    return nbformat.writes(nb) + "\n"


def answer_exercise4(user: User, marker: str, *, wrong: str | None = None, extra_code: str = "") -> None:
    """Fill the fetched Exercise 4 as the student would (``wrong``: a catalogued mistake's name; ``extra_code``
    appended to the audit answer; ``marker`` in the written answer), and drop the notebooks not done."""
    folder = user.home / ASSIGNMENT
    released = (folder / f"{NOTEBOOK}.ipynb").read_text()
    (folder / f"{NOTEBOOK}.ipynb").write_text(exercise4_answered(released, marker, wrong=wrong, extra_code=extra_code))
    for other in folder.glob("*.ipynb"):
        if other.stem != NOTEBOOK:
            other.unlink()
    course_users.chown_tree(folder, user)


def collect_here(course: Path, exchange: Path, course_id: str) -> subprocess.CompletedProcess[str]:
    """``nbgrader collect`` of the assignment with the course's config, as this process's user, from the project's
    environment (the grader's side without a unix user of its own)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CH11_SANDBOX": "none"}
    return subprocess.run([str(BIN / "nbgrader"), "collect", ASSIGNMENT, f"--course={course_id}",
                           f"--Exchange.root={exchange}"], cwd=course, env=env, capture_output=True, text=True,
                          timeout=600)
