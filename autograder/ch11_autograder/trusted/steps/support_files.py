"""The files beside a submission's notebooks that its runs see: :func:`collect_support_files`."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

__all__ = ["collect_support_files"]

log = logging.getLogger(__name__)


def collect_support_files(
    directory: str | os.PathLike[str], *, max_total_bytes: int, logger: logging.Logger | None = None
) -> dict[str, bytes]:
    """Regular files under ``directory`` except notebooks, as relative POSIX path -> bytes.

    Symbolic links, hidden entries (``.name``), ``__pycache__`` and non-regular
    files are skipped, files are visited in sorted order, and collection stops
    (with a warning) before ``max_total_bytes`` would be exceeded. These are
    the data files a notebook may read; the submission's own directory holds
    only that student's files.
    """
    root = Path(directory)
    found: dict[str, bytes] = {}
    total = 0
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for filename in sorted(filenames):
            if filename.startswith(".") or filename.endswith(".ipynb"):
                continue
            path = Path(dirpath) / filename
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            if total + info.st_size > max_total_bytes:
                (logger or log).warning(
                    "support files exceed %d bytes; %s and later files are left out", max_total_bytes, path
                )
                return found
            found[path.relative_to(root).as_posix()] = path.read_bytes()
            total += info.st_size
    return found
