"""What a Dask worker that grades does when it is closed or told to stop (docs/batch.md, "Stopping a worker").

:class:`StopWithWorker` is a Dask worker plugin: :class:`.cluster.DaskRunner` registers it on the
cluster when it connects (the scheduler keeps it and hands it to every worker, those joining
later too). It does two things in each worker process:

* **On the worker's close, its grading ends** (:meth:`StopWithWorker.teardown`, which Dask calls
  from ``Worker.close`` whatever closed it: the scheduler, a signal, a restart): the gradings in
  flight are killed and the slots' nbgrader fork servers end (:func:`.jobs.stop_grading`), instead
  of at interpreter exit, which a worker stuck in its close never reaches. By then Dask has already
  dropped the running jobs' results: the scheduler gives their submissions to another worker.
* **SIGTERM and SIGINT close the worker before anything else** (:meth:`StopWithWorker.setup`
  installs the handler in the worker's main thread). ``dask worker --no-nanny`` answers these
  signals by leaving its event loop, which cancels every task, a ``Worker.close`` the scheduler
  started among them; the worker's connection handler then waits in its own ``close`` for the
  cancelled one to finish, which never happens: the process stays ``dask worker [closing]``
  forever, with its fork servers. Here the signal first closes the worker completely
  (``Worker.close``, which runs the teardown above), and only then is passed on to the handler
  that was there (Dask's, which ends the loop, now with nothing left to wait for).

Dask is imported here: this module is imported only by :mod:`.cluster` (and by Dask, in the
workers, when it unpickles the plugin).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from .jobs import stop_grading

__all__ = ["PLUGIN_NAME", "STOP_SIGNALS", "StopWithWorker"]

log = logging.getLogger(__name__)

#: The plugin's name on the cluster (one per cluster: registering it again changes nothing).
PLUGIN_NAME = "ch11-stop-with-worker"
#: The signals a worker is stopped with: SIGTERM (systemd, Kubernetes, a batch system's job end), SIGINT (Ctrl-C).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: Seconds a signalled worker's close may take before the signal is passed on anyway (each step of Dask's close
#: is bounded by the same number; the teardown has by then ended the gradings, so the close is quick).
CLOSE_SECONDS = 8.0


class StopWithWorker(WorkerPlugin):
    """Ends a worker's grading with the worker, and closes the worker on SIGTERM and SIGINT (see the module)."""

    idempotent = True  # a second batch on the same cluster keeps the plugin the workers have

    def setup(self, worker: Any) -> None:
        _SignalStop.install(worker)

    def teardown(self, worker: Any) -> None:
        # Dask also removes a plugin it replaces; only a closing worker's grading ends.
        if str(getattr(worker.status, "name", worker.status)) in ("closing", "closed", "closing_gracefully", "failed"):
            stop_grading()


class _SignalStop:
    """This process's stop-signal handler (one per process, however many workers or batches set it up)."""

    _installed: _SignalStop | None = None

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.workers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.previous: dict[int, Callable[..., Any] | int | None] = {}
        self.stopping = False
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def install(cls, worker: Any) -> None:
        """Handle :data:`STOP_SIGNALS` for ``worker``; nothing where Python cannot (a worker whose event loop is
        not in the main thread: a threaded ``LocalCluster``, which its own process stops)."""
        if threading.current_thread() is not threading.main_thread():
            return
        if cls._installed is None:
            stop = cls(asyncio.get_running_loop())
            for signum in STOP_SIGNALS:
                stop.previous[signum] = signal.signal(signum, stop._on_signal)
            cls._installed = stop
        cls._installed.workers.add(worker)

    def _on_signal(self, signum: int, _frame: object) -> None:
        # In the main thread between two steps of the event loop: nothing is logged or awaited here.
        self.loop.call_soon_threadsafe(self._start, signum)

    def _start(self, signum: int) -> None:
        if not self.stopping:  # a second signal while the worker closes: the close under way answers it too
            self.stopping = True
            self._task = self.loop.create_task(self._close_then_pass_on(signum))

    async def _close_then_pass_on(self, signum: int) -> None:
        name = signal.Signals(signum).name
        log.info("%s: closing the worker before Dask stops its event loop", name)
        try:
            closes = [asyncio.ensure_future(worker.close(reason=f"signal-{name}", nanny=False, timeout=CLOSE_SECONDS))
                      for worker in list(self.workers)]
            # Waited for, never cancelled: a cancelled close is what leaves a worker closing forever.
            if closes:
                await asyncio.wait(closes, timeout=2 * CLOSE_SECONDS)
        except Exception:  # the signal is passed on whatever the close did
            log.exception("%s: the worker's close failed", name)
        finally:
            stop_grading()  # also when the close did not reach the plugin's teardown
            self._pass_on(signum)

    def _pass_on(self, signum: int) -> None:
        """Restore the handlers that were there and act on ``signum`` as the one for it would have."""
        for sig, handler in self.previous.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        type(self)._installed = None
        handler = self.previous.get(signum)
        if callable(handler):
            handler(signum, None)
        elif handler in (signal.SIG_DFL, None):
            os.kill(os.getpid(), signum)
