"""What the hub exchange's tests share: archives built member by member, and a folder tree to compare."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def tar_gz(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """A gzip-compressed tar of ``members`` in order (data None for links, folders and devices)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def member(name: str, data: bytes | None = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple[
        tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info, (data if kind == tarfile.REGTYPE else None)


def tree(top: Path) -> dict[str, bytes | str]:
    """Every path under ``top``: a file's bytes, a link's target, ``"dir"`` for a folder."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(top))
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = path.read_bytes()
    return found

