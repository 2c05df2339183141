"""The instructor's ``nbgrader`` is the grading environment's, however their shell starts (with a hub config).

The page gives a grader the grading environment first on PATH two ways (step 6): the hub's
``c.Spawner.environment`` (their server's PATH, which its kernels and its terminals that are not
login shells keep: a hub started in a terminal gives those) and ``/etc/profile.d`` (a login shell,
which a hub under systemd gives, resets PATH from ``/etc/profile``). Each is checked where it can be:

* the hub's: the PATH the hub config gives the instructor's default server
  (:func:`.hub_servers.server`, the group test included), searched for ``nbgrader``;
* when the doctor runs as the instructor (the page's way: in a terminal of their server), the PATH
  of this terminal, and of a login shell of theirs (``bash -l`` from an empty environment).

Each must find the grading environment's ``nbgrader`` first (the students' cannot load the course:
"Fail closed"). Without a hub config none is checked: elsewhere the page calls the commands by path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .deployment import HUB_CONFIG, INSTRUCTOR_PATH, Deployment, Problem

__all__ = ["check_instructor_path", "login_shell_nbgrader"]

#: ``bash -l`` prints where its ``nbgrader`` is after this marker (a profile may print lines of its own).
_MARK = "__ch11_nbgrader__"


def check_instructor_path(deployment: Deployment) -> list[Problem]:
    grading = deployment.grader_nbgrader
    if deployment.hub is None or grading is None or not grading.is_file():
        return []  # without a hub config nothing to check; without the grading nbgrader the nbgrader check says so
    name = deployment.instructor_name()
    problems = []
    try:
        server = deployment.hub_server()
    except ValueError:
        server = None  # the hub config check reports the failing hook or environment
    if server is not None:
        path = server.environment.get("PATH")
        if path is None:
            problems.append(Problem(f"the hub config gives {name}'s server no PATH (c.Spawner.environment): their "
                                    "terminals and kernels get the hub's own", HUB_CONFIG))
        else:
            found = shutil.which("nbgrader", path=path)
            if not _same(found, grading):
                problems.append(Problem(
                    f"the hub gives {name}'s server a PATH whose nbgrader is {found or 'missing'}, not the grading "
                    f"environment's {grading}: their terminals and kernels cannot load the course ({name} not in "
                    "the graders' group, or c.Spawner.environment's PATH)", INSTRUCTOR_PATH))
    if os.geteuid() != deployment.instructor:
        return problems
    if not _same(deployment.path_nbgrader, grading):
        problems.append(Problem(f"this shell's PATH gives nbgrader {deployment.path_nbgrader or 'nowhere'}, not the "
                                f"grading environment's {grading}", INSTRUCTOR_PATH))
    home = os.environ.get("HOME") or str(Path.home())
    login = login_shell_nbgrader(home, name)
    if login is not None and not _same(login, grading):
        problems.append(Problem(f"a login shell of {name} (bash -l: /etc/profile, then /etc/profile.d) finds nbgrader "
                                f"{login or 'nowhere'}, not the grading environment's {grading}", INSTRUCTOR_PATH))
    return problems


def login_shell_nbgrader(home: str, name: str) -> str | None:
    """Where a login shell of ``name`` (``bash -l`` from an empty environment, as a terminal of a hub under systemd
    or an ssh login starts) finds ``nbgrader``: a path, ``""`` when it finds none, ``None`` without bash."""
    bash = shutil.which("bash") or ("/bin/bash" if Path("/bin/bash").is_file() else None)
    if bash is None:
        return None
    env = {"HOME": home, "USER": name, "LOGNAME": name, "SHELL": bash, "PATH": "/usr/bin:/bin"}
    try:
        done = subprocess.run([bash, "-l", "-c", f'echo "{_MARK}$(command -v nbgrader)"'], env=env, cwd=home,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = [line.split(_MARK, 1)[1].strip() for line in done.stdout.splitlines() if _MARK in line]
    return found[-1] if found else ""


def _same(found: str | Path | None, grading: Path) -> bool:
    if not found:
        return False
    try:
        return Path(found).samefile(grading)
    except OSError:
        return False
