"""Grading on Dask (batch/cluster.py): a real ``dask scheduler`` and two ``dask worker`` processes.

The scheduler listens on 127.0.0.1 on a free port; each worker runs in a working
directory of its own, with its own ``TMPDIR`` (its jobs' scratch lies there) and
one thread. Nothing is mocked: the workers import this checkout's package, grade
with its course and suites under bubblewrap, and send the results back.

* The demo class graded on the cluster equals the class graded by local workers
  (the session's ``graded_demo_class``): the gradebook cell by cell, the CSV and
  every feedback file byte for byte, and the scores and feedback digests of
  ``tests/behaviour/demo.json``.
* The coordinator (``ch11-grade batch --cluster``, the real CLI) SIGKILLed after a first
  merge: the same command again skips what merged, grades the rest, and the course
  equals the local run's for the notebooks submitted; nothing is left on the workers.
* Two hostile cases of the corpus beside two demo students: each gets its stated
  outcome, the demo students their demo.json scores, and the Dask worker processes
  are the same before and after (student code never runs in them).
* A submission whose grading kills its worker process every time (the nanny starts a
  new one) ends, at the fourth death (``allowed-failures`` 3, the default), as that
  student's error naming the cause; the others are graded as demo.json says.
* A worker SIGKILLed (with its nanny) while it grades costs time only: its
  grading processes die with it, the other worker grades its job, and the grades
  equal demo.json's. Runs last in the module, on a few notebooks.
* A cluster stopped as an operator stops one (``dask worker --no-nanny`` workers, one
  SIGKILLed mid-batch, the batch finished on the other, then SIGTERM to the scheduler and
  the surviving worker): every worker and every fork server of the run is gone within
  10 s. On a cluster of its own per run, ten runs in the ``dask`` tier and two in ``make test``
  (the ending is a race: one run proves little).

The new submissions hold one notebook each (ex4_audit, the cheapest), to keep the
tier short.

The tier is ``dask`` (opt-in: ``make test-dask``; tests/test_suite_layout.py checks the mark).
Measured: see docs/batch.md ("Grading on a Dask cluster").
"""

from __future__ import annotations

import contextlib
import csv
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

import psutil
import pytest
from behaviour import capture
from ch11_autograder.batch import BatchError, BatchOptions, grade_class, gradebook_snapshot
from ch11_autograder.batch.cluster import connection_warning, is_loopback_address
from support import batch_support, process_leaks
from support.paths import ASSIGNMENT, REPO_ROOT

DASK = Path(sys.executable).parent / "dask"
CH11_GRADE = Path(sys.executable).parent / "ch11-grade"


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

    def start_worker(self, name: str, env: dict[str, str] | None = None, *, nanny: bool = True) -> None:
        self._start(name, [str(DASK), "worker", self.address, "--nthreads", "1", "--nworkers", "1", "--name", name,
                           "--no-dashboard", "--host", "127.0.0.1", *([] if nanny else ["--no-nanny"])], env)

    def wait_for_workers(self, count: int, timeout: float = 120.0) -> None:
        from distributed import Client

        with Client(self.address, timeout=timeout) as client:
            client.wait_for_workers(count, timeout=timeout)

    def kill(self, name: str) -> None:
        """SIGKILL the process group of ``name`` (the worker's nanny and the worker it runs)."""
        proc = self.procs.pop(name)
        with contextlib.suppress(ProcessLookupError):  # it ended and was reaped: its group may have ended too
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


def _class_of(base: Path, dest: Path, chosen: dict[str, tuple[str, ...]]) -> Path:
    """A class folder at ``dest`` holding, per demo student of ``chosen``, only the named notebooks."""
    inputs = batch_support.inputs(base)
    for student, names in chosen.items():
        folder = dest / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for name in names:
            shutil.copy2(inputs / "class" / student / ASSIGNMENT / name, folder / name)
    return dest


def _expect_demo_scores(course: Path, report, chosen: dict[str, tuple[str, ...]]) -> None:
    """Each student of ``chosen`` graded, with demo.json's cell scores for each notebook named."""
    expected = json.loads(capture.DEMO_FIXTURE.read_text())["scores"]
    got = capture.demo_outcome(course)["scores"]
    records = {r.student: r for r in report.records}
    for student, names in chosen.items():
        assert records[student].status in ("graded", "skipped_resume"), (student, records[student].error)
        for name in names:
            notebook = name.removesuffix(".ipynb")
            assert got[student][notebook] == expected[student][notebook], (student, notebook)
            assert records[student].per_notebook[notebook] == pytest.approx(sum(expected[student][notebook].values()))


