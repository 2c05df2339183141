"""A one-node Slurm cluster on this machine, from Debian's packages, for the ``slurm`` tier.

:func:`one_node_slurm` starts ``munged`` (with a key of its own), ``slurmctld`` and
``slurmd`` in the foreground as child processes, all configured under one directory: the
``slurm.conf`` it writes (one node with this machine's CPUs and memory as ``slurmd -C``
reports them, process tracking by ``/proc`` and no task plugin, so no cgroup is needed),
the munge key and socket, the controller's state, the node's spool and every log. Both
daemons talk on free ports of 127.0.0.1. It yields once ``sinfo`` shows the node idle, and
on the way out, whatever happened, cancels every job, stops the daemons and kills any job
process still running (``slurmstepd`` and what it started outlive ``slurmd``).

Slurm's clients (``sbatch``, ``squeue``, ``scancel``, ``sinfo``; dask-jobqueue calls the
first three) find the cluster through ``SLURM_CONF``: :attr:`SlurmCluster.env`.

The daemons run as root (``SlurmUser=root``) and the packages come from apt
(``.ci/slurm.sh``, run by ``make test-slurm``). Without them, or without root, the tier
skips with the reason, except under CI (``$CI`` set), where it fails.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support import tier_gate

#: The daemons and clients this needs (Debian's ``slurm-wlm`` and ``munge``).
PROGRAMS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel")
#: The node's name in slurm.conf (``slurmd -N``), the partition's and the cluster's.
NODE, PARTITION, CLUSTER_NAME = "ch11node", "grading", "ch11test"
#: Seconds the node may take to show as idle after the daemons start (about 2 on an idle machine).
START_TIMEOUT = 90.0
#: Seconds cancelled jobs may take to end before their processes are killed.
STOP_TIMEOUT = 30.0
#: The fields of ``slurmd -C`` that describe the node's hardware.
HARDWARE = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")


def slurm_reason() -> str | None:
    """``None`` when a Slurm cluster can be started here, else why not."""
    missing = [name for name in PROGRAMS if _which(name) is None]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} not found): `make test-slurm` installs "
                "slurm-wlm and munge as root")
    if os.geteuid() != 0:
        return "the Slurm daemons run as root (SlurmUser=root) and this is not root"
    return None


def require_slurm() -> None:
    """Skip without Slurm, except under CI (``$CI`` set), where the tier must run: fail."""
    tier_gate.require("slurm", slurm_reason())


def _which(name: str) -> str | None:
    # The daemons live in /usr/sbin, which a non-login PATH may lack.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def node_hardware() -> dict[str, str]:
    """This machine as ``slurmd -C`` sees it: the :data:`HARDWARE` fields of its node line."""
    done = subprocess.run([_which("slurmd") or "slurmd", "-C"], capture_output=True, text=True, timeout=60,
                          check=True)
    fields = dict(item.split("=", 1) for item in done.stdout.splitlines()[0].split() if "=" in item)
    return {key: fields[key] for key in HARDWARE}


def slurm_conf(root: Path, munge_socket: Path, ctld_port: int, slurmd_port: int, hardware: dict[str, str]) -> str:
    """slurm.conf for one node on this machine, every path under ``root`` and no cgroup plugin."""
    host = socket.gethostname().split(".")[0]  # slurmctld starts only on the host SlurmctldHost names
    node = " ".join(f"{key}={value}" for key, value in hardware.items())
    return "\n".join([
        f"ClusterName={CLUSTER_NAME}",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        # No cgroups: processes are tracked through /proc and tasks are not confined.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} {node} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


@dataclass
class SlurmCluster:
    """The running one-node cluster: its directory, its ``slurm.conf`` and its daemons."""

    root: Path
    conf: Path
    daemons: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with ``SLURM_CONF`` naming this cluster (for Slurm's clients)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        """A Slurm client command against this cluster; its stdout (raises on failure)."""
        done = subprocess.run([_which(argv[0]) or argv[0], *argv[1:]], capture_output=True, text=True, timeout=60,
                              env=self.env, check=True)
        return done.stdout

    def log(self, name: str) -> str:
        """A daemon's log (``slurmctld``, ``slurmd``, ``munged``, or a ``*.out`` of its stdout)."""
        path = self.root / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _start(self, name: str, argv: list[str]) -> None:
        out = (self.root / "log" / f"{name}.out").open("wb")
        self.daemons[name] = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                              stderr=subprocess.STDOUT, start_new_session=True)

    def wait_until_idle(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until ``sinfo`` shows the node idle; fail with the daemons' logs otherwise."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for name, proc in self.daemons.items():
                if proc.poll() is not None:
                    pytest.fail(f"{name} exited with {proc.returncode}:\n{self._logs()}", pytrace=False)
            try:
                state = self.run("sinfo", "--noheader", "--nodes", NODE, "--format", "%T").strip()
            except subprocess.CalledProcessError as exc:
                state = exc.stderr.strip()
            if state == "idle":
                return
            time.sleep(0.5)
        pytest.fail(f"the Slurm node is not idle after {timeout:.0f} s (sinfo: {state!r}):\n{self._logs()}",
                    pytrace=False)

    def _logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
                         for path in sorted((self.root / "log").iterdir()))

    def jobs(self) -> list[str]:
        """The ids of the jobs Slurm still knows as pending or running."""
        return self.run("squeue", "--noheader", "--format", "%i").split()

    def job_processes(self) -> list[int]:
        """Pids of this cluster's job processes still alive: its ``slurmstepd`` and what they started.

        They carry this cluster's ``SLURM_CONF`` in their environment (slurmd passes its own to
        the steps, and Slurm sets it in every job's), and are a ``slurmstepd`` or have a
        ``SLURM_JOB_ID``; the daemons' own helpers (slurmctld's ``slurmscriptd``) are neither.
        """
        marker = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker in environ and (cmdline.startswith(b"slurmstepd")
                                      or any(item.startswith(b"SLURM_JOB_ID=") for item in environ)):
                found.append(int(entry))
        return found

    def stop(self) -> list[int]:
        """Cancel every job, stop the daemons, SIGKILL job processes still running; the pids killed so."""
        if self.daemons.get("slurmctld") is not None and self.daemons["slurmctld"].poll() is None:
            try:
                self.run("scancel", "--user", "root")
                deadline = time.monotonic() + STOP_TIMEOUT
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(0.5)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                pass  # the controller no longer answers: its jobs' processes are killed below
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.daemons.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        leftovers = self.job_processes()
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return leftovers


