"""Unpacking an uploaded submission archive into a staging folder, refusing anything but plain files.

The format is a gzip-compressed tar, read as a stream (``tarfile`` mode ``r|gz``), chosen over zip
because a tar header states each member's kind (file, directory, symbolic or hard link, device,
fifo) and its size before a byte of it is read, so a refusal comes before any data is written, and
the upload can be unpacked as it arrives. A zip's links hide in the external attributes and its
central directory (read last) can disagree with the local headers.

:func:`unpack` makes the staging folder (which must not exist) and writes into it only regular
files and folders, at most :class:`Limits` ``files`` members of at most ``file_bytes`` each and
``total_bytes`` in all, counted on the bytes actually written, not only on the headers. It refuses
(:class:`BadArchive`) an unreadable archive, a member with an absolute path, a ``..`` component, a
NUL or an empty name, a link (symbolic or hard), a device or fifo, a name given twice, and a
``*.ipynb`` that is not a JSON object. Files are opened with ``O_EXCL | O_NOFOLLOW`` under folders
this call made, so nothing lands outside the staging folder; on any refusal the staging folder is
removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

__all__ = ["BadArchive", "Limits", "unpack"]

_CHUNK = 1 << 16


@dataclass(frozen=True)
class Limits:
    """The caps on one upload (the page names them)."""

    total_bytes: int = 50 * 1024 * 1024
    file_bytes: int = 20 * 1024 * 1024
    files: int = 200


class BadArchive(ValueError):
    """An upload refused; the message names the member and what is wrong with it."""


def _member_path(member: tarfile.TarInfo) -> PurePosixPath:
    name = member.name
    shown = repr(name)
    if not name or "\x00" in name:
        raise BadArchive(f"the member {shown} has an empty name or a NUL in it")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise BadArchive(f"the member {shown} has an absolute path")
    if ".." in path.parts:
        raise BadArchive(f"the member {shown} has a '..' in its path")
    parts = [p for p in path.parts if p != "."]
    if not parts:
        raise BadArchive(f"the member {shown} names the archive's top folder itself")
    return PurePosixPath(*parts)


def _kind_problem(member: tarfile.TarInfo) -> str | None:
    if member.issym():
        return f"is a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"is a hard link (to {member.linkname!r})"
    if member.ischr() or member.isblk():
        return "is a device"
    if member.isfifo():
        return "is a fifo"
    if not (member.isfile() or member.isdir()):
        return f"is of a kind that is not a file or folder (tar type {member.type!r})"
    return None


def _mkdirs(staging: Path, rel: PurePosixPath) -> Path:
    """The folder ``staging/rel``, made one component at a time, never through a link."""
    here = staging
    for part in rel.parts:
        here = here / part
        try:
            os.mkdir(here, 0o700)
        except FileExistsError:
            if here.is_symlink() or not here.is_dir():
                raise BadArchive(f"the folder {str(rel)!r} is also a file in the archive") from None
    return here


def _check_notebook(path: Path, shown: str) -> None:
    try:
        content = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as err:
        raise BadArchive(f"the notebook {shown} is not JSON ({err})") from None
    if not isinstance(content, dict):
        raise BadArchive(f"the notebook {shown} is JSON but not an object")


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, shown: str, room: int, limits: Limits) -> int:
    source = tar.extractfile(member)
    if source is None:
        raise BadArchive(f"the member {shown} cannot be read")
    written = 0
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise BadArchive(f"the member {shown} is given twice") from None
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            if written > limits.file_bytes:
                raise BadArchive(f"the member {shown} is larger than {limits.file_bytes} bytes")
            if written > room:
                raise BadArchive(f"the archive holds more than {limits.total_bytes} bytes")
            out.write(chunk)
    if written != member.size:
        raise BadArchive(f"the member {shown} is cut short ({written} of {member.size} bytes)")
    return written


def _unpack_into(stream: BinaryIO, staging: Path, limits: Limits) -> None:
    total = 0
    count = 0
    try:
        tar = tarfile.open(fileobj=stream, mode="r|gz")
    except (tarfile.TarError, OSError, EOFError) as err:
        raise BadArchive(f"the upload is not a gzip-compressed tar archive ({err})") from None
    with tar:
        try:
            for member in tar:
                count += 1
                if count > limits.files:
                    raise BadArchive(f"the archive holds more than {limits.files} members")
                rel = _member_path(member)
                shown = repr(member.name)
                problem = _kind_problem(member)
                if problem is not None:
                    raise BadArchive(f"the member {shown} {problem}")
                if member.isdir():
                    _mkdirs(staging, rel)
                    continue
                # Refused on the header before a byte is read; counted again on what is written.
                if member.size > limits.file_bytes:
                    raise BadArchive(f"the member {shown} is larger than {limits.file_bytes} bytes")
                if total + member.size > limits.total_bytes:
                    raise BadArchive(f"the archive holds more than {limits.total_bytes} bytes")
                target = _mkdirs(staging, rel.parent) / rel.name
                total += _write(tar, member, target, shown, limits.total_bytes - total, limits)
                if rel.suffix == ".ipynb":
                    _check_notebook(target, shown)
        except (tarfile.TarError, EOFError, OSError) as err:
            raise BadArchive(f"the archive is damaged or cut short ({err})") from None


def unpack(stream: BinaryIO, staging: Path, limits: Limits = Limits()) -> Path:
    """Unpack the gzip-compressed tar read from ``stream`` into ``staging``, made here (0700).

    Returns:
        ``staging``, holding the archive's files and folders.

    Raises:
        BadArchive: the archive broke a rule of the module's; ``staging`` no longer exists.
        FileExistsError: ``staging`` already exists (it is left alone).
    """
    os.mkdir(staging, 0o700)
    try:
        _unpack_into(stream, staging, limits)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging
