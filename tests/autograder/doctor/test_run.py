"""``ch11-grade doctor`` end to end: all clear on the page's deployment, and a planted fault's line and exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.cli import main

from .conftest import COURSE_ID, GRADER_ENV, fake_env

#: They run the instructor's interpreter importing nbgrader and the course's config.
pytestmark = pytest.mark.slow


def doctor(good: dict[str, Path], *extra: str) -> list[str]:
    return ["doctor", "--course", str(good["course"]), "--exchange", str(good["exchange"]), "--course-id",
            COURSE_ID, *extra]


def test_all_clear_on_a_good_deployment(good, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(doctor(good, "--grader-env", str(GRADER_ENV))) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("all checks passed (the formgrader starts in "), out
    assert out[0].endswith(" s of the 120 s the page's formgrader server is given)"), out


def test_every_fault_is_a_line_and_exit_1(good, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good["exchange"].chmod(0o777)
    broken = fake_env(tmp_path / "broken", "#!/bin/sh\necho 'nbgrader: broken install' >&2\nexit 3\n")
    (good["course"] / "nbgrader_config.py").unlink()
    assert main(doctor(good, "--grader-env", str(broken))) == 1
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("problem: ") and line.endswith('")') for line in out), out
    assert [line for line in out if "writable by every user without the sticky bit" in line]
    assert [line for line in out if "has no nbgrader_config.py" in line]
    assert [line for line in out if f"nbgrader {broken}/bin/nbgrader does not run (exit status 3: nbgrader: broken "
            "install)" in line]
    assert len(out) == 3, out
