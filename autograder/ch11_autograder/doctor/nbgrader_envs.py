"""Each environment's ``nbgrader``: the instructor's loads the course, the students' cannot import the grading package.

The instructor's is ``--grader-env``'s, else the one beside the doctor's own interpreter (whether
``PATH`` finds it first is :mod:`.instructor_path`'s check): it must exist, and the formgrader's
interpreter (the graders' formgrader server's as the hub starts it, else this nbgrader's) must
import formgrader and load the course's ``nbgrader_config.py``, which stops with one line when it
cannot import the grading package (the page's "Fail closed"). The students' (``--students-env``, or
the hub's ``Spawner.cmd``) must run nbgrader and must not import ``ch11_autograder``: it holds the
hidden suites and the reference answers. A ``nbgrader`` that is not a Python console script is run
with ``--version``: it must succeed, and which Python it runs cannot be told.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .deployment import FAIL_CLOSED, INSTRUCTOR_TERMINALS, STUDENTS_ENV, Deployment, Problem, environment_bin, python_of

__all__ = ["check_nbgrader_envs"]

#: Run by the students' interpreter, isolated (-I: no PYTHONPATH, no user site), as a student's server runs.
_STUDENTS_PROBE = """import nbgrader
try:
    import ch11_autograder
except ImportError:
    pass
else:
    print("grading package")
"""


def check_nbgrader_envs(deployment: Deployment) -> list[Problem]:
    return [*_grader(deployment), *_students(deployment)]


def _runs(nbgrader: Path) -> str | None:
    """Why ``nbgrader --version`` fails, or ``None``."""
    try:
        done = subprocess.run([str(nbgrader), "--version"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    return f"exit status {done.returncode}" + (f": {lines[-1]}" if lines else "")


def _grader(deployment: Deployment) -> list[Problem]:
    nbgrader = deployment.grader_nbgrader
    if nbgrader is None or not nbgrader.is_file():
        return [Problem(f"no nbgrader at {nbgrader}: the instructor's environment is the one with the grading "
                        "package and its nbgrader (--grader-env)", INSTRUCTOR_TERMINALS)]
    if python_of(nbgrader) is None:
        why = _runs(nbgrader)
        if why is not None:
            return [Problem(f"the instructor's nbgrader {nbgrader} does not run ({why})", INSTRUCTOR_TERMINALS)]
    probe = deployment.grader_probe
    if probe is not None and probe.returncode != 0:
        return [Problem(f"{probe.what} cannot load the course's nbgrader_config.py: {probe.error}", FAIL_CLOSED)]
    return []


def _students(deployment: Deployment) -> list[Problem]:
    env = deployment.students_env
    if env is None:
        return []
    nbgrader = environment_bin(env) / "nbgrader"
    if not nbgrader.is_file():
        return [Problem(f"the students' environment {env} has no nbgrader ({nbgrader})", STUDENTS_ENV)]
    python = python_of(nbgrader)
    if python is None:
        why = _runs(nbgrader)
        return [] if why is None else [Problem(f"the students' nbgrader {nbgrader} does not run ({why})",
                                               STUDENTS_ENV)]
    try:
        done = subprocess.run([python, "-I", "-c", _STUDENTS_PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Problem(f"the students' Python {python} could not be run: {exc}", STUDENTS_ENV)]
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return [Problem(f"the students' Python {python} cannot import nbgrader ({lines[-1] if lines else 'exit '}"
                        f"{'' if lines else done.returncode})", STUDENTS_ENV)]
    if "grading package" in done.stdout:
        return [Problem(f"the students' environment {env} can import the grading package ch11_autograder: its "
                        "hidden suites and reference answers are readable by every student; install it in the "
                        "instructor's environment only", STUDENTS_ENV)]
    return []
