"""The :class:`.deployment.Deployment` the command line points at, with what it does not give read from the configs.

* the exchange root and the course id: ``--exchange``, ``--course-id``, else the nbgrader config as
  ``ch11-grade serve`` reads it (:func:`..serve.policy.load_config`), else nbgrader's default root;
* the hub's config (``--hub-config``), loaded as JupyterHub loads it;
* the instructor: ``--instructor``, else the ``user`` of the hub's services, else this process's user;
* the instructor's nbgrader: ``--grader-env``'s, else the one beside this interpreter (``ch11-grade``'s own
  environment); the one ``PATH`` gives (what the terminal runs) is kept beside it for the PATH check;
* the students' environment: ``--students-env``, else the one the hub's ``Spawner.cmd`` runs from.

What cannot be read becomes a note, reported as a problem: the doctor goes on with the rest.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

from ..exchange.api import instructor_uid
from ..serve.policy import DEFAULT_EXCHANGE, load_config
from .deployment import FAIL_CLOSED, HUB_CONFIG, Deployment, Problem, environment_bin, which

__all__ = ["resolve"]


def resolve(course: Path, *, exchange: Path | None = None, course_id: str | None = None,
            instructor: str | None = None, grader_env: Path | None = None, students_env: Path | None = None,
            hub_config: Path | None = None) -> Deployment:
    """The deployment (see the module)."""
    notes: list[Problem] = []
    course = course.expanduser().absolute()
    hub, hub_error = (_load_hub(hub_config) if hub_config is not None else (None, None))
    if exchange is None or not course_id:
        config = _nbgrader_config(course, notes)
        if exchange is None:
            root = str(config.Exchange.get("root", "") or "") if config is not None else ""
            exchange = Path(root or DEFAULT_EXCHANGE)
        if not course_id:
            course_id = str(config.CourseDirectory.get("course_id", "") or "") if config is not None else ""
    services = [s for s in (hub.JupyterHub.get("services", []) if hub is not None else []) if isinstance(s, dict)]
    name = instructor or next((str(s["user"]) for s in services if s.get("user")), "")
    try:
        uid = instructor_uid(name)
    except ValueError as exc:
        notes.append(Problem(f"{exc}; the course folder is checked against this process's user instead", HUB_CONFIG))
        uid = os.geteuid()
    grader = environment_bin(grader_env if grader_env is not None else Path(sys.prefix)) / "nbgrader"
    if students_env is None and hub is not None:
        command = hub.Spawner.get("cmd", None)
        if isinstance(command, list) and command:
            students_env = Path(str(command[0])).parent.parent
    return Deployment(course, exchange.absolute(), course_id or "", uid, grader, students_env, hub_config, hub,
                      hub_error, notes, path_nbgrader=which("nbgrader"))


def _nbgrader_config(course: Path, notes: list[Problem]) -> Config | None:
    """The nbgrader config as ``ch11-grade serve`` reads it. When the course's own does not load (its fail-closed
    stop, a missing module), the Jupyter config path's alone, where the page puts the exchange and the course id:
    the nbgrader check reports the course config's failure, once. A note when they are not there either."""
    try:
        return load_config(course)
    except (Exception, SystemExit) as exc:  # the course config stops with SystemExit when it cannot load
        failure = exc
    try:
        config = load_config(course, course_config=False)
    except (Exception, SystemExit):
        config = None
    if config is None or not config.CourseDirectory.get("course_id", ""):
        notes.append(Problem(f"the nbgrader config of {course} could not be read ({type(failure).__name__}: "
                             f"{failure}), so the exchange and course id are nbgrader's defaults", FAIL_CLOSED))
    return config


def _load_hub(path: Path) -> tuple[Config | None, str | None]:
    """The hub's config as JupyterHub loads it (a Python file calling ``get_config()``), or why it could not be."""
    path = path.expanduser().absolute()
    try:
        return PyFileConfigLoader(path.name, path=str(path.parent)).load_config(), None
    except ConfigFileNotFound:
        return None, f"the hub config {path} does not exist"
    except (Exception, SystemExit) as exc:
        return None, f"the hub config {path} does not load ({type(exc).__name__}: {' '.join(str(exc).split())})"
