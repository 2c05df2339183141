"""The student's code as a check sees it: :class:`Student` (and :class:`Replies` of a batch) over a
:class:`Session`, and how a call's failure ends a property (:class:`_Aborted`, :class:`_Refused`).

A call that times out, a worker crash, a malformed reply or a spent time budget ends the property
at once, without further calls or shrinking; a sandbox that refuses to start the worker stops
grading. What the student's code raises is a ``StudentError`` the check may catch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..protocol import CellOutcome, Kept, ProtocolError
from ..untrusted.launch import SandboxUnavailable
from .mismatch import Mismatch
from .signature import same_value
from .verdicts import format_call
from .worker_batches import Call, Outcome
from .worker_errors import CallTimeout, NotRun, StudentError, WorkerCrashed

__all__ = [
    "Replies",
    "Session",
    "Student",
    "Watched",
]

class Session(Protocol):
    """What the engine needs from a worker session; each method is ``WorkerSession``'s.

    Implemented by ``WorkerSession``, by wrappers of one (``exercises.witness.Renamed``), by
    ``InProcessSession`` (``trusted/in_process.py``) and by test doubles. ``call_many`` gives
    one outcome per call, in order: the ``Reply``, or the exception ``call`` would raise, not raised.
    """

    report: tuple[CellOutcome, ...]

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any: ...

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Any: ...

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Outcome]: ...

    def keep(self, value: Any, label: str = "") -> Kept: ...

    def defaults(self, fn: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Watched:
    """A watched call: the value returned, the arguments as the call left them, the warnings it emitted.

    ``args``/``kwargs`` are decoded like return values (dataclasses as ``Record``,
    a numpy Generator as a ``Generator`` record of its bit generator's state,
    ``None`` for an argument without a wire form). Compare them with
    ``roundtrip`` of what was sent to see whether the call changed them.
    ``warnings``: each warning the call emitted, in order, as ``"Category: message"``
    (at most ``protocol.MAX_WARNINGS``).
    """

    value: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    warnings: tuple[str, ...] = ()


# _Aborted and _Refused are the engine's own (suite, hypothesis_properties, misconception_naming
# catch them), never a suite's: they keep the leading underscore, and the names a traceback shows.
class _Aborted(BaseException):
    """Ends a property at once (timeout, crash, garbage, budget).

    A BaseException that is not an Exception: hypothesis lets it through
    without shrinking, so one hung call costs one timeout, not hundreds.
    """

    def __init__(self, kind: str, detail: str, call: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.call = call
        self.inputs: dict[str, Any] = {}


class _Refused(BaseException):
    """The sandbox refused to run the student's code: grading must stop, not score."""

    def __init__(self, error: SandboxUnavailable) -> None:
        super().__init__(str(error))
        self.error = error


