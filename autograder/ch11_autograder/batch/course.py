"""The instructor's course: creating it, generating the assignment, the template gradebook, course-wide steps.

``course`` is an nbgrader course directory. :func:`init_course` creates one from
the repository's ``nbgrader_config.py`` and ``source/`` when it does not exist;
:func:`ensure_assignment` runs ``nbgrader generate_assignment`` once, when the
gradebook does not know the assignment yet; :func:`make_template` copies the
gradebook with only the assignment, the start of every isolated course
(:mod:`.isolated`); :func:`course_step` runs a course-wide nbgrader command
(``generate_feedback``, ``export``) at the end of a batch.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

from nbgrader.api import MissingEntry

from ..course_layout import CONFIG, GRADEBOOK, SOURCE, assignment_source
from ..nbgrader_cli import nbgrader_env, run_nbgrader
from ..paths import ASSIGNMENT, COURSE_CONFIG
from .gradebook import open_gradebook
from .nbgrader_fork import NbgraderForkServer, start_nbgrader
from .nbgrader_log import nbgrader_error_line
from .records import BatchError

__all__ = ["REPORTS_DIR", "STATE_DIR", "course_step", "ensure_assignment", "init_course", "make_template"]

#: Where a course keeps the batch's own files: ledger, logs, staging, work dirs.
STATE_DIR = ".ch11-batch"
#: Where a course keeps the batch's reports: CSV, summary, records, nbgrader's export.
REPORTS_DIR = "reports"


def init_course(
    course: Path,
    *,
    config: Path | None = None,
    source_dir: Path | None = None,
    assignment: str = ASSIGNMENT,
) -> bool:
    """Create ``course`` from the course config and source notebooks unless it is one already.

    A directory with ``nbgrader_config.py`` is left as it is (it must have
    ``source/<assignment>/``). Otherwise ``config`` (default: the repository's
    ``nbgrader_config.py``, or the installed package's copy of it: ``paths``) and ``source_dir``
    (default: ``source/<assignment>`` beside that config) are copied into a new or empty ``course``.
    Returns whether the course was created.

    Raises:
        BatchError: ``course`` is a non-empty directory without a config, or the
            course has no source notebooks, or the defaults are not available
            (an installed package without the repository).
    """
    config = config or COURSE_CONFIG
    source_dir = source_dir or assignment_source(COURSE_CONFIG.parent, assignment)
    if (course / CONFIG).is_file():
        if not assignment_source(course, assignment).is_dir():
            raise BatchError(f"{course} has no source/{assignment}/: not a course for {assignment}")
        return False
    if course.exists() and (not course.is_dir() or any(course.iterdir())):
        raise BatchError(f"{course} exists but is not an nbgrader course (no nbgrader_config.py); give a new or empty "
                         "directory, or an existing course")
    if not config.is_file() or not source_dir.is_dir():
        raise BatchError(f"cannot create {course}: the course config ({config}) or source notebooks ({source_dir}) "
                         "are not available here; create the course from a repository checkout first")
    course.mkdir(parents=True, exist_ok=True)
    (course / SOURCE).mkdir()
    shutil.copy2(config, course / CONFIG)
    shutil.copytree(source_dir, assignment_source(course, assignment))
    return True


def _has_assignment(course: Path, assignment: str) -> bool:
    if not (course / GRADEBOOK).is_file():
        return False
    with open_gradebook(course / GRADEBOOK) as gb:
        try:
            return bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return False


def ensure_assignment(course: Path, assignment: str, log_path: Path) -> None:
    """Run ``nbgrader generate_assignment`` (log at ``log_path``) unless the gradebook knows ``assignment``.

    Raises:
        BatchError: the command failed or left the assignment without notebooks; names the log's telling line.
    """
    if _has_assignment(course, assignment):
        return
    with log_path.open("wb") as log:
        done = run_nbgrader(course, "generate_assignment", assignment, "--force", stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not _has_assignment(course, assignment):
        line = nbgrader_error_line(log_path.read_text(errors="replace"))
        raise BatchError(f"nbgrader generate_assignment {assignment} failed: {line} (log: {log_path})")


def make_template(course: Path, dest: Path, assignment: str) -> None:
    """A copy of the course gradebook holding only ``assignment``: no students, no other assignments."""
    dest.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(course / GRADEBOOK)) as src, \
            contextlib.closing(sqlite3.connect(dest)) as out:
        src.backup(out)
    with open_gradebook(dest) as gb:
        for student in [s.id for s in gb.students]:
            gb.remove_student(student)
        for other in [a.name for a in gb.assignments if a.name != assignment]:
            gb.remove_assignment(other)


def course_step(course: Path, log_path: Path, *args: str, forks: NbgraderForkServer | None = None) -> list[str]:
    """Run ``nbgrader *args`` on the whole course (log at ``log_path``); returns what failed, ``[]`` when it ran.

    ``forks``: a fork server that preloaded this course's config; the step is then a fork of
    it (no interpreter start or imports), and a process of its own if the server is gone.
    A failed step is reported, not raised: the batch's grades are merged already.
    """
    with log_path.open("wb") as log:
        returncode = start_nbgrader(args, course, nbgrader_env(), log, forks, whose="the course's").wait()
    if returncode == 0:
        return []
    line = nbgrader_error_line(log_path.read_text(errors="replace"))
    return [f"nbgrader {args[0]} failed (exit {returncode}): {line} (log: {log_path})"]
