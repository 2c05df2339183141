"""Submissions in nbgrader's inbound folder, read as hostile input.

A submission is a folder ``<student>+<assignment>+<timestamp>+<random>`` that the student's
``nbgrader submit`` wrote (or the exchange's :meth:`..exchange.api.Submissions.bring` copied). In the folder
exchange anyone can write into ``inbound``, so a folder is a student's only when that student's unix user
owns it: the rule of :func:`..exchange.api.refusal`, the one ``collect`` applies, and the default of
:func:`read_folder`; the exchange in use gives its own (:meth:`..exchange.api.Submissions.refusal`). Its
files are opened relative to the folder's descriptor with ``O_NOFOLLOW``: symbolic links, devices and
FIFOs are skipped, never followed or opened; every file must be owned by the folder's owner; every read
is capped.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..batch import sanitize_student_id
from ..exchange.api import refusal

__all__ = ["SECRET_FILE", "TIMESTAMP_FILE", "Folder", "Snapshot", "parse_folder", "read_folder", "ready"]

TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"
#: Caps of one read: a notebook, the timestamp, the secret.
MAX_NOTEBOOK_BYTES = 20_000_000
MAX_SMALL_BYTES = 1024
#: Other notebooks of a refused folder that get its refusal page.
MAX_OTHERS = 10
#: A folder whose mode never became nbgrader's final 0777 (a folder made by hand) is taken this long after its last
#: change.
SETTLE_SECONDS = 10.0
_HEX = re.compile(r"[0-9a-f]{16,1024}")


@dataclass(frozen=True)
class Folder:
    """A submission folder's name, parsed: who it claims, for which assignment, when."""

    name: str
    student: str
    assignment: str
    timestamp: str


def parse_folder(name: str, assignment: str) -> Folder | None:
    """``name`` as nbgrader's ``<student>+<assignment>+<timestamp>+<random>``, or ``None`` (another assignment,
    or not a submission folder's name)."""
    parts = name.split("+")
    if len(parts) != 4 or parts[1] != assignment or not parts[0] or not parts[2]:
        return None
    return Folder(name, parts[0], parts[1], parts[2])


def ready(inbound: Path, name: str, now: float) -> bool:
    """Whether ``nbgrader submit`` has finished writing the folder: its last step makes it 0777 (after writing
    the secret); a folder made otherwise is taken :data:`SETTLE_SECONDS` after its last change."""
    try:
        info = os.lstat(inbound / name)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return True  # refused by read_folder, at once
    if stat.S_IMODE(info.st_mode) == 0o777:
        return True
    return now - max(info.st_mtime, info.st_ctime) >= SETTLE_SECONDS


@dataclass
class Snapshot:
    """What was read of one submission folder.

    Attributes:
        refused: why it is not graded (not the student's, no notebook of the assignment, ...), or ``None``.
        notebooks: assignment notebook name -> bytes, only the assignment's.
        others: names of the other ``.ipynb`` files (not the assignment's; at most :data:`MAX_OTHERS`), so that
            a refusal can be published where ``fetch_feedback`` looks for their feedback.
        timestamp, secret: nbgrader's ``timestamp.txt`` and ``submission_secret.txt`` (stripped), or ``None``.
        notes: what was skipped, and why (student-named parts unescaped: escape before printing).
        arrived: the folder's ctime (set by the kernel, not by the student).
    """

    refused: str | None = None
    notebooks: dict[str, bytes] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)
    timestamp: str | None = None
    secret: str | None = None
    notes: list[str] = field(default_factory=list)
    arrived: float = 0.0


def read_folder(inbound: Path, folder: Folder, notebooks: set[str], *, contents: bool = True,
                whose: Callable[[str, str], str | None] | None = None) -> Snapshot:
    """Read ``folder`` (see the module): whose it is first, then its files. ``contents=False`` reads only the
    timestamp and the secret and lists the notebooks (their bytes are read when the submission is graded).
    ``whose(name, student)`` says why the folder is not that student's (default: the folder exchange's owner
    rule, :func:`..exchange.api.refusal`, in ``inbound``)."""
    snap = Snapshot()
    why = refusal(str(inbound), folder.name, folder.student) if whose is None else whose(folder.name, folder.student)
    if why is not None:
        snap.refused = why
        return snap
    if sanitize_student_id(folder.student) != folder.student:
        snap.refused = f"the student id in {folder.name} is not one nbgrader can grade"
        return snap
    try:
        fd = os.open(inbound / folder.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        snap.refused = f"{folder.name} cannot be opened as a folder ({errno.errorcode.get(exc.errno or 0, exc)})"
        return snap
    try:
        owner = os.fstat(fd).st_uid
        snap.arrived = os.fstat(fd).st_ctime
        for name in sorted(os.listdir(fd)):
            wanted = name in notebooks or name in (TIMESTAMP_FILE, SECRET_FILE)
            if not wanted:
                snap.notes.append(f"{name}: not a notebook of the assignment, ignored")
                if name.endswith(".ipynb") and len(snap.others) < MAX_OTHERS:
                    snap.others.append(name)
                continue
            limit = MAX_NOTEBOOK_BYTES if name in notebooks else MAX_SMALL_BYTES
            data = _read_file(fd, name, owner, limit if contents or name not in notebooks else 0)
            if isinstance(data, str):
                snap.notes.append(f"{name}: {data}, ignored")
                continue
            if name == TIMESTAMP_FILE:
                snap.timestamp = data.decode("utf-8", "replace").strip()
            elif name == SECRET_FILE:
                secret = data.decode("ascii", "replace").strip()
                snap.secret = secret if _HEX.fullmatch(secret) else None
            else:
                snap.notebooks[name] = data
    finally:
        os.close(fd)
    if not snap.notebooks:
        snap.refused = "it holds no notebook of the assignment (" + ", ".join(sorted(notebooks)) + ")"
    return snap


def _read_file(dir_fd: int, name: str, owner: int, limit: int) -> bytes | str:
    """The bytes of regular file ``name`` (owned by ``owner``, at most ``limit`` bytes), or why it is skipped."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        return "a symbolic link" if exc.errno == errno.ELOOP else f"unreadable ({errno.errorcode.get(exc.errno or 0)})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_uid != owner:
            return "owned by another user than the folder"
        if limit and info.st_size > limit:
            return f"larger than {limit} bytes"
        if not limit:
            return b""
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            return f"larger than {limit} bytes"
        return b"".join(chunks)
    finally:
        os.close(fd)
