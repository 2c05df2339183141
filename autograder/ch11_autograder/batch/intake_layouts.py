"""Which files of a source belong to which student, by layout: a folder, a zip in nbgrader's layout,
or a Canvas "Download Submissions" zip (the layouts: ``batch/intake.py``)."""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from ..course_layout import SUBMITTED
from .intake_entries import Entry, member_reader, read_capped, skipped_member
from .intake_records import IntakeError, IntakeLimits

__all__ = [
    "folder_entries",
    "zip_entries",
]

_CANVAS = re.compile(
    r"^(?P<name>[^_/]+)_(?:(?P<late>late)_)?(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.IGNORECASE
)


def folder_entries(source: Path, assignment: str, notes: list[str]) -> list[Entry]:
    submitted = source / SUBMITTED
    root = submitted if submitted.is_dir() and not submitted.is_symlink() else source
    entries: list[Entry] = []
    for student_dir in sorted(root.iterdir()):
        rel = student_dir.relative_to(source).as_posix()
        info = student_dir.lstat()
        if stat.S_ISLNK(info.st_mode):
            notes.append(f"{rel}: symbolic link ignored")
            continue
        if not stat.S_ISDIR(info.st_mode):
            if not student_dir.name.startswith("."):
                notes.append(f"{rel}: not a student folder, ignored")
            continue
        if student_dir.name.startswith("."):
            continue
        adir = student_dir / assignment
        if adir.is_symlink() or not adir.is_dir():
            entries.append(Entry(student_dir.name, student_dir.name, "", rel, no_folder=True))
            continue
        listing = sorted(adir.iterdir())
        if not listing:
            entries.append(Entry(student_dir.name, student_dir.name, "", adir.relative_to(source).as_posix(),
                                  problem="empty folder"))
        for path in listing:
            shown = path.relative_to(source).as_posix()
            pinfo = path.lstat()
            if stat.S_ISLNK(pinfo.st_mode):
                entries.append(Entry(student_dir.name, student_dir.name, "", shown, problem="symbolic link"))
                continue
            if not stat.S_ISREG(pinfo.st_mode):
                entries.append(Entry(student_dir.name, student_dir.name, "", shown, problem="not a regular file"))
                continue

            def read(max_bytes: int, _path: Path = path) -> bytes:
                fd = os.open(_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as handle:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(f"{_path} is not a regular file")
                    return read_capped(handle, max_bytes)

            entries.append(Entry(student_dir.name, student_dir.name, path.name, shown, pinfo.st_size, read=read))
    return entries


def zip_entries(
    archive: zipfile.ZipFile, assignment: str, limits: IntakeLimits, notes: list[str]
) -> tuple[str, list[Entry]]:
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise IntakeError(f"the archive has {len(infos)} members, more than the cap of {limits.max_members}")
    files = []
    for info in infos:
        if skipped_member(info, info.filename, notes):
            continue
        files.append((PurePosixPath(info.filename.replace("\\", "/")).parts, info))

    def reader(info: zipfile.ZipInfo) -> Callable[[int], bytes]:
        return member_reader(archive, info)

    flat = [(parts, info) for parts, info in files if len(parts) == 1]
    canvas = [(info, match) for parts, info in flat if (match := _CANVAS.match(parts[0]))]
    if flat and len(flat) == len(files) and len(canvas) == len(flat):
        entries = []
        for info, match in canvas:
            raw = f"{match['name']}_{match['uid']}"
            entries.append(
                Entry(raw, f"Canvas {match['name']} (user {match['uid']})", match["file"], info.filename,
                       info.file_size, read=reader(info), late=bool(match["late"]))
            )
        return "canvas-zip", entries

    entries = []
    for parts, info in files:
        try:
            at = max(i for i, p in enumerate(parts[:-1]) if p == assignment)
        except ValueError:
            notes.append(f"{info.filename}: not inside <student>/{assignment}/, ignored")
            continue
        prefix = parts[: at - 1]
        if at == 0 or len(prefix) > 2 or (len(prefix) == 2 and prefix[1] != SUBMITTED):
            notes.append(f"{info.filename}: not in the layout [top/][submitted/]<student>/{assignment}/, ignored")
            continue
        student = parts[at - 1]
        rest = parts[at + 1 :]
        if len(rest) != 1:
            entries.append(Entry(student, student, "", info.filename, problem="in a subfolder"))
            continue
        entries.append(Entry(student, student, rest[0], info.filename, info.file_size, read=reader(info)))
    return "nbgrader-zip", entries


