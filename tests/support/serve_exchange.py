"""A course served by ``ch11-grade serve`` in nbgrader's exchange, with real unix users (the exchange tier).

:func:`served_course` makes the users (an instructor and the students of ``roles``), the
exchange, the course (assignment generated and released as the instructor) and removes them
after; :func:`start_service` runs the service as the instructor in the background.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ch11_autograder.batch import init_course
from ch11_autograder.course_layout import CONFIG, EXCHANGE_FEEDBACK, EXCHANGE_INBOUND

from support import course_users, exchange_course
from support.course_users import User, run_as
from support.paths import COURSE_CONFIG, SOURCE_DIR

ASSIGNMENT = exchange_course.ASSIGNMENT
#: Generous: every nbgrader start costs seconds on a loaded 2-core machine.
WAIT_SECONDS = 400.0


@dataclass
class ServedCourse:
    """The tier's directories and users (see the module)."""

    root: Path
    exchange: Path
    course: Path
    course_id: str
    instructor: User
    students: dict[str, User]
    student_venv: Path
    grader_venv: Path
    service: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.root / "serve.log"

    @property
    def practice(self) -> Path:
        return self.course / "practice"

    @property
    def inbound(self) -> Path:
        return self.exchange / self.course_id / EXCHANGE_INBOUND

    @property
    def feedback(self) -> Path:
        return self.exchange / self.course_id / EXCHANGE_FEEDBACK

    def cache(self, role: str) -> Path:
        """``role``'s nbgrader cache of this course (where ``submit`` keeps a copy of each submission)."""
        return self.students[role].home / ".local/share/jupyter/nbgrader_cache" / self.course_id


S = TypeVar("S", bound=ServedCourse)


def ok(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert done.returncode == 0, \
        f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def wait_for(predicate: Callable[[], bool], what: str, served: ServedCourse, timeout: float = WAIT_SECONDS,
             poll: float = 1.0) -> None:
    """Poll ``predicate`` until true; past ``timeout``, fail with the end of the service's log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    log = served.log.read_text(errors="replace")[-4000:]
    raise AssertionError(f"timed out waiting for {what}; service log:\n{log}")


def queue_rows(served: ServedCourse) -> list[dict]:
    """The service's queue, read-only (the service may be running); [] before it made the database."""
    path = served.practice / ".ch11-serve" / "queue.db"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM submissions ORDER BY id")]
    finally:
        db.close()


def sandbox_running(pid: int) -> bool:
    """Whether a bubblewrap process runs among ``pid``'s descendants (a grading's notebook or suites)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
        children.setdefault(parent, []).append(int(entry))
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if b"bwrap" in handle.read().split(b"\0", 1)[0]:
                    return True
        except OSError:
            continue
        todo.extend(children.get(child, []))
    return False


def start_service(served: ServedCourse) -> None:
    """``ch11-grade serve --course`` as the instructor, in the background (output to :attr:`ServedCourse.log`)."""
    served.service = course_users.start_as(
        served.instructor, ["python", "-m", "ch11_autograder.cli", "serve", "--course", str(served.course)],
        log=served.log, cwd=served.course, venv=served.grader_venv, env={"PYTHONPATH": str(served.root / "lib")})


def kill_service(served: ServedCourse) -> None:
    proc = served.service
    assert proc is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextlib.contextmanager
def served_course(course_id: str, roles: Sequence[str], policy: str, *, prefix: str,
                  make: Callable[..., S] = ServedCourse) -> Iterator[S]:
    """The users (``<prefix>i`` the instructor, ``<prefix><role>`` the students), the exchange and the course
    with ``policy`` appended to its config, the assignment generated and released; all removed after (the
    service killed if still running). ``make``: a subclass of :class:`ServedCourse` to build (its own fields
    defaulted)."""
    course_users.require_root()
    student_venv, grader_venv = course_users.course_venvs()
    root = Path(tempfile.mkdtemp(prefix=f"{course_id}-", dir="/tmp"))
    root.chmod(0o755)
    homes = root / "home"
    homes.mkdir(mode=0o755)
    exchange = root / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # docs/course.md, step 7
    users: list[User] = []
    served = None
    try:
        course_users.install_package_copy(root / "lib")
        instructor = course_users.make_user(f"{prefix}i", homes)
        users.append(instructor)
        students = {}
        for role in roles:
            students[role] = course_users.make_user(f"{prefix}{role}", homes)
            users.append(students[role])
        course = instructor.home / "course"
        for user in users:
            exchange_course.write_user_config(user, exchange, course_id)
        init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
        with (course / CONFIG).open("a") as config:
            config.write(policy)
        course_users.chown_tree(course, instructor)
        served = make(root, exchange, course, course_id, instructor, students, student_venv, grader_venv)
        grader = {"venv": grader_venv, "cwd": course, "env": {"PYTHONPATH": str(root / "lib")}}
        ok(run_as(instructor, ["nbgrader", "generate_assignment", ASSIGNMENT], **grader), "generate_assignment")
        ok(run_as(instructor, ["nbgrader", "release_assignment", ASSIGNMENT], **grader), "release_assignment")
        yield served
    finally:
        if served is not None and served.service is not None and served.service.poll() is None:
            kill_service(served)
        for user in users:
            course_users.remove_user(user)
        shutil.rmtree(root, ignore_errors=True)
