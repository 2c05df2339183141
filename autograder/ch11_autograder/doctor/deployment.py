"""What the doctor checks (:class:`Deployment`) and what it reports (:class:`Problem`), with the page's sections.

The deployment is docs/course.md's: a course folder owned by the instructor, nbgrader's exchange,
the instructor's environment (the grading package), the students' (without it), a hub config
with the instructor's services. Paths not given on the command line come from the nbgrader config
as ``ch11-grade serve`` reads it (the Jupyter config path, then the course's), from the hub's config
(the students' environment is its ``Spawner.cmd``'s, the instructor the services' ``user``), or
from ``PATH`` (the instructor's ``nbgrader``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..course_layout import CONFIG

__all__ = [
    "COURSE_FOLDER",
    "EVERYONES_CONFIG",
    "FAIL_CLOSED",
    "FORMGRADER_TIMEOUT",
    "HUB_CONFIG",
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
FAIL_CLOSED = f'{PAGE}, "Fail closed: the course config without the package"'
COURSE_FOLDER = f'{PAGE}, "Week 1: the course directory and the hand-out (instructor)"'
#: A formgrader service without a ``timeout`` gets JupyterHub's default.
FORMGRADER_TIMEOUT = 30.0

#: Run by the instructor's interpreter in the course folder: formgrader's import and the course's config, timed.
_GRADER_PROBE = """import sys, time
start = time.perf_counter()
import nbgrader.server_extensions.formgrader.formgrader
from traitlets.config.loader import PyFileConfigLoader
PyFileConfigLoader(sys.argv[1], path=sys.argv[2]).load_config()
import ch11_autograder
print(f"{time.perf_counter() - start:.3f}")
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
    """The instructor's interpreter importing formgrader and loading the course's config: its exit status, the
    last line it wrote to stderr, and the seconds it took (``None`` when it failed)."""

    returncode: int
    error: str
    seconds: float | None


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
        grader_nbgrader: the instructor's ``nbgrader`` (``None``: none found).
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

    @cached_property
    def grader_probe(self) -> GraderProbe | None:
        """The instructor's interpreter run on the course (once, shared by the checks that need it), or ``None``
        when there is no course config or no Python console script to run."""
        python = python_of(self.grader_nbgrader) if self.grader_nbgrader else None
        if python is None or not (self.course / CONFIG).is_file():
            return None
        try:
            done = subprocess.run([python, "-c", _GRADER_PROBE, CONFIG, str(self.course)], cwd=self.course,
                                  capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return GraderProbe(-1, f"{python} could not be run: {exc}", None)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode != 0:
            return GraderProbe(done.returncode, lines[-1] if lines else f"exit status {done.returncode}", None)
        try:
            return GraderProbe(0, "", float(done.stdout.split()[-1]))
        except (ValueError, IndexError):
            return GraderProbe(1, f"{python} printed no time: {done.stdout[-200:]!r}", None)

    def services(self) -> list[dict[str, Any]]:
        """The hub config's ``c.JupyterHub.services`` (empty without a hub config)."""
        if self.hub is None:
            return []
        found = self.hub.JupyterHub.get("services", [])
        return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []

    def formgrader_timeout(self) -> tuple[str, float] | None:
        """The hub's formgrader service (the one with a ``url`` whose command runs a Jupyter server) and its start
        timeout; ``None`` without a hub config or such a service."""
        for service in self.services():
            if service.get("url") and service.get("command"):
                return str(service.get("name", "?")), float(service.get("timeout", FORMGRADER_TIMEOUT))
        return None


def which(name: str) -> Path | None:
    """``name`` on this process's PATH, or ``None``."""
    found = shutil.which(name)
    return Path(found) if found else None


def environment_bin(env: Path) -> Path:
    """A venv's (or prefix's) folder of commands."""
    return env / ("Scripts" if os.name == "nt" else "bin")
