"""Grade a notebook's hidden suites while its sandboxed execution runs.

The two costly steps of autograding one notebook read disjoint parts of it:
``SandboxedExecute`` runs the cells for their outputs (in sandboxed processes), and
``TrustedVerdicts`` runs the hidden suites (hypothesis drawing in this process, the
student's functions answering in a sandboxed worker), which never read those outputs. Only
the verdict's rendering uses one thing execution writes, each test cell's execution count,
and that is applied afterwards. So the suites can start before execution, on a thread of
their own, and the two overlap on a machine with a core to spare.

``SuitesAhead`` (placed before ``SandboxedExecute``) computes :class:`SuiteInputs` from the
notebook as it arrives and hands them to the submission's :class:`Lane` (:func:`lane_for`;
:func:`start` for a notebook graded outside a submission), which grades one notebook at a
time on its thread and, with a spare core, the later notebooks' suites ahead of their turns
too; ``TrustedVerdicts`` computes the inputs again from the notebook as it reaches it and
:func:`take` s the early result only
when the two inputs' :attr:`SuiteInputs.key` agree. Otherwise (a step in between changed a
cell's source or its grading metadata, or a support file) the early result is discarded and
the suites run again in place: a verdict is always the one the notebook reaching
``TrustedVerdicts`` would get.

The lane's thread owns each worker session from start to end (a sandbox may tie the
worker's life to the thread that started it). An exception raised by the early grading is
raised again by :func:`take`, where ``TrustedVerdicts`` would have raised it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from .submission_cells import WorkerCells
from .verdicts import CellVerdict

__all__ = ["Lane", "SuiteInputs", "SuiteResults", "lane_for", "pending", "start", "take"]

_RESOURCE_KEY = "ch11_suites_ahead"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuiteInputs:
    """Everything a notebook's suites read from it.

    Attributes:
        tests: ``(cell index, grade_id, points)`` of each autograded test cell, in notebook order.
        cells: the cells the worker runs (sources and where each visible check stands).
        support: the submission's support files, relative POSIX path -> bytes.
        key: sha256 (hex) of all of the above; equal keys mean equal verdicts' inputs.
    """

    tests: tuple[tuple[int, str, float], ...]
    cells: WorkerCells
    support: Mapping[str, bytes]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256()
        digest.update(json.dumps([list(self.tests), list(self.cells.sources), sorted(self.cells.checks.items())],
                                 sort_keys=True).encode("utf-8"))
        for name in sorted(self.support):
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + hashlib.sha256(self.support[name]).digest())
        object.__setattr__(self, "key", digest.hexdigest())


@dataclass
class SuiteResults:
    """What grading a notebook's suites produced.

    Attributes:
        verdicts: cell index of each autograded test cell -> its verdict.
        incidents: the worker session's incidents (crashes, restarts), as logged.
    """

    verdicts: dict[int, CellVerdict]
    incidents: list[str]


class _Entry:
    """One notebook's grading in a :class:`Lane`: queued, running or done."""

    def __init__(self, notebook: str, key: str, work: Callable[[], SuiteResults], lane: Lane) -> None:
        self.notebook = notebook
        self.lane = lane
        self.key = key
        self.work = work
        self.started = False
        self.cancelled = False
        self._result: SuiteResults | None = None
        self._error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self._result = self.work()
        except BaseException as exc:  # raised again where TrustedVerdicts would have raised it
            self._error = exc
        finally:
            self.done.set()

    def result(self) -> SuiteResults:
        self.done.wait()
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError(f"the early grading of {self.notebook} was cancelled")
        return self._result


#: What a lane's ``later`` callable gives: ``(notebook, inputs, work)`` for each notebook after the first.
Later = Callable[[], Iterable[tuple[str, SuiteInputs, Callable[[], SuiteResults]]]]


