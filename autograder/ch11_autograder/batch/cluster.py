"""Grading on a Dask cluster: the runner behind ``ch11-grade batch --cluster`` (docs/batch.md).

:class:`DaskRunner` is a :class:`.runners.Runner`: connected once (:meth:`DaskRunner.start`, which
checks the workers) and kept until closed, it sends one self-contained
:class:`.jobs.GradingJob` per submission to the cluster (``Client.submit`` of
:func:`.jobs.grade_job`), and turns each :class:`.jobs.JobResult` that comes back
into the same :class:`.isolated.Outcome` the local pool yields: the notebooks'
bytes are written into an isolated course directory under the plan's
``work_root`` and nbgrader's log to ``plan.log_for(student)``. The orchestrator
then merges, writes the ledger and reports exactly as for local workers, one
transaction per submission on this machine; merging only sets values, so a job
that Dask ran twice (a retry after a lost worker) merges to the same gradebook.

* ``cluster="local"``: a ``LocalCluster`` of ``workers`` worker processes (one
  thread each), scheduler and workers listening on 127.0.0.1 only.
* ``cluster="slurm"`` (``pbs``, ``sge``, ``lsf``, ``htcondor``): a dask-jobqueue cluster
  (:func:`jobqueue_cluster`) whose settings (cores, memory, queue, walltime, job
  directives) come from Dask's configuration file (``jobqueue.<name>.*``); its
  scheduler runs in this process and asks the batch system for ``workers``
  workers.
* ``cluster="tcp://HOST:PORT"`` or ``"tls://HOST:PORT"``: an existing scheduler
  (``dask scheduler``; workers started with ``dask worker``). Dask's own
  configuration applies (``distributed.comm.tls.*`` for TLS). Connecting to a
  scheduler that is not on this machine over plain ``tcp://`` warns loudly.

Before anything is sent, every connected worker is checked
(:func:`.jobs.check_worker`: its sandbox, its release and suites); one that fails
refuses the batch (:class:`.records.BatchError`) naming it. A worker that joins
later is checked by each job it runs. A worker that dies costs only time: Dask
reschedules its jobs; a job whose runs see more workers die than
``distributed.scheduler.allowed-failures`` (the scheduler's setting, 3 by default: the fourth
death) ends as that student's error, and the batch goes on.

Every worker gets the plugin :class:`.dask_worker.StopWithWorker` (registered on the cluster when
the runner connects): the worker's close ends its gradings and fork servers, and SIGTERM or
SIGINT close the worker before Dask leaves its event loop (docs/batch.md, "Stopping a worker").

Dask is an optional extra (``pip install .[dask]``): it is imported only here (and in
:mod:`.dask_worker`, imported from here), and this module only when a batch asks for a cluster.
"""

from __future__ import annotations

import ipaddress
import socket
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..course_layout import AUTOGRADED, SUBMITTED
from .intake_records import StudentSubmission
from .isolated import Outcome
from .jobs import GradingJob, JobResult, check_worker, grade_job, release_digest
from .merge import PriorSubmission
from .plan import BatchPlan
from .records import BatchError

__all__ = ["JOBQUEUE", "DaskRunner", "connection_warning", "is_loopback_address", "jobqueue_cluster", "require_dask"]

#: ``--cluster`` names of batch systems -> the dask-jobqueue class that starts workers through them.
JOBQUEUE = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster", "lsf": "LSFCluster",
            "htcondor": "HTCondorCluster"}

#: Seconds to wait for the scheduler to answer when connecting.
CONNECT_TIMEOUT = 30


def require_dask() -> None:
    """:class:`.records.BatchError` unless Dask's ``distributed`` can be imported (the ``dask`` extra)."""
    _import_distributed()


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise BatchError("--cluster needs Dask: install the dask extra (pip install 'ch11-grading[dask]', or "
                         "the pins of requirements/lock.txt)") from exc
    return distributed


