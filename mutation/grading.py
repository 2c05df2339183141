"""Grade submissions as the grader does, in a pool of processes with a wall limit per job.

A submission is the released notebook with every answer cell filled from the source
notebook (``authoring.submissions.answer_sources`` and ``fill``) and, for a mutant, its one
answer cell replaced by the mutated source. It is graded by the ``TrustedVerdicts``
preprocessor configured by the course's ``nbgrader_config.py`` (the suites, the call and
start-up limits, the visible checks run in the worker), with ``sandbox = "none"``: the
sandbox changes where student code runs, not what it returns. Each autograded test cell is
then scored by nbgrader's own ``determine_grade`` on the outputs ``TrustedVerdicts`` wrote,
which is what ``SaveAutoGrades`` stores.

The pool's processes each lead their own process group, so a job past its wall limit is
ended with everything it started (the verdict worker included), and a fresh process
takes its place.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode

__all__ = ["CellScore", "Graded", "Pool", "grade_notebook", "submission"]

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "ch11"
#: Text of the verdict of a call stopped by ``TrustedVerdicts.call_timeout`` (worker_errors.py).
CALL_TIMEOUT_TEXT = "did not return within"


@dataclass(frozen=True)
class CellScore:
    """What one autograded test cell earned.

    Attributes:
        score: nbgrader's score of the cell (``determine_grade``).
        points: the cell's points.
        timed_out: the verdict reports a call stopped by the grader's call time limit.
    """

    score: float
    points: float
    timed_out: bool

    @property
    def full(self) -> bool:
        return self.score >= self.points


@dataclass(frozen=True)
class Graded:
    """The outcome of one pool job.

    Attributes:
        key: the job's key.
        cells: grade id -> score, or empty when the job did not finish.
        seconds: wall time of the job.
        wall_limit_hit: the job ran past the pool's wall limit and was ended.
        error: a traceback when grading itself failed (a bug of the tool or the grader).
    """

    key: str
    cells: dict[str, CellScore]
    seconds: float
    wall_limit_hit: bool = False
    error: str = ""


def submission(exercise: str, replace: dict[str, str] | None = None) -> NotebookNode:
    """The released notebook of ``exercise`` with every answer filled, and ``replace``'s cells swapped in.

    Raises:
        KeyError: ``replace`` names a cell that is not an answer cell.
    """
    from ch11_autograder.authoring.submissions import answer_sources, fill, read
    from ch11_autograder.exercises import exercise as lookup

    stem = lookup(exercise).notebook
    released = read(REPO / "assignments" / ASSIGNMENT / f"{stem}.ipynb")
    answers = answer_sources(read(REPO / "source" / ASSIGNMENT / f"{stem}.ipynb"))
    unknown = set(replace or {}) - set(answers)
    if unknown:
        raise KeyError(f"not answer cells of {exercise}: {sorted(unknown)}")
    return fill(released, {**answers, **(replace or {})})


def _course_config() -> Any:
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()


def grade_notebook(nb: NotebookNode, config: Any, directory: Path) -> dict[str, CellScore]:
    """grade id -> score of every autograded test cell of ``nb``, graded as the grader does.

    ``directory`` is the submission's folder (its other files become support files): pass an
    empty one. ``nb`` is modified (its test cells get the verdict outputs).
    """
    from ch11_autograder.trusted.steps import TrustedVerdicts
    from ch11_autograder.trusted.submission_cells import autograded_test_cells
    from nbgrader.utils import determine_grade

    step = TrustedVerdicts(config=config)
    step.sandbox = "none"
    graded, _ = step.preprocess(nb, {"metadata": {"path": str(directory)}, "unique_key": "mutant"})
    scores = {}
    for _, cell in autograded_test_cells(graded):
        score, points = determine_grade(cell)
        text = nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))
        timed_out = CALL_TIMEOUT_TEXT in text
        scores[cell.metadata.nbgrader.grade_id] = CellScore(float(score or 0.0), float(points), timed_out)
    return scores


def _serve(conn: Connection, log_path: str | None) -> None:
    """A pool process: grade each ``(key, notebook JSON)`` received, answer ``(key, cells, error)``."""
    os.setpgrp()  # the parent ends this process and all it started with one killpg
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if log_path:
        # The unsandboxed launcher warns on stderr at every spawn; keep the console readable.
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
    import traceback

    config = _course_config()
    with tempfile.TemporaryDirectory(prefix="ch11-mutation-") as empty:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            key, text = job
            try:
                cells = grade_notebook(nbformat.reads(text, as_version=4), config, Path(empty))
                conn.send((key, cells, ""))
            except Exception:
                conn.send((key, {}, traceback.format_exc()))


@dataclass
class _Slot:
    process: multiprocessing.Process
    conn: Connection
    key: str | None = None
    started: float = 0.0


class Pool:
    """``size`` grading processes; each job gets at most ``wall_seconds``.

    Use as a context manager; :meth:`map` yields one :class:`Graded` per job as jobs finish.
    """

    def __init__(self, size: int = 2, wall_seconds: float = 600.0, log_path: Path | None = None) -> None:
        self.size = size
        self.wall_seconds = wall_seconds
        self.log_path = str(log_path) if log_path else None
        self._context = multiprocessing.get_context("fork")
        self._slots: list[_Slot] = []

    def __enter__(self) -> Pool:
        self._slots = [self._spawn() for _ in range(self.size)]
        return self

    def __exit__(self, *exc: object) -> None:
        for slot in self._slots:
            with contextlib.suppress(OSError):
                slot.conn.send(None)
        for slot in self._slots:
            slot.process.join(5)
            if slot.process.is_alive():
                self._kill(slot)

    def _spawn(self) -> _Slot:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child, self.log_path), daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    @staticmethod
    def _kill(slot: _Slot) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(slot.process.pid, signal.SIGKILL)
        slot.process.join()

    def map(self, jobs: Iterable[tuple[str, NotebookNode]], on_done: Callable[[Graded], None] | None = None
            ) -> Iterator[Graded]:
        """Grade every ``(key, notebook)``; yield each outcome when it is known (not in job order)."""
        pending = iter(jobs)
        busy = 0
        exhausted = False
        while True:
            for slot in self._slots:
                if slot.key is None and not exhausted:
                    job = next(pending, None)
                    if job is None:
                        exhausted = True
                        break
                    key, nb = job
                    slot.conn.send((key, nbformat.writes(nb)))
                    slot.key, slot.started = key, time.monotonic()
                    busy += 1
            if busy == 0:
                return
            now = time.monotonic()
            deadline = min(s.started + self.wall_seconds for s in self._slots if s.key is not None)
            ready = wait([s.conn for s in self._slots if s.key is not None], timeout=max(0.0, deadline - now))
            for index, slot in enumerate(self._slots):
                if slot.key is None:
                    continue
                elapsed = time.monotonic() - slot.started
                if slot.conn in ready:
                    try:
                        key, cells, error = slot.conn.recv()
                    except EOFError:  # the process died (out of memory, a signal): a grading failure
                        key, cells, error = slot.key, {}, f"grading process exited ({slot.process.exitcode})"
                        self._kill(slot)
                        self._slots[index] = slot = self._spawn()
                    outcome = Graded(key, cells, elapsed, error=error)
                elif elapsed >= self.wall_seconds:
                    outcome = Graded(slot.key, {}, elapsed, wall_limit_hit=True)
                    self._kill(slot)
                    self._slots[index] = slot = self._spawn()
                else:
                    continue
                slot.key = None
                busy -= 1
                if on_done:
                    on_done(outcome)
                yield outcome
