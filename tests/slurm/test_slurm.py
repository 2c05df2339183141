"""Grading on Slurm: ``ch11-grade batch --cluster slurm`` through dask-jobqueue's SLURMCluster.

A real one-node Slurm cluster (``support.slurm_cluster``: munged, slurmctld and slurmd from
Debian's packages, started by the fixture on 127.0.0.1, stopped afterwards) and a Dask
configuration file written here (``jobqueue.slurm``: one core, one worker process and 3 GB
per job, this venv's python, worker and scheduler on ``lo``, the worker's local directory
and the job's ``TMPDIR`` under the test's temporary directory), given to the command through
``DASK_CONFIG``. The jobs are submitted with ``--export=NONE``: a job on a real cluster starts
from the user's login environment, not the coordinator's, and so does this one.

The demo class graded so equals the class graded by local workers (the session's
``graded_demo_class``): the gradebook cell by cell, the CSV and every feedback file byte for
byte, and the scores and feedback digests of ``tests/behaviour/demo.json``. Every worker ran
as a Slurm job, and when the command ends no job is left in the queue and no job process on
the machine.

The tier is ``slurm``: ``make test-slurm`` (installs slurm-wlm and munge with apt first,
``.ci/slurm.sh``); ``make test`` and ``make test-fast`` leave it out. Measured: see
docs/batch.md ("A Slurm cluster").
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import batch_support
from support.paths import REPO_ROOT
from support.slurm_cluster import one_node_slurm

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

CH11_GRADE = Path(sys.executable).parent / "ch11-grade"
#: Seconds the whole batch may take: 5 min at a load average of 9 on the 2-core machine.
BATCH_TIMEOUT = 1800


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A one-node Slurm cluster for this module (skips without Slurm or root, fails under CI)."""
    with one_node_slurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def dask_config(folder: Path, scratch: Path) -> Path:
    """Dask's configuration directory for the batch: ``jobqueue.yaml`` with ``jobqueue.slurm``."""
    folder.mkdir()
    (scratch / "tmp").mkdir(parents=True)
    settings = {"jobqueue": {"slurm": {
        "cores": 1,
        "processes": 1,
        "memory": "3GB",
        "walltime": "00:30:00",
        "interface": "lo",
        "python": sys.executable,
        "local-directory": str(scratch / "dask"),
        "log-directory": str(scratch / "job-logs"),
        "job-extra-directives": ["--export=NONE"],
        "job-script-prologue": [f"export TMPDIR={scratch / 'tmp'}"],
    }}}
    (folder / "jobqueue.yaml").write_text(json.dumps(settings, indent=2))  # JSON is YAML
    return folder


@pytest.mark.class_batch
def test_the_demo_class_grades_on_slurm_as_on_local_workers(slurm_cluster, tmp_path_factory, tmp_path):
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    course = batch_support.assigned_course(base, tmp_path / "course")
    scratch = tmp_path / "jobs"
    env = {**slurm_cluster.env, "DASK_CONFIG": str(dask_config(tmp_path / "dask-config", scratch))}

    started = time.monotonic()
    done = subprocess.run([str(CH11_GRADE), "batch", str(inputs / "class"), "--course", str(course),
                           "--cluster", "slurm", "--workers", "2"], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=BATCH_TIMEOUT)
    print(f"demo class on 2 Slurm jobs: {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Dask scheduler tcp://127.0.0.1:" in done.stdout and "4 graded" in done.stdout, done.stdout
    assert "NOT ENCRYPTED" not in done.stdout + done.stderr

    # The workers were Slurm's jobs: each job's log shows its worker registered with the batch's scheduler.
    job_logs = sorted((scratch / "job-logs").glob("dask-worker-*.err"))
    assert job_logs, "no Slurm job ran a Dask worker"
    assert all("Registered to:" in log.read_text() for log in job_logs)
    assert "Allocate JobId=" in slurm_cluster.log("slurmctld")
    # dask-jobqueue cancels its jobs when the batch ends: none is queued, none still runs.
    assert slurm_cluster.jobs() == []
    deadline = time.monotonic() + 30
    while slurm_cluster.job_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert slurm_cluster.job_processes() == []
    assert list((scratch / "tmp").glob("ch11-job-*")) == []

    batch_support.assert_graded_as_locally(course, base)
