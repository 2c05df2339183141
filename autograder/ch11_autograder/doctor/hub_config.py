"""The hub's config (``--hub-config``): it loads, its spawner's command exists, each service's command, user and
folder exist.

The page's blocks: ``c.Spawner.cmd`` runs every user's server from the students' environment;
``c.JupyterHub.services`` runs ``ch11-serve`` and ``ch11-formgrader`` as the instructor, in the
course folder. A service whose command or folder is missing, or whose user has no account, does not
come up (and a formgrader that does not come up stops the hub).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..exchange.api import instructor_uid
from .deployment import HUB_CONFIG, Deployment, Problem

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
        elif cwd and run and Path(str(cwd)).resolve() != deployment.course.resolve():
            problems.append(Problem(f"the hub service {name} runs in {cwd}, not in the course folder "
                                    f"{deployment.course}", HUB_CONFIG))
    return problems


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