@contextmanager
def one_node_slurm(root: Path) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and slurmd under ``root`` (see the module docstring); stop them on exit."""
    require_slurm()
    for folder in ("state", "spool", "log", "munge"):
        (root / folder).mkdir(parents=True)
    munge = root / "munge"
    munge.chmod(0o755)  # munged wants its socket's directory searchable by all
    key = munge / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, munge / "munge.sock", _free_port(), _free_port(), node_hardware()))
    cluster = SlurmCluster(root, conf)
    try:
        # --force: pytest's temporary directories are 0700, which munged would otherwise refuse for its socket.
        cluster._start("munged", [_which("munged") or "munged", "--foreground", "--force", f"--key-file={key}",
                                  f"--socket={munge / 'munge.sock'}", f"--pid-file={munge / 'munged.pid'}",
                                  f"--log-file={root / 'log' / 'munged.log'}", f"--seed-file={munge / 'seed'}"])
        deadline = time.monotonic() + START_TIMEOUT
        while not (munge / "munge.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        cluster._start("slurmctld", [_which("slurmctld") or "slurmctld", "-D", "-i"])
        cluster._start("slurmd", [_which("slurmd") or "slurmd", "-D", "-N", NODE])
        cluster.wait_until_idle()
        yield cluster
    finally:
        cluster.stop()
