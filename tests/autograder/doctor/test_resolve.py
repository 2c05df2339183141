"""What the doctor checks when the command line does not say: the nbgrader config's exchange and course id, the hub
services' user as the instructor, the doctor's own environment as the instructor's, PATH's nbgrader beside it."""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from pathlib import Path

from ch11_autograder.doctor.resolve import resolve

from .conftest import GRADER_ENV


def test_from_the_configs(good, tmp_path: Path) -> None:
    with (good["course"] / "nbgrader_config.py").open("a") as config:
        config.write(f'\nc.Exchange.root = {str(good["exchange"])!r}\nc.CourseDirectory.course_id = "from-config"\n')
    hub = tmp_path / "jupyterhub_config.py"
    hub.write_text('c = get_config()\nc.Spawner.cmd = ["/opt/x/students/bin/jupyterhub-singleuser"]\n'
                   'c.JupyterHub.services = [{"name": "s", "command": ["x"], "user": "daemon"}]\n')
    deployment = resolve(good["course"], hub_config=hub)
    assert (deployment.exchange, deployment.course_id) == (good["exchange"], "from-config")
    assert deployment.instructor == pwd.getpwnam("daemon").pw_uid
    assert deployment.students_env == Path("/opt/x/students")
    assert deployment.grader_nbgrader == Path(sys.prefix) / "bin" / "nbgrader"
    assert deployment.path_nbgrader == (Path(p) if (p := shutil.which("nbgrader")) else None)
    assert deployment.notes == []
    assert resolve(good["course"], instructor="root", grader_env=GRADER_ENV).instructor == 0
    assert resolve(good["course"], grader_env=GRADER_ENV).instructor == os.geteuid()


def test_what_cannot_be_read_is_a_note(good) -> None:
    (good["course"] / "nbgrader_config.py").write_text("raise SystemExit('nbgrader_config.py: stopped')\n")
    deployment = resolve(good["course"], instructor="no-such-user-ch11")
    assert deployment.notes[0].line().startswith(
        f"the nbgrader config of {good['course']} could not be read (SystemExit: nbgrader_config.py: stopped)")
    assert "'no-such-user-ch11' (c.ExchangeSafety.instructor) has no unix account" in deployment.notes[1].line()
    assert deployment.exchange == Path("/usr/local/share/nbgrader/exchange")


def test_a_course_config_that_stops_leaves_the_jupyter_path_s(good, tmp_path: Path, monkeypatch) -> None:
    """The page puts the exchange and the course id in the Jupyter config path: they are read without the course's
    failing config (whose failure the nbgrader check reports, once)."""
    jupyter = tmp_path / "jupyter"
    jupyter.mkdir()
    (jupyter / "nbgrader_config.py").write_text(f'c.Exchange.root = {str(good["exchange"])!r}\n'
                                                'c.CourseDirectory.course_id = "from-jupyter"\n')
    monkeypatch.delenv("JUPYTER_NO_CONFIG", raising=False)  # support/jupyter_env.py: read the config planted here
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(jupyter))
    (good["course"] / "nbgrader_config.py").write_text("raise SystemExit('nbgrader_config.py: stopped')\n")
    deployment = resolve(good["course"], grader_env=GRADER_ENV)
    assert (deployment.exchange, deployment.course_id, deployment.notes) == (good["exchange"], "from-jupyter", [])
