"""What the exchanges raise to the grading side (re-exported by :mod:`.api`)."""

from __future__ import annotations

__all__ = ["Unreachable"]


class Unreachable(RuntimeError):
    """The exchange could not be reached (a service down or restarting) or answered what cannot be used: nothing
    is lost, the step is tried again later; the message says where and why."""
