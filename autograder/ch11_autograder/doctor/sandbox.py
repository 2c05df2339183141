"""The bubblewrap sandbox can be built here: its probe (user namespaces, a usable bwrap), as grading makes it.

The probe is the backend's own (:meth:`..untrusted.backends.bwrap.BwrapLauncher.check`, run when the
launcher is made); its refusal names what is missing (``sysctl user.max_user_namespaces``, ...). Run
the doctor as the user who grades (the instructor): grading as root needs a pids cgroup, and the
probe says so when there is none.
"""

from __future__ import annotations

from ..untrusted.choose import choose_launcher
from ..untrusted.launch import SandboxUnavailable
from .deployment import SANDBOX, Deployment, Problem

__all__ = ["check_sandbox"]


def check_sandbox(deployment: Deployment) -> list[Problem]:
    try:
        choose_launcher("bwrap")  # builds a sandbox once, or refuses
    except SandboxUnavailable as exc:
        return [Problem(f"the bubblewrap sandbox cannot run here: {exc}", SANDBOX)]
    return []
