"""Functions of this process called as the worker calls a submission's: a session for predictions.

A suite sometimes judges the student with code that must also say what a catalogued
mistake would report (Exercise 5 writes each property once, as a function of the
:class:`~ch11_autograder.trusted.student.Student` it calls, and runs it on the reference
with one entry swapped in to predict the feedback that entry earns). For that the code
needs a ``Student`` whose functions are plain Python functions of the trusted process:
:func:`in_process_student` gives one, over an :class:`InProcessSession`.

The calls behave as the worker's, as far as the values a check reads go: every argument
is sent through the wire form (``encode_value``/``decode_value``, as a request), so each
call gets a fresh chain, generator or array; a :class:`~ch11_autograder.protocol.Kept`
marker is the one object :meth:`InProcessSession.keep` decoded, so state a function leaves
on it carries over; return values come back as ``roundtrip`` gives them; an exception
the function raises is a ``StudentError`` with its type's name and message. Nothing is
sandboxed and nothing has a time limit: call only trusted code (the reference, the
catalogue) this way, never a submission.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..protocol import CellOutcome, Kept, Reply, decode_value, encode_value, watch_form
from .roundtrip import roundtrip
from .student import Student
from .worker_batches import Call, Outcome
from .worker_errors import NotRun, StudentError

__all__ = ["InProcessSession", "in_process_student"]


class InProcessSession:
    """A :class:`~ch11_autograder.trusted.student.Session` over ``functions`` (name -> function)."""

    report: tuple[CellOutcome, ...] = ()

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self._functions = functions
        self._kept: dict[str, Any] = {}

    def keep(self, value: Any, label: str = "") -> Kept:
        name = f"kept{len(self._kept) + 1}"
        self._kept[name] = decode_value(encode_value(value, request=True), request=True)
        return Kept(name, label)

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        return self.call_watch(fn, *args, **kwargs).value

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Reply:
        """The call's :class:`~ch11_autograder.protocol.Reply`, the arguments as it left them included."""
        wire_args = [self._argument(a) for a in args]
        wire_kwargs = {k: self._argument(v) for k, v in kwargs.items()}
        try:
            value = self._functions[fn](*wire_args, **wire_kwargs)
        except Exception as exc:
            # As the worker reports it, so a check reads a refusal the same way from either side.
            raise StudentError(type(exc).__name__, str(exc)) from None
        return Reply(
            0,
            True,
            roundtrip(value),
            args=tuple(decode_value(watch_form(a)) for a in wire_args),
            kwargs={k: decode_value(watch_form(v)) for k, v in wire_kwargs.items()},
        )

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Outcome]:
        """Each call made in order, its outcome as ``WorkerSession.call_many`` gives it."""
        outcomes: list[Outcome] = []
        for call in calls:
            if deadline is not None and time.monotonic() > deadline:
                return outcomes + [NotRun("budget")] * (len(calls) - len(outcomes))
            try:
                outcomes.append(self.call_watch(call.fn, *call.args, **call.kwargs))
            except StudentError as exc:
                outcomes.append(exc)
                if stop_on_error:
                    return outcomes + [NotRun("stopped")] * (len(calls) - len(outcomes))
        return outcomes

    def defaults(self, fn: str) -> dict[str, Any]:
        parameters = inspect.signature(self._functions[fn]).parameters.values()
        return {p.name: decode_value(watch_form(p.default)) for p in parameters if p.default is not p.empty}

    def _argument(self, value: Any) -> Any:
        if isinstance(value, Kept):
            return self._kept[value.name]
        return decode_value(encode_value(value, request=True), request=True)


def in_process_student(functions: Mapping[str, Callable[..., Any]]) -> Student:
    """A :class:`~ch11_autograder.trusted.student.Student` whose functions are ``functions``, run here.

    Its calls are those of an :class:`InProcessSession`; it has no time budget.
    """
    return Student(InProcessSession(functions), math.inf)
