"""A fork server's loop: waiting for a request or a child's end, and reaping the children that ended.

One implementation for the two fork servers, ``zygote.py`` (which loads this file by path
from its own directory) and ``ch11_autograder.batch.nbgrader_fork`` (which imports it).
Each reads and answers its own requests and keeps its own record of its runs; :func:`serve`
is the loop around them. Standard library only and nothing of the package, like the rest
of ``runtime/``.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
from collections.abc import Callable, Iterator

__all__ = ["ended", "serve", "wake_on_child_exit"]


def serve(sock: socket.socket, on_request: Callable[[], bool], on_exit: Callable[[int, int], None]) -> None:
    """Serve ``sock`` until its peer closes it: a request at a time, each ended child reaped as it ends.

    Waits for ``sock`` to be readable or a child to end (a second at most). ``on_request()``
    reads the request waiting on ``sock`` and answers it; it returns ``False`` when the socket
    has ended instead, which ends the loop. After every wait ``on_exit(pid, code)`` is called
    for each child that has ended (:func:`ended`), including children the server does not know
    (orphans it adopted as a subreaper). What ``on_request`` or ``on_exit`` raises ends the loop.
    """
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    wake_r = wake_on_child_exit(selector)
    while True:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj == wake_r:
                os.read(wake_r, 4096)
                continue
            if not on_request():
                return
        for pid, code in ended():
            on_exit(pid, code)


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
