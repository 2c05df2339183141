"""The hub exchange service's storage: one folder only the service's user can read, written atomically.

Layout under the root (mode 0700, owned by the service's user; :meth:`Storage.open` refuses any
other)::

    tmp/                                    staging; emptied at every open
    courses/<course>/released/<assignment>/ the files students fetch
    courses/<course>/submissions/<student>/<assignment>/<key>/
                                            the files, timestamp.txt, submission_secret.txt
    courses/<course>/feedback/<student>/<assignment>/<key>/
                                            the feedback for that submission

``<key>`` is the submission's UTC time, ``YYYYmmddTHHMMSS.ffffffZ`` (sorts in time order, one path
component); ``timestamp.txt`` holds the same instant as nbgrader's submit writes it
(``%Y-%m-%d %H:%M:%S.%f %Z`` in UTC) and ``submission_secret.txt`` 128 hex digits, as nbgrader
0.9.3+ writes and derives feedback file names from.

Every entry is written whole or not at all: the caller fills a staging folder from
:meth:`Storage.staging` (``archive.unpack`` does), and ``add_*`` writes the service's own files
into it, fsyncs every file and folder, then renames it into place and fsyncs the parent. A writer
killed before the rename leaves only a folder under ``tmp/``, which the next :meth:`Storage.open`
removes; one killed after it leaves a whole entry. So one service process uses a root at a time:
an open clears the staging of any other still writing. Replacing a release or feedback renames the old
entry into ``tmp/`` first, so a kill between the two renames leaves that entry absent (the
instructor releases again), never half-written.

The folder tree is the whole index, with no SQLite beside it: each question the service asks (what
is released in a course, a student's submissions, a submission's feedback) is one folder listing,
and a second store would need its own crash consistency with the tree.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .names import checked

__all__ = ["KEY_PATTERN", "Feedback", "Released", "Storage", "StorageError", "Submission", "fsync_path", "fsync_tree",
           "nbgrader_timestamp", "submission_key"]

#: nbgrader's ``Exchange.timestamp_format`` default, with its default timezone (UTC).
NBGRADER_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"
_KEY_FORMAT = "%Y%m%dT%H%M%S.%fZ"
#: A submission key as :data:`_KEY_FORMAT` writes it (the service's listing cursor is one too).
KEY_PATTERN = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z")


class StorageError(RuntimeError):
    """The storage cannot be used as asked; the message names the path and what is wrong."""


@dataclass(frozen=True)
class Released:
    """An assignment released to a course."""

    course: str
    assignment: str
    path: Path


@dataclass(frozen=True)
class Submission:
    """One submission of a student's, kept whole."""

    course: str
    student: str
    assignment: str
    key: str
    timestamp: str
    path: Path


@dataclass(frozen=True)
class Feedback:
    """The feedback for one submission."""

    course: str
    student: str
    assignment: str
    key: str
    path: Path


def _utc(when: dt.datetime) -> dt.datetime:
    if when.tzinfo is None:
        raise ValueError(f"the submission time {when!r} has no timezone")
    return when.astimezone(dt.UTC)


def submission_key(when: dt.datetime) -> str:
    """The folder name of a submission made at ``when`` (timezone-aware)."""
    return _utc(when).strftime(_KEY_FORMAT)


def nbgrader_timestamp(when: dt.datetime) -> str:
    """``when`` as nbgrader's submit writes ``timestamp.txt`` with its default settings."""
    return _utc(when).strftime(NBGRADER_TIMESTAMP_FORMAT)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(top: Path) -> None:
    for folder, _dirs, files in os.walk(top):
        for name in files:
            fsync_path(Path(folder, name))
        fsync_path(Path(folder))