class _HeldTasks:
    """Polls the scheduler while a batch runs: the most tasks any one worker held at once
    (``Client.processing``: assigned to that worker, running or queued there)."""

    def __init__(self, cluster: Cluster) -> None:
        self.address = cluster.address
        self.most = 0
        self.seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            while not self._stop.is_set():
                held = [len(keys) for keys in client.processing().values()]
                self.seen += sum(held)
                self.most = max([self.most, *held])
                self._stop.wait(0.2)

    def __enter__(self) -> _HeldTasks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _graded_on(cluster: Cluster, source: Path, course: Path):
    events = []
    report = grade_class(source, course, BatchOptions(workers=2, sandbox="bwrap", cluster=cluster.address),
                         progress=events.append)
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
    with _HeldTasks(dask_cluster) as held:
        report, events = _graded_on(dask_cluster, inputs / "class", course)
    print(f"demo class on 2 Dask workers: {time.monotonic() - started:.1f} s")
    # Four jobs for two one-thread workers: none ever waits on a worker behind another one, where a
    # worker's death would count against it too (docs/batch.md, "A worker that dies costs time only").
    assert held.most == 1 and held.seen, (held.most, held.seen)
    assert [r.status for r in report.records] == ["graded"] * 4, [r.error for r in report.records]
    assert any(e.message.startswith("Dask scheduler tcp://127.0.0.1:") and "2 workers" in e.message for e in events)

    batch_support.assert_graded_as_locally(course, base)
    _local, local_report, _ = batch_support.graded_demo_class(base)
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
            grade_class(batch_support.inputs(base) / "class", course,
                        BatchOptions(workers=1, sandbox="bwrap", cluster=cluster.address))
    finally:
        cluster.stop()
    message = str(refused.value)
    assert message.startswith("Dask workers cannot grade: tcp://127.0.0.1:")
    assert "release and suites differ from the coordinator's" in message and str(other) in message
    assert gradebook_snapshot(course, ASSIGNMENT) == {}


def _ledger_lines(ledger: Path) -> list[dict]:
    """The ledger's complete lines (a line being written is left out)."""
    if not ledger.is_file():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines(keepends=True) if line.endswith("\n")]


