"""The exchange check: the shared rule of collect and serve, and a root or course id that is not there."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from ch11_autograder.doctor.exchange import check_exchange
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV


def lines(good: dict[str, Path], course_id: str = COURSE_ID) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=course_id, grader_env=GRADER_ENV)
    return [problem.line() for problem in check_exchange(deployment)]


def test_the_page_s_exchange(good) -> None:
    assert lines(good) == []


def test_a_0777_root(good) -> None:
    good["exchange"].chmod(0o777)
    [line] = lines(good)
    assert "writable by every user without the sticky bit (mode 0777)" in line
    assert line.endswith('docs/course.md, "What the exchange does not protect")')


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_course_folder_of_another_user(good) -> None:
    os.chown(good["exchange"] / COURSE_ID, pwd.getpwnam("daemon").pw_uid, -1)
    [line] = lines(good)
    assert f"the course folder {good['exchange'] / COURSE_ID} in the exchange is owned by daemon" in line


def test_no_root_and_no_course_id(good, tmp_path: Path) -> None:
    good["exchange"] = tmp_path / "nowhere"
    [line] = lines(good)
    assert line.startswith(f"the exchange root {tmp_path / 'nowhere'} does not exist") and '"The exchange"' in line
    [line] = lines(good, course_id="")
    assert line.startswith("no course id (c.CourseDirectory.course_id)")
