"""Execute a submission's notebooks one after another on a thread of their own, while they are graded.

nbgrader autogrades a submission's notebooks one after another, and each
notebook's sandboxed execution (``SandboxedExecute``) waits for the one before it
to be graded. An execution reads nothing the grading of an earlier notebook
writes: only the notebook as nbgrader's sanitize steps leave it, the submission's
support files, and the execution settings. So on a machine with a core to spare the
later notebooks can run ahead, and a notebook's turn then only collects its run.

:class:`Plan` holds one submission's runs ahead: ``ExecutionAhead`` (placed before
``SandboxedExecute``) makes it at the first notebook's turn, with one
:class:`~.execution_input.ExecutionInput` for that notebook, queued at once, and one per
later notebook, read and sanitized on a thread of their own while the first runs; its
worker threads execute them in notebook order. At a notebook's turn, ``SandboxedExecute``
computes the input again from the notebook as it reaches it and :meth:`Plan.claim` s the
early run only when the two inputs' keys agree: the run is then the one the turn
would have made, byte for byte of input. Otherwise (a step in between changed the
notebook, a support file changed) the early run is stopped and discarded, and the
notebook executes in its turn as before: a wrong guess costs CPU, never an output.

The submission's execution budget (``budget.py``) keeps its meaning. A run started
ahead gets the limit its turn gives it, counted from its own start: at the turn its
:class:`~..untrusted.capped_run.Deadline` is lowered to that limit, so a run still
going ends no later than a run started at the turn would, and the turn's wall time
never exceeds its limit (a run that hangs is not paid for twice in the submission's
wall time). A run that ended past that limit cannot be cut back to it, so it is
discarded and the notebook executes in its turn, with its limit.

Each worker thread runs its notebooks in a sandbox of its own (its own zygote when
runs fork): a notebook executing ahead can neither signal the notebook executing in
its turn, nor the suites' worker, nor see their files.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..untrusted.capped_run import Deadline
from .execution_input import ExecutionInput, ExecutionRun

__all__ = ["Claim", "Plan", "claim", "close_plan", "plan_for", "start_plan"]

log = logging.getLogger(__name__)

#: What a run needs: the input, the wall limit it starts with, and the deadline to honour.
Runner = Callable[[ExecutionInput, float, Deadline], ExecutionRun]


@dataclass
class _Entry:
    notebook: str
    inputs: ExecutionInput
    deadline: Deadline = field(default_factory=Deadline)
    started: bool = False
    cancelled: bool = False
    run: ExecutionRun | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Claim:
    """What a notebook's turn found of its run ahead.

    Attributes:
        run: the run to use, or ``None``: execute in turn.
        why: ``"taken"``, or why the run is not used (``"not ready"``, ``"not started"``, ``"inputs changed"``,
            ``"past the limit"``, ``"failed"``, ``"none"``: no run ahead for this notebook).
        waited_seconds: how long the turn waited for the run to end.
    """

    run: ExecutionRun | None
    why: str
    waited_seconds: float = 0.0


class Plan:
    """One submission's notebooks executing ahead of their turns.

    Args:
        runs: ``(notebook name, input)`` in the order their turns come, or a callable that
            returns them: it is then called on a worker's thread (beside the ``first`` runs, on
            a thread of its own, when there are any), so that preparing the inputs (reading and
            sanitizing the later notebooks) holds up neither the turn that makes the plan nor
            the first run. A turn that comes before its input is ready executes in turn.
        first: runs known when the plan is made (the notebook whose turn makes it), queued at
            once, before those of a callable ``runs``. They count as started: the plan's workers
            take them first, so a turn that comes before a worker has taken its run waits for it
            instead of executing in turn.
        limit: wall seconds each run may take at most (what the budget has left when the plan
            is made: no turn can give more).
        workers: how many run at once; each worker is one thread with its own launcher.
        runner_for: makes a worker's runner, on that worker's thread (a sandbox may tie its life
            to the thread that started it); called once per worker.
    """

    def __init__(self, runs: Iterable[tuple[str, ExecutionInput]] | Callable[[], Iterable[tuple[str, ExecutionInput]]],
                 *, limit: float, workers: int, runner_for: Callable[[], tuple[Runner, Callable[[], None]]],
                 first: Iterable[tuple[str, ExecutionInput]] = ()) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._queue: queue.Queue[_Entry] = queue.Queue()
        self._passed: set[str] = set()  # turns that came before their input was ready
        self._closed = False
        self._filled = threading.Event()
        self._fill_lock = threading.Lock()
        self._add(first, filled=False, reserved=True)
        if callable(runs):
            self._source: Callable[[], Iterable[tuple[str, ExecutionInput]]] | None = runs
            count = workers
        else:
            self._source = None
            self._add(runs)
            count = min(workers, len(self._entries))
        self._threads = [
            # Daemons: a conversion that fails before a turn must not keep nbgrader from exiting.
            threading.Thread(target=self._work, args=(runner_for,), name=f"ch11-execution-ahead-{n}", daemon=True)
            for n in range(max(0, count))
        ]
        for thread in self._threads:
            thread.start()

    def _add(self, runs: Iterable[tuple[str, ExecutionInput]], *, filled: bool = True, reserved: bool = False) -> None:
        with self._lock:
            for notebook, inputs in runs:
                if notebook in self._passed or self._closed:
                    continue
                entry = _Entry(notebook, inputs, started=reserved)
                self._entries[notebook] = entry
                self._queue.put(entry)
            if filled:
                self._filled.set()

    def _fill(self) -> None:
        with self._fill_lock:
            if self._filled.is_set() or self._source is None:
                return
            try:
                runs = list(self._source())
            except Exception as exc:  # nothing runs ahead; every turn executes in place
                log.warning("no notebook executes ahead: preparing them failed: %s: %s", type(exc).__name__, exc)
                runs = []
            self._add(runs)

    def _work(self, runner_for: Callable[[], tuple[Runner, Callable[[], None]]]) -> None:
        filler: threading.Thread | None = None
        if self._queue.empty():
            self._fill()
        elif not self._filled.is_set():  # the first runs go at once; the later inputs are prepared beside them
            filler = threading.Thread(target=self._fill, name="ch11-execution-ahead-fill", daemon=True)
            filler.start()
        try:
            runner, close = runner_for()
        except Exception as exc:  # no runner: every run still queued fails, and its turn executes in place
            log.warning("no notebook executes ahead on this thread: %s: %s", type(exc).__name__, exc)
            self._fail_queued(exc)
            return
        try:
            while True:
                try:
                    entry = self._queue.get_nowait()
                except queue.Empty:
                    if filler is not None:
                        filler.join()
                        filler = None
                        continue
                    return
                with self._lock:
                    if entry.cancelled:
                        entry.done.set()
                        continue
                    entry.started = True
                try:
                    entry.run = runner(entry.inputs, self.limit, entry.deadline)
                except BaseException as exc:  # the turn executes in place; this is only logged
                    entry.error = exc
                finally:
                    entry.done.set()
        finally:
            close()

    def _fail_queued(self, exc: BaseException) -> None:
        while True:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                return
            entry.error = exc
            entry.done.set()

    def claim(self, notebook: str, key: str, limit: float) -> Claim:
        """The run of ``notebook`` if it executed the input with ``key`` within ``limit`` seconds.

        Waits for a run still going, for at most what is left of ``limit`` counted from the
        run's start (its deadline is lowered to ``limit``). A run not started yet is dropped; a
        run of other inputs is stopped; either way the turn executes the notebook itself.
        Each notebook is claimed once; a later claim finds nothing.
        """
        with self._lock:
            entry = self._entries.pop(notebook, None)
            if entry is None:
                if not self._filled.is_set():
                    self._passed.add(notebook)  # its input, when ready, is not run
                    return Claim(None, "not ready")
                return Claim(None, "none")
            if not entry.started:
                entry.cancelled = True
                return Claim(None, "not started")
        began = time.monotonic()
        if entry.inputs.key != key:
            entry.deadline.limit_to(0.0)
            entry.done.wait()
            return Claim(None, "inputs changed", time.monotonic() - began)
        entry.deadline.limit_to(limit)
        entry.done.wait()
        waited = time.monotonic() - began
        run = entry.run
        if run is None:
            log.warning("%s: the run ahead failed (%s: %s); executing in turn", notebook,
                        type(entry.error).__name__, entry.error)
            return Claim(None, "failed", waited)
        result = run.result
        if result.timed_out:
            # Killed for time: the turn's own run would have been killed at its limit too, if the limit in
            # force then was no more than the turn's.
            fired = entry.deadline.fired_limit
            within = fired is not None and fired <= limit
        else:
            within = result.elapsed_seconds <= limit
        if not within:
            return Claim(None, "past the limit", waited)
        return Claim(run, "taken", waited)

    def close(self) -> None:
        """Stop every run not claimed (they are killed at their next look at the deadline)."""
        with self._lock:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
            for entry in entries:
                entry.cancelled = True
                entry.deadline.limit_to(0.0)


_PLANS: dict[tuple[str, str], Plan] = {}
_PLANS_LOCK = threading.Lock()


def plan_for(submission: tuple[str, str]) -> Plan | None:
    """The plan made for ``(assignment, student)`` in this process, if any."""
    with _PLANS_LOCK:
        return _PLANS.get(submission)


def start_plan(submission: tuple[str, str], make: Callable[[], Plan | None]) -> Plan | None:
    """The submission's plan: made by ``make`` on the first call, the same one afterwards.

    ``make`` returning ``None`` (nothing to run ahead) is remembered too: a submission is
    planned once. Another submission's plan is closed first: one nbgrader process grades
    one submission at a time.
    """
    global _PLANNED
    with _PLANS_LOCK:
        if submission == _PLANNED:
            return _PLANS.get(submission)
        for other in list(_PLANS):
            _PLANS.pop(other).close()
        _PLANNED = submission
        plan = make()
        if plan is not None:
            _PLANS[submission] = plan
        return plan


#: The submission planned last (with or without runs ahead).
_PLANNED: tuple[str, str] | None = None


def claim(submission: tuple[str, str], notebook: str, key: str, limit: float) -> Claim:
    """:meth:`Plan.claim` on the submission's plan; ``Claim(None, "none")`` without one."""
    plan = plan_for(submission)
    if plan is None:
        return Claim(None, "none")
    return plan.claim(notebook, key, limit)


def close_plan(submission: tuple[str, str]) -> None:
    """Stop and forget the submission's plan (its unclaimed runs are killed)."""
    with _PLANS_LOCK:
        plan = _PLANS.pop(submission, None)
    if plan is not None:
        plan.close()


@atexit.register
def _close_all() -> None:
    with _PLANS_LOCK:
        plans = list(_PLANS.values())
        _PLANS.clear()
    for plan in plans:
        with contextlib.suppress(Exception):
            plan.close()
