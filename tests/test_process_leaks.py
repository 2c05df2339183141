"""The session's check that no test leaves a process running (support/process_leaks.py, tests/conftest.py).

A small test file is run by a pytest of its own with this suite's conftest as its plugin: a test
that leaves ``sleep`` running as its child, one whose ``sleep`` is orphaned (a double fork) in its
temporary folder, one whose child exits during the grace period, and one that leaves nothing.
The first two must fail at teardown naming the test and the process, which is killed; the others pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

LEAKY = '''
import subprocess, time

def test_leaves_a_worker_running(tmp_path):
    subprocess.Popen(["sleep", "61"], cwd=tmp_path, start_new_session=True)

def test_orphans_a_worker_in_its_folder(tmp_path):
    subprocess.run(["sh", "-c", "sleep 62 >/dev/null 2>&1 &"], cwd=tmp_path, check=True)

def test_a_child_that_ends_during_the_grace_is_not_a_leak(tmp_path):
    subprocess.Popen(["sleep", "1"], cwd=tmp_path)

def test_leaves_nothing():
    subprocess.run(["true"], check=True)
'''


def _sleeps(seconds: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_a_test_that_leaves_a_process_running_fails_naming_it(tmp_path):
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rA",
                           "--basetemp", str(tmp_path / "basetemp"), "test_leaky.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(TESTS), "CH11_PROCESS_LEAKS": "fail"})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "ERROR at teardown of test_leaves_a_worker_running" in out, out
    assert ("test_leaky.py::test_leaves_a_worker_running left 1 process(es) running" in out
            and "(child of the test process): 'sleep 61'" in out), out
    assert ("test_leaky.py::test_orphans_a_worker_in_its_folder left 1 process(es) running" in out
            and "(in the test's temporary folder): 'sleep 62'" in out), out
    assert "PASSED test_leaky.py::test_a_child_that_ends_during_the_grace_is_not_a_leak" in out, out
    assert "ERROR at teardown of test_a_child_that_ends_during_the_grace_is_not_a_leak" not in out, out
    assert "PASSED test_leaky.py::test_leaves_nothing" in out and "teardown of test_leaves_nothing" not in out, out
    deadline = time.monotonic() + 5
    while (_sleeps("61") or _sleeps("62")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeps("61") == [] and _sleeps("62") == [], "the check did not kill what it found"