def _csv_rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _quiet_workers(cluster: Cluster, timeout: float = 60.0) -> list[int]:
    """Waits until no process runs under any worker's ``TMPDIR``; the pids still there at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for name in cluster.procs if name != "scheduler"
                for pid in batch_support.processes_under(cluster.root / name / "tmp")]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.class_batch
def test_a_coordinator_killed_mid_batch_resumes_when_run_again(dask_cluster, tmp_path_factory, tmp_path):
    """``ch11-grade batch --cluster`` SIGKILLed (its process group) once a submission has merged and before
    the last; the same command again skips what merged, grades the rest, and the course equals the local
    run's for the notebooks submitted (one each: ex4_audit, the cheapest). What the killed run left on the
    workers ends there (Dask does not stop a running task; its result is dropped)."""
    base = tmp_path_factory.getbasetemp()
    chosen = {student: ("ex4_audit.ipynb",) for student in ("ada", "hal", "lin")}
    source = _class_of(base, tmp_path / "class", chosen)
    course = batch_support.assigned_course(base, tmp_path / "course")
    argv = [str(CH11_GRADE), "batch", str(source), "--course", str(course), "--cluster", dask_cluster.address,
            "--sandbox", "bwrap"]
    ledger = course / ".ch11-batch" / "ledger.jsonl"
    started = time.monotonic()
    with (tmp_path / "killed.log").open("wb") as log:
        killed = subprocess.Popen(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        deadline = time.monotonic() + 300
        while killed.poll() is None and not _ledger_lines(ledger) and time.monotonic() < deadline:
            time.sleep(0.05)
        if killed.poll() is None:  # else it ended by itself: the assertion below shows its output
            os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    # The killed run's jobs still on the workers: Dask lets a running task finish and drops its result.
    orphans = [pid for name in ("w0", "w1") for pid in batch_support.processes_under(dask_cluster.root / name / "tmp")]
    output = (tmp_path / "killed.log").read_text()
    assert killed.returncode == -signal.SIGKILL, output
    merged = {line["student"] for line in _ledger_lines(ledger)}
    assert 1 <= len(merged) < len(chosen), (merged, output)

    rerun_started = time.monotonic()
    rerun = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    print(f"killed after {sorted(merged)} merged ({rerun_started - started:.1f} s), {len(orphans)} grading processes "
          f"of its jobs left on the workers; the rerun took {time.monotonic() - rerun_started:.1f} s")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    records = {row["student"]: row for row in
               json.loads((course / "reports" / f"{ASSIGNMENT}-records.json").read_text())}
    assert {s: r["status"] for s, r in records.items()} == {
        s: "skipped_resume" if s in merged else "graded" for s in chosen}, rerun.stdout
    lines = _ledger_lines(ledger)
    assert sorted(line["student"] for line in lines) == sorted(chosen)  # each merged once, by one run or the other
    assert {line["event"] for line in lines} == {"graded"}

    expected = json.loads(capture.DEMO_FIXTURE.read_text())["scores"]
    got = capture.demo_outcome(course)["scores"]
    assert {s: got[s]["ex4_audit"] for s in chosen} == {s: expected[s]["ex4_audit"] for s in chosen}
    # The local run of the whole demo class, restricted to the notebook submitted here.
    local, local_report, _ = batch_support.graded_demo_class(base)
    snapshot, local_snapshot = gradebook_snapshot(course, ASSIGNMENT), gradebook_snapshot(local, ASSIGNMENT)
    for student in chosen:
        assert {k: v for k, v in snapshot[student].items() if k[0] == "ex4_audit"} == {
            k: v for k, v in local_snapshot[student].items() if k[0] == "ex4_audit"}, student
    assert batch_support.feedback_html(course) == {
        name: page for name, page in batch_support.feedback_html(local).items()
        if name.split("/")[0] in chosen and name.endswith("/ex4_audit.html")}
    rows, local_rows = _csv_rows(course / "reports" / f"{ASSIGNMENT}-grades.csv"), _csv_rows(local_report.csv_path)
    columns = ("status", "ex4_audit", "late_penalty", "lms_late", "error")
    assert {s: [rows[s][c] for c in columns] for s in rows} == {s: [local_rows[s][c] for c in columns] for s in chosen}

    assert _quiet_workers(dask_cluster) == []
    assert not [p for name in ("w0", "w1") for p in (dask_cluster.root / name / "tmp").glob("ch11-job-*")]


#: Hostile cases graded on the cluster, both on ex4_audit (the cheapest notebook): one that rewrites every
#: gradebook it finds on the machine (the course's, and the isolated copies under the workers' TMPDIR
#: through /proc/*/cwd), one that SIGKILLs its parent (the Dask worker, were student code run there).
HOSTILE_ON_DASK = ("gradebook_absolute", "kill_parent")


@pytest.mark.slow
@pytest.mark.dask
def test_hostile_submissions_on_dask_get_their_stated_outcome(dask_cluster, tmp_path_factory):
    """The hostile cases of :data:`HOSTILE_ON_DASK` beside two demo students in one batch on the cluster:
    each case meets its stated outcome (docs/hostile.md; ``hostile.test_hostile.check_case``), the demo
    students score what demo.json says, the Dask worker processes are the same before and after (no student
    code ran in them), and nothing is left running under the workers' TMPDIRs."""
    from distributed import Client
    from hostile.test_hostile import Listener, Run, check_case, gradebook_scores, honest_rows
    from support.hostile_corpus import Context, build_corpus, case

    base = tmp_path_factory.getbasetemp()
    # The payloads write only under allowed_root: the cluster's tree, the workers' scratch included.
    root = dask_cluster.root / "hostile"
    chosen = {"ada": ("ex4_audit.ipynb",), "lin": ("ex4_audit.ipynb",)}
    source = _class_of(base, root / "class", chosen)
    course = batch_support.assigned_course(base, root / "course")
    ctx = Context(course=course, class_dir=source, allowed_root=dask_cluster.root, evidence_dir=root / "evidence")
    cases = [case(name) for name in HOSTILE_ON_DASK]
    build_corpus(source, ctx, cases)
    with Client(dask_cluster.address, timeout=60) as client:
        workers_before = client.run(os.getpid)
    started = time.monotonic()
    report, _ = _graded_on(dask_cluster, source, course)
    print(f"hostile batch on 2 Dask workers: {time.monotonic() - started:.1f} s")
    with Client(dask_cluster.address, timeout=60) as client:
        assert client.run(os.getpid) == workers_before

    _expect_demo_scores(course, report, chosen)
    listener = Listener()
    try:
        run = Run("dask", course, ctx, {r.student: r for r in report.records}, {}, honest_rows(course),
                  gradebook_scores(course), listener)
        for c in cases:
            check_case(run, c)
    finally:
        listener.close()
    assert _quiet_workers(dask_cluster) == []


