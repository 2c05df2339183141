"""The course's ``nbgrader_config.py`` fails closed where the grading package cannot be imported.

A venv holding plain nbgrader (the students' environment, built here from the lock) runs the
commands an instructor would type with the course config: each stops with one line naming the
cause and the fix, exits non-zero and writes nothing (no ``release/``, no ``autograded/``, the
gradebook byte for byte as it was). Formgrader's Jupyter server refuses to start on the course.
A package that is importable but raises on import (a broken install) stops the same way.
Without the guard (the config as it was: the imports bare) nbgrader logged the exception and
went on with its defaults.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from support import course_users, jupyter_env
from support.paths import ASSIGNMENT, COURSE_CONFIG, SOURCE_DIR
from support.toy_course import nbgrader

pytestmark = pytest.mark.slow

REFUSAL = "nbgrader_config.py: this course grades only with the ch11_autograder package"


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(course_users.SYSTEM_PYTHON).is_file():
        pytest.skip(f"no {course_users.SYSTEM_PYTHON} to build the plain nbgrader venv from")
    return course_users.build_venv(tmp_path_factory.mktemp("plain") / "venv", ["nbgrader"])


def _course(where: Path) -> Path:
    (where / "source").mkdir(parents=True)
    shutil.copy2(COURSE_CONFIG, where / "nbgrader_config.py")
    shutil.copytree(SOURCE_DIR, where / "source" / ASSIGNMENT)
    return where


def _plain(venv: Path, course: Path, *args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``nbgrader *args`` of the plain venv in ``course``, as an instructor would type it (its bin first on PATH)."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env.update({"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", **(extra or {})})
    return subprocess.run([str(venv / "bin" / "nbgrader"), *args], cwd=course, env=env, capture_output=True,
                          text=True, timeout=300)


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _refused(done: subprocess.CompletedProcess, cause: str) -> None:
    assert done.returncode != 0, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(REFUSAL), done.stderr[-3000:]
    assert cause in lines[0] and "instructor's environment" in lines[0], lines[0]


def test_plain_nbgrader_generates_nothing(plain_venv: Path, tmp_path: Path) -> None:
    course = _course(tmp_path / "course")
    before = _tree(course)
    _refused(_plain(plain_venv, course, "generate_assignment", ASSIGNMENT), "No module named 'ch11_autograder'")
    assert _tree(course) == before  # no release/, no assignments/, no gradebook


def test_plain_nbgrader_grades_nothing(plain_venv: Path, tmp_path: Path) -> None:
    course = _course(tmp_path / "course")
    nbgrader(course, "generate_assignment", ASSIGNMENT)  # the instructor's own environment: it works
    submitted = course / "submitted" / "ada" / ASSIGNMENT
    shutil.copytree(course / "assignments" / ASSIGNMENT, submitted)
    before = _tree(course)
    for args in (["autograde", ASSIGNMENT], ["generate_assignment", ASSIGNMENT, "--force"],
                 ["generate_feedback", ASSIGNMENT]):
        _refused(_plain(plain_venv, course, *args), "No module named 'ch11_autograder'")
    assert _tree(course) == before  # gradebook.db unchanged, no autograded/, no feedback/, no release/


def test_a_broken_install_stops_the_same_way(plain_venv: Path, tmp_path: Path) -> None:
    course = _course(tmp_path / "course")
    broken = tmp_path / "lib" / "ch11_autograder"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise RuntimeError('half-installed\\npackage')\n")
    before = _tree(course)
    _refused(_plain(plain_venv, course, "generate_assignment", ASSIGNMENT, extra={"PYTHONPATH": str(broken.parent)}),
             "RuntimeError: half-installed package")
    assert _tree(course) == before


def test_formgrader_s_server_refuses_to_start_on_the_course(plain_venv: Path, tmp_path: Path) -> None:
    course = _course(tmp_path / "course")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # nbgrader's server extensions are enabled by its venv's etc/jupyter: the server reads the config path.
    env = {**jupyter_env.planted(os.environ, tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        done = subprocess.run([str(plain_venv / "bin" / "python"), "-m", "jupyter_server", "--no-browser",
                               "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0", "--allow-root",
                               f"--ServerApp.root_dir={course}"], cwd=course, env=env, stdout=out,
                              stderr=subprocess.STDOUT, timeout=300)
    text = log.read_text(errors="replace")
    assert done.returncode != 0, text[-3000:]
    assert "Loading the formgrader nbgrader serverextension" in text, text[-3000:]  # it got as far as formgrader
    assert REFUSAL in text and "is running at" not in text, text[-3000:]
    assert not (course / "gradebook.db").exists()
