"""A user's server as the hub's config makes it: the page's hook and environment callables run on a stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.doctor.hub_servers import server
from traitlets.config.loader import PyFileConfigLoader

from .conftest import GRADER_ENV, page_hub_config

STUDENTS = Path("/opt/x/students/bin")


def load(path: Path):
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def test_a_grader_s_and_a_student_s_servers(tmp_path: Path, good) -> None:
    python = GRADER_ENV / "bin" / "python"
    hub = load(page_hub_config(tmp_path, good["course"], spawner=python, command=python, graders=("inst",),
                               students_bin=STUDENTS, extra="c.Spawner.http_timeout = 45\n"))
    grader = server(hub, "inst")
    assert grader.environment["PATH"].split(":")[:2] == [str(GRADER_ENV / "bin"), str(STUDENTS)]
    assert grader.cmd == (str(python),) and not grader.custom and grader.http_timeout == 45
    formgrader = server(hub, "inst", "formgrader")
    assert formgrader.custom and formgrader.cmd[0] == "/bin/sh" and formgrader.cmd[-1] == str(python)
    assert formgrader.http_timeout == 120
    student = server(hub, "alice", "formgrader")  # not a grader: no formgrader, the students' PATH first
    assert not student.custom and student.environment["PATH"].startswith(f"{STUDENTS}:")


def test_a_failing_environment_callable(tmp_path: Path) -> None:
    path = tmp_path / "jupyterhub_config.py"
    path.write_text('c = get_config()\nc.Spawner.environment = {"PATH": lambda spawner: spawner.user.groups}\n')
    with pytest.raises(ValueError, match=r"c.Spawner.environment\['PATH'\] fails for inst's default server: "
                                         "AttributeError"):
        server(load(path), "inst")
