"""bench/hub_exchange_load.py at a small scale, so that the load script cannot rot between its runs.

The script runs as its command line does (a subprocess: the service and the stand-in for the hub's
API are its children, stopped by it), with 4 students within 2 seconds. Its own checks (stored once,
collected whole) are what it reports; a second test shows that they fail on a storage holding a
student's submission twice and on a collect missing a notebook. The two tests take about 23 s of CPU
(interpreter and nbgrader start-ups, the gradebook's creation): 116 s of wall time at a load of 16 on
2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR, REPO_ROOT

pytestmark = pytest.mark.slow

SCRIPT = REPO_ROOT / "bench" / "hub_exchange_load.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hub_exchange_load", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_small_class_runs_with_no_error_every_submission_stored_once_and_collected(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--students", "4", "--window", "2", "--out", str(out),
                           "--workdir", str(tmp_path / "work")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["errors"] == [] and result["problems"] == []
    assert result["stored_once"] == 4 and result["collected_whole"] == 4
    # Each student's three clicks, and every request kind the tab's calls make.
    assert {kind: row["count"] for kind, row in result["tab"].items()} == {"open": 4, "fetch": 4, "submit": 4}
    assert result["requests"]["upload submissions"]["count"] == 4
    assert result["requests"]["view inbound"]["count"] == 1
    # The service's own times, from its access log: the same requests, each answered.
    assert {kind: row["count"] for kind, row in result["served"].items() if kind != "courses"} == {
        kind: row["count"] for kind, row in result["requests"].items()}
    assert result["service"]["rss_peak_vmhwm_mib"] >= result["service"]["rss_idle_mib"] > 0


def test_the_checks_fail_on_a_submission_stored_twice_and_on_a_collect_missing_a_notebook(tmp_path: Path) -> None:
    script = _script()
    students = [script.Person(name, "token", tmp_path / name) for name in ("s000", "s001")]
    storage, course_root = tmp_path / "storage", tmp_path / "course"
    (storage / "tmp").mkdir(parents=True)
    for index, student in enumerate(students):
        for key in ["20261207T000000.000000Z"] + (["20261207T000001.000000Z"] if index == 1 else []):
            (storage / "courses" / script.COURSE / "submissions" / student.name / ASSIGNMENT / key).mkdir(parents=True)
        collected = course_root / "submitted" / student.name / ASSIGNMENT
        collected.mkdir(parents=True)
        (collected / "timestamp.txt").write_text("2026-12-07 00:00:00.000000 UTC")
        variant = DEMO_CLASS_DIR / script.VARIANTS[index] / ASSIGNMENT
        for notebook in sorted(variant.glob("*.ipynb")):
            shutil.copy(notebook, collected / notebook.name)
            with open(collected / notebook.name, "a") as text:
                text.write(script._marker(student.name))
    checks = script._check(storage, course_root, students)
    assert checks["stored_once"] == 1 and checks["collected_whole"] == 2
    assert checks["problems"] == ["s001: 2 stored submissions, not 1"]

    next(iter((course_root / "submitted" / "s000" / ASSIGNMENT).glob("*.ipynb"))).unlink()
    checks = script._check(storage, course_root, students)
    assert checks["collected_whole"] == 1
    assert any(line.startswith("s000: collected [") for line in checks["problems"])
