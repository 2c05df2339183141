"""The formgrader's import time against its service's start timeout (the hub's, else the page's 120 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.doctor.deployment import GraderProbe
from ch11_autograder.doctor.formgrader_import import check_formgrader_import
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV

#: They run the instructor's interpreter importing nbgrader and the course's config.
pytestmark = pytest.mark.slow


def test_an_import_past_half_the_timeout(good, tmp_path: Path) -> None:
    config = tmp_path / "jupyterhub_config.py"
    config.write_text('c = get_config()\nc.JupyterHub.services = [{"name": "fg", "url": "http://127.0.0.1:9", '
                      '"command": ["x"], "timeout": 20}]\n')
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config)
    measured = deployment.grader_probe
    assert measured is not None and measured.returncode == 0 and measured.seconds is not None  # really measured
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 10.5)  # a slower machine than this one
    [problem] = check_formgrader_import(deployment)
    assert problem.line().startswith("formgrader's import with the course's config took 10.5 s, more than half of "
                                     "the fg service's start timeout (20 s)")
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 9.5)
    assert check_formgrader_import(deployment) == []
    deployment.hub = None  # without a hub config: the page's 120 s
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 61.0)
    [problem] = check_formgrader_import(deployment)
    assert "the ch11-formgrader service's start timeout (120 s)" in problem.line()
