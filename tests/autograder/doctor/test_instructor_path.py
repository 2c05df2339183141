"""The instructor's nbgrader is the grading environment's in the PATH the hub gives their server, this shell's and a
login shell's."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from ch11_autograder.doctor.instructor_path import check_instructor_path, login_shell_nbgrader
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV, fake_env, page_hub_config

STEP_6 = '(docs/course.md, "The hub", step "PATH, however a shell starts")'
#: Another account than this process's: only the hub's PATH is checked for it.
OTHER = "daemon"


def lines(good: dict[str, Path], config: Path, instructor: str = OTHER) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config, instructor=instructor)
    return [problem.line() for problem in check_instructor_path(deployment)]


def test_the_hub_gives_the_grader_the_grading_environment_first(good, tmp_path: Path) -> None:
    students = fake_env(tmp_path / "students", "#!/bin/sh\nexit 0\n")
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python, user=OTHER, graders=(OTHER,),
                             students_bin=students / "bin")
    assert lines(good, config) == []
    # The instructor left out of the graders' group: their server's PATH finds the students' nbgrader.
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python, user=OTHER, graders=(),
                             students_bin=students / "bin")
    assert lines(good, config) == [
        f"the hub gives {OTHER}'s server a PATH whose nbgrader is {students}/bin/nbgrader, not the grading "
        f"environment's {GRADER_ENV}/bin/nbgrader: their terminals and kernels cannot load the course ({OTHER} not in "
        f"the graders' group, or c.Spawner.environment's PATH) {STEP_6}"]


def test_without_a_hub_config_nothing_is_checked(good) -> None:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV)
    assert check_instructor_path(deployment) == []


def test_this_shell_s_path_when_run_as_the_instructor(good, tmp_path: Path, monkeypatch) -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python, user=me, graders=(me,))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(f'PATH="{GRADER_ENV}/bin:$PATH"\n')  # the login shell's PATH is right
    monkeypatch.setenv("HOME", str(home))
    found = lines(good, config, instructor=me)
    assert found[0].startswith("this shell's PATH gives nbgrader ") and found[0].endswith(
        f"not the grading environment's {GRADER_ENV}/bin/nbgrader {STEP_6}"), found
    assert len(found) == 1, found


def test_a_login_shell_reads_its_profile(tmp_path: Path) -> None:
    if not Path("/bin/bash").is_file():
        pytest.skip("no bash")
    grading = fake_env(tmp_path / "grading", "#!/bin/sh\nexit 0\n")
    (tmp_path / ".bash_profile").write_text(f'echo "a profile\'s own line"\nPATH="{grading}/bin:$PATH"\n')
    assert login_shell_nbgrader(str(tmp_path), "nobody") == f"{grading}/bin/nbgrader"
    (tmp_path / ".bash_profile").write_text("PATH=/nonexistent\n")
    assert login_shell_nbgrader(str(tmp_path), "nobody") == ""
