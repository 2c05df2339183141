"""Grading a whole class: isolated per-submission autograding, trusted merging, resumable.

:func:`grade_class` is the pipeline (docs/batch.md has the TA's view):

1. **Course.** ``course`` is the instructor's nbgrader course directory; when it
   has no ``nbgrader_config.py`` it is created from the repository's course
   config and ``source/`` (:func:`init_course`). ``nbgrader generate_assignment``
   runs once, when the gradebook does not know the assignment yet.
2. **Intake** (:mod:`.intake`): the source folder or zip becomes one staged
   submission per student; unusable ones become error records right away.
   Before grading, each submission's nbgrader cell metadata is compared with the
   released notebooks (:mod:`.cellcheck`): a renamed, copied or re-flagged grade
   cell, which nbgrader fails on with a message naming no cell, becomes an error
   record that names the notebook, the cell and what to do.
3. **Resume.** The ledger (:mod:`.ledger`) names the submissions already merged
   with the same input digest; they are skipped (``skipped_resume``).
4. **Isolated grading**, ``workers`` at a time: per submission a fresh course
   directory holding the course config, ``source/``, a copy of the gradebook
   with only the assignment (no students but this one's own submission row,
   extension and hand scores when the course has them, so that nbgrader's late
   penalty is the real course's) and the one submission; the real
   ``nbgrader autograde ch11 --student <id>`` runs there with ``CH11_SLOT``
   set to the worker's slot (the container-user backend gives each slot its
   own uid), under a wall-time limit. Student code never sees the instructor's
   gradebook or any other submission.
5. **Merge**, by this process alone, one submission at a time, as results
   arrive (:mod:`.merge`): scores set in the instructor's gradebook, autograded
   and submitted notebooks renamed into place, then a ledger entry.
6. **Reports**: ``nbgrader generate_feedback`` and ``nbgrader export`` on the
   instructor's course, then the CSV, the summary and ``records.json``
   (:mod:`.report`).

A broken or hostile submission costs only its own record: every failure
(intake, a timeout, an nbgrader error) is recorded with its cause and the batch
goes on. A batch killed at any moment and run again ends with the same
gradebook as an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import queue
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..nbgrader_cli import nbgrader_argv, nbgrader_env, run_nbgrader
from ..untrusted.choose import resolve_backend
from ..untrusted.launch import SANDBOX_ENV, SLOT_ENV
from . import report
from .cellcheck import check_submission, load_released
from .intake import ASSIGNMENT, IntakeError, IntakeLimits, StudentSubmission, read_source
from .ledger import Ledger
from .merge import PriorSubmission, autograded_cells, install_files, merge_result, read_prior, read_result, seed_prior

__all__ = [
    "STATE_DIR",
    "BatchError",
    "BatchReport",
    "EarlierGrades",
    "ProgressEvent",
    "SubmissionRecord",
    "grade_class",
    "init_course",
    "nbgrader_error_line",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Where a course keeps the batch's own files: ledger, logs, staging, work dirs.
STATE_DIR = ".ch11-batch"
REPORTS_DIR = "reports"
DEFAULT_TIMEOUT = 1800.0
#: When set (the grading image sets it), ``<value>/slot<N>`` is worker slot N's own size-capped
#: filesystem: each submission's scratch directories go there (``TMPDIR``), so a submission that
#: fills its scratch fills only its own slot, never the disk or another slot.
SCRATCH_ROOT_ENV = "CH11_SCRATCH_ROOT"


class BatchError(RuntimeError):
    """The batch cannot start or finish (course unusable, another batch running, sandbox missing)."""


@dataclass(frozen=True)
class EarlierGrades:
    """Grades of a student that the instructor's gradebook still holds after this run's error.

    A submission that cannot be graded is never merged, so whatever the gradebook
    held for the student before stays there (nothing is lost); the record says so.

    Attributes:
        sha256: input digest of the submission those grades belong to (from the
            ledger), ``""`` when the ledger has no graded entry for the student
            (grades entered outside this batch, e.g. by ``nbgrader autograde``).
        graded_at: when the batch merged them (ledger time, ISO 8601 UTC), or ``None``.
        score, max_score: autograded points then, from the ledger (``None`` when unknown).
    """

    sha256: str
    graded_at: str | None
    score: float | None
    max_score: float | None

    def describe(self, sha256_now: str) -> str:
        """``gradebook keeps the grades of the earlier submission 1a2b3c4d5e6f graded 2026-11-20 12:00:00
        UTC, 4/40 autograded`` (``this same submission`` when ``sha256_now`` is the same digest)."""
        if not self.sha256:
            return "gradebook keeps grades of an earlier submission that this batch did not merge (its ledger has " \
                   "no graded entry; e.g. an earlier nbgrader autograde)"
        what = "this same submission" if self.sha256 == sha256_now else f"the earlier submission {self.sha256[:12]}"
        text = f"gradebook keeps the grades of {what} graded {_utc_text(self.graded_at)}"
        if self.score is not None and self.max_score is not None:
            text += f", {report.format_score(self.score)}/{report.format_score(self.max_score)} autograded"
        return text


def _utc_text(iso: str | None) -> str:
    """``2026-11-20T12:00:00+00:00`` -> ``2026-11-20 12:00:00 UTC``; ``at an unknown time`` for ``None``."""
    if not iso:
        return "at an unknown time"
    return iso.replace("T", " ").removesuffix("+00:00") + " UTC"


@dataclass
class SubmissionRecord:
    """What happened to one student's submission in a batch.

    Attributes:
        student: nbgrader student id (sanitized).
        status: ``"graded"`` (merged now), ``"error"`` (not merged; ``error``
            says why) or ``"skipped_resume"`` (merged by an earlier run of the
            same batch from identical inputs).
        error: the cause, naming the file when there is one, or ``None``.
        score: autograded points (``None`` for errors).
        max_score: autograded points possible.
        per_notebook: notebook name -> autograded points.
        sha256: digest of the inputs (notebooks and timestamp), ``""`` when intake failed.
        seconds: wall time spent grading it in this run (0 when skipped or refused at intake).
        notes: non-fatal remarks (ignored files, missing notebooks, sanitized id).
        origin: where the submission came from in the source.
        log: path of nbgrader's log for it, when it ran.
        earlier: for an ``"error"`` whose student the gradebook already held: the grades it
            still holds (``error`` then ends with ``(gradebook keeps the grades of ...)``).
        lms_late: the LMS download marked the submission late (Canvas ``LATE``). The download
            carries no submission time, so nbgrader computes no lateness from it: no late
            penalty follows from this flag (the CSV and the summary say so).
    """

    student: str
    status: str
    error: str | None
    score: float | None
    max_score: float
    per_notebook: dict[str, float] = field(default_factory=dict)
    sha256: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    origin: str = ""
    log: str | None = None
    earlier: EarlierGrades | None = None
    lms_late: bool = False


@dataclass
class BatchReport:
    """The outcome of :func:`grade_class`.

    Attributes:
        records: one per student found in the source, sorted by student id.
        csv_path: per-student grade CSV (deterministic for identical input).
        summary_path: human-readable summary (counts, scores, slowest, errors).
        feedback_dir: ``<course>/feedback`` (``<student>/ch11/*.html``).
        elapsed_seconds: wall time of the whole batch.
        problems: batch-level steps that failed (feedback, export), empty when none.
    """

    records: list[SubmissionRecord]
    csv_path: Path
    summary_path: Path
    feedback_dir: Path
    elapsed_seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProgressEvent:
    """Reported after each submission finishes (and once with ``record=None`` per batch step).

    Attributes:
        done, total: submissions finished so far, and in the batch.
        record: the submission just finished, or ``None`` for a step message.
        message: the step (``"intake: 200 submissions, 3 refused"``) or ``""``.
        elapsed_seconds: since the batch started.
        eta_seconds: estimated time to the last submission, from this run's
            throughput; ``None`` until one submission has been graded.
    """

    done: int
    total: int
    record: SubmissionRecord | None
    message: str
    elapsed_seconds: float
    eta_seconds: float | None


# --------------------------------------------------------------------------- course


def init_course(
    course: Path,
    *,
    config: Path | None = None,
    source_dir: Path | None = None,
    assignment: str = ASSIGNMENT,
) -> bool:
    """Create ``course`` from the course config and source notebooks unless it is one already.

    A directory with ``nbgrader_config.py`` is left as it is (it must have
    ``source/<assignment>/``). Otherwise ``config`` (default: the repository's
    ``nbgrader_config.py``) and ``source_dir`` (default: the repository's
    ``source/<assignment>``) are copied into a new or empty ``course``.
    Returns whether the course was created.

    Raises:
        BatchError: ``course`` is a non-empty directory without a config, or the
            course has no source notebooks, or the defaults are not available
            (an installed package without the repository).
    """
    config = config or REPO_ROOT / "nbgrader_config.py"
    source_dir = source_dir or REPO_ROOT / "source" / assignment
    if (course / "nbgrader_config.py").is_file():
        if not (course / "source" / assignment).is_dir():
            raise BatchError(f"{course} has no source/{assignment}/: not a course for {assignment}")
        return False
    if course.exists() and (not course.is_dir() or any(course.iterdir())):
        raise BatchError(f"{course} exists but is not an nbgrader course (no nbgrader_config.py); give a new or empty "
                         "directory, or an existing course")
    if not config.is_file() or not source_dir.is_dir():
        raise BatchError(f"cannot create {course}: the course config ({config}) or source notebooks ({source_dir}) "
                         "are not available here; create the course from a repository checkout first")
    course.mkdir(parents=True, exist_ok=True)
    (course / "source").mkdir()
    shutil.copy2(config, course / "nbgrader_config.py")
    shutil.copytree(source_dir, course / "source" / assignment)
    return True


def _has_assignment(course: Path, assignment: str) -> bool:
    if not (course / "gradebook.db").is_file():
        return False
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        try:
            return bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return False


def _ensure_assignment(course: Path, assignment: str, log_path: Path) -> None:
    if _has_assignment(course, assignment):
        return
    with log_path.open("wb") as log:
        done = run_nbgrader(course, "generate_assignment", assignment, "--force", stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not _has_assignment(course, assignment):
        line = nbgrader_error_line(log_path.read_text(errors="replace"))
        raise BatchError(f"nbgrader generate_assignment {assignment} failed: {line} (log: {log_path})")


def _make_template(course: Path, dest: Path, assignment: str) -> None:
    """A copy of the course gradebook holding only ``assignment``: no students, no other assignments."""
    dest.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(course / "gradebook.db")) as src, \
            contextlib.closing(sqlite3.connect(dest)) as out:
        src.backup(out)
    with Gradebook(f"sqlite:///{dest}") as gb:
        for student in [s.id for s in gb.students]:
            gb.remove_student(student)
        for other in [a.name for a in gb.assignments if a.name != assignment]:
            gb.remove_assignment(other)


# --------------------------------------------------------------------------- one submission


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the spawning thread dies (a killed orchestrator)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Unavailable|Exit))\b:?\s*(.*)$")
_GENERIC = ("There was an error processing assignment", "Please see the error log", "Canceled", "Traceback")


def nbgrader_error_line(log_text: str, limit: int = 300) -> str:
    """The most telling line of an nbgrader log that ended in failure, trimmed to ``limit`` characters.

    Preference: the last exception line of a traceback (``SandboxUnavailable:
    ...``), then the last specific ``ERROR`` line, then the last non-empty line.
    The notebook being processed, when the log names one, is prefixed.
    """
    lines = [line.rstrip() for line in log_text.splitlines() if line.strip()]
    notebook = ""
    for line in lines:
        match = re.search(r"(?:Sanitizing|Autograding|Converting notebook) (\S+\.ipynb)", line)
        if match:
            notebook = Path(match.group(1)).name
    chosen = ""
    for line in reversed(lines):
        stripped = line.strip()
        if _EXCEPTION_LINE.match(stripped) and not stripped.startswith(_GENERIC):
            chosen = stripped
            break
    if not chosen:
        for line in reversed(lines):
            if "ERROR]" in line or "| ERROR" in line:
                text = line.split("]", 1)[-1].strip()
                if text and not text.startswith(_GENERIC):
                    chosen = text
                    break
    if not chosen:
        chosen = lines[-1].strip() if lines else "(empty log)"
    if notebook and notebook not in chosen:
        chosen = f"{notebook}: {chosen}"
    return chosen if len(chosen) <= limit else chosen[: limit - 3] + "..."


@dataclass
class _Outcome:
    sub: StudentSubmission
    work: Path
    seconds: float
    error: str | None = None
    result: object = None  # merge.SubmissionResult when error is None


class _Running:
    """Process groups of the nbgrader runs in flight, so a cancelled batch can kill them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self.cancelled = threading.Event()

    def add(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        self.cancelled.set()
        with self._lock:
            for proc in self._procs:
                _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill_slot(sandbox: str, slot: int) -> None:
    """Container-user backend: kill whatever the slot's uid still runs (it outlives a killed nbgrader)."""
    if sandbox == "container-user" and os.geteuid() == 0:
        from ..untrusted.backends.container_user import FIRST_SLOT_UID, kill_uid

        for _ in range(20):
            if kill_uid(FIRST_SLOT_UID + slot) == 0:
                break


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


def _grade_isolated(
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
    running: _Running,
    prior: PriorSubmission | None = None,
) -> _Outcome:
    """Run ``nbgrader autograde`` for ``sub`` in a fresh isolated course under ``work_root``.

    ``prior``: the student's submission row in the instructor's gradebook (timestamp,
    extension, hand scores), seeded into the isolated gradebook so lateness is computed
    as in the real course; ``None`` when the course has no row for the student.
    """
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"{sub.student}.", dir=work_root))
    outcome = _Outcome(sub, work, 0.0)
    try:
        shutil.copy2(course / "nbgrader_config.py", work / "nbgrader_config.py")
        (work / "source").mkdir()
        shutil.copytree(course / "source" / assignment, work / "source" / assignment)
        shutil.copy2(template, work / "gradebook.db")
        if prior is not None:
            seed_prior(work, assignment, sub.student, prior)
        submitted = work / "submitted" / sub.student / assignment
        submitted.mkdir(parents=True)
        for name, path in sorted(sub.files.items()):
            shutil.copy2(path, submitted / name)
        if sub.timestamp:
            (submitted / "timestamp.txt").write_text(sub.timestamp + "\n")
        if running.cancelled.is_set():
            outcome.error = "batch cancelled before grading started"
            return outcome
        env = nbgrader_env({SLOT_ENV: str(slot), SANDBOX_ENV: sandbox})
        if os.environ.get(SCRATCH_ROOT_ENV):
            env["TMPDIR"] = f"{os.environ[SCRATCH_ROOT_ENV]}/slot{slot}"
        elif sandbox == "none":
            # Unsandboxed kernels and workers start sessions of their own, which killing nbgrader's
            # process group misses; their working directories (scratch) under here find them afterwards.
            (work / "tmp").mkdir()
            env["TMPDIR"] = str(work / "tmp")
        # Pin the isolated course on the command line (it wins over the config file): a course config that
        # names an absolute root or database must not send this run into the instructor's course.
        argv = nbgrader_argv("autograde", assignment, f"--student={sub.student}", f"--CourseDirectory.root={work}",
                             f"--CourseDirectory.db_url=sqlite:///{work / 'gradebook.db'}")
        timed_out = False
        with log_path.open("wb") as log:
            proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
            running.add(proc)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                proc.wait()
            finally:
                running.discard(proc)
        _kill_slot(sandbox, slot)
        if sandbox == "none":
            kill_processes_in(work / "tmp")
        if running.cancelled.is_set():
            outcome.error = "batch cancelled"
        elif timed_out:
            outcome.error = f"time limit: grading took longer than {timeout:g} s and was stopped (log: {log_path})"
        elif proc.returncode != 0:
            line = nbgrader_error_line(log_path.read_text(errors="replace"))
            outcome.error = f"nbgrader autograde failed (exit {proc.returncode}): {line}"
        else:
            try:
                outcome.result = read_result(work, assignment, sub.student)
            except MissingEntry:
                outcome.error = f"nbgrader autograde recorded no grades for {sub.student} (log: {log_path})"
            if outcome.error is None and not (work / "autograded" / sub.student / assignment).is_dir():
                outcome.error = f"nbgrader autograde wrote no autograded notebooks (log: {log_path})"
    except OSError as exc:  # disk full, permissions: this submission fails, the batch goes on
        outcome.error = f"could not prepare or read the isolated course: {exc}"
    except Exception as exc:  # a grader bug must not stop the batch either; the record says what happened
        outcome.error = f"internal error while grading: {type(exc).__name__}: {str(exc)[:300]}"
    finally:
        outcome.seconds = time.monotonic() - started
    return outcome


# --------------------------------------------------------------------------- the batch


class _Lock:
    """An exclusive lock on the course's batch state; released by the kernel if the process dies."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(self.fd, 32, 0).decode(errors="replace").strip()
            os.close(self.fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise BatchError(f"another batch is grading this course (pid {holder or '?'}); wait for it "
                                 "or stop it first") from exc
            raise
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        os.close(self.fd)


def reachable_by_others(path: Path) -> bool:
    """Whether a user outside ``path``'s owner and group could read it: every directory on the way is
    searchable by "others" and ``path`` itself is readable (a file) or searchable (a directory) by them."""
    path = path.resolve()
    for directory in reversed(path.parents):
        if not directory.stat().st_mode & stat.S_IXOTH:
            return False
    mode = path.stat().st_mode
    return bool(mode & (stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH))


def _check_private(sandbox: str, paths: list[Path]) -> None:
    """container-user: student code runs as other uids on this machine; they must not reach these paths."""
    if sandbox != "container-user":
        return
    for path in paths:
        if path.exists() and reachable_by_others(path):
            raise BatchError(f"{path} is reachable by the unprivileged users that run student code: put it below a "
                             "directory of mode 0700 (the --docker mode and the Gradescope autograder do)")


def _check_sandbox(name: str, workers: int) -> None:
    from ..untrusted.choose import choose_launcher
    from ..untrusted.launch import SandboxUnavailable

    if name == "container-user" and workers > 8:
        raise BatchError("the container-user backend has 8 slots: use --workers 8 or fewer")
    try:
        choose_launcher(name)
    except SandboxUnavailable as exc:
        raise BatchError(f"sandbox {name!r} unavailable: {exc}") from exc
    except ValueError as exc:
        raise BatchError(str(exc)) from exc


def _resumable(
    entry: dict | None, sub: StudentSubmission, course: Path, merged: set[str], assignment: str, due: str | None
) -> bool:
    """Merged by an earlier run from the same inputs against the same due date (a changed due date or extension
    changes nbgrader's late penalty, so the submission is graded again)."""
    return (
        entry is not None
        and entry.get("event") == "graded"
        and entry.get("sha256") == sub.sha256
        and entry.get("due") == due
        and sub.student in merged
        and (course / "autograded" / sub.student / assignment).is_dir()
    )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _max_score(course: Path, assignment: str) -> float:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return round(sum(p for cells in autograded_cells(gb, assignment).values() for p in cells.values()), 6)


def grade_class(
    source: Path,
    course: Path,
    *,
    workers: int = 2,
    sandbox: str | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    limits: IntakeLimits | None = None,
    regrade: bool = False,
    assignment: str = ASSIGNMENT,
    keep_work: bool = False,
    feedback: bool = True,
) -> BatchReport:
    """Grade every submission in ``source`` into the nbgrader course ``course``.

    Args:
        source: a folder in nbgrader layout or an LMS zip (see :mod:`.intake`).
        course: the instructor's course directory (created when absent, see
            :func:`init_course`). The batch keeps its files in ``<course>/.ch11-batch/``
            and its reports in ``<course>/reports/``.
        workers: submissions graded at the same time (each an ``nbgrader``
            process with its own ``CH11_SLOT``).
        sandbox: backend name for student code (``bwrap``, ``container-user``,
            ``none``); ``None`` reads ``$CH11_SANDBOX`` (default ``bwrap``). It is
            checked before anything is graded.
        progress: called in this thread after each finished submission and at
            each batch step.
        timeout: wall-time limit per submission, seconds.
        limits: intake caps.
        regrade: grade everything again, ignoring the ledger.
        keep_work: keep the isolated course directories (for debugging).
        feedback: run ``nbgrader generate_feedback`` and ``export`` at the end
            (the Gradescope autograder, which reports through results.json, does not).

    Raises:
        BatchError: the course, the sandbox or the lock is unusable; nothing was graded.
        IntakeError: the source is refused as a whole.
    """
    started = time.monotonic()
    if workers < 1:
        raise BatchError("workers must be at least 1")
    try:
        sandbox = resolve_backend(sandbox)
    except ValueError as exc:
        raise BatchError(str(exc)) from exc
    source = Path(source).resolve()
    course = Path(course).resolve()
    if not source.exists():
        raise IntakeError(f"{source}: no such folder or zip file")
    _check_sandbox(sandbox, workers)
    init_course(course, assignment=assignment)
    _check_private(sandbox, [source, course])
    state = course / STATE_DIR
    state.mkdir(mode=0o700, exist_ok=True)
    lock = _Lock(state / "lock")
    try:
        return _run(source, course, state, workers=workers, sandbox=sandbox, progress=progress, timeout=timeout,
                    limits=limits, regrade=regrade, assignment=assignment, keep_work=keep_work, feedback=feedback,
                    started=started)
    finally:
        lock.release()


def _run(
    source: Path,
    course: Path,
    state: Path,
    *,
    workers: int,
    sandbox: str,
    progress: Callable[[ProgressEvent], None] | None,
    timeout: float,
    limits: IntakeLimits | None,
    regrade: bool,
    assignment: str,
    keep_work: bool,
    feedback: bool,
    started: float,
) -> BatchReport:
    logs = state / "logs"
    logs.mkdir(exist_ok=True)
    work_root = state / "work"
    if work_root.exists():
        shutil.rmtree(work_root)  # left by a killed run
    work_root.mkdir()
    for slot in range(workers):
        _kill_slot(sandbox, slot)

    def emit(done: int, total: int, record: SubmissionRecord | None, message: str = "",
             eta: float | None = None) -> None:
        if progress is not None:
            progress(ProgressEvent(done, total, record, message, time.monotonic() - started, eta))

    _ensure_assignment(course, assignment, logs / "generate_assignment.log")
    notebooks = sorted(p.name for p in (course / "source" / assignment).glob("*.ipynb"))
    try:
        released = load_released(course / "source" / assignment, notebooks)
    except ValueError as exc:
        raise BatchError(f"cannot read the assignment's notebooks: {exc}") from exc
    intake = read_source(source, state / "staging", notebooks, assignment=assignment, limits=limits)
    max_score = _max_score(course, assignment)
    ledger = Ledger(state / "ledger.jsonl")
    latest = {} if regrade else ledger.latest()
    last_graded = ledger.latest_graded()  # read even with regrade: the gradebook keeps those grades either way
    duedate, priors = read_prior(course, assignment)
    merged = set(priors)
    graded_before = {student for student, prior in priors.items() if prior.has_grades}

    def due(student: str) -> str | None:
        return _iso(priors[student].due(duedate) if student in priors else duedate)
    total = len(intake.submissions)
    refused = sum(1 for s in intake.submissions if s.error)
    emit(0, total, None, f"intake ({intake.kind}): {total} submissions, {refused} refused at intake")

    records: dict[str, SubmissionRecord] = {}
    jobs: list[StudentSubmission] = []
    done = 0
    for sub in intake.submissions:
        entry = latest.get(sub.student)
        resumable = sub.error is None and _resumable(entry, sub, course, merged, assignment, due(sub.student))
        if sub.error is None and not resumable:
            # Before nbgrader, which fails on tampered cell metadata without naming the cell.
            try:
                sub.error = check_submission(sub.files, released)
            except Exception as exc:  # a bug of the check must not stop the batch: nbgrader then judges the cells
                sub.notes.append(f"cell metadata check failed ({type(exc).__name__}: {str(exc)[:200]}); "
                                 "graded by nbgrader as submitted")
        if sub.error:
            record = _error_record(sub, sub.error, max_score, _earlier(sub.student, graded_before, last_graded), 0.0,
                                   None)
            ledger.append({"event": "error", "student": sub.student, "sha256": sub.sha256, "error": record.error,
                           "score": None, "max_score": max_score, "per_notebook": {}, "seconds": 0.0})
        elif resumable:
            assert entry is not None
            record = SubmissionRecord(sub.student, "skipped_resume", None, entry.get("score"), max_score,
                                      dict(entry.get("per_notebook") or {}), sub.sha256, 0.0, list(sub.notes),
                                      sub.origin, str(logs / f"{sub.student}.log"), lms_late=sub.late)
        else:
            jobs.append(sub)
            continue
        records[sub.student] = record
        done += 1
        emit(done, total, record)

    running = _Running()
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def task(sub: StudentSubmission) -> _Outcome:
        slot = slots.get()
        try:
            return _grade_isolated(sub, course=course, template=state / "template.db", work_root=work_root,
                                   log_path=logs / f"{sub.student}.log", slot=slot, sandbox=sandbox,
                                   timeout=timeout, assignment=assignment, running=running,
                                   prior=priors.get(sub.student))
        finally:
            slots.put(slot)

    if jobs:
        _make_template(course, state / "template.db", assignment)
        inside_course = source == course or course in source.parents
        grading_started = time.monotonic()
        finished_jobs = 0
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ch11-grade")
        pending: set[Future[_Outcome]] = set()
        try:
            pending = {pool.submit(task, sub) for sub in jobs}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: f.result().sub.student):
                    outcome = future.result()
                    record = _finish(outcome, course, assignment, max_score, ledger, logs, inside_course,
                                     _earlier(outcome.sub.student, graded_before, last_graded),
                                     due(outcome.sub.student))
                    if not keep_work:
                        shutil.rmtree(outcome.work, ignore_errors=True)
                    records[record.student] = record
                    done += 1
                    finished_jobs += 1
                    rate = (time.monotonic() - grading_started) / finished_jobs
                    emit(done, total, record, eta=rate * (len(jobs) - finished_jobs))
        except BaseException:
            running.kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
            for slot in range(workers):
                _kill_slot(sandbox, slot)
            raise
        pool.shutdown(wait=True)

    problems: list[str] = []
    ordered = [records[s.student] for s in intake.submissions]
    reports = course / REPORTS_DIR
    reports.mkdir(exist_ok=True)
    if feedback and any(r.status != "error" for r in ordered):
        emit(done, total, None, "nbgrader generate_feedback")
        problems += _course_step(course, logs / "generate_feedback.log", "generate_feedback", assignment, "--force")
    if feedback:
        emit(done, total, None, "nbgrader export")
        problems += _course_step(course, logs / "export.log", "export", "--to",
                                 str(reports / f"{assignment}-nbgrader-export.csv"))
    csv_path = reports / f"{assignment}-grades.csv"
    rows = report.grade_rows(course, assignment, ordered)
    report.write_csv(csv_path, rows)
    elapsed = time.monotonic() - started
    summary_path = reports / f"{assignment}-summary.txt"
    report.write_atomically(summary_path, report.summary_text(
        ordered, elapsed_seconds=elapsed, workers=workers, sandbox=sandbox, source=str(source),
        intake_notes=intake.notes, batch_problems=problems))
    report.write_atomically(reports / f"{assignment}-records.json", report.records_json(ordered))
    return BatchReport(ordered, csv_path, summary_path, course / "feedback", elapsed, problems)


def _earlier(student: str, graded_before: set[str], last_graded: dict[str, dict]) -> EarlierGrades | None:
    """What the gradebook holds for ``student`` from before this run, or ``None`` when it holds no grades."""
    if student not in graded_before:
        return None
    entry = last_graded.get(student)
    if entry is None:
        return EarlierGrades("", None, None, None)
    return EarlierGrades(str(entry.get("sha256") or ""), entry.get("at"), entry.get("score"), entry.get("max_score"))


def _error_record(
    sub: StudentSubmission,
    cause: str,
    max_score: float,
    earlier: EarlierGrades | None,
    seconds: float,
    log: str | None,
) -> SubmissionRecord:
    """An ``error`` record; when the gradebook still holds earlier grades of the student, the error says so."""
    error = cause if earlier is None else f"{cause} ({earlier.describe(sub.sha256)})"
    return SubmissionRecord(sub.student, "error", error, None, max_score, sha256=sub.sha256, seconds=round(seconds, 3),
                            notes=list(sub.notes), origin=sub.origin, log=log, earlier=earlier, lms_late=sub.late)


def _finish(
    outcome: _Outcome,
    course: Path,
    assignment: str,
    max_score: float,
    ledger: Ledger,
    logs: Path,
    inside_course: bool,
    earlier: EarlierGrades | None = None,
    due: str | None = None,
) -> SubmissionRecord:
    """Merge one finished isolated grading into the course (this thread only), then write the ledger.

    ``earlier``: what the gradebook held for the student before this run (named in an error record).
    ``due``: the student's due date the grading used (ISO, naive UTC), kept in the ledger for resuming.
    """
    sub = outcome.sub
    log = str(logs / f"{sub.student}.log")
    if outcome.error is None:
        result = outcome.result
        try:
            merge_result(course, assignment, result)  # type: ignore[arg-type]
            # The grades are committed: should installing the files fail, the gradebook holds these grades.
            earlier = EarlierGrades(sub.sha256, datetime.now(UTC).isoformat(timespec="seconds"),
                                    result.score, max_score)  # type: ignore[attr-defined]
            install_files(outcome.work / "autograded" / sub.student / assignment,
                          course / "autograded" / sub.student / assignment)
            if not inside_course:
                install_files(outcome.work / "submitted" / sub.student / assignment,
                              course / "submitted" / sub.student / assignment)
        except Exception as exc:  # recorded; the rerun regrades and merges again (merging only sets values)
            outcome.error = f"merging into the course failed: {type(exc).__name__}: {str(exc)[:300]}"
    if outcome.error is not None:
        record = _error_record(sub, outcome.error, max_score, earlier, outcome.seconds, log)
        ledger.append({"event": "error", "student": sub.student, "sha256": sub.sha256, "error": record.error,
                       "score": None, "max_score": max_score, "per_notebook": {},
                       "seconds": record.seconds})
        return record
    result = outcome.result
    record = SubmissionRecord(sub.student, "graded", None, result.score, max_score,  # type: ignore[attr-defined]
                              dict(result.per_notebook), sub.sha256, round(outcome.seconds, 3),  # type: ignore[attr-defined]
                              list(sub.notes), sub.origin, log, lms_late=sub.late)
    ledger.append({"event": "graded", "student": sub.student, "sha256": sub.sha256, "error": None,
                   "score": record.score, "max_score": max_score, "per_notebook": record.per_notebook,
                   "seconds": record.seconds, "due": due})
    return record


def _course_step(course: Path, log_path: Path, *args: str) -> list[str]:
    with log_path.open("wb") as log:
        done = run_nbgrader(course, *args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode == 0:
        return []
    line = nbgrader_error_line(log_path.read_text(errors="replace"))
    return [f"nbgrader {args[0]} failed (exit {done.returncode}): {line} (log: {log_path})"]
