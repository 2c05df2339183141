"""A fork server's children: waking its loop when one ends, and reaping the ones that ended.

One implementation for the two fork servers, ``zygote.py`` (which loads this file by path
from its own directory) and ``ch11_autograder.batch.nbgrader_fork`` (which imports it).
Standard library only and nothing of the package, like the rest of ``runtime/``.
"""

from __future__ import annotations

import os
import selectors
import signal
from collections.abc import Iterator

__all__ = ["ended", "wake_on_child_exit"]


def wake_on_child_exit(selector: selectors.BaseSelector) -> int:
    """Make SIGCHLD wake ``selector``: returns the descriptor it now watches, to be drained with ``os.read``.

    A signal's wake-up descriptor gets a byte per signal; the handler itself does nothing.
    A child ends this (``fresh.restore`` clears both).
    """
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector.register(wake_r, selectors.EVENT_READ)
    return wake_r


def ended() -> Iterator[tuple[int, int]]:
    """``(pid, exit code or -signal)`` of every child that has ended, without waiting for any."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, os.waitstatus_to_exitcode(status)
