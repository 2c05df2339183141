"""What a call into the student's code can end in, other than its value: the verdict worker's failure model.

Which call raises which, and what becomes of the worker afterwards, is stated by
``trusted/worker_client.py`` (``WorkerSession``). ``str(error)`` of each is written for the
student: no paths, no trusted code.
"""

from __future__ import annotations

from ..textsafe import one_line, quoted

__all__ = [
    "CallTimeout",
    "NotDefined",
    "NotRun",
    "StudentError",
    "Unencodable",
    "WorkerCrashed",
    "WorkerError",
]


class WorkerError(Exception):
    """Base of everything a call can raise because of the worker or the student.

    ``str(error)`` is written for the student: no paths, no trusted code.
    """


class StudentError(WorkerError):
    """The student's code raised (or the name is unusable, see subclasses).

    Attributes:
        type: exception class name as reported by the worker.
        message: exception message, truncated.
        where: e.g. ``line 2 of the code cell starting "def double(x):"``, or ``""``.
    """

    def __init__(self, type: str, message: str, where: str = "") -> None:
        self.type = type
        self.message = message
        self.where = where
        location = f" (at {where})" if where else ""
        super().__init__(f"{type}: {message}{location}" if message else f"{type}{location}")


class NotDefined(StudentError):
    """The called name is not a top-level function of the submission."""

    def __str__(self) -> str:
        return self.message


class Unencodable(StudentError):
    """The student's function returned a value that cannot travel over the wire: a call's outcome that is
    neither a value nor a raise.

    Attributes:
        fn: the function called.
        type: the qualified type name of the returned value, as the worker reports it (not an
            exception's: nothing was raised).
        message: what of the value cannot be sent, as the worker reports it.

    ``str(error)`` says so in plain words, the student's type name quoted and the worker's text on one
    line: ``block_table() returned a value the grader cannot read ('generator'): ...``.
    """

    def __init__(self, type: str, message: str, fn: str = "") -> None:
        self.fn = fn
        super().__init__(type, message)

    def __str__(self) -> str:
        called = f"{self.fn}()" if self.fn else "your function"
        problem = f": {one_line(self.message, 300)}" if self.message else ""
        return f"{called} returned a value the grader cannot read ({quoted(self.type)}){problem}"


class CallTimeout(WorkerError):
    """No reply within the time limit; the worker was killed."""

    def __init__(self, fn: str, seconds: float) -> None:
        self.fn = fn
        self.seconds = seconds
        if fn:
            text = (
                f"{fn}() did not return within {seconds:g} s, so the grader stopped it "
                "(look for an infinite loop or a much slower algorithm than needed)"
            )
        else:
            text = (
                f"your notebook's code did not finish running within {seconds:g} s, so the grader stopped it "
                "(look for a long computation or an infinite loop at the top level of a cell)"
            )
        super().__init__(text)


class WorkerCrashed(WorkerError):
    """The worker process ended or could not be (re)started.

    Attributes:
        detail: text for the grader's log (exit status, the worker's own
            stderr tail); never shown to students.
    """

    def __init__(self, message: str, detail: str = "") -> None:
        self.detail = detail
        super().__init__(message)


class NotRun(WorkerError):
    """A call of a batch that was not made (:meth:`WorkerSession.call_many`).

    Attributes:
        reason: ``"budget"`` when the batch's deadline had passed before the call would
            start, ``"stopped"`` when an earlier call of the batch ended it (a timeout,
            crash or malformed reply, or an error under ``stop_on_error``).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            "the time budget was spent before this call" if reason == "budget" else "an earlier call ended the batch"
        )
