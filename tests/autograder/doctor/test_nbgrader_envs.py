"""Each environment's nbgrader: the instructor's must load the course, the students' must not import the package."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.doctor.nbgrader_envs import check_nbgrader_envs
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV, fake_env

#: They run the instructor's interpreter importing nbgrader and the course's config.
pytestmark = pytest.mark.slow


def lines(good: dict[str, Path], **where: Path) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, **where)
    return [problem.line() for problem in check_nbgrader_envs(deployment)]


def test_the_instructor_s_environment_loads_the_course(good) -> None:
    assert lines(good, grader_env=GRADER_ENV) == []


def test_an_nbgrader_whose_python_cannot_import_the_package(good, tmp_path: Path) -> None:
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("no /usr/bin/python3")
    # Debian's Python, without nbgrader or the grading package: what a terminal without the grader's PATH runs.
    plain = fake_env(tmp_path / "plain", "#!/usr/bin/python3\nraise SystemExit('not reached')\n")
    [line] = lines(good, grader_env=plain)
    assert line.startswith(f"the instructor's nbgrader {plain}/bin/nbgrader cannot load the course's "
                           "nbgrader_config.py: ModuleNotFoundError: No module named"), line
    assert line.endswith('(docs/course.md, "Fail closed: the course config without the package")')


def test_no_nbgrader(good, tmp_path: Path) -> None:
    [line] = lines(good, grader_env=tmp_path / "nothing")
    assert line.startswith(f"no nbgrader at {tmp_path}/nothing/bin/nbgrader: the instructor's environment is the one "
                           "with the grading package") and "The instructor on the hub" in line


def test_the_students_environment_must_not_import_the_package(good) -> None:
    [line] = lines(good, grader_env=GRADER_ENV, students_env=GRADER_ENV)
    assert f"the students' environment {GRADER_ENV} can import the grading package ch11_autograder" in line
    assert line.endswith('(docs/course.md, "Who runs what, where")')


def test_a_students_nbgrader_that_does_not_run(good, tmp_path: Path) -> None:
    broken = fake_env(tmp_path / "students", "#!/bin/sh\nexit 2\n")
    [line] = lines(good, grader_env=GRADER_ENV, students_env=broken)
    assert line.startswith(f"the students' nbgrader {broken}/bin/nbgrader does not run (exit status 2)")
