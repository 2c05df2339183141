"""The hub's config (``--hub-config``): it loads, its spawner's command exists, each service's command, user and
folder exist, no service can stop the hub, and the graders' formgrader server can be made.

The page's blocks: ``c.Spawner.cmd`` runs every user's server from the students' environment;
``c.JupyterHub.services`` runs ``ch11-serve`` as the instructor, in their home, grading the course
folder (its ``--course``); the pre-spawn hook makes a grader's server named ``formgrader`` the
grading environment's formgrader. A service whose command or folder is missing, or whose user has
no account, does not come up; a managed service with a ``url`` that does not answer in time makes
JupyterHub exit, so the page runs nothing of the course that way ("No course fault stops the hub").
"""

from __future__ import annotations

import os
from pathlib import Path

from ..exchange.api import instructor_uid
from .deployment import HUB_CONFIG, Deployment, Problem
from .hub_servers import HubServer

__all__ = ["check_hub_config"]


def check_hub_config(deployment: Deployment) -> list[Problem]:
    if deployment.hub_config is None:
        return []
    if deployment.hub is None:
        return [Problem(deployment.hub_error or f"the hub config {deployment.hub_config} did not load", HUB_CONFIG)]
    problems = []
    command = deployment.hub.Spawner.get("cmd", None)
    if isinstance(command, list) and command and not _runnable(str(command[0])):
        problems.append(Problem(f"the hub's c.Spawner.cmd {command[0]} is not an executable file", HUB_CONFIG))
    for service in deployment.services():
        name = service.get("name", "?")
        run = service.get("command")
        if isinstance(run, list) and run and not _runnable(str(run[0])):
            problems.append(Problem(f"the hub service {name}'s command {run[0]} is not an executable file",
                                    HUB_CONFIG))
        user = service.get("user")
        if user:
            try:
                instructor_uid(str(user))
            except ValueError:
                problems.append(Problem(f"the hub service {name}'s user {user!r} has no unix account here",
                                        HUB_CONFIG))
        cwd = service.get("cwd")
        if cwd and not Path(str(cwd)).is_dir():
            problems.append(Problem(f"the hub service {name}'s folder {cwd} does not exist", HUB_CONFIG))
        graded = _course_argument(run)
        if graded is not None and Path(graded).absolute() != deployment.course:
            problems.append(Problem(f"the hub service {name} grades {graded} (its --course), not the course folder "
                                    f"{deployment.course}", HUB_CONFIG))
        if service.get("url") and run:
            problems.append(Problem(f"the hub service {name} has a url: the hub exits at its start when it does not "
                                    "answer in time, so a course fault would stop the hub for everyone; make it a "
                                    "grader's named server", HUB_CONFIG))
    try:
        formgrader = deployment.hub_server("formgrader")
    except ValueError as exc:
        problems.append(Problem(str(exc), HUB_CONFIG))
    else:
        problems.extend(_server_commands(formgrader, f"{deployment.instructor_name()}'s formgrader server"))
    return problems


def _course_argument(command: object) -> str | None:
    """The ``--course`` of a ``ch11-grade serve`` command, or ``None``."""
    if not isinstance(command, list) or "serve" not in command:
        return None
    words = [str(word) for word in command]
    for index, word in enumerate(words):
        if word == "--course" and index + 1 < len(words):
            return words[index + 1]
        if word.startswith("--course="):
            return word.split("=", 1)[1]
    return None


def _server_commands(server: HubServer | None, what: str) -> list[Problem]:
    """Each absolute path of a server's command (the shell, the grading environment's singleuser) must run."""
    if server is None or not server.custom:
        return []
    return [Problem(f"{what}'s command {part} is not an executable file", HUB_CONFIG)
            for part in server.cmd if part.startswith("/") and " " not in part and not _runnable(part)]


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
