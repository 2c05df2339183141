"""Waking the service when the inbound folder changes, with a periodic rescan as the safety net.

:class:`Watcher` runs ``watchfiles`` (inotify on Linux) on the inbound folder in a daemon thread
and sets an event on every change; :meth:`Watcher.wait` returns when a change came or when
``rescan_seconds`` passed, whichever is first. Events can be missed (a watch lost under load, a
folder created while the service was down, a file system without inotify): the service rescans
the whole folder every time :meth:`Watcher.wait` returns, so the worst case is one rescan period
late, never lost.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

__all__ = ["Watcher"]

log = logging.getLogger(__name__)


class Watcher:
    """File watching on ``folder``; without ``watchfiles`` (or when it fails) the rescans alone."""

    def __init__(self, folder: Path, rescan_seconds: float) -> None:
        self.folder = folder
        self.rescan_seconds = rescan_seconds
        self.changed = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ch11-serve-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            from watchfiles import watch
        except ImportError:
            log.warning("watchfiles is not installed: rescanning %s every %g s only", self.folder,
                        self.rescan_seconds)
            return
        try:
            for _changes in watch(self.folder, stop_event=self.stop, recursive=True, debounce=200, step=50,
                                  raise_interrupt=False):
                self.changed.set()
        except Exception as exc:  # rescans go on; the watch is an optimisation
            log.warning("watching %s failed (%s: %s): rescanning every %g s only", self.folder,
                        type(exc).__name__, exc, self.rescan_seconds)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a change or ``timeout`` (default the rescan period); whether a change woke it."""
        woke = self.changed.wait(self.rescan_seconds if timeout is None else timeout)
        self.changed.clear()
        return woke

    def poke(self) -> None:
        """Wake :meth:`wait` now (the grading thread finished a round)."""
        self.changed.set()

    def close(self) -> None:
        self.stop.set()
