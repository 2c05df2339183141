"""Shared, once-per-session artefacts of the batch, Docker and Gradescope tests.

Grading the demo class takes minutes, so one graded course is made per test
session and reused (read-only: tests that change a course copy it first).
Every test module imports it as ``support.batch_support`` (``tests/`` is on
``sys.path``), so everyone shares one module, and with it one cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import ClassVar

import psutil
from ch11_autograder.course_layout import CONFIG, FEEDBACK, assignment_source

from support import process_leaks, tier_gate
from support.paths import ASSIGNMENT, COURSE_CONFIG, DEMO_CLASS_DIR, SOURCE_DIR

BASE_TAG = "ch11-base:bookworm"
#: The students ``make_demo_course`` grades with plain ``nbgrader autograde``: the two with
#: partial scores (named wrong answers, unanswered exercises). ada (full) and blank (zero) are
#: checked against the demo class's definition where the hostile corpus is graded beside them.
MAKE_DEMO_STUDENTS = ("hal", "lin")
IMAGE_TAG = "ch11-grader:test"

_lock = threading.RLock()
#: The image builds take their own lock: one may run in a background thread (tests/conftest.py)
#: while other tests use the graded courses.
_image_lock = threading.RLock()
_cache: dict[str, object] = {}
#: One lock per debootstrap base: the page tier's trixie base may build while bookworm's does.
_base_locks: dict[str, threading.Lock] = {}
_base_locks_lock = threading.Lock()


def inputs(base: Path) -> Path:
    """A copy, made once per session, of the demo class, the source notebooks and the course config.

    The repository's files may be regenerated while a long session runs; every
    test of the session grades the same bytes. Layout: ``class/``,
    ``source/ch11/``, ``nbgrader_config.py``.
    """
    with _lock:
        if "inputs" not in _cache:
            root = base / "inputs"
            shutil.copytree(DEMO_CLASS_DIR, root / "class")
            shutil.copytree(SOURCE_DIR, assignment_source(root, ASSIGNMENT))
            shutil.copy2(COURSE_CONFIG, root / CONFIG)
            _cache["inputs"] = root
        return _cache["inputs"]


def new_course(base: Path, course: Path) -> Path:
    """An ungraded course made from the session's copy of the config and source notebooks."""
    from ch11_autograder.batch import init_course

    root = inputs(base)
    init_course(course, config=root / CONFIG, source_dir=assignment_source(root, ASSIGNMENT))
    return course


def assigned_course(base: Path, dest: Path) -> Path:
    """A copy, at ``dest``, of an ungraded course whose gradebook already has the assignment.

    ``nbgrader generate_assignment`` (several seconds) runs once per session; a
    batch into the copy starts grading right away.
    """
    with _lock:
        if "assigned" not in _cache:
            from ch11_autograder.batch.course import ensure_assignment

            course = new_course(base, base / "assigned-course")
            ensure_assignment(course, ASSIGNMENT, base / "assigned-course-generate.log")
            _cache["assigned"] = course
        shutil.copytree(_cache["assigned"], dest, symlinks=True)
    return dest


def graded_demo_class(base: Path):
    """(course, report, progress events) of the demo class graded by the batch: bwrap, 2 workers.

    ``base`` is the session's temporary directory; the course is made on the first call only.
    """
    root = inputs(base)
    with _lock:
        if "demo" not in _cache:
            from ch11_autograder.batch import BatchOptions, grade_class

            events = []
            course = new_course(base, base / "batch-demo-course")
            report = grade_class(root / "class", course, BatchOptions(workers=2, sandbox="bwrap"),
                                 progress=events.append)
            _cache["demo"] = (course, report, events)
        return _cache["demo"]


def feedback_html(course: Path) -> dict[str, str]:
    """Student/ch11/notebook.html -> feedback HTML, compared byte for byte across runs.

    A kernel's stdout reaches nbclient in pieces cut by timing; the notebook runner
    coalesces them (``coalesce_streams``), so two runs of one notebook give the same
    outputs, and any difference here is a real one.
    """
    root = course / FEEDBACK
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.html"))}


