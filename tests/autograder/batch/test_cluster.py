"""Grading on Dask (batch/cluster.py): a real ``dask scheduler`` and two ``dask worker`` processes.

The scheduler listens on 127.0.0.1 on a free port; each worker runs in a working
directory of its own, with its own ``TMPDIR`` (its jobs' scratch lies there) and
one thread. Nothing is mocked: the workers import this checkout's package, grade
with its course and suites under bubblewrap, and send the results back.

* The demo class graded on the cluster equals the class graded by local workers
  (the session's ``graded_demo_class``): the gradebook cell by cell, the CSV and
  every feedback file byte for byte, and the scores and feedback digests of
  ``tests/behaviour/demo.json``.
* A worker SIGKILLed (with its nanny) while it grades costs time only: its
  grading processes die with it, the other worker grades its job, and the grades
  equal demo.json's. Runs last in the module, on a few notebooks.

The tier is ``dask`` (``make test`` runs it; tests/test_suite_layout.py checks the mark).
Measured: see docs/batch.md ("Grading on a Dask cluster").
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from behaviour import capture
from ch11_autograder.batch import BatchError, grade_class, gradebook_snapshot
from ch11_autograder.batch.cluster import connection_warning, is_loopback_address
from support import batch_support
from support.paths import ASSIGNMENT, REPO_ROOT

DASK = Path(sys.executable).parent / "dask"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """A ``dask scheduler`` and its ``dask worker`` processes, each in a process group and directory of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: dict[str, subprocess.Popen] = {}
        self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port",
                                  self.address.rsplit(":", 1)[1], "--no-dashboard"])

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        cwd = self.root / name
        (cwd / "tmp").mkdir(parents=True)
        log = (cwd / "dask.log").open("wb")
        env = {**os.environ, "TMPDIR": str(cwd / "tmp"), **(env or {})}
        self.procs[name] = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(self, name: str, env: dict[str, str] | None = None) -> None:
        self._start(name, [str(DASK), "worker", self.address, "--nthreads", "1", "--nworkers", "1", "--name", name,
                           "--no-dashboard", "--host", "127.0.0.1"], env)

    def wait_for_workers(self, count: int, timeout: float = 120.0) -> None:
        from distributed import Client

        with Client(self.address, timeout=timeout) as client:
            client.wait_for_workers(count, timeout=timeout)

    def kill(self, name: str) -> None:
        """SIGKILL the process group of ``name`` (the worker's nanny and the worker it runs)."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler on 127.0.0.1 and two workers, ``w0`` and ``w1``, for this module."""
    cluster = Cluster(tmp_path_factory.mktemp("dask-cluster"))
    try:
        cluster.start_worker("w0")
        cluster.start_worker("w1")
        cluster.wait_for_workers(2)
        yield cluster
    finally:
        cluster.stop()


def _graded_on(cluster: Cluster, source: Path, course: Path):
    events = []
    report = grade_class(source, course, workers=2, sandbox="bwrap", progress=events.append, cluster=cluster.address)
    return report, events


# --------------------------------------------------------------------------- without a cluster


@pytest.mark.parametrize(("address", "loopback"), [
    ("tcp://127.0.0.1:8786", True), ("tcp://localhost:8786", True), ("tcp://[::1]:8786", True),
    ("tcp://10.1.2.3:8786", False), ("tls://10.1.2.3:8786", False), ("tcp://no-such-host.invalid:8786", False),
])
def test_a_scheduler_is_loopback_only_when_every_address_of_its_host_is(address, loopback):
    assert is_loopback_address(address) is loopback


def test_a_remote_scheduler_without_tls_is_warned_about_loudly():
    warning = connection_warning("tcp://10.1.2.3:8786")
    assert warning is not None and warning.startswith("WARNING") and "NOT ENCRYPTED" in warning
    assert "tls://" in warning and "10.1.2.3" in warning
    assert connection_warning("tls://10.1.2.3:8786") is None
    assert connection_warning("tcp://127.0.0.1:8786") is None


