"""Calls made one by one and in batches, side by side: the cells, the calls and the comparison.

``tests/autograder/test_worker_batches.py`` (``WorkerSession.call_many``) and
``tests/autograder/test_student.py`` (``Student.batch``) run the same calls both
ways through a real worker and compare what each call came to. The calls cover every way
a call can end: a value, the student's exception, a missing or uncallable name, a value
that cannot travel, a mutated argument and warnings under watch, state carried across
calls (a kept object, a global), a call that hangs and calls that end the worker
(``os._exit``, SIGKILL), each with calls after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from ch11_autograder import protocol
from ch11_autograder.trusted.student import Watched
from ch11_autograder.trusted.worker_batches import Call
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.trusted.worker_errors import NotRun
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from ch11_autograder.untrusted.launch import Launcher, SandboxUnavailable

#: The backends the comparison runs under: ``bwrap-zygote`` is bwrap with every worker forked
#: from one pre-imported process in the sandbox, as ``TrustedVerdicts`` starts them by default.
BACKENDS = ("none", "bwrap", "bwrap-zygote")

#: Seconds a call may take in these sessions (the hanging call costs this much each time).
CALL_TIMEOUT = 1.5

CELLS = [
    "import os, signal, time, warnings\n"
    "count = 0\n"
    "total = 3\n"
    "def double(x):\n    return 2 * x\n"
    "def bump():\n    global count\n    count += 1\n    return count\n"
    "def broken(x):\n    return x / 0\n"
    "def returns_set():\n    return {1, 2}\n"
    "def appends(values, item=0):\n    values.append(item)\n    return len(values)\n"
    "def warns(x):\n    warnings.warn(f'careful with {x}')\n    return x\n"
    "def push(stack, item):\n    stack.append(item)\n    return list(stack)\n"
    "def hang():\n    while True:\n        pass\n"
    "def exits():\n    os._exit(5)\n"
    "def killed():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    "def nap(seconds):\n    time.sleep(seconds)\n    return bump()\n",
]


@contextlib.contextmanager
def launched(name: str) -> Iterator[Launcher]:
    """The launcher of backend ``name`` (one of :data:`BACKENDS`), closed afterwards; skips where bwrap cannot run."""
    if name == "none":
        yield UnsandboxedLauncher(quiet=True)
        return
    from ch11_autograder.untrusted.choose import choose_launcher, forking_launcher

    try:
        inner = choose_launcher("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"bwrap sandbox not available here: {exc}")
    if name == "bwrap":
        yield inner
        return
    forking = forking_launcher(inner, "bwrap").for_submission(("call_outcomes", "batched calls"))
    try:
        yield forking
    finally:
        forking.close()


def session(launcher: Launcher, **kwargs: Any) -> WorkerSession:
    """A session on :data:`CELLS` (``kwargs`` as for ``WorkerSession``)."""
    options = {"call_timeout": CALL_TIMEOUT, "max_restarts": 5, **kwargs}
    return WorkerSession(CELLS, launcher, **options)


def ordinary_calls(kept: protocol.Kept) -> list[Call]:
    """Calls that all return or raise in the student's code; ``kept`` is an empty list kept in the worker."""
    return [
        Call("double", (21,)),
        Call("bump"),
        Call("broken", (1,)),
        Call("missing", (1,)),
        Call("total"),
        Call("returns_set"),
        Call("appends", ([1, 2],), {"item": 3}, watch=True),
        Call("warns", (7,), watch=True),
        Call("push", (kept, "a")),
        Call("bump"),
        Call("push", (kept, "b")),
        Call("double", (0.5,), watch=True),
    ]


def fatal_calls(kept: protocol.Kept) -> list[Call]:
    """:func:`ordinary_calls` with a hang and two calls that end the worker among them."""
    calls = ordinary_calls(kept)
    return [
        *calls[:9],
        Call("hang"),
        Call("bump"),  # a fresh worker: its globals start again
        Call("push", (kept, "c")),  # and it is given a fresh copy of the kept list
        Call("exits"),
        *calls[9:11],
        Call("killed"),
        Call("bump"),
        calls[11],
    ]


def describe(outcome: Any) -> tuple[Any, ...]:
    """What a call came to, comparable across both ways of making it.

    A value, ``Reply`` or ``Watched`` becomes ``("ok", value, args, kwargs, warnings)`` (wire-equal values
    compare equal here: every value in these calls is a plain one); an exception its type and
    the text a student would read.
    """
    if isinstance(outcome, protocol.Reply | Watched):
        return ("ok", outcome.value, outcome.args, outcome.kwargs, outcome.warnings)
    if isinstance(outcome, BaseException):
        return (type(outcome).__name__, str(outcome))
    return ("ok", outcome, None, None, ())


def one_by_one(
    caller: Any, calls: Sequence[Call], catch: type[BaseException] | tuple[type[BaseException], ...] = Exception
) -> list[Any]:
    """Each call alone through ``caller.call``/``call_watch`` (a session or a ``Student``), catching ``catch``."""
    outcomes: list[Any] = []
    for call in calls:
        try:
            if call.watch:
                outcomes.append(caller.call_watch(call.fn, *call.args, **call.kwargs))
            else:
                outcomes.append(caller.call(call.fn, *call.args, **call.kwargs))
        except catch as exc:
            outcomes.append(exc)
    return outcomes


def batched(worker: WorkerSession, calls: Sequence[Call]) -> tuple[list[Any], int]:
    """The calls through ``call_many``, sending again what a fatal failure left unmade.

    Returns the outcomes and the number of ``call_many`` exchanges it took.
    """
    outcomes: list[Any] = []
    rest = list(calls)
    rounds = 0
    while rest:
        rounds += 1
        got = worker.call_many(rest)
        made = [o for o in got if not isinstance(o, NotRun)]
        assert made and got[: len(made)] == made, "NotRun only ever follows the calls a batch made"
        outcomes += made
        rest = rest[len(made) :]
    return outcomes, rounds
