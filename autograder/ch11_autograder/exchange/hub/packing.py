"""Folders packed into the one archive format the hub exchange speaks both ways: a gzip-compressed tar.

:func:`pack` writes regular files and folders only (what :mod:`.archive` accepts on the other side),
with no owner names, uids or modes beyond the read bits: nothing of the packing machine travels.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

__all__ = ["pack", "packed"]

#: Bytes kept in memory before a packed archive spills to a temporary file.
SPOOL_BYTES = 4 * 1024 * 1024


def _clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return _anonymous(info) if info.isfile() or info.isdir() else None


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if info.isdir() else 0o644
    return info


def pack(entries: Iterable[tuple[str, Path | None]], out: IO[bytes]) -> None:
    """Write to ``out`` each ``(name, path)``: the folder or file ``path`` (recursively) as ``name``; with
    ``path`` None, an empty folder ``name``. Links and special files under a folder are left out."""
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, path in entries:
            if path is None:
                info = tarfile.TarInfo(name)
                info.type = tarfile.DIRTYPE
                tar.addfile(_anonymous(info))
                continue
            _add(tar, name, path)


def _add(tar: tarfile.TarFile, name: str, path: Path) -> None:
    """One entry under a packed folder (see :func:`pack`)."""
    if path.is_symlink():
        return
    tar.add(os.fspath(path), arcname=name, recursive=False, filter=_clean)
    if path.is_dir():
        for child in sorted(path.iterdir()):
            _add(tar, f"{name}/{child.name}", child)


def packed(entries: Iterable[tuple[str, Path | None]]) -> IO[bytes]:
    """:func:`pack` into a spooled temporary file, rewound to its start."""
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    pack(entries, out)
    out.seek(0)
    return out
