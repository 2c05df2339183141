"""The nbgrader fork servers a batch starts: the slots the local pool warms before any submission
arrives, and the server ``ch11-grade batch`` hands the batch for slot 0.

Real fork servers (each imports the course's ``nbgrader_config.py``) and real grading, the servers
counted by their pids.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from ch11_autograder.batch import BatchOptions, IntakeError, grade_class, nbgrader_fork, orchestrate
from ch11_autograder.batch.plan import BatchPlan
from ch11_autograder.batch.runners import LocalPool
from support import batch_support, process_leaks
from support.paths import ASSIGNMENT

_CountedServer = batch_support.counted_server_class()


def _plan(course, workers: int) -> BatchPlan:
    return BatchPlan(course, course, BatchOptions(workers=workers, sandbox="bwrap", timeout=60.0, feedback=False),
                     progress=None, started=time.monotonic())


@pytest.mark.parametrize(("expected", "warmed"), [(1, 1), (2, 2), (5, 2), (None, 2)])
def test_the_pool_warms_only_the_slots_its_expected_submissions_use(tmp_path_factory, monkeypatch, expected,
                                                                    warmed):
    """``workers=2``: one expected submission warms one server; more than two, or not known, warm both."""
    course = batch_support.new_course(tmp_path_factory.getbasetemp(), tmp_path_factory.mktemp("pool") / "course")
    monkeypatch.setattr(nbgrader_fork, "NbgraderForkServer", _CountedServer)
    _CountedServer.pids = []
    pool = LocalPool(_plan(course, workers=2))
    pool.start(expected)
    pool.close()  # waits for the warming tasks: every server they start is counted by now
    assert len(_CountedServer.pids) == warmed == pool.servers.started


@pytest.mark.parametrize("feedback", [False, True])
def test_a_batch_of_one_submission_grades_on_the_server_it_was_handed_and_starts_no_other(tmp_path_factory,
                                                                                          monkeypatch, feedback):
    """``ch11-grade batch`` hands ``grade_class`` slot 0's server, started before its own imports.

    With feedback, ``generate_feedback`` and ``export`` fork from it too, after the pool has closed:
    no course-wide server imports nbgrader beside the submission's grading.
    """
    base = tmp_path_factory.getbasetemp()
    root = tmp_path_factory.mktemp("first-server")
    course = batch_support.assigned_course(base, root / "course")
    notebook = "ex4_audit.ipynb"
    dest = root / "class" / "ada" / ASSIGNMENT
    dest.mkdir(parents=True)
    shutil.copy2(batch_support.inputs(base) / "class" / "ada" / ASSIGNMENT / notebook, dest / notebook)
    first = nbgrader_fork.NbgraderForkServer(course / "nbgrader_config.py", wait=False)
    monkeypatch.setattr(nbgrader_fork, "NbgraderForkServer", _CountedServer)
    monkeypatch.setattr(orchestrate, "NbgraderForkServer", _CountedServer)
    _CountedServer.pids = []
    report = grade_class(root / "class", course, BatchOptions(workers=2, sandbox="bwrap", feedback=feedback),
                         first_server=first)
    assert [r.status for r in report.records] == ["graded"]
    assert _CountedServer.pids == []  # the pool adopted the server it was handed for slot 0
    if feedback:
        assert (course / "feedback" / "ada" / ASSIGNMENT / "ex4_audit.html").is_file()
        assert report.problems == []
        assert "is gone" not in (course / ".ch11-batch" / "logs" / "generate_feedback.log").read_text()
    assert not first.alive  # and the batch closed it


def test_a_refused_batch_closes_the_server_it_was_handed(tmp_path):
    config = tmp_path / "course" / "nbgrader_config.py"
    config.parent.mkdir()
    config.write_text("c = get_config()  # noqa: F821\n")
    first = nbgrader_fork.NbgraderForkServer(config, wait=False)
    with pytest.raises(IntakeError):
        grade_class(tmp_path / "no-such-folder", tmp_path / "course", BatchOptions(sandbox="bwrap"), first_server=first)
    assert not first.alive


#: Seconds a stopped ``ch11-grade batch`` has for every process it started to end (docs/batch.md, "Stopping").
STOP_SECONDS = 10


def _is_fork_server(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return "ch11_autograder.batch.nbgrader_fork" in proc.cmdline()
    return False


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize(("stop", "when"), [(signal.SIGTERM, "starting"), (signal.SIGTERM, "grading"),
                                            (signal.SIGINT, "grading")])
def test_a_batch_stopped_by_a_signal_leaves_no_process(tmp_path_factory, tmp_path, stop, when):
    """``ch11-grade batch`` on the local pool, stopped while its fork servers start (nothing graded yet) or while
    a submission's nbgrader runs: the batch, its fork servers, nbgrader and the sandboxes are all gone within
    :data:`STOP_SECONDS`; nothing was merged."""
    base = tmp_path_factory.getbasetemp()
    course = batch_support.assigned_course(base, tmp_path / "course")
    for student in ("ada", "hal"):
        dest = tmp_path / "class" / student / ASSIGNMENT
        dest.mkdir(parents=True)
        shutil.copy2(batch_support.inputs(base) / "class" / student / ASSIGNMENT / "ex4_audit.ipynb", dest)
    with (tmp_path / "batch.log").open("wb") as log:
        # As a terminal's Ctrl-C meets it: a suite started as a shell's background job inherits SIGINT ignored,
        # and a Python started so keeps ignoring it (POSIX shells' rule, not the batch's).
        batch = subprocess.Popen([str(Path(sys.executable).parent / "ch11-grade"), "batch", str(tmp_path / "class"),
                                  "--course", str(course), "--sandbox", "bwrap"], cwd=tmp_path,
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=_sigint_default)
    tree = process_leaks.Descendants([batch.pid])
    try:
        def ready() -> bool:
            servers = {p.pid for p in tree.seen.values() if _is_fork_server(p)}
            if when == "starting":
                return bool(servers)
            return any(_parent(p) in servers for p in tree.seen.values())  # a forked nbgrader runs

        deadline = time.monotonic() + 300
        while not ready() and batch.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert batch.poll() is None and ready(), (tmp_path / "batch.log").read_text(errors="replace")
        tree.look()
        batch.send_signal(stop)
        left = process_leaks.still_running([psutil.Process(batch.pid), *tree.seen.values()], STOP_SECONDS,
                                           reap=[batch])
        assert left == [], (f"{STOP_SECONDS} s after {stop.name} these still run: {left}\n"
                             + (tmp_path / "batch.log").read_text(errors="replace"))
        assert not (course / ".ch11-batch" / "ledger.jsonl").exists() or not (
            course / ".ch11-batch" / "ledger.jsonl").read_text().strip()
    finally:
        tree.stop()
        if batch.poll() is None:
            batch.kill()
        batch.wait()


def _parent(proc: psutil.Process) -> int | None:
    with contextlib.suppress(psutil.Error):
        return proc.ppid()
    return None
