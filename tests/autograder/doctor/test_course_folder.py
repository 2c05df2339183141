"""The course folder check: missing, another user's, without its config or source/."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest
from ch11_autograder.doctor.course_folder import check_course_folder
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV

WEEK_1 = '(docs/course.md, "Week 1: the course directory and the hand-out (instructor)")'


def lines(good: dict[str, Path], instructor: str | None = None) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         instructor=instructor)
    return [problem.line() for problem in check_course_folder(deployment)]


def test_the_page_s_course_folder(good) -> None:
    assert lines(good) == []


def test_a_missing_course_folder(good) -> None:
    shutil.rmtree(good["course"])
    assert lines(good) == [f"the course folder {good['course']} does not exist (or is not a folder) {WEEK_1}"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_course_folder_of_another_user(good) -> None:
    daemon = pwd.getpwnam("daemon").pw_uid
    os.chown(good["course"], daemon, -1)
    [line] = lines(good)
    assert line.startswith(f"the course folder {good['course']} is owned by daemon, not by the instructor (uid 0)")
    assert lines(good, instructor="daemon") == []  # the configured instructor owns it


def test_a_course_folder_without_config_or_source(good) -> None:
    (good["course"] / "nbgrader_config.py").unlink()
    shutil.rmtree(good["course"] / "source")
    assert lines(good) == [f"the course folder {good['course']} has no nbgrader_config.py {WEEK_1}",
                           f"the course folder {good['course']} has no source {WEEK_1}"]
