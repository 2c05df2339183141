"""The exchange: its root exists, and nobody but the instructor can take over it or the course's folder in it.

The check is the one ``collect`` and ``ch11-grade serve`` make before taking anything
(:func:`..exchange.api.exchange_problems`: a root writable by others without the sticky bit, a root
owned by a user, a course folder not the instructor's); each of its lines names its fix already.
"""

from __future__ import annotations

from ..exchange.api import exchange_problems
from .deployment import EVERYONES_CONFIG, THE_EXCHANGE, Deployment, Problem

__all__ = ["check_exchange"]


def check_exchange(deployment: Deployment) -> list[Problem]:
    root = deployment.exchange
    if not deployment.course_id:
        return [Problem("no course id (c.CourseDirectory.course_id) in the nbgrader config, nor --course-id: the "
                        "exchange's course folder cannot be found", EVERYONES_CONFIG)]
    if not root.is_dir():
        return [Problem(f"the exchange root {root} does not exist (mkdir -p {root} && chmod 1777 {root})",
                        THE_EXCHANGE)]
    # Each line names its section already (UNSAFE_EXCHANGE), as collect and serve print it.
    return [Problem(line, None) for line in exchange_problems(root, deployment.course_id, deployment.instructor)]