def assert_graded_as_locally(course: Path, base: Path) -> None:
    """``course``, the demo class graded by another runner (Dask, Slurm), equals the local batch's.

    The scores and feedback digests of ``tests/behaviour/demo.json``; against the session's
    :func:`graded_demo_class` (graded now if no test did yet): the gradebook cell by cell, the
    grade CSV and every feedback file byte for byte.
    """

    from behaviour import capture
    from ch11_autograder.batch import gradebook_snapshot

    expected = capture.expected_demo()
    got = capture.demo_outcome(course)
    assert got["scores"] == expected["scores"]
    assert got["feedback_sha256"] == expected["feedback_sha256"]

    local, local_report, _ = graded_demo_class(base)
    assert gradebook_snapshot(course, ASSIGNMENT) == gradebook_snapshot(local, ASSIGNMENT)
    csv = local_report.csv_path.relative_to(local)
    assert (course / csv).read_bytes() == (local / csv).read_bytes()
    assert feedback_html(course) == feedback_html(local)


def small_graded_course(base: Path):
    """(course, report) of one student, ``lin``, with two notebooks (``ex1_fanout``, ``ex3_block_length``).

    Both hold a catalogued misconception, so the course has passing, partial and failing
    cells and three notebooks not submitted; grading it takes a fraction of the class.
    """
    root = inputs(base)
    with _lock:
        if "small" not in _cache:
            from ch11_autograder.batch import BatchOptions, grade_class

            source = base / "small-class" / "lin" / ASSIGNMENT
            source.mkdir(parents=True)
            for name in ("ex1_fanout.ipynb", "ex3_block_length.ipynb"):
                shutil.copy2(root / "class" / "lin" / ASSIGNMENT / name, source / name)
            course = new_course(base, base / "small-course")
            options = BatchOptions(workers=2, sandbox="bwrap")
            _cache["small"] = (course, grade_class(base / "small-class", course, options))
        return _cache["small"]


def processes_under(path: Path) -> list[int]:
    """Pids whose working directory is inside ``path`` (read from ``/proc``, independently of the grader's own kill)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(path)):
                found.append(int(entry))
    return found


def nbgrader_forked(tree: process_leaks.Descendants) -> bool:
    """Whether a fork of a slot's nbgrader fork server (a submission's nbgrader) runs among what ``tree`` saw."""
    servers = {pid for pid, command in tree.commands.items() if "ch11_autograder.batch.nbgrader_fork" in command}
    for proc in list(tree.seen.values()):
        try:
            if proc.ppid() in servers and proc.is_running():
                return True
        except psutil.Error:
            continue
    return False


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
    tier_gate.require("Docker", docker_reason())


def _image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def base_image(suite: str = "bookworm") -> str:
    """The local debootstrap base of Debian ``suite`` (built once, then reused across sessions while it exists).

    bookworm's is the grading image's base; the page tier starts fresh machines of bookworm and trixie.
    """
    require_docker()
    tag = BASE_TAG if suite == "bookworm" else f"ch11-base:{suite}"
    with _base_locks_lock:
        lock = _base_locks.setdefault(tag, threading.Lock())
    with lock:
        if not _image_exists(tag):
            from ch11_autograder.image import build_base

            build_base(tag, suite=suite)
        return tag


def grading_image() -> str:
    """The grading image built from this working tree (once per session; Docker caches unchanged layers)."""
    base = base_image()
    with _image_lock:
        if "image" not in _cache:
            from ch11_autograder.image import build_image

            _cache["image"] = build_image(base, IMAGE_TAG)
        return _cache["image"]


def counted_server_class():
    """A subclass of the real ``NbgraderForkServer`` whose starts are counted (``pids``, reset by the caller),
    to put in its place with ``monkeypatch`` so a test sees how many servers a batch or session started."""
    from ch11_autograder.batch import nbgrader_fork

    class CountedServer(nbgrader_fork.NbgraderForkServer):
        pids: ClassVar[list[int]] = []

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            CountedServer.pids.append(self.proc.pid)

    return CountedServer
