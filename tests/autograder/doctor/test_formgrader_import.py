"""The formgrader's start with the course's config, timed as the hub starts it, against the seconds the hub gives it
(the formgrader server's http_timeout, else the page's 120 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.doctor.deployment import GraderProbe
from ch11_autograder.doctor.formgrader_import import check_formgrader_import
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV, page_hub_config

#: They run the instructor's interpreter importing nbgrader and the course's config.
pytestmark = pytest.mark.slow


def test_a_start_past_half_the_timeout(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python,
                             extra="_page_hook = c.Spawner.pre_spawn_hook\n\n\ndef hook(spawner):\n"
                                   "    _page_hook(spawner)\n    spawner.http_timeout = 20\n\n\n"
                                   "c.Spawner.pre_spawn_hook = hook\n")
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config)
    measured = deployment.grader_probe
    assert measured is not None and measured.returncode == 0 and measured.seconds is not None  # really measured
    assert measured.what == f"the formgrader server's Python {python}"  # the formgrader server's command's
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 10.5)  # a slower machine than this one
    [problem] = check_formgrader_import(deployment)
    assert problem.line().startswith("the formgrader's start (its Python, formgrader's import and the course's "
                                     "config) took 10.5 s, more than half of the 20 s root's formgrader server is "
                                     "given to answer"), problem.line()
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 9.5)
    assert check_formgrader_import(deployment) == []
    deployment.hub = None  # without a hub config: the page's 120 s
    deployment.__dict__["grader_probe"] = GraderProbe(0, "", 61.0)
    [problem] = check_formgrader_import(deployment)
    assert "more than half of the 120 s the page's formgrader server is given" in problem.line()


def test_the_start_is_timed_in_the_environment_the_hub_gives_the_formgrader(good, tmp_path: Path) -> None:
    """A slow start that only the hub's environment for the server causes (here a ``sitecustomize`` on the
    PYTHONPATH the hook gives it) is what is measured, not this process's environment."""
    slow = tmp_path / "slow"
    slow.mkdir()
    ran = tmp_path / "sitecustomize-ran"
    (slow / "sitecustomize.py").write_text(f"import pathlib, time\npathlib.Path({str(ran)!r}).touch()\ntime.sleep(3)\n")
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python,
                             extra="_page_hook = c.Spawner.pre_spawn_hook\n\n\ndef hook(spawner):\n"
                                   "    _page_hook(spawner)\n    spawner.http_timeout = 4\n"
                                   f"    spawner.environment = {{**spawner.environment, 'PYTHONPATH': {str(slow)!r}}}"
                                   "\n\n\nc.Spawner.pre_spawn_hook = hook\n")
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config)
    [problem] = check_formgrader_import(deployment)
    assert ran.is_file(), "the probe did not run in the environment the hub gives the formgrader server"
    assert deployment.grader_probe is not None and deployment.grader_probe.seconds is not None
    assert deployment.grader_probe.seconds >= 3, deployment.grader_probe
    assert "more than half of the 4 s root's formgrader server is given" in problem.line()
