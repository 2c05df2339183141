"""A deployment as docs/course.md builds it, in a temporary folder: the course, a 1777 exchange, this environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR

#: The environment running the tests: nbgrader and the grading package (the instructor's, on the page).
GRADER_ENV = Path(sys.executable).parent.parent
COURSE_ID = "c1"


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Path]:
    """The course folder (this process's user is the instructor) and the exchange with the course's folder."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    (exchange / COURSE_ID / "outbound").mkdir(parents=True)
    exchange.chmod(0o1777)
    return {"course": course, "exchange": exchange}


def fake_env(where: Path, script: str) -> Path:
    """An environment whose ``bin/nbgrader`` is ``script``."""
    (where / "bin").mkdir(parents=True)
    nbgrader = where / "bin" / "nbgrader"
    nbgrader.write_text(script)
    nbgrader.chmod(0o755)
    return where
