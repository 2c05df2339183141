"""Shared, once-per-session artefacts of the batch, Docker and Gradescope tests.

Grading the demo class takes minutes, so one graded course is made per test
session and reused (read-only: tests that change a course copy it first).
Test modules outside this folder load this file with :func:`load` so that
everyone shares the same module, and with it the same cache.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DEMO_CLASS = REPO / "demo" / "class"
ASSIGNMENT = "ch11"
BASE_TAG = "ch11-base:bookworm"
IMAGE_TAG = "ch11-grader:test"

_lock = threading.Lock()
_cache: dict[str, object] = {}


def load():
    """This module, imported once under the name ``batch_support`` (for test files in other folders)."""
    if "batch_support" not in sys.modules:
        spec = importlib.util.spec_from_file_location("batch_support", Path(__file__))
        module = importlib.util.module_from_spec(spec)
        sys.modules["batch_support"] = module
        spec.loader.exec_module(module)
    return sys.modules["batch_support"]


def graded_demo_class(base: Path):
    """(course, report, progress events) of the demo class graded by the batch: bwrap, 2 workers.

    ``base`` is the session's temporary directory; the course is made on the first call only.
    """
    with _lock:
        if "demo" not in _cache:
            from ch11_autograder.batch import grade_class

            events = []
            course = base / "batch-demo-course"
            report = grade_class(DEMO_CLASS, course, workers=2, sandbox="bwrap", progress=events.append)
            _cache["demo"] = (course, report, events)
        return _cache["demo"]


def copy_course(course: Path, dest: Path) -> Path:
    """A copy of a graded course that a test may change."""
    shutil.copytree(course, dest, symlinks=True)
    return dest


# --------------------------------------------------------------------------- docker


def docker_reason() -> str | None:
    """``None`` when a Docker engine answers, else why not."""
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    try:
        probe = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                               timeout=30)
    except subprocess.TimeoutExpired:
        return "docker info timed out"
    if probe.returncode != 0:
        return f"no Docker engine reachable: {probe.stderr.strip()[:300]}"
    return None


def require_docker() -> None:
    """Skip without a Docker engine, except under CI (``$CI`` set), where Docker must be exercised: fail."""
    reason = docker_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but Docker is unusable ({reason}): CI must run the Docker tests", pytrace=False)
    pytest.skip(reason)


def _image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def base_image() -> str:
    """The local debootstrap base (built once, then reused across sessions while it exists)."""
    require_docker()
    with _lock:
        if not _image_exists(BASE_TAG):
            from ch11_autograder.image import build_base

            build_base(BASE_TAG)
        return BASE_TAG


def grading_image() -> str:
    """The grading image built from this working tree (once per session; Docker caches unchanged layers)."""
    base = base_image()
    with _lock:
        if "image" not in _cache:
            from ch11_autograder.image import build_image

            _cache["image"] = build_image(base, IMAGE_TAG)
        return _cache["image"]