def jobqueue_cluster(name: str):
    """A dask-jobqueue cluster for the batch system ``name`` (a key of :data:`JOBQUEUE`), configured
    from Dask's configuration (``jobqueue.<name>.*``: ``cores``, ``memory``, ``processes``, ``queue``,
    ``walltime``, ``job-extra-directives``, ...), with no workers yet (``scale`` asks for them).

    Raises:
        BatchError: dask-jobqueue is not installed, or its settings are incomplete (names the setting).
    """
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise BatchError(f"--cluster {name} needs dask-jobqueue: pip install dask-jobqueue (docs/batch.md)") from exc
    try:
        return getattr(dask_jobqueue, JOBQUEUE[name])()
    except ValueError as exc:  # e.g. "You must specify how many cores to use per job like ``cores=8``"
        raise BatchError(f"--cluster {name}: dask-jobqueue's settings are incomplete ({exc}); set them under "
                         f"jobqueue.{name} in Dask's configuration, e.g. ~/.config/dask/jobqueue.yaml "
                         "(docs/batch.md, \"A Slurm cluster\")") from exc


def is_loopback_address(address: str) -> bool:
    """Whether the Dask address ``scheme://host:port`` names this machine only (every address the host
    resolves to is a loopback address). An unresolvable host counts as remote."""
    from distributed.comm.addressing import parse_address, parse_host_port

    _scheme, location = parse_address(address)
    host, _port = parse_host_port(location, default_port=8786)
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def connection_warning(address: str) -> str | None:
    """The loud warning for a scheduler reached over the network without TLS, or ``None``."""
    from distributed.comm.addressing import parse_address

    scheme, _location = parse_address(address)
    if scheme != "tcp" or is_loopback_address(address):
        return None
    return (f"WARNING: the Dask scheduler {address} is reached over the network and the connection is NOT "
            "ENCRYPTED (tcp://): submissions, grades and nbgrader's logs cross the network in clear, and anyone who "
            "can reach the scheduler can run code on its workers. Use tls:// with certificates "
            "(docs/batch.md, \"TLS\").")


