"""The session's check that no test leaves a process running (support/process_leaks.py, tests/conftest.py).

A small test file is run by a pytest of its own with this suite's conftest as its plugin, in the
default mode: a test that leaves ``sleep`` running as its child, and one whose ``sleep`` is orphaned
(a double fork) in its temporary folder, must fail at teardown naming the test and the process,
which is killed. These pass: a test whose child is still ending when the test ends (it ends after
the old 3 s grace, well within the wait a loaded machine needs), one during which the session's
background work (a thread named as the image build's) starts a process that runs on, one that
closes a pool of spawned interpreters (multiprocessing's resource tracker is the session's), and
one that leaves nothing. ``CH11_PROCESS_LEAKS=report`` lists the leftover and leaves it running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

LEAKY = '''
import multiprocessing, os, subprocess, threading
from concurrent.futures import ProcessPoolExecutor

def test_leaves_a_worker_running(tmp_path):
    subprocess.Popen(["sleep", "61"], cwd=tmp_path, start_new_session=True)

def test_orphans_a_worker_in_its_folder(tmp_path):
    subprocess.run(["sh", "-c", "sleep 62 >/dev/null 2>&1 &"], cwd=tmp_path, check=True)

def test_a_child_still_ending_when_its_test_ends_is_not_a_leak(tmp_path):
    subprocess.Popen(["sleep", "6"], cwd=tmp_path)

def test_the_sessions_background_work_is_not_a_tests():
    started = threading.Event()

    def build():
        # a script started by its own name shows in /proc as its interpreter and path (debootstrap's case)
        script = os.path.abspath("background.sh")
        with open(script, "w") as handle:
            handle.write('#!/bin/sh\\nsleep "$1"\\n')
        os.chmod(script, 0o755)
        procs = [subprocess.Popen(["sleep", "63"]), subprocess.Popen([script, "64"])]
        started.set()
        for proc in procs:
            proc.wait()

    threading.Thread(target=build, name="grading-image-build", daemon=True).start()
    assert started.wait(30)

def test_a_closed_pool_of_spawned_interpreters_leaves_nothing():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert list(pool.map(abs, [1, -2])) == [1, 2]

def test_leaves_nothing():
    subprocess.run(["true"], check=True)
'''


def _sleeps(seconds: str, under: Path) -> list[int]:
    """The ``sleep SECONDS`` processes running in ``under`` or a folder below it."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if (Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]
                        and (os.readlink(f"/proc/{entry}/cwd") + "/").startswith(f"{under}/")):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _pytest(tmp_path: Path, mode: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    """The leaky file run by a pytest of its own, with ``$CH11_PROCESS_LEAKS`` set to ``mode`` (``None``: unset)."""
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {name: value for name, value in os.environ.items() if name != "CH11_PROCESS_LEAKS"}
    env["PYTHONPATH"] = str(TESTS)
    if mode is not None:
        env["CH11_PROCESS_LEAKS"] = mode
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rA",
                           "--basetemp", str(tmp_path / "basetemp"), "test_leaky.py", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture
def no_sleep_left(tmp_path):
    """The ``sleep`` s the leaky tests start, gone after the test (the background one outlives its session)."""
    yield
    for seconds in ("61", "62", "63", "64"):
        for pid in _sleeps(seconds, tmp_path):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_test_that_leaves_a_process_running_fails_naming_it(tmp_path, no_sleep_left):
    done = _pytest(tmp_path, None)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "ERROR at teardown of test_leaves_a_worker_running" in out, out
    assert ("test_leaky.py::test_leaves_a_worker_running left 1 process(es) running" in out
            and "(child of the test process): 'sleep 61'" in out), out
    assert ("test_leaky.py::test_orphans_a_worker_in_its_folder left 1 process(es) running" in out
            and "(in the test's temporary folder): 'sleep 62'" in out), out
    for passing in ("test_a_child_still_ending_when_its_test_ends_is_not_a_leak",
                    "test_the_sessions_background_work_is_not_a_tests",
                    "test_a_closed_pool_of_spawned_interpreters_leaves_nothing", "test_leaves_nothing"):
        assert f"PASSED test_leaky.py::{passing}" in out and f"teardown of {passing}" not in out, out
    assert _sleeps("63", tmp_path), "the background work's process was killed as a leftover"
    assert _sleeps("64", tmp_path), "the background work's script (run through its interpreter) was killed"
    deadline = time.monotonic() + 5
    while (_sleeps("61", tmp_path) or _sleeps("62", tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeps("61", tmp_path) == [] and _sleeps("62", tmp_path) == [], "the check did not kill what it found"


@pytest.mark.slow
def test_report_mode_lists_the_process_and_leaves_it_running(tmp_path, no_sleep_left):
    done = _pytest(tmp_path, "report", "-k", "test_leaves_a_worker_running")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "processes left running (1 tests; CH11_PROCESS_LEAKS=report)" in out, out
    assert "(child of the test process): 'sleep 61'" in (tmp_path / "build" / "process-leaks.txt").read_text()
    assert _sleeps("61", tmp_path), "report mode killed the process"


def test_a_mode_it_does_not_know_stops_the_session(tmp_path):
    done = _pytest(tmp_path, "warn")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "$CH11_PROCESS_LEAKS is 'warn': 'fail' (the default) or 'report'" in done.stderr, done.stderr
