"""Matplotlib's font list, built once inside the sandbox and given to every later run.

Without a font list in its ``MPLCONFIGDIR``, the first ``import matplotlib.pyplot`` of a
process scans every font directory, searches ``PATH`` for ``fc-list`` and writes the list
there (about 0.15 CPU-s). Every sandboxed run starts with an empty ``MPLCONFIGDIR``, so a
submission paid that about ten times (a notebook kernel and a verdict worker per
notebook). :func:`build_font_list` runs ``runtime/font_list.py`` (no student code) under a
launcher once; the launcher then starts each run with a private copy of the checked
result, which matplotlib reads instead of scanning.

The list must come from inside the sandbox, not from the host: it names the font files by
the paths matplotlib sees (fonts outside ``mpl-data`` by absolute path), and a font missing
or different inside would change the figures in feedback. Nothing a run does reaches
another run's copy, so no state flows between submissions through it: the only shared
thing is what this module built from a run of trusted code and checked.

A process that starts many graders (the batch, the service) builds the list once and saves
it (:func:`save_font_list`); each grader it starts finds the file named by
:data:`FONT_LIST_ENV` and loads it (:func:`load_font_list`, the same checks; waiting for
it while the build is under way) instead of running ``font_list.py`` again before its
first sandbox can start.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .capped_run import run_limited
from .launch import Launcher, Limits

__all__ = ["FONT_LIST_ENV", "FONT_LIST_MAX_BYTES", "FontList", "build_font_list", "check_font_list",
           "load_font_list", "save_font_list"]

log = logging.getLogger(__name__)

#: Names a font list file (:func:`save_font_list`) that a grader's launcher starts from instead of building one.
FONT_LIST_ENV = "CH11_FONT_LIST"
#: The largest font list accepted (this machine's: 36 KB for 71 fonts).
FONT_LIST_MAX_BYTES = 4 * 1024**2
#: The largest saved font list file read: the content is JSON text inside JSON (escaping at most doubles
#: it), plus the name.
_SAVED_MAX_BYTES = 2 * FONT_LIST_MAX_BYTES + 4096
#: Limits of the building run: one interpreter importing matplotlib.
BUILD_LIMITS = Limits(cpu_seconds=60, wall_seconds=120.0, max_output_bytes=2 * FONT_LIST_MAX_BYTES)
_NAME = re.compile(r"fontlist-v[0-9][0-9A-Za-z.]*\.json")
#: Where a font outside ``mpl-data`` may live inside the sandbox (the host's read-only ``/usr``).
_SYSTEM_FONT_ROOT = PurePosixPath("/usr")


@dataclass(frozen=True)
class FontList:
    """A checked font list.

    Attributes:
        name: its file name in ``MPLCONFIGDIR`` (``fontlist-v<version>.json``), which is
            where matplotlib of that version looks for it.
        content: the file's bytes as matplotlib wrote them inside the sandbox.
    """

    name: str
    content: bytes


def check_font_list(name: str, content: bytes) -> FontList:
    """``FontList(name, content)`` when it is a font list matplotlib wrote; else ValueError.

    Checked: the file name matplotlib reads; the size (:data:`FONT_LIST_MAX_BYTES`); a JSON
    ``FontManager`` with a version and lists of ``FontEntry`` objects whose font files are
    either relative to ``mpl-data`` (no ``..``) or absolute below ``/usr``.

    Raises:
        ValueError: saying which of these does not hold.
    """
    if not _NAME.fullmatch(name):
        raise ValueError(f"font list name {name!r} is not fontlist-v<version>.json")
    if len(content) > FONT_LIST_MAX_BYTES:
        raise ValueError(f"font list {name} has {len(content)} bytes, more than {FONT_LIST_MAX_BYTES}")
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise ValueError(f"font list {name} is not JSON: {exc}") from None
    is_manager = isinstance(data, dict) and data.get("__class__") == "FontManager"
    if not is_manager or not isinstance(data.get("_version"), str):
        raise ValueError(f"font list {name} is not a matplotlib FontManager with a version")
    for key in ("ttflist", "afmlist"):
        entries = data.get(key)
        if not isinstance(entries, list):
            raise ValueError(f"font list {name}: {key} is not a list")
        for index, entry in enumerate(entries):
            _check_entry(entry, f"font list {name}: {key}[{index}]")
    return FontList(name, content)


def _check_entry(entry: Any, where: str) -> None:
    if not isinstance(entry, dict) or entry.get("__class__") != "FontEntry" or not isinstance(entry.get("fname"), str):
        raise ValueError(f"{where} is not a FontEntry with a file name")
    path = PurePosixPath(entry["fname"])
    if ".." in path.parts or (path.is_absolute() and _SYSTEM_FONT_ROOT not in path.parents):
        raise ValueError(f"{where}: font file {entry['fname']!r} is neither in mpl-data nor below /usr")


def build_font_list(launcher: Launcher) -> FontList | None:
    """Run ``runtime/font_list.py`` under ``launcher`` and return its checked font list.

    ``None`` (with a warning in the log) when the run fails or its result does not pass
    :func:`check_font_list`: runs then start without a font list, as they always did, and
    grading is unchanged, only slower. Call it from a thread that outlives the run (see
    ``run_limited``).
    """
    with tempfile.TemporaryDirectory(prefix="ch11-fontlist-") as scratch:
        result = run_limited(launcher, "font_list.py", [], Path(scratch), BUILD_LIMITS)
    try:
        if result.returncode != 0 or result.stdout_truncated:
            raise ValueError(f"exit status {result.returncode}, killed: {result.killed_reason}, stderr: "
                             f"{result.stderr[-2000:].decode(errors='replace')}")
        return _parse(result.stdout, "the reply")
    except ValueError as exc:
        log.warning("no shared matplotlib font list (every run builds its own): %s", exc)
        return None


def save_font_list(fonts: FontList | None, path: Path, *, error: str = "") -> None:
    """Write ``fonts`` to ``path`` as one JSON file, or, when ``fonts`` is ``None``, why there is none.

    The file holds ``{"name": ..., "content": ...}`` (the content as text: matplotlib writes
    JSON), or ``{"error": ...}``; it appears whole (written under another name, then renamed),
    so a reader waiting for it (:func:`load_font_list`) never reads half of it.
    """
    record = {"error": error or "no font list"} if fonts is None else \
        {"name": fonts.name, "content": fonts.content.decode("utf-8")}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record), encoding="utf-8")
    os.replace(partial, path)


def load_font_list(path: str | os.PathLike[str], *, wait_seconds: float = 0.0) -> FontList:
    """The font list :func:`save_font_list` wrote at ``path``, checked again (:func:`check_font_list`).

    ``wait_seconds``: how long to wait for the file to appear (its writer may still be
    building the list; polled every 10 ms).

    Raises:
        ValueError: the file did not appear in time or cannot be read, is larger than a font
            list can be, says why its writer has none, is not ``{"name", "content"}``, or its
            list does not pass :func:`check_font_list`.
    """
    where = f"font list file {os.fspath(path)!r}"
    deadline = time.monotonic() + wait_seconds
    while not os.path.lexists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_SAVED_MAX_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{where} cannot be read: {exc.strerror or exc}") from None
    if len(raw) > _SAVED_MAX_BYTES:
        raise ValueError(f"{where} is larger than a font list can be")
    return _parse(raw, where)


def _parse(raw: bytes, what: str) -> FontList:
    """``{"name": ..., "content": ...}`` as JSON (``font_list.py``'s reply, a saved file), checked."""
    try:
        saved = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None
    if isinstance(saved, dict) and isinstance(saved.get("error"), str):
        raise ValueError(f"{what} holds no font list: {saved['error']}")
    if not isinstance(saved, dict) or not all(isinstance(saved.get(key), str) for key in ("name", "content")):
        raise ValueError(f"{what} is not {{name, content}}")
    return check_font_list(saved["name"], saved["content"].encode("utf-8"))
