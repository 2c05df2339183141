"""Several calls in one message to the verdict worker: :class:`Call`, and ``WorkerSession.call_many``.

:meth:`WorkerSession.call_many` sends several calls (:class:`Call`) in one message
and gives each call the outcome it would have had alone: the worker answers them
in order, one reply per call as it returns, so each call's time limit runs from the
reply before it and a call that hangs or kills the worker is the call reported. A
timeout, crash or malformed reply ends the batch there; the calls after it are
reported :class:`~.worker_errors.NotRun` (the next ``call_many`` or ``call`` starts a fresh worker,
as the next single call would).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import protocol
from ..protocol import CellOutcome, ProtocolError
from .worker_errors import CallTimeout, NotRun, StudentError, WorkerCrashed, WorkerError
from .worker_pipe import WorkerPipe

__all__ = ["Call", "Outcome", "WorkerBatches"]


@dataclass(frozen=True)
class Call:
    """One call of a batch: ``fn(*args, **kwargs)`` in the student's code.

    Attributes:
        fn, args, kwargs: as for :meth:`WorkerSession.call`.
        watch: also return the arguments as the call left them and its warnings,
            as :meth:`WorkerSession.call_watch`.
        timeout: seconds this call may take, from the reply before it (``None``: the
            session's ``call_timeout``).
    """

    fn: str
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    watch: bool = False
    timeout: float | None = None


#: What one call of a batch came to: its reply when it succeeded, else the exception
#: :meth:`WorkerSession.call` would have raised (or :class:`NotRun`).
Outcome = protocol.Reply | WorkerError | ProtocolError


class WorkerBatches(WorkerPipe):
    """The batched calls of ``WorkerSession``, a base class of it (it is never used alone)."""

    call_timeout: float
    _next_id: int
    asked: list[tuple[str, tuple[Any, ...], dict[str, Any]]]

    if TYPE_CHECKING:  # provided by WorkerSession

        @property
        def alive(self) -> bool: ...

        def start(self) -> tuple[CellOutcome, ...]: ...

        def _kill(self) -> None: ...

        def _record_incident(self, exc: BaseException) -> None: ...

        def _read_reply(self, call_id: int, fn: str, seconds: float) -> protocol.Reply: ...

        def _failure(self, reply: protocol.Reply, kept: str = "", fn: str = "") -> StudentError | ProtocolError: ...

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Outcome]:
        """Make ``calls`` in order through as few messages as fit; one outcome per call.

        Each outcome is what :meth:`call_watch` would return for that call alone (the
        :class:`~ch11_autograder.protocol.Reply`, also for an unwatched call: read its
        ``value``) or the exception :meth:`call` would raise, not raised:
        :class:`StudentError` (and subclasses), :class:`CallTimeout` (the call's own
        ``timeout``, counted from the reply before it), :class:`WorkerCrashed`,
        :class:`ProtocolError`. The first timeout, crash or malformed reply ends the
        batch, with the worker killed as after a single call; every later call is
        :class:`NotRun` (``"stopped"``) and was not made: pass them to ``call_many``
        again to make them in a fresh worker, as the next single call would be.

        Args:
            stop_on_error: a call whose reply is an error (the student's code raised, a
                name is missing, a value cannot travel) also ends the batch: the calls
                after it are not made (``NotRun("stopped")``), as when a caller lets the
                first ``StudentError`` propagate.
            deadline: a ``time.monotonic()`` instant; a call that would start after it is
                not made (``NotRun("budget")``) and neither is any after it. The worker
                checks it before each call, on its own clock from when it read the message.

        Raises:
            TypeError: an argument cannot be encoded or a timeout is not positive (a bug
                in the suite); raised before any call is made.
            SandboxUnavailable: the sandbox refused to start a worker.
        """
        calls = list(calls)
        entries = []
        for call in calls:
            if call.timeout is not None and not call.timeout > 0:
                raise TypeError(f"grader bug: the timeout of {call.fn}() must be positive, got {call.timeout!r}")
            try:
                entries.append(protocol.make_call_entry(call.fn, call.args, call.kwargs, watch=call.watch))
            except ProtocolError as exc:
                raise TypeError(f"grader bug: argument of {call.fn}() cannot be sent: {exc}") from None
        outcomes: list[Outcome] = []
        stopped: NotRun | None = None
        start = 0
        while start < len(calls) and stopped is None:
            end = _frame_end(entries, start)
            made, stopped = self._run_frame(calls[start:end], entries[start:end], stop_on_error, deadline)
            outcomes += made
            if stopped is None and stop_on_error and isinstance(made[-1], WorkerError):
                stopped = NotRun("stopped")  # the error ended its message; the next one is not sent
            start = end
        if stopped is not None:
            outcomes += [stopped] * (len(calls) - len(outcomes))
        return outcomes

    def _run_frame(
        self, calls: Sequence[Call], entries: Sequence[bytes], stop_on_error: bool, deadline: float | None
    ) -> tuple[list[Outcome], NotRun | None]:
        """One batch message: the outcomes of the calls made, and why the rest were not (or ``None``).

        The budget is decided on this side's clock, as for single calls: a call whose turn
        comes after ``deadline`` is not run, whatever the worker does. The worker is told
        the budget too, so that it stops by itself, and what it made after the deadline is
        read and dropped (:meth:`_drain`).
        """
        if deadline is not None and time.monotonic() > deadline:
            return [], NotRun("budget")
        if not self.alive:
            try:
                self.start()
            except (CallTimeout, WorkerCrashed) as exc:
                return [exc], NotRun("stopped")
        first_id = self._next_id
        self._next_id += len(calls)
        budget_ms = None if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
        request = protocol.make_calls(first_id, entries, budget_ms=budget_ms, stop_on_error=stop_on_error)
        self.asked += [(call.fn, tuple(call.args), dict(call.kwargs)) for call in calls]
        made: list[Outcome] = []
        try:
            self._send(request, calls[0].fn, _limit(calls[0], self.call_timeout))
            for offset, call in enumerate(calls):
                limit = _limit(call, self.call_timeout)
                if offset and deadline is not None and time.monotonic() > deadline:
                    self._drain(first_id + offset, len(calls) - offset, limit)
                    return made, NotRun("budget")
                reply = self._read_reply(first_id + offset, call.fn, limit)
                if reply.ok:
                    made.append(reply)
                    continue
                assert reply.error is not None
                after_error = stop_on_error and bool(made) and isinstance(made[-1], StudentError)
                if reply.error.kind == "not_run" and (budget_ms is not None or after_error):
                    return made, NotRun("stopped" if after_error else "budget")
                failure = self._failure(reply, fn=call.fn)
                made.append(failure)
                if isinstance(failure, ProtocolError):  # the worker was confused and has been killed
                    return made, NotRun("stopped")
        except (CallTimeout, WorkerCrashed, ProtocolError) as exc:
            self._record_incident(exc)
            self._kill()
            made.append(exc)
            return made, NotRun("stopped")
        return made, None

    def _drain(self, first_id: int, count: int, seconds: float) -> None:
        """Read and drop the replies to the last ``count`` calls of a batch whose budget is spent.

        A worker stops at its budget (a ``not_run`` reply) at most a moment after this side's
        deadline, so this reads a reply or two. One that does not stop within ``seconds``
        is killed, which also bounds what a worker ignoring its budget can cost.
        """
        until = time.monotonic() + seconds
        try:
            for call_id in range(first_id, first_id + count):
                reply = self._read_reply(call_id, "", max(until - time.monotonic(), 1e-3))
                if reply.error is not None and reply.error.kind == "not_run":
                    return
        except (CallTimeout, WorkerCrashed, ProtocolError) as exc:
            self._record_incident(exc)
            self._kill()


def _limit(call: Call, default: float) -> float:
    return default if call.timeout is None else float(call.timeout)


def _frame_end(entries: Sequence[bytes], start: int) -> int:
    """The end of the longest run of ``entries`` from ``start`` that fits one batch message."""
    room = protocol.MAX_MESSAGE_BYTES - protocol.CALLS_FRAME_BYTES
    end = start
    while end < len(entries) and end - start < protocol.MAX_CONTAINER_ITEMS:
        room -= len(entries[end]) + 1
        if room < 0 and end > start:
            break
        end += 1
    return end
