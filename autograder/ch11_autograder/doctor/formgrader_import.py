"""How long the formgrader takes to start with the course's config, against the seconds the hub gives it.

The hub waits the graders' ``formgrader`` server's ``http_timeout`` (the page's hook sets 120 s)
for it to answer, and fails that server's start when it does not. Starting the grading
environment's interpreter, importing formgrader and loading the course's config (the grading
package's steps) is most of that server's start, timed here as the hub starts it: its command's
Python, in the environment the hub's config gives it (:meth:`.deployment.Deployment.grader_probe`).
Past half the timeout the start is at risk on a busy machine. Without a hub config the page's
120 s is the yardstick.
"""

from __future__ import annotations

from .deployment import HUB_CONFIG, Deployment, Problem

__all__ = ["PAGE_TIMEOUT", "check_formgrader_import"]

#: The formgrader server's ``http_timeout`` on the page.
PAGE_TIMEOUT = 120.0
_PAGE_SERVER = "the page's formgrader server"


def check_formgrader_import(deployment: Deployment) -> list[Problem]:
    probe = deployment.grader_probe
    if probe is None or probe.seconds is None:
        return []  # nothing to time: the nbgrader check says why
    server, timeout = deployment.formgrader_timeout() or (_PAGE_SERVER, PAGE_TIMEOUT)
    if probe.seconds > timeout / 2:
        return [Problem(f"the formgrader's start (its Python, formgrader's import and the course's config) took "
                        f"{probe.seconds:.1f} s, more than half of the {timeout:g} s {server} is given to answer: "
                        "find what slows the grading environment's start, or raise its http_timeout", HUB_CONFIG)]
    return []


def timing(deployment: Deployment) -> str | None:
    """The measured start time, for the all-clear line, or ``None``."""
    probe = deployment.grader_probe
    if probe is None or probe.seconds is None:
        return None
    server, timeout = deployment.formgrader_timeout() or (_PAGE_SERVER, PAGE_TIMEOUT)
    return f"the formgrader starts in {probe.seconds:.1f} s of the {timeout:g} s {server} is given"