def test_the_package_imports_without_dask_and_a_cluster_batch_says_what_to_install(tmp_path):
    """With ``dask`` and ``distributed`` unimportable, ``ch11_autograder`` and the CLI import, and
    ``--cluster`` refuses the batch (exit 2) naming the extra, before anything is graded."""
    script = textwrap.dedent(f"""
        import sys
        sys.modules["dask"] = None
        sys.modules["distributed"] = None
        import ch11_autograder, ch11_autograder.batch, ch11_autograder.batch.cluster
        from ch11_autograder import cli
        code = cli.main(["batch", {str(tmp_path / 'none')!r}, "--course", {str(tmp_path / 'course')!r},
                         "--cluster", "local"])
        print("exit", code)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert "exit 2" in done.stdout
    assert "--cluster needs Dask: install the dask extra" in done.stderr
    assert not (tmp_path / "course").exists()


def _jobqueue(tmp_path: Path, config: str) -> subprocess.CompletedProcess:
    """``jobqueue_cluster("slurm")`` in a fresh interpreter whose Dask configuration directory holds ``config``
    (Dask reads its configuration once, at import); prints the job script Slurm would get."""
    (tmp_path / "dask").mkdir()
    (tmp_path / "dask" / "jobqueue.yaml").write_text(config)
    script = ("from ch11_autograder.batch.cluster import jobqueue_cluster\n"
              "cluster = jobqueue_cluster('slurm')\nprint(cluster.job_script())\ncluster.close()\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DASK_CONFIG": str(tmp_path / "dask")})


def test_a_slurm_cluster_takes_its_settings_from_dask_s_configuration_file(tmp_path):
    done = _jobqueue(tmp_path, "jobqueue:\n  slurm:\n    cores: 1\n    processes: 1\n    memory: 3GB\n"
                               "    walltime: '01:00:00'\n    job-extra-directives: ['--partition=grading']\n")
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert "#SBATCH --partition=grading" in script and "#SBATCH -t 01:00:00" in script
    assert "#SBATCH --mem=3G" in script and "#SBATCH --cpus-per-task=1" in script
    assert "distributed.cli.dask_worker" in script and "--nthreads 1" in script


def test_a_batch_system_without_settings_is_refused_naming_where_they_go(tmp_path):
    done = _jobqueue(tmp_path, "jobqueue: {}\n")
    assert done.returncode != 0
    assert "BatchError: --cluster slurm: dask-jobqueue's settings are incomplete" in done.stderr
    assert "jobqueue.slurm" in done.stderr and "jobqueue.yaml" in done.stderr


# --------------------------------------------------------------------------- on a real cluster


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.class_batch
def test_the_demo_class_grades_on_dask_as_on_local_workers(dask_cluster, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    course = batch_support.assigned_course(base, base / "dask-demo-course")
    started = time.monotonic()
    report, events = _graded_on(dask_cluster, inputs / "class", course)
    print(f"demo class on 2 Dask workers: {time.monotonic() - started:.1f} s")
    assert [r.status for r in report.records] == ["graded"] * 4, [r.error for r in report.records]
    assert any(e.message.startswith("Dask scheduler tcp://127.0.0.1:") and "2 workers" in e.message for e in events)

    expected = json.loads(capture.DEMO_FIXTURE.read_text())
    got = capture.demo_outcome(course)
    assert got["scores"] == expected["scores"]
    assert got["feedback_sha256"] == expected["feedback_sha256"]

    local, local_report, _ = batch_support.graded_demo_class(base)
    assert gradebook_snapshot(course, ASSIGNMENT) == gradebook_snapshot(local, ASSIGNMENT)
    assert report.csv_path.read_bytes() == local_report.csv_path.read_bytes()
    assert batch_support.feedback_html(course) == batch_support.feedback_html(local)
    assert [(r.student, r.score, r.per_notebook) for r in report.records] == [
        (r.student, r.score, r.per_notebook) for r in local_report.records]

    # Resume: nothing changed, nothing is sent to the cluster again.
    again, _ = _graded_on(dask_cluster, inputs / "class", course)
    assert [r.status for r in again.records] == ["skipped_resume"] * 4


@pytest.mark.slow
@pytest.mark.dask
def test_a_worker_with_another_course_refuses_the_batch_before_anything_is_graded(tmp_path_factory, tmp_path):
    """A worker whose course (``CH11_WORKER_COURSE``) has one changed source notebook: the batch is refused
    naming that worker and both digests; the gradebook has no student."""
    base = tmp_path_factory.getbasetemp()
    other = batch_support.new_course(base, tmp_path / "worker-course")
    notebook = other / "source" / ASSIGNMENT / "ex3_block_length.ipynb"
    notebook.write_bytes(notebook.read_bytes() + b"\n")
    course = batch_support.assigned_course(base, tmp_path / "course")
    cluster = Cluster(tmp_path / "cluster")
    try:
        cluster.start_worker("other", {"CH11_WORKER_COURSE": str(other)})
        cluster.wait_for_workers(1)
        with pytest.raises(BatchError) as refused:
            grade_class(batch_support.inputs(base) / "class", course, workers=1, sandbox="bwrap",
                        cluster=cluster.address)
    finally:
        cluster.stop()
    message = str(refused.value)
    assert message.startswith("Dask workers cannot grade: tcp://127.0.0.1:")
    assert "release and suites differ from the coordinator's" in message and str(other) in message
    assert gradebook_snapshot(course, ASSIGNMENT) == {}


@pytest.mark.slow
@pytest.mark.dask
def test_a_worker_killed_mid_batch_costs_time_only(dask_cluster, tmp_path_factory, tmp_path):
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    chosen = {"lin": ("ex1_fanout.ipynb", "ex3_block_length.ipynb"), "hal": ("ex3_block_length.ipynb",)}
    for student, names in chosen.items():
        folder = tmp_path / "class" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for name in names:
            shutil.copy2(inputs / "class" / student / ASSIGNMENT / name, folder / name)
    course = batch_support.assigned_course(base, tmp_path / "course")

    outcome: dict = {}
    batch = threading.Thread(target=lambda: outcome.update(report=_graded_on(dask_cluster, tmp_path / "class",
                                                                             course)[0]))
    batch.start()
    victim = dask_cluster.root / "w0" / "tmp"
    deadline = time.monotonic() + 300
    while not batch_support.processes_under(victim) and batch.is_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert batch_support.processes_under(victim), "w0 never started grading"
    dask_cluster.kill("w0")
    # Its nbgrader and sandbox die with it (PR_SET_PDEATHSIG, bwrap --die-with-parent).
    deadline = time.monotonic() + 30
    while batch_support.processes_under(victim) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not batch_support.processes_under(victim)
    batch.join(timeout=600)
    assert not batch.is_alive()

    report = outcome["report"]
    assert [r.status for r in report.records] == ["graded", "graded"], [r.error for r in report.records]
    expected = json.loads(capture.DEMO_FIXTURE.read_text())["scores"]
    got = capture.demo_outcome(course)["scores"]
    for student, names in chosen.items():
        record = next(r for r in report.records if r.student == student)
        for name in names:
            notebook = name.removesuffix(".ipynb")
            assert got[student][notebook] == expected[student][notebook]
            assert record.per_notebook[notebook] == pytest.approx(sum(expected[student][notebook].values()))
    ledger = (course / ".ch11-batch" / "ledger.jsonl").read_text().splitlines()
    assert len(ledger) == 2  # one merge per submission, the retried one included
