"""The trusted side of the verdict worker: start it, call student functions, survive it.

:class:`WorkerSession` writes the submission's code cells into a fresh
scratch directory, starts ``runtime/worker.py`` there through a
:class:`~ch11_autograder.untrusted.launch.Launcher`, and turns calls into
request/reply exchanges (``ch11_autograder.protocol``). Every reply is hostile
data: it is read with a time limit and a byte cap and decoded strictly.

Failure model (the exceptions are ``trusted/worker_errors.py``'s):

* the student's function raises -> :class:`StudentError` (the worker lives on);
* the name is missing or not callable -> :class:`NotDefined` (a StudentError);
* the return value cannot travel -> :class:`Unencodable` (a StudentError);
* no reply within ``call_timeout`` -> :class:`CallTimeout`;
* the worker exits or closes its pipe -> :class:`WorkerCrashed`;
* the reply is malformed or has the wrong id -> :class:`ProtocolError`.

After a timeout, crash or malformed reply the process group is killed and the
session is marked dead; the next call starts a fresh worker, which executes
the cells again. After ``max_restarts`` restarts the session gives up and
every further call raises :class:`WorkerCrashed` at once.

:meth:`WorkerSession.call_many` sends several calls in one message, each given the outcome
it would have had alone (``trusted/worker_batches.py``); the pipes themselves, with their
deadlines and byte caps, are ``trusted/worker_pipe.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .. import protocol
from ..protocol import CellOutcome, ProtocolError
from ..untrusted.launch import Launcher, Limits
from .worker_batches import WorkerBatches
from .worker_errors import CallTimeout, NotDefined, StudentError, Unencodable, WorkerCrashed

__all__ = ["WorkerSession"]

_WHERE = re.compile(r"cell (\d+), line (\d+)\Z")


class WorkerSession(WorkerBatches):
    """A running verdict worker for one submission; use as a context manager.

    Use a session from one long-lived thread: a sandbox may tie the worker's
    life to the thread that started it (bwrap's ``--die-with-parent``).

    Args:
        cells: source of the submission's code cells, in notebook order.
        launcher: how to start untrusted code (a sandbox backend).
        limits: resource limits for each worker process.
        call_timeout: seconds one call may take, wall clock.
        startup_timeout: seconds the worker may take to start and execute all
            cells (answering hello).
        cell_time_limit: seconds one cell may run inside the worker before it
            is interrupted (the worker then moves on to the next cell);
            0 disables it.
        max_restarts: fresh workers started after the first one; after that,
            calls fail at once with :class:`WorkerCrashed`.
        support_files: extra files to place in the scratch directory,
            relative POSIX path -> bytes (data files the notebook reads).
    """

    def __init__(
        self,
        cells: Sequence[str],
        launcher: Launcher,
        limits: Limits | None = None,
        call_timeout: float = 10.0,
        *,
        startup_timeout: float = 60.0,
        cell_time_limit: float = 30.0,
        max_restarts: int = 2,
        support_files: Mapping[str, bytes] | None = None,
    ) -> None:
        self.cells = list(cells)
        self.launcher = launcher
        self.limits = limits or Limits()
        self.call_timeout = float(call_timeout)
        self.startup_timeout = float(startup_timeout)
        self.cell_time_limit = float(cell_time_limit)
        self.max_restarts = int(max_restarts)
        self.support_files = dict(support_files or {})
        for name in self.support_files:
            _check_relative(name)
        #: Outcome of each cell in the most recent worker, after it answered hello.
        self.report: tuple[CellOutcome, ...] = ()
        #: Workers started so far (the first start plus restarts).
        self.starts = 0
        #: Log lines about crashes and restarts, for the grader's log only.
        self.incidents: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._scratch: Path | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = bytearray()
        self._next_id = 1
        #: Values kept in the worker (``keep``), re-sent to every fresh worker.
        self._kept: dict[str, Any] = {}
        self._gave_up: WorkerCrashed | CallTimeout | None = None
        #: Every call sent to the current worker since it started, in order: what its state may hold.
        self.asked: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> WorkerSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        """True while a worker process is running and trusted to be in sync."""
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        """Stop the worker (if any) and delete its scratch directory."""
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        self._proc = None
        self._buffer = bytearray()
        if proc is not None:
            kill_tree = getattr(proc, "kill_tree", None)  # sandbox processes know their whole tree
            if callable(kill_tree):
                with contextlib.suppress(OSError):
                    kill_tree()
            else:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None
        if self._scratch is not None:
            _remove_tree(self._scratch)
            self._scratch = None

    def start(self) -> tuple[CellOutcome, ...]:
        """Start a fresh worker, execute the cells, and return the cell report.

        Raises:
            WorkerCrashed: the restart budget is spent, or the worker died or
                answered garbage while starting.
            CallTimeout: the cells did not finish within ``startup_timeout``.

        A failed start is final for the session (the same cells would fail
        the same way): every later call raises the same error at once.
        """
        if self._gave_up is not None:
            raise self._gave_up
        self._kill()
        if self.starts > self.max_restarts:
            self._gave_up = WorkerCrashed(
                f"the process running your code failed {self.starts} times in a row, so the grader stopped "
                "retrying; the remaining checks could not run",
                detail="\n".join(self.incidents),
            )
            raise self._gave_up
        self.starts += 1
        self.asked = []
        self._scratch = Path(tempfile.mkdtemp(prefix="ch11-worker-"))
        spec = {"version": 1, "cells": self.cells, "cell_time_limit": self.cell_time_limit}
        (self._scratch / "cells.json").write_text(json.dumps(spec), encoding="utf-8")
        for name, data in self.support_files.items():
            target = self._scratch / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self._stderr = tempfile.TemporaryFile()
        self._proc = self.launcher.spawn(
            "worker.py",
            ["cells.json"],
            scratch=self._scratch,
            limits=self.limits,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        os.set_blocking(self._proc.stdout.fileno(), False)
        call_id = self._take_id()
        try:
            self._send(protocol.make_hello(call_id), "", self.startup_timeout)
            message = self._receive("", self.startup_timeout)
            reply = protocol.parse_reply(message)
            if not isinstance(reply, protocol.HelloReply) or reply.id != call_id:
                raise ProtocolError("message", "the worker did not answer hello with its cell report")
        except (CallTimeout, WorkerCrashed, ProtocolError) as exc:
            # Running the same cells again would fail the same way: the failure is final.
            self._record_incident(exc)
            self._kill()
            self._gave_up = (
                exc
                if isinstance(exc, WorkerCrashed | CallTimeout)
                else WorkerCrashed("the process running your code did not start properly", detail=str(exc))
            )
            raise self._gave_up from None
        self.report = tuple(dataclasses.replace(c, where=self.describe_where(c.where)) for c in reply.cells)
        for name, value in self._kept.items():
            call_id = self._take_id()
            self._exchange(call_id, protocol.make_keep(call_id, name, value), "", name)
        return self.report

    def describe_where(self, where: str) -> str:
        """The worker's ``cell N, line M`` in words a student can find in the notebook.

        Code cells are not numbered in Jupyter, so the cell is named by its
        first non-empty line: ``line 2 of the code cell starting "def double(x):"``.
        Anything else is returned unchanged.
        """
        match = _WHERE.match(where)
        if match is None or not 0 <= int(match[1]) < len(self.cells):
            return where
        first = next((line.strip() for line in self.cells[int(match[1])].splitlines() if line.strip()), "")
        return f'line {match[2]} of the code cell starting "{protocol.truncate(first, 50)}"'

    def _record_incident(self, exc: BaseException) -> None:
        self.incidents.append(f"start {self.starts}: {type(exc).__name__}: {exc}\n{self._diagnostics()}")

    def _take_id(self) -> int:
        call_id = self._next_id
        self._next_id += 1
        return call_id

    # ------------------------------------------------------------------ calls

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` evaluated by the student's code, decoded.

        Arguments are encoded as requests (so :class:`~ch11_autograder.protocol.RngSeed`
        and ``StochasticChain`` are rebuilt in the worker); a top-level
        :class:`~ch11_autograder.protocol.Kept` argument is the object :meth:`keep` stored.

        Raises:
            StudentError, NotDefined, Unencodable: see the module docstring;
                the worker stays alive.
            CallTimeout, WorkerCrashed, ProtocolError: the worker was killed;
                the next call starts a fresh one.
            TypeError: an argument cannot be encoded (a bug in the suite).
        """
        return self._call(fn, args, kwargs, watch=False).value

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> protocol.Reply:
        """As :meth:`call`, and also the arguments as the call left them.

        Returns the successful :class:`~ch11_autograder.protocol.Reply`: ``value``,
        and ``args``/``kwargs`` decoded from the worker's ``watch_form`` of each
        argument after the call (``None`` for one without a wire form; a numpy
        Generator as a ``Generator`` record of its state). Raises as :meth:`call`.
        """
        return self._call(fn, args, kwargs, watch=True)

    def defaults(self, fn: str) -> dict[str, Any]:
        """The default values the student's function ``fn`` declares, by parameter, in order.

        Read from the function's signature in the worker; nothing is called. A default
        without a wire form comes back as an ``Unencodable`` record naming its type.
        Raises as :meth:`call` (``StudentError`` if the signature cannot be read).
        """
        call_id = self._take_id()
        try:
            request = protocol.make_defaults(call_id, fn)
        except ProtocolError as exc:
            raise TypeError(f"grader bug: {exc}") from None
        if not self.alive:
            self.start()
        value = self._exchange(call_id, request, fn).value
        if not isinstance(value, dict):
            self._kill()
            raise ProtocolError("message.value", "expected the function's defaults as a dict")
        return value

    def keep(self, value: Any, label: str = "") -> protocol.Kept:
        """Store ``value`` (decoded once) in the worker; pass the result to several calls.

        Every call given the returned marker receives the same object, so state a
        student's function leaves on it (a counter, a cache, a consumed generator)
        is visible to the next call, as when a notebook reuses one object. A fresh
        worker (after a crash) gets a fresh copy. ``label`` is how the value reads
        in feedback.

        Raises:
            CallTimeout, WorkerCrashed, ProtocolError: as :meth:`call`.
            TypeError: ``value`` cannot be encoded (a bug in the suite).
        """
        name = f"kept{len(self._kept) + 1}"
        call_id = self._take_id()
        try:
            request = protocol.make_keep(call_id, name, value)
        except ProtocolError as exc:
            raise TypeError(f"grader bug: a kept value cannot be sent: {exc}") from None
        if not self.alive:
            self.start()
        self._exchange(call_id, request, "", name)
        self._kept[name] = value
        return protocol.Kept(name, label)

    def _call(self, fn: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, watch: bool) -> protocol.Reply:
        call_id = self._take_id()
        try:
            request = protocol.make_call(call_id, fn, args, kwargs, watch=watch)
        except ProtocolError as exc:
            raise TypeError(f"grader bug: argument of {fn}() cannot be sent: {exc}") from None
        if not self.alive:
            self.start()
        self.asked.append((fn, tuple(args), dict(kwargs)))
        return self._exchange(call_id, request, fn)

    def call_fresh(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as the first call of a fresh worker that ran the same cells: what the call
        gives with no earlier call behind it, as in a student's fresh kernel.

        The worker is one of its own, stopped after the call; this session's worker, its state, its
        kept values and its restart budget are untouched (a kept argument is not known there: the
        fresh worker refuses the call, a ``ProtocolError``). Raises as :meth:`call`.
        """
        with WorkerSession(self.cells, self.launcher, self.limits, self.call_timeout,
                           startup_timeout=self.startup_timeout, cell_time_limit=self.cell_time_limit,
                           max_restarts=0, support_files=self.support_files) as fresh:
            return fresh.call(fn, *args, **kwargs)

    def _exchange(self, call_id: int, request: bytes, fn: str, kept: str = "") -> protocol.Reply:
        """Send one framed request, read its reply, and turn a failure into the exceptions above.

        ``kept`` names the value of a keep request: any error reply to one is the worker's fault.
        """
        try:
            self._send(request, fn, self.call_timeout)
            reply = self._read_reply(call_id, fn, self.call_timeout)
        except (CallTimeout, WorkerCrashed, ProtocolError) as exc:
            self._record_incident(exc)
            self._kill()
            raise
        if reply.ok:
            return reply
        raise self._failure(reply, kept, fn)

    def _read_reply(self, call_id: int, fn: str, seconds: float) -> protocol.Reply:
        reply = protocol.parse_reply(self._receive(fn, seconds))
        if not isinstance(reply, protocol.Reply) or reply.id != call_id:
            raise ProtocolError("message.id", f"expected the reply to call {call_id}")
        return reply

    def _failure(self, reply: protocol.Reply, kept: str = "", fn: str = "") -> StudentError | ProtocolError:
        """The exception an error reply to a call of ``fn`` stands for; a worker that is confused is killed first."""
        error = reply.error
        assert error is not None
        if error.kind == "exception" and not kept:
            return StudentError(error.type, error.message, self.describe_where(error.where))
        if error.kind in ("not_defined", "not_callable") and not kept:
            return NotDefined(error.type, error.message)
        if error.kind == "unencodable" and not kept:
            return Unencodable(error.type, error.message, fn)
        # bad_request / internal, or any error to a keep: the worker is confused; do not trust it further.
        self.incidents.append(f"worker reported {error.kind}: {error.type}: {error.message}")
        self._kill()
        return ProtocolError("message.error", f"the worker could not process the call ({error.kind})")


def _check_relative(name: str) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"support file {name!r} must be a relative path inside the scratch directory")


def _remove_tree(path: Path) -> None:
    """Delete a scratch tree that hostile code may have made hard to delete."""

    def make_writable(function: Any, target: str, exc_info: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target) or ".", 0o700)
            os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            function(target)

    shutil.rmtree(path, onerror=make_writable)
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
