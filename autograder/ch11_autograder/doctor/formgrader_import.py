"""How long the formgrader takes to import with the course's config, against its service's start timeout.

The hub waits ``timeout`` seconds (the service's, JupyterHub's default 30) for a managed service
with a ``url`` to answer, and exits when it does not. Importing formgrader and loading the course's
config (the grading package's steps) is most of a Jupyter server's start; past half the timeout
the start is at risk on a busy machine. Without a hub config the page's 120 s is the yardstick.
"""

from __future__ import annotations

from .deployment import HUB_CONFIG, Deployment, Problem

__all__ = ["PAGE_TIMEOUT", "check_formgrader_import"]

#: The formgrader service's timeout on the page.
PAGE_TIMEOUT = 120.0


def check_formgrader_import(deployment: Deployment) -> list[Problem]:
    probe = deployment.grader_probe
    if probe is None or probe.seconds is None:
        return []  # nothing to time: the nbgrader check says why
    service, timeout = deployment.formgrader_timeout() or ("ch11-formgrader", PAGE_TIMEOUT)
    if probe.seconds > timeout / 2:
        return [Problem(f"formgrader's import with the course's config took {probe.seconds:.1f} s, more than half "
                        f"of the {service} service's start timeout ({timeout:g} s): raise its timeout",
                        HUB_CONFIG)]
    return []


def timing(deployment: Deployment) -> str | None:
    """The measured import time, for the all-clear line, or ``None``."""
    probe = deployment.grader_probe
    if probe is None or probe.seconds is None:
        return None
    service, timeout = deployment.formgrader_timeout() or ("ch11-formgrader", PAGE_TIMEOUT)
    return f"formgrader imports in {probe.seconds:.1f} s of {service}'s {timeout:g} s start timeout"
