"""What the doctor checks (:class:`Deployment`) and what it reports (:class:`Problem`), with the page's sections.

The deployment is docs/course.md's: a course folder owned by the instructor, nbgrader's exchange,
the instructor's environment (the grading package), the students' (without it), a hub config
with the grading service and the graders' ``formgrader`` server. Paths not given on the command
line come from the nbgrader config as ``ch11-grade serve`` reads it (the Jupyter config path, then
the course's), from the hub's config (the students' environment is its ``Spawner.cmd``'s, the
instructor the services' ``user``), or from the doctor itself (the instructor's environment is the
one ``ch11-grade`` runs from).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..course_layout import CONFIG
from .hub_servers import HubServer, server

__all__ = [
    "COURSE_FOLDER",
    "EVERYONES_CONFIG",
    "FAIL_CLOSED",
    "FORMGRADER_TIMEOUT",
    "HUB_CONFIG",
    "INSTRUCTOR_PATH",
    "INSTRUCTOR_TERMINALS",
    "PROXY",
    "SANDBOX",
    "STUDENTS_ENV",
    "THE_EXCHANGE",
    "Deployment",
    "GraderProbe",
    "Problem",
    "python_of",
]

PAGE = "docs/course.md"
#: The page's sections (and steps of "The hub") that fix what a check finds.
EVERYONES_CONFIG = f"{PAGE}, \"The hub\", step \"Everyone's nbgrader config\""
THE_EXCHANGE = f'{PAGE}, "The hub", step "The exchange"'
PROXY = f'{PAGE}, "The hub", step "The proxy"'
HUB_CONFIG = f"{PAGE}, \"The hub\", step \"The hub's config\""
SANDBOX = f'{PAGE}, "The hub", step "The sandbox on the grading machine"'
STUDENTS_ENV = f'{PAGE}, "Who runs what, where"'
INSTRUCTOR_TERMINALS = f'{PAGE}, "The instructor on the hub"'
INSTRUCTOR_PATH = f'{PAGE}, "The hub", step "PATH, however a shell starts"'
FAIL_CLOSED = f'{PAGE}, "Fail closed: the course config without the package"'
COURSE_FOLDER = f'{PAGE}, "Week 1: the course directory and the hand-out (instructor)"'
#: A formgrader service without a ``timeout`` gets JupyterHub's default.
FORMGRADER_TIMEOUT = 30.0
#: The name of the graders' formgrader server in the page's hub config.
FORMGRADER_SERVER = "formgrader"

#: Run by the formgrader's interpreter in the course folder: formgrader's import and the course's config.
_GRADER_PROBE = """import sys
import nbgrader.server_extensions.formgrader.formgrader
from traitlets.config.loader import PyFileConfigLoader
PyFileConfigLoader(sys.argv[1], path=sys.argv[2]).load_config()
import ch11_autograder
print("loaded")
"""


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and the page's section that fixes it (``None``: ``what`` names it already)."""

    what: str
    section: str | None

    def line(self) -> str:
        what = " ".join(self.what.split())
        return what if self.section is None else f"{what} ({self.section})"


@dataclass(frozen=True)
class GraderProbe:
    """The formgrader's interpreter started, importing formgrader and loading the course's config: its exit status,
    the last line it wrote to stderr, and the wall seconds from its start to its exit (``None`` when it failed);
    ``what`` names the interpreter (whose it is, and its path)."""

    returncode: int
    error: str
    seconds: float | None
    what: str = ""


def python_of(script: Path) -> str | None:
    """The interpreter of a console script (``#!/path/to/python``), or ``None`` when it has none."""
    try:
        with script.open("rb") as handle:
            first = handle.readline(400)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    return words[0] if words and Path(words[0]).name.startswith("python") else None


@dataclass
class Deployment:
    """Where the deployment's parts are (see the module).

    Attributes:
        course: the instructor's course folder.
        exchange: nbgrader's exchange root; course_id: the course's id in it.
        instructor: the uid that must own the course folder and the course's folder in the exchange.
        grader_nbgrader: the instructor's environment's ``nbgrader`` (``--grader-env``'s, else the one beside the
            doctor's own interpreter).
        path_nbgrader: the ``nbgrader`` this process's ``PATH`` gives (what the terminal the doctor runs in runs),
            or ``None``.
        students_env: the students' environment (a venv's folder), or ``None`` when not known.
        hub_config: the hub's ``jupyterhub_config.py``, or ``None``; hub: its config as loaded (``None`` when it
            could not be: hub_error says why).
        notes: what could not be read while resolving (reported by :func:`.run.diagnose` as problems).
    """

    course: Path
    exchange: Path
    course_id: str
    instructor: int
    grader_nbgrader: Path | None
    students_env: Path | None = None
    hub_config: Path | None = None
    hub: Any = None
    hub_error: str | None = None
    notes: list[Problem] = field(default_factory=list)
    path_nbgrader: Path | None = None

    def instructor_name(self) -> str:
        """The instructor's login (``uid N`` when the uid has no account)."""
        try:
            return pwd.getpwuid(self.instructor).pw_name
        except KeyError:
            return f"uid {self.instructor}"

    def hub_server(self, name: str = "") -> HubServer | None:
        """The instructor's server ``name`` as the hub config makes it (:func:`.hub_servers.server`), or ``None``
        without a hub config.

        Raises:
            ValueError: the config's hook or environment fails on it (the message says why).
        """
        return None if self.hub is None else server(self.hub, self.instructor_name(), name)

    def formgrader(self) -> HubServer | None:
        """The instructor's ``formgrader`` server when the hub config makes one (its hook gives it a command of its
        own), else ``None``."""
        try:
            found = self.hub_server(FORMGRADER_SERVER)
        except ValueError:
            return None  # the hub config check reports it
        return found if found is not None and found.custom else None

    def _probe_command(self) -> tuple[str | None, str, dict[str, str]]:
        """The formgrader's interpreter, what to call it, and its environment: the formgrader server's as the hub
        starts it (its command's Python, the hub's environment for it), else the instructor's nbgrader's here."""
        formgrader = self.formgrader()
        if formgrader is not None:
            for part in reversed(formgrader.cmd):
                python = _python_in(part)
                if python is not None:
                    name = self.instructor_name()
                    home = _home_of(self.instructor) or str(Path.home())
                    env = {"HOME": home, "USER": name, "LOGNAME": name, "LANG": os.environ.get("LANG", "C.UTF-8"),
                           "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **formgrader.environment}
                    return python, f"the formgrader server's Python {python}", env
        python = python_of(self.grader_nbgrader) if self.grader_nbgrader else None
        return python, f"the instructor's nbgrader {self.grader_nbgrader}", dict(os.environ)

    @cached_property
    def grader_probe(self) -> GraderProbe | None:
        """The formgrader's interpreter run on the course (once, shared by the checks that need it), timed from its
        start as a server's start is; ``None`` when there is no course config or no Python console script."""
        python, what, env = self._probe_command()
        if python is None or not (self.course / CONFIG).is_file():
            return None
        started = time.perf_counter()
        try:
            done = subprocess.run([python, "-c", _GRADER_PROBE, CONFIG, str(self.course)], cwd=self.course,
                                  capture_output=True, text=True, timeout=600, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return GraderProbe(-1, f"{python} could not be run: {exc}", None, what)
        seconds = time.perf_counter() - started
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode != 0:
            return GraderProbe(done.returncode, lines[-1] if lines else f"exit status {done.returncode}", None, what)
        if "loaded" not in done.stdout:
            return GraderProbe(1, f"{python} did not finish: {done.stdout[-200:]!r}", None, what)
        return GraderProbe(0, "", seconds, what)

    def services(self) -> list[dict[str, Any]]:
        """The hub config's ``c.JupyterHub.services`` (empty without a hub config)."""
        if self.hub is None:
            return []
        found = self.hub.JupyterHub.get("services", [])
        return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []

    def formgrader_timeout(self) -> tuple[str, float] | None:
        """What starts the formgrader and its seconds to answer: the graders' ``formgrader`` server (its
        ``http_timeout``), else a hub service with a ``url`` and a command (its ``timeout``); ``None`` without a hub
        config or either."""
        formgrader = self.formgrader()
        if formgrader is not None:
            return f"{self.instructor_name()}'s {FORMGRADER_SERVER} server", formgrader.http_timeout
        for service in self.services():
            if service.get("url") and service.get("command"):
                return f"the {service.get('name', '?')} service", float(service.get("timeout", FORMGRADER_TIMEOUT))
        return None


def _python_in(part: str) -> str | None:
    """The Python a server command's word runs: a console script's interpreter, or the word when it is a Python."""
    if not part.startswith("/"):
        return None
    return python_of(Path(part)) or (part if Path(part).name.startswith("python") and os.access(part, os.X_OK)
                                     else None)


def _home_of(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return None


def which(name: str) -> Path | None:
    """``name`` on this process's PATH, or ``None``."""
    found = shutil.which(name)
    return Path(found) if found else None


def environment_bin(env: Path) -> Path:
    """A venv's (or prefix's) folder of commands."""
    return env / ("Scripts" if os.name == "nt" else "bin")
