"""The grader's end of a fork server's socket: one implementation for the zygote and the nbgrader fork server.

A fork server is a process that has done its imports once and forks a child per request
(``untrusted/runtime/zygote.py`` for a submission's runs, ``batch/nbgrader_fork.py`` for
nbgrader). Both speak ``runtime/frames.py`` on a unix stream socket and answer the same way:

* ``{"op": "ready"}`` once its imports are done, or ``{"op": "refused", "message": m}``;
* per request ``{"op": "started", "id": N, ...}`` or ``{"op": "failed", "id": N, "message": m}``;
* when the child ends ``{"op": "exited", "id": N, "status": code or -signal}`` (the server
  reaps its children with ``waitpid``; the zygote sends the run's writeback files after it).

:class:`ForkClient` holds the socket, numbers the requests, sends them with their
descriptors, matches each answer to the request waiting for it, and hands every
``exited`` to its handler. Its reader thread ends on end of file, a
malformed frame or an ``op`` outside the list above (the zygote runs in the sandbox: what
it sends is untrusted); then every request still waiting gets ``failed`` and every run in
flight is finished as killed (``-SIGKILL``: the children die with their server).
"""

from __future__ import annotations

import contextlib
import queue
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from .runtime import frames

__all__ = ["ForkClient", "exit_status"]

#: Seconds a server has to answer a request with ``started`` or ``failed``.
ANSWER_SECONDS = 60.0


class _Run(Protocol):
    run_id: int


RunT = TypeVar("RunT", bound=_Run)


def exit_status(message: dict[str, Any]) -> int:
    """The ``status`` of an ``exited`` message; ``-SIGKILL`` when it is missing or not a number."""
    status = message.get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else -signal.SIGKILL


class ForkClient(Generic[RunT]):
    """A fork server's socket seen from the grader: requests out, answers matched, runs finished.

    Args:
        server: how messages name the server ("the zygote").
        gone: the exception :meth:`request` raises when nothing was started.
        finish: ends a run with its exit status (``-SIGKILL`` when the server ended first).
        exited: handles each ``exited`` message instead of :meth:`on_exited`, for a server
            that sends more after it (the zygote's writeback files); it reads what follows
            from ``sock`` and finishes the run it :meth:`take` s.

    ``sock`` is the grader's end; ``theirs`` the server's, for the caller to hand to the
    server process and close. Call :meth:`start_reading` once the server is started.
    """

    def __init__(self, server: str, gone: type[Exception], finish: Callable[[RunT, int], None], *,
                 exited: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.server = server
        self.exited = exited or self.on_exited
        self.gone = gone
        self.finish = finish
        self.lock = threading.Lock()
        self.runs: dict[int, RunT] = {}
        self.replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.next_id = 1
        self.dead = False
        self.hello: queue.Queue[dict[str, Any]] = queue.Queue()
        self.sock, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.reader: threading.Thread | None = None

    # ------------------------------------------------------------------ reading

    def start_reading(self, thread_name: str) -> None:
        """Start the thread that reads the server's messages until the socket ends."""
        self.reader = threading.Thread(target=self._read_loop, name=thread_name, daemon=True)
        self.reader.start()

    def wait_ready(self, timeout: float) -> dict[str, Any] | None:
        """The server's ``ready`` or ``refused`` (``refused`` too when it ended first); ``None`` after ``timeout``."""
        try:
            return self.hello.get(timeout=timeout)
        except queue.Empty:
            return None

    def on_exited(self, message: dict[str, Any]) -> None:
        """A run ended: finish it with its status."""
        run = self.take(int(message["id"]))
        if run is not None:
            self.finish(run, exit_status(message))

    def take(self, run_id: int) -> RunT | None:
        """Remove run ``run_id`` from the runs in flight and return it (``None``: not in flight)."""
        with self.lock:
            return self.runs.pop(run_id, None)

    def _read_loop(self) -> None:
        with contextlib.suppress(EOFError, OSError, ValueError, KeyError, TypeError):
            while True:
                message = frames.read_header(self.sock)
                op = message.get("op")
                if op in ("ready", "refused"):
                    self.hello.put(message)
                elif op in ("started", "failed"):
                    box = self.replies.get(int(message.get("id") or 0))
                    if box is not None:
                        box.put(message)
                elif op == "exited":
                    self.exited(message)
                else:
                    break
        self.dead = True
        self.hello.put({"op": "refused", "message": f"{self.server} ended"})
        for box in list(self.replies.values()):
            box.put({"op": "failed", "message": f"{self.server} ended"})
        with self.lock:
            orphans = list(self.runs.values())
            self.runs.clear()
        for run in orphans:
            self.finish(run, -signal.SIGKILL)

    # ------------------------------------------------------------------ requests

    def request(self, header: dict[str, Any], new_run: Callable[[int], RunT], *, fds: Sequence[int] = (),
                payloads: Sequence[bytes] = ()) -> tuple[RunT, dict[str, Any]]:
        """Send ``header`` (with a new ``id``) and ``fds``, then ``payloads``; wait for the answer.

        ``new_run(id)`` makes the run the answer's ``exited`` will finish; it is in flight from
        before the request is sent. Returns the run and the ``started`` answer.

        Raises:
            gone: the server has ended, stopped reading, refused or did not answer within
                :data:`ANSWER_SECONDS` (nothing was started; the run is not in flight).
        """
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        with self.lock:
            if self.dead:
                raise self.gone(f"{self.server} has ended")
            run_id = self.next_id
            self.next_id += 1
            run = new_run(run_id)
            self.runs[run_id] = run
            self.replies[run_id] = box
            try:
                raw = frames.pack({**header, "id": run_id})
                socket.send_fds(self.sock, [raw[:frames.LENGTH_BYTES]], list(fds))
                self.sock.sendall(raw[frames.LENGTH_BYTES:])
                for payload in payloads:
                    self.sock.sendall(payload)
            except (OSError, ValueError) as exc:
                self.runs.pop(run_id, None)
                self.replies.pop(run_id, None)
                raise self.gone(f"{self.server} stopped reading: {exc}") from exc
        try:
            answer = box.get(timeout=ANSWER_SECONDS)
        except queue.Empty:
            answer = {"op": "failed", "message": f"no answer within {ANSWER_SECONDS:g} s"}
        finally:
            self.replies.pop(run_id, None)
        if answer.get("op") != "started":
            self.take(run_id)
            raise self.gone(f"{self.server} could not start it: {answer.get('message')}")
        return run, answer

    def send(self, header: dict[str, Any]) -> None:
        """Send one message that has no answer (a ``kill``); a server that stopped reading is ignored."""
        with contextlib.suppress(OSError, ValueError), self.lock:
            self.sock.sendall(frames.pack(header))

    def close(self) -> None:
        """Close the grader's end (the server reads end of file) and the server's, if still held.

        The grader's end is shut down before it is closed: a close alone neither wakes the reader
        thread blocked in ``recv`` on it nor ends the connection while that ``recv`` holds it, so
        the reader would wait, and the server with it, for as long as the process lives. The
        shutdown ends both at once: the reader reads end of file, the server too.
        """
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        for sock in (self.sock, self.theirs):
            with contextlib.suppress(OSError):
                sock.close()