def _worker_process_of(pid: int, nanny: int) -> int | None:
    """The ancestor of ``pid`` whose parent is ``nanny`` (the worker process the nanny runs), if any."""
    while pid > 1:
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None
        if parent == nanny:
            return pid
        pid = parent
    return None


@pytest.mark.slow
@pytest.mark.dask
def test_a_submission_that_kills_its_worker_every_time_ends_as_its_error(dask_cluster, tmp_path_factory, tmp_path):
    """Whenever ``crasher``'s grading starts on a worker, the worker process (not its nanny, which starts a new
    one) is SIGKILLed, as a submission that takes its worker down would. After the scheduler's
    ``allowed-failures`` (3) retries, the fourth death makes it that student's error record naming the
    cause; the other students are graded as demo.json says."""
    base = tmp_path_factory.getbasetemp()
    chosen = {"ada": ("ex4_audit.ipynb",), "hal": ("ex4_audit.ipynb",)}
    source = _class_of(base, tmp_path / "class", chosen)
    (source / "crasher" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(batch_support.inputs(base) / "class" / "blank" / ASSIGNMENT / "ex4_audit.ipynb",
                 source / "crasher" / ASSIGNMENT / "ex4_audit.ipynb")
    course = batch_support.assigned_course(base, tmp_path / "course")

    outcome: dict = {}
    batch = threading.Thread(target=lambda: outcome.update(report=_graded_on(dask_cluster, source, course)[0]))
    started = time.monotonic()
    batch.start()
    killed: list[int] = []
    deadline = time.monotonic() + 600
    while batch.is_alive() and time.monotonic() < deadline:
        for name in ("w0", "w1"):
            nanny = dask_cluster.procs[name].pid
            for pid in batch_support.processes_under(dask_cluster.root / name / "tmp" / "ch11-job-crasher."):
                worker = _worker_process_of(pid, nanny)
                if worker is not None and worker not in killed:
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                    print(f"killed {name}'s worker process {worker} at {time.monotonic() - started:.1f} s")
        time.sleep(0.1)
    batch.join(timeout=60)
    assert not batch.is_alive(), f"the batch still runs after {len(killed)} worker deaths"
    dask_cluster.wait_for_workers(2)  # the nannies started new worker processes

    report = outcome["report"]
    records = {r.student: r for r in report.records}
    print(f"batch with the crasher: {time.monotonic() - started:.1f} s", {r.student: r.seconds for r in report.records})
    assert len(killed) == 4, killed  # allowed-failures 3: the fourth death ends it
    assert records["crasher"].status == "error"
    assert records["crasher"].error.startswith("grading this submission ended the Dask worker that ran it 4 times, "
                                               "once more than the scheduler allows "
                                               "(distributed.scheduler.allowed-failures = 3)"), records["crasher"].error
    _expect_demo_scores(course, report, chosen)
    assert "crasher" not in gradebook_snapshot(course, ASSIGNMENT)
    assert _quiet_workers(dask_cluster) == []


@pytest.mark.slow
@pytest.mark.dask
def test_a_worker_killed_mid_batch_costs_time_only(dask_cluster, tmp_path_factory, tmp_path):
    base = tmp_path_factory.getbasetemp()
    chosen = {"lin": ("ex1_fanout.ipynb", "ex3_block_length.ipynb"), "hal": ("ex3_block_length.ipynb",)}
    _class_of(base, tmp_path / "class", chosen)
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
    _expect_demo_scores(course, report, chosen)
    ledger = (course / ".ch11-batch" / "ledger.jsonl").read_text().splitlines()
    assert len(ledger) == 2  # one merge per submission, the retried one included


#: Seconds the scheduler and the surviving worker have to end, fork servers and all, after SIGTERM.
STOP_SECONDS = 10


def _stop_after_a_killed_worker(base: Path, root: Path) -> list[str]:
    """The operator's scenario once, on a cluster of its own: a scheduler and two ``dask worker --no-nanny``; the
    batch (``ch11-grade batch --cluster``) starts, worker ``w0`` is SIGKILLed while it grades, the batch ends
    on ``w1``; then SIGTERM to the scheduler and ``w1``. Returns the processes of the run (the workers, the
    scheduler, and everything ever seen below a worker) still running :data:`STOP_SECONDS` later."""
    chosen = {student: ("ex4_audit.ipynb",) for student in ("ada", "hal")}
    source = _class_of(base, root / "class", chosen)
    course = batch_support.assigned_course(base, root / "course")
    cluster = Cluster(root / "cluster")
    descendants = None
    coordinator = None
    try:
        cluster.start_worker("w0", nanny=False)
        cluster.start_worker("w1", nanny=False)
        cluster.wait_for_workers(2)
        descendants = process_leaks.Descendants([cluster.procs["w0"].pid, cluster.procs["w1"].pid])
        with (root / "batch.log").open("wb") as log:
            coordinator = subprocess.Popen(
                [str(CH11_GRADE), "batch", str(source), "--course", str(course), "--cluster", cluster.address,
                 "--sandbox", "bwrap"], cwd=root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + 300
        while (not batch_support.processes_under(cluster.root / "w0" / "tmp") and coordinator.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.1)
        assert batch_support.processes_under(cluster.root / "w0" / "tmp"), (
            "w0 never started grading: " + (root / "batch.log").read_text(errors="replace"))
        descendants.look()
        cluster.kill("w0")
        assert coordinator.wait(timeout=600) == 0, (root / "batch.log").read_text(errors="replace")
        descendants.look()
        ours = [psutil.Process(cluster.procs[name].pid) for name in ("scheduler", "w1")]
        for proc in ours:
            proc.send_signal(signal.SIGTERM)
        return process_leaks.still_running([*ours, *descendants.seen.values()], STOP_SECONDS,
                                           reap=[cluster.procs["scheduler"], cluster.procs["w1"]])
    finally:
        if descendants is not None:
            descendants.stop()
        if coordinator is not None and coordinator.poll() is None:
            os.killpg(coordinator.pid, signal.SIGKILL)
            coordinator.wait()
        cluster.stop()


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.parametrize("run", range(10))
def test_a_cluster_stopped_after_a_worker_was_killed_leaves_no_worker_or_fork_server(run, tmp_path_factory,
                                                                                     tmp_path):
    left = _stop_after_a_killed_worker(tmp_path_factory.getbasetemp(), tmp_path)
    assert left == [], f"{STOP_SECONDS} s after SIGTERM these still run: {left}"


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_worker_stopped_mid_grading_ends_and_its_submission_is_graded_on_another(stop, tmp_path_factory, tmp_path):
    """docs/batch.md, "Stopping a worker": a ``dask worker --no-nanny`` sent ``stop`` while a submission's nbgrader
    runs on it is gone within :data:`STOP_SECONDS`, with its fork servers, nbgrader and sandboxes; the scheduler
    gives its job to the other worker, and the batch ends with every submission graded as the demo class's, one
    merge each."""
    base = tmp_path_factory.getbasetemp()
    chosen = {student: ("ex4_audit.ipynb",) for student in ("ada", "hal")}
    source = _class_of(base, tmp_path / "class", chosen)
    course = batch_support.assigned_course(base, tmp_path / "course")
    cluster = Cluster(tmp_path / "cluster")
    tree = None
    outcome: dict = {}
    batch = threading.Thread(target=lambda: outcome.update(report=_graded_on(cluster, source, course)[0]))
    try:
        cluster.start_worker("w0", nanny=False)
        cluster.start_worker("w1", nanny=False)
        cluster.wait_for_workers(2)
        tree = process_leaks.Descendants([cluster.procs["w0"].pid])
        batch.start()
        deadline = time.monotonic() + 300
        while not batch_support.nbgrader_forked(tree) and batch.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert batch_support.nbgrader_forked(tree), "w0 never started grading"
        tree.look()
        worker = psutil.Process(cluster.procs["w0"].pid)
        worker.send_signal(stop)
        left = process_leaks.still_running([worker, *tree.seen.values()], STOP_SECONDS, reap=[cluster.procs["w0"]])
        assert left == [], f"{STOP_SECONDS} s after {stop.name} these still run: {left}"
        batch.join(timeout=600)
        assert not batch.is_alive(), "the batch did not end on the other worker"
    finally:
        if tree is not None:
            tree.stop()
        cluster.stop()
        if batch.ident is not None:
            batch.join(timeout=60)
    report = outcome["report"]
    assert [r.status for r in report.records] == ["graded", "graded"], [r.error for r in report.records]
    _expect_demo_scores(course, report, chosen)
    assert len((course / ".ch11-batch" / "ledger.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
@pytest.mark.parametrize("run", range(2))
def test_a_cluster_stop_after_a_killed_worker_in_the_main_suite(run, tmp_path_factory, tmp_path):
    """The same scenario twice in ``make test`` (the ``dask`` tier runs it ten times)."""
    left = _stop_after_a_killed_worker(tmp_path_factory.getbasetemp(), tmp_path)
    assert left == [], f"{STOP_SECONDS} s after SIGTERM these still run: {left}"