def _private_folders(path: Path, root: Path) -> None:
    """Make each missing folder from ``root`` down to ``path`` with mode 0700 (``Path.mkdir(parents=True)`` gives
    the parents it makes the umask's default, 0755), each one's parent fsynced so that it outlives a power loss."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        try:
            os.mkdir(here, 0o700)
        except FileExistsError:
            continue
        fsync_path(here.parent)


def _write_text(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _check_root(root: Path) -> None:
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        raise StorageError(f"the storage folder {str(root)!r} does not exist") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StorageError(f"the storage folder {str(root)!r} is not a folder (or is a symbolic link)")
    if info.st_uid != os.geteuid():
        raise StorageError(f"the storage folder {str(root)!r} belongs to uid {info.st_uid}, not to this service's "
                           f"uid {os.geteuid()}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise StorageError(f"the storage folder {str(root)!r} has mode {stat.S_IMODE(info.st_mode):04o}: others may "
                           f"reach it; it must be 0700")


class Storage:
    """The service's storage under ``root`` (see the module); get one with :meth:`open`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._tmp = root / "tmp"
        self._courses = root / "courses"

    @classmethod
    def open(cls, root: Path, *, create: bool = False) -> Storage:
        """The storage at ``root``, its leftover staging removed.

        With ``create`` a missing ``root`` is made (mode 0700); its parent must exist.

        Raises:
            StorageError: ``root`` is missing (without ``create``), not a folder, a link, not this
                user's, or reachable by others.
        """
        root = Path(os.path.abspath(root))
        if create and not os.path.lexists(root):
            os.mkdir(root, 0o700)
        _check_root(root)
        store = cls(root)
        shutil.rmtree(store._tmp, ignore_errors=True)
        for folder in (store._tmp, store._courses):
            os.makedirs(folder, 0o700, exist_ok=True)
        store._tighten()
        fsync_path(root)
        return store

    def _tighten(self) -> None:
        """Make the first four levels of folders under ``courses/`` 0700 (``<course>/<kind>/<student>/<assignment>``,
        the folders above a submission's entry): a storage written before they were made so has the umask's 0755
        there."""
        level = [self._courses]
        for _depth in range(4):
            below = []
            for folder in level:
                for entry in os.scandir(folder):
                    if entry.is_dir(follow_symlinks=False):
                        if stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) != 0o700:
                            os.chmod(entry.path, 0o700)
                        below.append(Path(entry.path))
            level = below

    def staging(self) -> Path:
        """A fresh path under ``tmp/`` that does not exist yet, for ``archive.unpack`` to make."""
        return Path(tempfile.mkdtemp(prefix="stage-", dir=self._tmp)) / "entry"

    def discard(self, staged: Path) -> None:
        """Remove what is left of a staging path of :meth:`staging` (nothing after its entry was committed)."""
        shutil.rmtree(self._staged_parent(staged), ignore_errors=True)

    def _staged_parent(self, staged: Path) -> Path:
        parent = Path(os.path.abspath(staged)).parent
        if parent.parent != self._tmp:
            raise StorageError(f"{str(staged)!r} is not a staging path of this storage (see Storage.staging)")
        return parent

    def _staged(self, staged: Path) -> Path:
        staged = Path(os.path.abspath(staged))
        if staged.parent.parent != self._tmp or staged.is_symlink() or not staged.is_dir():
            raise StorageError(f"{str(staged)!r} is not a staging folder of this storage (see Storage.staging)")
        return staged

    def _commit(self, staged: Path, final: Path, *, replace: bool) -> None:
        staged = self._staged(staged)
        fsync_tree(staged)
        _private_folders(final.parent, self.root)
        if os.path.lexists(final):
            if not replace:
                raise StorageError(f"{str(final.relative_to(self.root))!r} exists already")
            os.rename(final, staged.parent / "replaced")
        os.rename(staged, final)
        fsync_path(final.parent)
        shutil.rmtree(staged.parent, ignore_errors=True)

    def _course(self, course: str) -> Path:
        return self._courses / checked("course id", course)

    def release(self, course: str, assignment: str, staged: Path, *, replace: bool = False) -> Released:
        """Make the files in ``staged`` the released ``assignment`` of ``course``."""
        final = self._course(course) / "released" / checked("assignment id", assignment)
        self._commit(staged, final, replace=replace)
        return Released(course, assignment, final)

    def released(self, course: str) -> list[Released]:
        """The assignments released to ``course``, by id."""
        folder = self._course(course) / "released"
        return [Released(course, name, folder / name) for name in _listing(folder)]

    def submit(self, course: str, student: str, assignment: str, staged: Path, when: dt.datetime) -> Submission:
        """Keep the files in ``staged`` as ``student``'s submission of ``assignment`` made at ``when``.

        Raises:
            StorageError: that student already has a submission of it at that instant.
        """
        staged = self._staged(staged)
        key = submission_key(when)
        timestamp = nbgrader_timestamp(when)
        final = (self._course(course) / "submissions" / checked("student name", student)
                 / checked("assignment id", assignment) / key)
        for name, text in (("timestamp.txt", timestamp), ("submission_secret.txt", secrets.token_hex(64))):
            if os.path.lexists(staged / name):
                raise StorageError(f"the submission holds its own {name}, which the service writes")
            _write_text(staged / name, text)
        self._commit(staged, final, replace=False)
        return Submission(course, student, assignment, key, timestamp, final)

    def submissions(self, course: str, student: str, assignment: str, *, since: str = "") -> list[Submission]:
        """``student``'s submissions of ``assignment`` in ``course``, oldest first (``since``: those whose key is
        not before it, their ``timestamp.txt`` alone read)."""
        folder = (self._course(course) / "submissions" / checked("student name", student)
                  / checked("assignment id", assignment))
        return [Submission(course, student, assignment, key, (folder / key / "timestamp.txt").read_text("utf-8"),
                           folder / key) for key in _listing(folder) if key >= since]

    def students(self, course: str) -> list[str]:
        """The students with a submission kept in ``course``, by name."""
        return _listing(self._course(course) / "submissions")

    def assignments_of(self, course: str, student: str) -> list[str]:
        """The assignments ``student`` has submitted in ``course``, by id."""
        return _listing(self._course(course) / "submissions" / checked("student name", student))

    def add_feedback(self, submission: Submission, staged: Path, *, replace: bool = False) -> Feedback:
        """Keep the files in ``staged`` as the feedback for ``submission`` (which must be kept here)."""
        kept = self._entry("submissions", submission)
        if not kept.is_dir():
            raise StorageError(f"no submission {str(kept.relative_to(self.root))!r} to give feedback for")
        final = self._entry("feedback", submission)
        self._commit(staged, final, replace=replace)
        return Feedback(submission.course, submission.student, submission.assignment, submission.key, final)

    def _entry(self, kind: str, submission: Submission) -> Path:
        """``courses/<course>/<kind>/<student>/<assignment>/<key>``, every part checked."""
        key = submission.key
        try:
            well_formed = submission_key(dt.datetime.strptime(key, _KEY_FORMAT).replace(tzinfo=dt.UTC)) == key
        except ValueError:
            well_formed = False
        if not well_formed:
            raise StorageError(f"the submission key {key!r} is not of the form YYYYmmddTHHMMSS.ffffffZ")
        return (self._course(submission.course) / kind / checked("student name", submission.student)
                / checked("assignment id", submission.assignment) / key)

    def feedback(self, submission: Submission) -> Feedback | None:
        """The feedback for ``submission``, or None before any is added."""
        final = self._entry("feedback", submission)
        if not final.is_dir():
            return None
        return Feedback(submission.course, submission.student, submission.assignment, submission.key, final)


def _listing(folder: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