class Student:
    """The student's code as a check sees it.

    ``call(name, *args, **kwargs)`` runs a top-level function of the
    submission in the sandboxed worker and returns its decoded value. It
    raises ``StudentError`` (and subclasses) when the student's code fails;
    timeouts, crashes and garbage end the property immediately.
    """

    def __init__(self, session: Session, time_budget: float) -> None:
        self._session = session
        self._deadline = time.monotonic() + time_budget
        self._budget = time_budget
        # The call being made, formatted only when a failure reads it: formatting every call's
        # arguments cost more than encoding them (most calls succeed and are never shown).
        self._last_call: str | tuple[str, tuple[Any, ...], dict[str, Any]] = ""
        #: The most recent call as made (function, arguments), kept when ``_last_call`` is formatted.
        self.made: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None
        #: What the call :attr:`made` returned, in a 1-tuple; ``None`` while it has not returned a value.
        self._answer: tuple[Any] | None = None
        #: The type name of what the call :attr:`made` raised, ``""`` while it raised nothing.
        self._raised = ""
        #: Every mismatch seen while hypothesis searched and shrunk (evidence for misconceptions).
        self.mismatches: list[Mismatch] = []

    @property
    def last_call(self) -> str:
        """The most recent call as feedback shows it, ``fn(0, y=1.5)`` (see ``verdicts.format_call``)."""
        if not isinstance(self._last_call, str):
            self._last_call = format_call(*self._last_call)
        return self._last_call

    def asked_before(self) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None:
        """Every call the worker was sent since it started (what its state may hold); ``None`` when the
        session does not say (a test double, the in-process engine)."""
        asked = getattr(self._session, "asked", None)
        return list(asked) if isinstance(asked, list) else None

    def call_fresh(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as the first call of a fresh worker that ran the same cells (the outcome a
        student's fresh kernel gives); the property's worker is untouched.

        Raises:
            StudentError: the call raised there.
            NotImplementedError: the session cannot start a fresh worker.
            CallTimeout, WorkerCrashed, ProtocolError, SandboxUnavailable: the fresh worker failed.
        """
        fresh = getattr(self._session, "call_fresh", None)
        if not callable(fresh):
            raise NotImplementedError("this session cannot start a fresh worker")
        return fresh(fn, *args, **kwargs)

    @property
    def report(self) -> tuple[CellOutcome, ...]:
        """How the submission's cells ran in the worker (see ``CellOutcome``)."""
        return self._session.report

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in the student's code; see the class docstring."""
        value = self._guarded((fn, args, kwargs), lambda: self._session.call(fn, *args, **kwargs))
        self._answer = (value,)
        return value

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Watched:
        """As :meth:`call`, also returning the arguments as the call left them (purity checks)."""
        watched = _watched(self._guarded((fn, args, kwargs), lambda: self._session.call_watch(fn, *args, **kwargs)))
        self._answer = (watched.value,)
        return watched

    def gave(self, got: Any) -> bool:
        """Whether ``got`` is what the call :attr:`made` gave: its value exactly, or the text of what it raised
        (``"TypeError: ..."``, ``"TypeError"``)."""
        if self._answer is not None:
            return same_value(self._answer[0], got)
        return bool(self._raised) and isinstance(got, str) and got.startswith(self._raised)

    def answers_otherwise_again(self) -> bool:
        """Whether the last call made, asked again now in the same worker, returns another value than it did:
        output that varies from call to call (randomness, or state the call changes).

        ``False`` where it cannot tell without changing what later checks meet: the call did not return a
        value, an argument is an object kept in the worker (asking again would advance its state), the
        worker was ended by a later call (a hang), or the call again raises, hangs or overruns the
        property's time.
        """
        if self.made is None or self._answer is None or getattr(self._session, "alive", True) is False:
            return False  # (a worker a later call ended is not started again for this)
        fn, args, kwargs = self.made
        if any(isinstance(value, Kept) for value in (*args, *kwargs.values())):
            return False
        (first,) = self._answer
        try:
            again = self.call(fn, *args, **kwargs)
        except (StudentError, _Aborted):
            return False
        return not same_value(first, again)

    def defaults(self, fn: str) -> dict[str, Any]:
        """The default values the student's ``fn`` declares (parameter -> value); nothing is called.

        For default clauses whose default is too costly to call through the worker
        (``block_table()`` over 4081 depths with a plain scan): the declared value is
        what a call without the argument uses.
        """
        return self._guarded(f"(reading the defaults of {fn})", lambda: self._session.defaults(fn))

    def keep(self, value: Any, label: str = "") -> Kept:
        """Keep ``value`` in the worker; every call given the result receives that same object.

        Use it to check that a function does not depend on earlier calls through a shared
        object (a chain whose counters it reads, a generator it consumes). ``label`` is how
        the object reads in feedback (``chain``).
        """
        return self._guarded(f"(preparing {label or 'an argument'})", lambda: self._session.keep(value, label))

    def batch(self, calls: Sequence[Call], *, stop_on_error: bool = True, return_errors: bool = False) -> Replies:
        """Several calls in one exchange with the worker, taken one at a time in order: THE way to batch calls.

        ``calls`` are :class:`Call` records (``Call("double", (3,))``; ``watch=True`` for a
        watched call, ``timeout`` for a limit other than the session's). The calls are made in
        order in the same worker, so state one leaves behind (on a kept object, in the
        student's globals) is what the next one sees. Nothing is sent until the first is taken.

        Read the result with :meth:`Replies.take` or by iterating it (``for got in ...``,
        ``next(replies)``, ``a, b = student.batch(...)``): each is what :meth:`call` (or
        :meth:`call_watch`, for a watched call) would have done at that point, raising
        included: the call's ``StudentError``, or the end of the property at its timeout,
        crash, malformed reply or the spent budget, only when taken. So a check that stops
        at a wrong answer reports it even when a later call of the exchange raised, hung or
        ended the worker: that later outcome is never taken. The later calls were made,
        though: their time counts against the budget, a hang among them costs its limit and a
        fresh worker, and state they leave in the student's code is what later calls meet.

        Args:
            stop_on_error: how the calls travel, never what a take gives. True when a
                ``StudentError`` ends the check: the worker makes no call after an error, and
                the calls after it are sent again, in a new exchange, only if taken. False when
                errors are expected answers (with ``return_errors``, or a check that catches
                them): every call travels in the one exchange.
            return_errors: a call's ``StudentError`` (and ``NotDefined``, ``Unencodable``) is
                taken as its value instead of raised, as when each single call is wrapped in
                ``try``/``except StudentError``.
        """
        return Replies(self, list(calls), stop_on_error, return_errors)

    def _send(self, calls: list[Call], stop_on_error: bool) -> list[Outcome | None]:
        """The outcomes of ``calls`` made in one exchange (``None`` each: made one at a time when taken).

        Once the property has recorded a mismatch (hypothesis replays and shrinks a failure), the calls
        are made one at a time as they are taken, so that from then on no call after a wrong answer is
        made at all."""
        if self.mismatches:
            return [None] * len(calls)
        head = calls[0]
        return self._guarded(
            (head.fn, tuple(head.args), dict(head.kwargs)),
            lambda: self._session.call_many(calls, stop_on_error=stop_on_error, deadline=self._deadline),
        )

    def _taken(self, call: Call, outcome: Outcome | None) -> Any:
        """What :meth:`call` or :meth:`call_watch` gives for ``call``, from its outcome in a batch."""
        if outcome is None:
            if call.watch:
                return self.call_watch(call.fn, *call.args, **call.kwargs)
            return self.call(call.fn, *call.args, **call.kwargs)
        self._last_call = self.made = (call.fn, tuple(call.args), dict(call.kwargs))
        self._answer, self._raised = None, ""
        if isinstance(outcome, NotRun):
            # Only a spent budget leaves a taken call unmade: a stopped batch is sent again first.
            raise self._over_budget()
        if isinstance(outcome, StudentError):
            self._raised = outcome.type
            raise outcome
        if isinstance(outcome, BaseException):
            raise self._aborted(outcome) from None
        self._answer = (outcome.value,)
        return _watched(outcome) if call.watch else outcome.value

    def _over_budget(self) -> _Aborted:
        return _Aborted(
            "budget",
            f"checking this property took longer than {self._budget:g} s in total, so the grader stopped "
            "(your code is much slower than needed)",
            self.last_call,
        )

    def _aborted(self, exc: BaseException) -> BaseException:
        """What ends the property when a call's exchange failed with ``exc`` (``exc`` itself otherwise)."""
        if isinstance(exc, CallTimeout):
            return _Aborted("timeout", str(exc), self.last_call)
        if isinstance(exc, WorkerCrashed):
            return _Aborted("crash", str(exc), self.last_call)
        if isinstance(exc, ProtocolError):
            return _Aborted("protocol", f"the grader could not read the reply from your code ({exc})", self.last_call)
        if isinstance(exc, SandboxUnavailable):
            return _Refused(exc)
        return exc

    def _guarded(self, call: str | tuple[str, tuple[Any, ...], dict[str, Any]], exchange: Callable[[], Any]) -> Any:
        self._last_call = call
        if not isinstance(call, str):
            self.made = call
            self._answer, self._raised = None, ""
        if time.monotonic() > self._deadline:
            raise self._over_budget()
        try:
            return exchange()
        except StudentError as exc:
            self._raised = exc.type
            raise
        except (CallTimeout, WorkerCrashed, ProtocolError, SandboxUnavailable) as exc:
            raise self._aborted(exc) from None


class Replies:
    """The calls of one :meth:`Student.batch`, taken one at a time in order (``len()``: how many).

    An iterator: ``next(replies)`` and ``for got in replies`` take the calls not yet taken.
    """

    def __init__(self, student: Student, calls: list[Call], stop_on_error: bool, return_errors: bool) -> None:
        self._student = student
        self._calls = calls
        self._stop_on_error = stop_on_error
        self._return_errors = return_errors
        self._outcomes: list[Outcome | None] = []
        self._next = 0

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Replies:
        return self

    def __next__(self) -> Any:
        if self._next == len(self._calls):
            raise StopIteration
        return self.take()

    def take(self) -> Any:
        """The next call's value (a :class:`Watched` for a watched call), as :meth:`Student.call` gives it.

        Raises what that call would raise alone: its ``StudentError`` (returned instead
        under ``return_errors``), or the end of the property at it (timeout, crash,
        malformed reply, spent budget).

        Raises:
            IndexError: every call was taken already (a bug in the suite).
        """
        index = self._next
        if index == len(self._calls):
            raise IndexError(f"all {index} calls of this batch were taken")
        self._next += 1
        outcome = self._outcomes[index] if index < len(self._outcomes) else None
        if index == len(self._outcomes) or (isinstance(outcome, NotRun) and outcome.reason == "stopped"):
            # First taken, or after an error the check went on from (or a fatal ending it caught):
            # the rest goes now, as the next single call would.
            self._outcomes[index:] = self._student._send(self._calls[index:], self._stop_on_error)
        try:
            return self._student._taken(self._calls[index], self._outcomes[index])
        except StudentError as exc:
            if not self._return_errors:
                raise
            return exc


def _watched(reply: Any) -> Watched:
    """A watched call's reply (``protocol.Reply``) as a check reads it."""
    return Watched(reply.value, tuple(reply.args or ()), dict(reply.kwargs or {}), tuple(reply.warnings))


