"""One file of a source attributed to a (raw) student (:class:`Entry`), read only within a byte cap,
and the archive members intake never considers (unsafe names, links, special files, encrypted members)."""

from __future__ import annotations

import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = [
    "SECRET_FILE",
    "TIMESTAMP_FILE",
    "Budget",
    "Entry",
    "member_reader",
    "read_capped",
    "skipped_member",
]

TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"


@dataclass
class Entry:
    """One file attributed to a (raw) student: where it came from and how to read it."""

    raw_student: str
    origin: str
    filename: str  # as named inside the student's folder (or Canvas's <file> part)
    shown: str  # path shown in notes
    size_hint: int = 0
    read: Callable[[int], bytes] | None = None  # max_bytes -> bytes; raises _TooBig
    late: bool = False
    problem: str | None = None  # set instead of ``read``: why this entry is not used
    no_folder: bool = False  # the student has no assignment folder at all


# Its name shows in a student's notes (``type(exc).__name__``), so it stays as it was.
class _TooBig(Exception):
    pass


def read_capped(handle, max_bytes: int) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = handle.read(min(1 << 16, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise _TooBig
    return b"".join(chunks)


def member_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[int], bytes]:
    def read(max_bytes: int) -> bytes:
        with archive.open(info) as handle:
            return read_capped(handle, max_bytes)

    return read


def skipped_member(info: zipfile.ZipInfo, shown: str, notes: list[str]) -> bool:
    """Whether an archive member is not a file to consider (noting why, when a TA should know)."""
    problem = _unsafe_name(info.filename)
    if problem:
        notes.append(f"{shown!r}: ignored ({problem})")
        return True
    mode = (info.external_attr >> 16) & 0xFFFF
    if info.is_dir():
        return True
    if stat.S_ISLNK(mode):
        notes.append(f"{shown}: symbolic link ignored")
        return True
    # Archivers that record no Unix file type (Windows tools, zipfile.writestr) leave S_IFMT 0: a plain file.
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        notes.append(f"{shown}: not a regular file, ignored")
        return True
    if info.flag_bits & 0x1:
        notes.append(f"{shown}: encrypted, ignored")
        return True
    parts = PurePosixPath(info.filename.replace("\\", "/")).parts
    return any(p.startswith("__MACOSX") or p == ".DS_Store" for p in parts)


def _unsafe_name(name: str) -> str | None:
    """Why an archive member name is unsafe, or ``None``."""
    if "\0" in name:
        return "NUL in name"
    posix = name.replace("\\", "/")
    if posix.startswith("/") or re.match(r"^[A-Za-z]:", posix):
        return "absolute name"
    if ".." in PurePosixPath(posix).parts:
        return "'..' in name"
    return None


@dataclass
class Budget:
    """What the source has used of the caps so far: bytes read (decompressed) and archive members."""

    bytes_read: int = 0
    members: int = 0


