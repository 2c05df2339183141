"""Self-contained grading jobs: what a remote worker gets, what it sends back, and how it grades.

A :class:`GradingJob` carries everything one submission's grading needs that is
not the grader itself: the submission's bytes, the assignment's template
gradebook, the student's prior submission row, and the coordinator's
:func:`release_digest`. No shared filesystem is needed. The worker
(:func:`grade_job`, run in a Dask worker by :mod:`.cluster`) grades with its
*own* course (config and ``source/``) and its own suites, and first checks that
they are the coordinator's: a mismatched worker fails the job with a clear
error instead of grading with other tests. It then runs the same isolated
``nbgrader autograde`` as local grading (:func:`.isolated.grade_isolated`), with
student code in the sandbox that run starts, never in the worker process, and
refuses to grade without that sandbox exactly as local grading does
(:func:`.guards.check_sandbox`). A :class:`JobResult` comes back: the scores
(:class:`.merge.SubmissionResult`, verdict comments included), the autograded
and submitted notebooks' bytes, nbgrader's log, or the error.

Nothing here imports Dask: a job is plain picklable data, and :func:`grade_job`
is an ordinary function (the tests call it directly).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..course_layout import AUTOGRADED, CONFIG, SUBMITTED, student_folder
from ..grading_digest import release_digest
from ..paths import COURSE_CONFIG
from .guards import check_sandbox
from .intake_checks import inputs_sha256
from .intake_records import StudentSubmission
from .isolated import RunningGraders, grade_isolated
from .merge import PriorSubmission, SubmissionResult
from .nbgrader_fork import SlotServers
from .records import BatchError, ExecutionUse

__all__ = [
    "WORKER_COURSE_ENV",
    "WORKER_FORK_ENV",
    "GradingJob",
    "JobResult",
    "check_worker",
    "grade_job",
    "release_digest",
    "stop_grading",
    "worker_course",
]

#: On a worker: the nbgrader course directory (``nbgrader_config.py``, ``source/<assignment>/``) it
#: grades with. Unset: the checkout the package runs from (its ``nbgrader_config.py`` and ``source/``).
WORKER_COURSE_ENV = "CH11_WORKER_COURSE"
#: On a worker: ``0`` starts each job's nbgrader as a process of its own instead of a fork of the slot's server.
WORKER_FORK_ENV = "CH11_WORKER_FORK_NBGRADER"

@dataclass(frozen=True)
class GradingJob:
    """One submission to grade on a remote worker (picklable; bytes only, no paths of the coordinator).

    Attributes:
        student: nbgrader student id (sanitized by intake).
        sha256: the submission's input digest (:func:`.intake.inputs_sha256` of ``files`` and ``timestamp``).
        files: notebook file name -> its bytes.
        timestamp: nbgrader submission timestamp text, or ``None``.
        release: the coordinator's :func:`release_digest`.
        assignment: nbgrader assignment name.
        sandbox: backend name for student code (``bwrap``, ``container-user``, ``none``).
        timeout: wall-time limit of the isolated run, seconds.
        template: bytes of the template gradebook (:func:`.course.make_template`).
        prior: the student's submission row in the instructor's gradebook, or ``None``.
    """

    student: str
    sha256: str
    files: dict[str, bytes]
    timestamp: str | None
    release: str
    assignment: str
    sandbox: str
    timeout: float
    template: bytes
    prior: PriorSubmission | None = None


@dataclass(frozen=True)
class JobResult:
    """What a worker sends back for one :class:`GradingJob`.

    Attributes:
        student, sha256: the job's (the coordinator checks them against the submission).
        worker: which worker graded it (host and pid), for messages.
        seconds: wall time of the grading on the worker.
        result: what nbgrader recorded (scores, verdict comments, late penalties), or ``None`` on error.
        error: why there is nothing to merge (names the worker when it is the worker's fault), or ``None``.
        autograded, submitted: file name -> bytes of ``autograded/<student>/<assignment>/`` and
            ``submitted/<student>/<assignment>/`` in the isolated course (empty on error).
        log: nbgrader's log of the run (``""`` when it did not run).
        log_path: where the worker kept that log; ``error`` may name it, the coordinator names its own copy instead.
        execution: the notebook-execution budget's use that nbgrader reported on the worker, or ``None``.
    """

    student: str
    sha256: str
    worker: str
    seconds: float
    result: SubmissionResult | None
    error: str | None
    autograded: dict[str, bytes] = field(default_factory=dict)
    submitted: dict[str, bytes] = field(default_factory=dict)
    log: str = ""
    log_path: str = ""
    execution: ExecutionUse | None = None


def worker_course() -> Path:
    """The course this worker grades with: ``$CH11_WORKER_COURSE``, else the checkout the package runs from."""
    return Path(os.environ.get(WORKER_COURSE_ENV) or COURSE_CONFIG.parent).resolve()


def _worker_name() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def check_worker(sandbox: str, release: str, assignment: str) -> str | None:
    """Whether this machine can grade the coordinator's jobs: ``None``, or why not (its sandbox is
    unusable, or its release and suites differ from the coordinator's)."""
    course = worker_course()
    try:
        mine = release_digest(course, assignment)
    except OSError as exc:
        return f"cannot read its course {course} ({exc}); set {WORKER_COURSE_ENV} to the course to grade with"
    if mine != release:
        return (f"its release and suites differ from the coordinator's (digest {mine[:12]} here, {release[:12]} on "
                f"the coordinator, course {course}): install the same version of ch11-grading on every worker, "
                f"with the same nbgrader_config.py and source/{assignment}/ ({WORKER_COURSE_ENV} names the worker's "
                "course)")
    try:
        check_sandbox(sandbox, 1)
    except BatchError as exc:
        return f"refuses to grade: {exc}"
    return None


_slots_lock = threading.Lock()
_slots_taken: set[int] = set()


@contextlib.contextmanager
def _slot() -> Iterator[int]:
    """The lowest grading slot free in this process (``CH11_SLOT``; each thread of a worker gets its own)."""
    with _slots_lock:
        slot = next(k for k in range(len(_slots_taken) + 1) if k not in _slots_taken)
        _slots_taken.add(slot)
    try:
        yield slot
    finally:
        with _slots_lock:
            _slots_taken.discard(slot)


_servers_lock = threading.Lock()
_servers: dict[Path, SlotServers] = {}
#: The gradings in flight in this process, each job's own (a stop kills them all; a job never kills another's).
_running: set[RunningGraders] = set()


def _fork_servers(course: Path) -> SlotServers:
    """This worker process's fork servers for ``course`` (one per slot, :mod:`.nbgrader_fork`), ended by
    :func:`stop_grading`.

    A Dask worker grades many jobs in one long-lived process, so each of its slots forks
    nbgrader as the local pool's do, instead of starting it per job. ``$CH11_WORKER_FORK_NBGRADER=0``
    turns that off (every job then starts nbgrader as a process of its own).
    """
    with _servers_lock:
        servers = _servers.get(course)
        if servers is None:
            enabled = os.environ.get(WORKER_FORK_ENV, "1") != "0"
            servers = _servers[course] = SlotServers(course / CONFIG, enabled=enabled)
        return servers


def stop_grading() -> None:
    """End what grading left running in this process: kill the gradings in flight (each :func:`grade_job`
    then returns at once, its submission not graded: ``batch cancelled``) and end every fork server.

    Called when the Dask worker closes (``batch/dask_worker.py``, whatever closed it: the scheduler, a signal,
    a restart) and at interpreter exit. A job that starts later starts its slot's fork server afresh.
    """
    with _servers_lock:
        running = list(_running)
        servers = list(_servers.values())
        _servers.clear()
    for graders in running:
        graders.kill_all()
    for slot_servers in servers:
        slot_servers.close(final=True)  # a job about to start its grading gets no server: it starts none after this


atexit.register(stop_grading)


def _read_dir(directory: Path) -> dict[str, bytes]:
    """The regular files directly in ``directory`` (as :func:`.merge.install_files` takes them), by name."""
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if stat.S_ISREG(p.lstat().st_mode)}


