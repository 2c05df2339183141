"""One isolated ``nbgrader autograde`` of one submission, and control of the processes it starts.

:func:`grade_isolated` builds a fresh course directory holding the course
config, ``source/``, a copy of the template gradebook (only the assignment; see
:func:`.course.make_template`), the student's own submission row when the
instructor's gradebook has one, and the one submission. The real
``nbgrader autograde <assignment> --student <id>`` runs there with ``CH11_SLOT``
set to the worker's slot (the container-user backend gives each slot its own
uid), in a session of its own, under a wall-time limit. Student code never sees
the instructor's gradebook or any other submission. The run's environment is the
batch's own (a fork of the slot's nbgrader server gets it whole), with
``$CH11_VERDICT_CACHE`` made absolute, so the verdict cache that a course config or
the environment names is the one every isolated run shares, and ``$CH11_FONT_LIST``
naming the font list the batch built for its sandboxes (:mod:`.fonts`).

Every failure (a timeout, an nbgrader error, a full disk, a grader bug) becomes
the :class:`Outcome`'s error text; only the orchestrator's own cancellation
(:meth:`RunningGraders.kill_all`) stops runs in flight.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import MissingEntry

from ..course_layout import AUTOGRADED, CONFIG, GRADEBOOK, SOURCE, SUBMITTED, assignment_source, student_folder
from ..grading_digest import VERDICT_CACHE_ENV
from ..nbgrader_cli import nbgrader_env
from ..untrusted.choose import backend_for
from ..untrusted.launch import EXECUTION_REPORT_ENV, SANDBOX_ENV, SLOT_ENV
from . import fonts
from .intake_records import StudentSubmission
from .merge import PriorSubmission, SubmissionResult, read_result, seed_prior
from .nbgrader_fork import ForkedNbgrader, NbgraderForkServer, start_nbgrader
from .nbgrader_log import nbgrader_error_line
from .records import ExecutionUse

__all__ = ["SCRATCH_ROOT_ENV", "Outcome", "RunningGraders", "grade_isolated", "kill_processes_in", "kill_slot"]

#: When set (the grading image sets it), ``<value>/slot<N>`` is worker slot N's own size-capped
#: filesystem: each submission's scratch directories go there (``TMPDIR``), so a submission that
#: fills its scratch fills only its own slot, never the disk or another slot.
SCRATCH_ROOT_ENV = "CH11_SCRATCH_ROOT"



@dataclass(frozen=True)
class Outcome:
    """One finished isolated grading.

    Attributes:
        sub: the submission graded.
        work: its isolated course directory (the autograded and submitted notebooks to install are there).
        seconds: wall time it took.
        result: what nbgrader recorded, or (a ``str``) why there is nothing to merge, naming the log
            when it helps.
        execution: the notebook-execution budget's use that nbgrader reported, or ``None``.
    """

    sub: StudentSubmission
    work: Path
    seconds: float
    result: SubmissionResult | str
    execution: ExecutionUse | None = None


#: The file in an isolated course where its nbgrader process reports the execution budget's use.
EXECUTION_REPORT = "execution-budget.json"


def read_execution_report(path: Path) -> ExecutionUse | None:
    """The budget report at ``path`` (``trusted.budget``'s JSON), or ``None`` when absent or unusable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        budget, used = float(data["budget_seconds"]), float(data["used_seconds"])
        not_run = tuple(str(n) for n in data.get("not_run", []))
        cut = tuple(str(n) for n in data.get("cut", []))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not (math.isfinite(budget) and math.isfinite(used)):
        return None
    return ExecutionUse(budget, round(used, 2), not_run, cut)


#: An nbgrader run in flight: a process of its own, or a fork of the slot's :class:`.nbgrader_fork.NbgraderForkServer`.
#: Either way ``pid`` is its process group's id.
GraderProcess = subprocess.Popen | ForkedNbgrader


class RunningGraders:
    """Process groups of the nbgrader runs in flight, so a cancelled batch can kill them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[GraderProcess] = set()
        self.cancelled = threading.Event()

    def add(self, proc: GraderProcess) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: GraderProcess) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        self.cancelled.set()
        with self._lock:
            for proc in self._procs:
                _kill_group(proc)


def _kill_group(proc: GraderProcess) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def kill_slot(sandbox: str, slot: int) -> None:
    """Kill whatever the slot's run still left running, where the backend says how (container-user: the slot's uid)."""
    release = backend_for(sandbox).release_slot
    if release is not None:
        release(slot)


def kill_processes_in(directory: Path, rounds: int = 20) -> int:
    """SIGKILL every process whose working directory lies in ``directory``; returns how many were found.

    Repeated (``rounds``) while any are found, so children forked meanwhile go too.
    """
    prefix = str(directory).rstrip("/") + "/"
    found = 0
    for _ in range(rounds):
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                with contextlib.suppress(OSError):
                    if (os.readlink(f"/proc/{entry}/cwd") + "/").startswith(prefix):
                        pids.append(int(entry))
        if not pids:
            break
        found += len(pids)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    return found


def grade_isolated(
    sub: StudentSubmission,
    *,
    course: Path,
    template: Path,
    work_root: Path,
    log_path: Path,
    slot: int,
    sandbox: str,
    timeout: float,
    assignment: str,
    running: RunningGraders,
    prior: PriorSubmission | None = None,
    forks: NbgraderForkServer | None = None,
    spare_core: bool | None = None,
) -> Outcome:
    """Run ``nbgrader autograde`` for ``sub`` in a fresh isolated course under ``work_root``.

    ``prior``: the student's submission row in the instructor's gradebook (timestamp,
    extension, hand scores), seeded into the isolated gradebook so lateness is computed
    as in the real course; ``None`` when the course has no row for the student.
    ``forks``: the slot's fork server; nbgrader then starts as a fork of it (about a second
    less per submission), and as a process of its own when there is none or it has ended.
    ``spare_core``: whether a core is spare for this submission, so that work runs ahead of its turn: the suites
    while the notebooks execute (``SuitesAhead``; it costs a second zygote start) and the later
    notebooks while the earlier ones are graded (``ExecutionAhead``, one thread); ``None``: the
    course config's choice.
    Never raises for the submission's sake: every failure is the outcome's error text.
    """
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"{sub.student}.", dir=work_root))

    def done(result: SubmissionResult | str) -> Outcome:
        return Outcome(sub, work, time.monotonic() - started, result, read_execution_report(work / EXECUTION_REPORT))

    try:
        shutil.copy2(course / CONFIG, work / CONFIG)
        (work / SOURCE).mkdir()
        shutil.copytree(assignment_source(course, assignment), assignment_source(work, assignment))
        shutil.copy2(template, work / GRADEBOOK)
        if prior is not None:
            seed_prior(work, assignment, sub.student, prior)
        submitted = student_folder(work, SUBMITTED, sub.student, assignment)
        submitted.mkdir(parents=True)
        for name, path in sorted(sub.files.items()):
            shutil.copy2(path, submitted / name)
        if sub.timestamp:
            (submitted / "timestamp.txt").write_text(sub.timestamp + "\n")
        if sub.secret:  # nbgrader copies it to autograded/ and feedback/, where release_feedback reads it
            (submitted / "submission_secret.txt").write_text(sub.secret)
        if running.cancelled.is_set():
            return done("batch cancelled before grading started")
        env = nbgrader_env({SLOT_ENV: str(slot), SANDBOX_ENV: sandbox,
                            EXECUTION_REPORT_ENV: str(work / EXECUTION_REPORT), **fonts.grader_env(sandbox)})
        if env.get(VERDICT_CACHE_ENV, "").strip():
            # nbgrader runs in the isolated course, where a relative cache path would name another
            # directory each time (the cache refuses one): resolve it where the batch was started.
            env[VERDICT_CACHE_ENV] = str(Path(env[VERDICT_CACHE_ENV].strip()).absolute())
        if os.environ.get(SCRATCH_ROOT_ENV):
            env["TMPDIR"] = f"{os.environ[SCRATCH_ROOT_ENV]}/slot{slot}"
        elif not backend_for(sandbox).sandboxed:
            # Unsandboxed kernels and workers start sessions of their own, which killing nbgrader's
            # process group misses; their working directories (scratch) under here find them afterwards.
            (work / "tmp").mkdir()
            env["TMPDIR"] = str(work / "tmp")
        # Pin the isolated course on the command line (it wins over the config file): a course config that
        # names an absolute root or database must not send this run into the instructor's course.
        args: tuple[str, ...] = ("autograde", assignment, f"--student={sub.student}", f"--CourseDirectory.root={work}",
                f"--CourseDirectory.db_url=sqlite:///{work / GRADEBOOK}")
        if spare_core is not None:
            args += (f"--SuitesAhead.enabled={spare_core}", f"--ExecutionAhead.workers={int(spare_core)}")
        timed_out = False
        with log_path.open("wb") as log:
            proc = start_nbgrader(args, work, env, log, forks)
            running.add(proc)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                proc.wait()
            finally:
                running.discard(proc)
        kill_slot(sandbox, slot)
        if not backend_for(sandbox).sandboxed:
            kill_processes_in(work / "tmp")
        if running.cancelled.is_set():
            return done("batch cancelled")
        if timed_out:
            return done(f"time limit: grading took longer than {timeout:g} s and was stopped (log: {log_path})")
        if proc.returncode != 0:
            line = nbgrader_error_line(log_path.read_text(errors="replace"))
            return done(f"nbgrader autograde failed (exit {proc.returncode}): {line}")
        try:
            result = read_result(work, assignment, sub.student)
        except MissingEntry:
            return done(f"nbgrader autograde recorded no grades for {sub.student} (log: {log_path})")
        if not student_folder(work, AUTOGRADED, sub.student, assignment).is_dir():
            return done(f"nbgrader autograde wrote no autograded notebooks (log: {log_path})")
        return done(result)
    except OSError as exc:  # disk full, permissions: this submission fails, the batch goes on
        return done(f"could not prepare or read the isolated course: {exc}")
    except Exception as exc:  # a grader bug must not stop the batch either; the record says what happened
        return done(f"internal error while grading: {type(exc).__name__}: {str(exc)[:300]}")
