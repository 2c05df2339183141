"""The doctor's checks in the order they run, and :func:`diagnose`, which runs them all."""

from __future__ import annotations

from collections.abc import Callable

from .course_folder import check_course_folder
from .deployment import Deployment, Problem
from .exchange import check_exchange
from .formgrader_import import check_formgrader_import, timing
from .hub_config import check_hub_config
from .instructor_path import check_instructor_path
from .nbgrader_envs import check_nbgrader_envs
from .proxy import check_proxy
from .sandbox import check_sandbox

__all__ = ["CHECKS", "diagnose", "report"]

Check = Callable[[Deployment], list[Problem]]

#: Every check (see the package), cheapest first.
CHECKS: tuple[Check, ...] = (
    check_course_folder,
    check_exchange,
    check_hub_config,
    check_proxy,
    check_nbgrader_envs,
    check_instructor_path,
    check_formgrader_import,
    check_sandbox,
)


def diagnose(deployment: Deployment, checks: tuple[Check, ...] = CHECKS) -> list[Problem]:
    """Every problem of ``deployment``: what could not be read, then each check's (a check that raises is a problem
    of its own, never the end of the others)."""
    problems = list(deployment.notes)
    for check in checks:
        try:
            problems.extend(check(deployment))
        except Exception as exc:
            problems.append(Problem(f"{check.__name__} could not run: {type(exc).__name__}: {exc}", None))
    return problems


def report(deployment: Deployment) -> tuple[list[str], int]:
    """What ``ch11-grade doctor`` prints, and its exit status: one line per problem and 1, or one line and 0."""
    problems = diagnose(deployment)
    if problems:
        return [f"problem: {problem.line()}" for problem in problems], 1
    measured = timing(deployment)
    return [f"all checks passed{f' ({measured})' if measured else ''}"], 0