def grade_job(job: GradingJob) -> JobResult:
    """Grade ``job`` on this machine (a Dask worker) in an isolated course, under the job's sandbox.

    Checks first, failing the job with an error that names this worker: the release and suites
    are the coordinator's (:func:`release_digest`), the sandbox is usable (:func:`check_worker`),
    the bytes are the submission's (``sha256``) and its file names plain notebook names. Never
    raises for the submission's sake; every failure is the result's ``error``.
    """
    started = time.monotonic()
    worker = _worker_name()

    def failed(cause: str, log: str = "", log_path: str = "") -> JobResult:
        return JobResult(job.student, job.sha256, worker, time.monotonic() - started, None, cause, log=log,
                         log_path=log_path)

    problem = check_worker(job.sandbox, job.release, job.assignment)
    if problem is not None:
        return failed(f"Dask worker {worker} {problem}; not graded")
    if inputs_sha256(job.files, job.timestamp) != job.sha256:
        return failed(f"Dask worker {worker}: the job's notebooks do not match its digest {job.sha256[:12]}; "
                      "not graded")
    bad = [name for name in job.files if name != Path(name).name or not name.endswith(".ipynb")]
    if bad:
        return failed(f"Dask worker {worker}: the job names files that are not notebooks: {sorted(bad)!r}; not graded")
    scratch = Path(tempfile.mkdtemp(prefix=f"ch11-job-{job.student}."))
    try:
        staged = scratch / "staged"
        staged.mkdir()
        files = {}
        for name, data in sorted(job.files.items()):
            (staged / name).write_bytes(data)
            files[name] = staged / name
        (scratch / "template.db").write_bytes(job.template)
        (scratch / "work").mkdir()
        (scratch / "logs").mkdir()
        log = scratch / "logs" / f"{job.student}.log"
        sub = StudentSubmission(job.student, "", files, job.timestamp, job.sha256)
        course = worker_course()
        running = RunningGraders()
        with _servers_lock:
            _running.add(running)
        try:
            with _slot() as slot:
                outcome = grade_isolated(sub, course=course, template=scratch / "template.db",
                                         work_root=scratch / "work", log_path=log, slot=slot, sandbox=job.sandbox,
                                         timeout=job.timeout, assignment=job.assignment, running=running,
                                         prior=job.prior, forks=_fork_servers(course).for_slot(slot),
                                         # A cluster grades for throughput: its cores are its workers'.
                                         spare_core=False)
        finally:
            with _servers_lock:
                _running.discard(running)
        log_text = log.read_text(errors="replace") if log.is_file() else ""
        if isinstance(outcome.result, str):
            return failed(outcome.result, log_text, str(log))
        return JobResult(job.student, job.sha256, worker, outcome.seconds, outcome.result, None,
                         autograded=_read_dir(student_folder(outcome.work, AUTOGRADED, job.student, job.assignment)),
                         submitted=_read_dir(student_folder(outcome.work, SUBMITTED, job.student, job.assignment)),
                         log=log_text, log_path=str(log), execution=outcome.execution)
    except OSError as exc:  # a full disk on the worker: this submission fails, the batch goes on
        return failed(f"Dask worker {worker} could not prepare or read the isolated course: {exc}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
