"""The one rule for a heavy tier whose machinery is missing: skip, except under CI, where it fails.

Each tier's ``require_*`` (``batch_support.require_docker``, ``browser.require_browser``,
``course_users.require_root``, ``hub.require_hub``, ``slurm_cluster.require_slurm``) computes why
it cannot run and hands that here, so a CI machine that lost Docker, Chromium, root, the proxy or
Slurm fails loudly instead of passing with the tier skipped.
"""

from __future__ import annotations

import os

import pytest


def require(tier: str, reason: str | None) -> None:
    """Return when ``reason`` is ``None``; else skip with it, or fail when ``$CI`` is set."""
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but the {tier} tier cannot run ({reason}): CI must run it", pytrace=False)
    pytest.skip(reason)