class Lane:
    """One submission's suites graded ahead of their turns: one thread, one notebook at a time.

    Notebooks are graded in the order of their file names (nbgrader's order), each with the work
    given for it; a notebook's turn :meth:`attach` es its grading to its resources for
    :func:`take`. One at a time, because every grading of the lane starts its worker in the
    same sandbox (the submission's second zygote), where two workers could reach each other.

    Args:
        name: the thread's name.
        later: called once, on a thread of its own, when the first turn attaches its grading (so
            that reading and sanitizing the later notebooks never holds up the first one): the later
            notebooks' suites, which the lane then grades ahead of their turns. A notebook whose turn
            attached its own grading first is not added again; an exception leaves every later
            notebook to be graded at its turn.
    """

    def __init__(self, name: str, later: Later | None = None) -> None:
        self.name = name
        self._later = later
        self._cond = threading.Condition()
        self._queued: list[_Entry] = []
        self._entries: dict[str, _Entry] = {}
        self._seen: set[str] = set()
        self._running = False
        self._closed = False

    def attach(self, resources: MutableMapping[str, Any], notebook: str, inputs: SuiteInputs,
               work: Callable[[], SuiteResults]) -> bool:
        """Give ``notebook``'s turn its grading of ``inputs``, for :func:`take` to collect from ``resources``.

        The lane's own grading of ``notebook`` when it graded (or is grading, or will grade)
        exactly ``inputs``; otherwise that one is cancelled (or, already going, left to end
        unused) and ``work`` is queued now. Returns whether the lane had it ahead.
        """
        with self._cond:
            old = self._entries.get(notebook)
            ahead = old is not None and old.key == inputs.key and not old.cancelled
            if old is not None and not ahead:
                self._cancel_locked(old)
            entry = old if ahead and old is not None else self._queue_locked(notebook, inputs.key, work)
            later, self._later = self._later, None
        if later is not None:
            threading.Thread(target=self._fill, args=(later,), name=f"{self.name}-later", daemon=True).start()
        resources[_RESOURCE_KEY] = entry
        return ahead

    def forget(self, entry: _Entry, *, cancel: bool = False) -> None:
        """Drop ``entry`` (taken by its turn) from the lane; with ``cancel``, a queued one is not run."""
        with self._cond:
            if self._entries.get(entry.notebook) is entry:
                del self._entries[entry.notebook]
            if cancel:
                self._cancel_locked(entry)

    def close(self) -> None:
        """Cancel every queued grading; the one running ends on its own."""
        with self._cond:
            self._closed = True
            self._later = None
            for entry in list(self._queued):
                self._cancel_locked(entry)
            self._entries.clear()

    def _queue_locked(self, notebook: str, key: str, work: Callable[[], SuiteResults]) -> _Entry:
        entry = _Entry(notebook, key, work, self)
        self._seen.add(notebook)
        self._entries[notebook] = entry
        if self._closed:
            self._cancel_locked(entry)
            return entry
        self._queued.append(entry)
        if not self._running:
            self._running = True
            # A daemon: a conversion that fails before TrustedVerdicts must not keep nbgrader from exiting.
            threading.Thread(target=self._work, name=self.name, daemon=True).start()
        return entry

    def _cancel_locked(self, entry: _Entry) -> None:
        if entry in self._queued:
            self._queued.remove(entry)
        if not entry.started:
            entry.cancelled = True
            entry.done.set()

    def _work(self) -> None:
        while True:
            with self._cond:
                if not self._queued:
                    self._running = False
                    return
                entry = min(self._queued, key=lambda e: f"{e.notebook}.ipynb")  # nbgrader's order
                self._queued.remove(entry)
                entry.started = True
            entry.run()

    def _fill(self, later: Later) -> None:
        try:
            found = list(later())
        except Exception as exc:  # every later notebook is graded at its turn
            log.warning("no later notebook's suites are graded ahead: preparing them failed: %s: %s",
                        type(exc).__name__, exc)
            return
        with self._cond:
            for notebook, inputs, work in found:
                if notebook not in self._seen and not self._closed:
                    self._queue_locked(notebook, inputs.key, work)


def start(resources: MutableMapping[str, Any], inputs: SuiteInputs, work: Callable[[], SuiteResults]) -> None:
    """Run ``work`` (grading ``inputs``) on a thread, for :func:`take` to collect from ``resources``."""
    notebook = str(resources.get("unique_key", "notebook"))
    Lane(f"ch11-suites-ahead-{notebook}").attach(resources, notebook, inputs, work)


def pending(resources: Mapping[str, Any]) -> bool:
    """Whether an early grading was started for this notebook and not yet taken."""
    return isinstance(resources.get(_RESOURCE_KEY), _Entry)


def take(resources: MutableMapping[str, Any], inputs: SuiteInputs) -> SuiteResults | None:
    """The early grading's results if it graded ``inputs``; ``None`` if none was started or it graded others.

    Waits for the early grading to end either way (two workers of one notebook never run
    at once; one still queued is cancelled), and raises what it raised when it graded
    these inputs.
    """
    entry = resources.pop(_RESOURCE_KEY, None)
    if not isinstance(entry, _Entry):
        return None
    if entry.key != inputs.key:
        entry.lane.forget(entry, cancel=True)
        try:
            entry.result()
        except Exception as exc:  # its verdicts are discarded, and so is what went wrong with them
            log.debug("discarded early grading failed: %s", exc)
        log.warning("%s: the notebook's graded inputs changed after the suites were started early; "
                    "grading them again", resources.get("unique_key", "notebook"))
        return None
    try:
        entry.done.wait()
        return None if entry.cancelled else entry.result()  # cancelled: its lane was closed; grade in place
    finally:
        entry.lane.forget(entry)


_LANES: dict[tuple[str, str], Lane] = {}
_LANES_LOCK = threading.Lock()


def lane_for(submission: tuple[str, str], later: Later | None = None) -> Lane:
    """The submission's lane: made (with ``later``) on the first call, the same one afterwards.

    Another submission's lane is closed first: one nbgrader process grades one submission at a time.
    """
    with _LANES_LOCK:
        lane = _LANES.get(submission)
        if lane is None:
            for other in list(_LANES):
                _LANES.pop(other).close()
            lane = _LANES[submission] = Lane(f"ch11-suites-ahead-{submission[1]}", later)
        return lane