class DaskRunner:
    """Grades on a Dask cluster (see the module docstring). ``say`` reports a step or a warning."""

    def __init__(self, plan: BatchPlan, say: Callable[[str], None]) -> None:
        if plan.options.cluster is None:
            raise ValueError("DaskRunner needs plan.options.cluster")
        self.plan = plan
        self.address: str = plan.options.cluster
        self.say = say
        # Set by start(), kept until close(): the client (and the cluster this process started), what every job
        # carries along.
        self._client: Any = None
        self._cluster: Any = None
        self._distributed: Any = None
        self._release = ""
        self._template = b""
        self._futures: dict = {}  # future -> (submission, time.monotonic() when submitted)

    def _connect(self):
        distributed = _import_distributed()
        plan = self.plan
        if self.address == "local":
            cluster = distributed.LocalCluster(n_workers=plan.options.workers, threads_per_worker=1,
                                               processes=True, host="127.0.0.1", scheduler_port=0,
                                               dashboard_address=None)
            return cluster, distributed.Client(cluster)
        if self.address in JOBQUEUE:
            cluster = jobqueue_cluster(self.address)
            warning = connection_warning(cluster.scheduler_address)
            if warning:
                self.say(warning)
            cluster.scale(plan.options.workers)
            return cluster, distributed.Client(cluster)
        warning = connection_warning(self.address)
        if warning:
            self.say(warning)
        try:
            return None, distributed.Client(self.address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise BatchError(f"cannot reach the Dask scheduler {self.address}: {exc}") from exc

    def start(self, expected: int | None = None) -> None:
        """Connect (or start the cluster) and check every connected worker (``expected`` is not used: the
        workers keep their own fork servers).

        Raises:
            BatchError: the scheduler cannot be reached, or a worker cannot grade (named).
        """
        plan = self.plan
        self._release = release_digest(plan.course, plan.options.assignment)
        self._template = plan.template.read_bytes()
        self._distributed = _import_distributed()
        self._cluster, self._client = self._connect()
        client = self._client
        from .dask_worker import PLUGIN_NAME, StopWithWorker

        # Before any job: a worker's grading ends with the worker, and SIGTERM closes it (docs/batch.md).
        client.register_plugin(StopWithWorker(), name=PLUGIN_NAME)
        checks = client.run(check_worker, plan.sandbox, self._release, plan.options.assignment)
        problems = {address: problem for address, problem in checks.items() if problem}
        if problems:
            raise BatchError("Dask workers cannot grade: " + "; ".join(
                f"{address}: {problem}" for address, problem in sorted(problems.items())))
        self.say(f"Dask scheduler {client.scheduler.address}: {len(client.scheduler_info()['workers'])} workers")

    def free(self) -> int:
        # No more jobs in flight than the workers have threads: a job queued on a worker behind
        # another is counted as killed when that one kills the worker (the scheduler blames every
        # task the dead worker held), so one student's crashes could end a classmate's grading.
        return max(0, max(1, sum(self._client.nthreads().values())) - len(self._futures))

    def in_flight(self) -> int:
        return len(self._futures)

    def submit(self, sub: StudentSubmission, prior: PriorSubmission | None) -> None:
        plan = self.plan
        job = GradingJob(sub.student, sub.sha256, {name: path.read_bytes() for name, path in sub.files.items()},
                         sub.timestamp, self._release, plan.options.assignment, plan.sandbox, plan.options.timeout,
                         self._template, prior)
        # pure=False and a fresh key: a rerun never reuses a result the scheduler still holds.
        future = self._client.submit(grade_job, job, pure=False, key=f"ch11-{sub.student}-{uuid.uuid4().hex}")
        self._futures[future] = (sub, time.monotonic())

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        if not self._futures:
            return []
        try:
            done, _ = self._distributed.wait(list(self._futures), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        outcomes = []
        for future in done:
            sub, submitted = self._futures.pop(future)
            outcomes.append(self._outcome(sub, future, time.monotonic() - submitted))
        return sorted(outcomes, key=lambda outcome: outcome.sub.student)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    def cancel(self) -> None:
        if self._client is not None and self._futures:
            self._client.cancel(list(self._futures))
        self._futures.clear()
        self.close()

    def _outcome(self, sub: StudentSubmission, future, waited: float) -> Outcome:
        """The job's result as an :class:`.isolated.Outcome` with its files in a fresh work directory."""
        from distributed.scheduler import KilledWorker

        plan = self.plan
        work = Path(tempfile.mkdtemp(prefix=f"{sub.student}.", dir=plan.work_root))
        try:
            job: JobResult = future.result()
        except KilledWorker as exc:
            # The scheduler's own setting, not our guess at it: the count is what this submission cost.
            last = getattr(exc.last_worker, "address", exc.last_worker)
            return Outcome(sub, work, waited, f"grading this submission ended the Dask worker that ran it "
                                              f"{exc.allowed_failures + 1} times, once more than the scheduler allows "
                                              "(distributed.scheduler.allowed-failures = "
                                              f"{exc.allowed_failures}); not graded (the last worker was {last}: its "
                                              "log says how it died)")
        except Exception as exc:  # the job itself failed on the worker (e.g. a Dask worker without the package)
            return Outcome(sub, work, waited, f"the Dask job failed: {type(exc).__name__}: {str(exc)[:300]}")
        log = plan.log_for(sub.student)
        log.write_text(job.log)
        if (job.student, job.sha256) != (sub.student, sub.sha256):
            return Outcome(sub, work, job.seconds, f"the Dask worker {job.worker} answered for another submission "
                                                   f"({job.student} {job.sha256[:12]}); not merged")
        if job.error is not None or job.result is None:
            error = job.error or "the Dask worker returned no result"
            return Outcome(sub, work, job.seconds, error.replace(job.log_path, str(log)) if job.log_path else error)
        for folder, files in ((AUTOGRADED, job.autograded), (SUBMITTED, job.submitted)):
            target = work / folder / sub.student / plan.options.assignment
            target.mkdir(parents=True)
            for name, data in files.items():
                if name != Path(name).name:  # install_files takes one level: a name with a slash is not ours
                    return Outcome(sub, work, job.seconds, f"the Dask worker {job.worker} returned a file named "
                                                           f"{name!r}; not merged")
                (target / name).write_bytes(data)
        return Outcome(sub, work, job.seconds, job.result, job.execution)
