"""The sandbox check is the bwrap backend's own probe: clean here, a line naming the page's step when it fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.doctor.resolve import resolve
from ch11_autograder.doctor.sandbox import check_sandbox

from .conftest import COURSE_ID


def test_the_probe(good, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID)
    assert check_sandbox(deployment) == []
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CH11_BWRAP", str(fake))
    [problem] = check_sandbox(deployment)
    assert "the bubblewrap sandbox cannot run here" in problem.line()
    assert "No permissions to create new namespace" in problem.line() and "user.max_user_namespaces" in problem.line()
    assert problem.line().endswith('(docs/course.md, "The hub", step "The sandbox on the grading machine")')
