"""A per-notebook verdict cache: a byte-identical notebook under the same release is graded once.

Grading is deterministic (the same submission graded twice gives byte-identical outputs,
scores and feedback), so what the autograde steps wrote into a notebook can be reused for
the same input. The practice service grades a submission long before the deadline; the
official ``nbgrader autograde`` (or ``ch11-grade batch``) then finds the verdict here and
spends seconds on it, and a resubmission that changes one notebook regrades only that one.

Where it plugs in (``preprocessors.VerdictCacheLookup`` and ``VerdictCacheStore``)::

    VerdictCacheLookup   first autograde step: computes the key; on a hit, the
                         sandboxed execution and the verdict worker are skipped
    SandboxedExecute ... TrustedVerdicts   (unchanged; they do nothing on a hit)
    VerdictCacheStore    before SaveAutoGrades: on a hit, writes the cached
                         outputs into the notebook; on a miss, stores them

so nbgrader's ``SaveAutoGrades``, the gradebook and ``generate_feedback`` read exactly
the notebook a fresh run leaves.

**The key** (:func:`entry_key`) is a sha256 over named parts, each itself a digest:

* ``notebook``: sha256 of ``nbformat.writes(nb)`` (UTF-8) of the notebook as the first
  autograde step receives it, that is the submitted file after nbgrader's sanitize steps
  (outputs cleared, cell ids deduplicated, kernelspec overwritten, locked cells restored
  from the gradebook) and before anything executes;
* ``support``: the submission's other files the sandbox is given (data files a notebook reads), but not
  nbgrader's ``timestamp.txt`` and ``submission_secret.txt`` (new with every submission);
* ``release``: :func:`ch11_autograder.grading_digest.release_digest` of the course and
  assignment (course config file, ``source/<assignment>/``, the package's grading code), the
  digest Dask workers check;
* ``suites``: the bytes of every module in ``TrustedVerdicts.suite_modules`` (suites outside
  the package are not in the release digest);
* ``settings``: the effective values of every configurable trait of the steps that shape the
  outputs (``SandboxedExecute``, ``TrustedVerdicts``, ``IgnorePattern``, ``LimitOutput``,
  ``ClearMetadataPreprocessor``) and the autograde step list, so a timeout or a cap set on
  the command line counts as well as one in the config file;
* ``sandbox``: the resolved backend (a submission may behave differently under another one);
* ``runtime``: the Python version and the versions of the libraries that execute and grade;
* ``who``: assignment, student and notebook name (a verdict never crosses students, even for
  identical bytes).

**An entry** is ``<directory>/<key>.json``: the key, the identity of every cell (type, id,
sha256 of the source) and, per code cell, the outputs, execution count and verdict record
the autograde steps left, plus a sha256 of that payload. It is written only by the trusted
process (``nbgrader autograde``), with mode 0600 in a 0700 directory, to a temporary file
renamed into place (a reader sees a whole entry or none). It is stored only when the run was
clean: no sandbox execution problem (timeout, budget spent, crash), no worker incident and no
internal suite error (those depend on load and are graded afresh next time).

**Reading** validates everything (:func:`read_entry`): size cap, a regular file (no
symlink), JSON, version, key, payload digest, the cells matching the notebook, outputs that
nbformat accepts. Anything else is a miss with a warning in the log, and the fresh verdict
replaces the entry.

**Bounds**: after each store, entries are pruned least recently used first (a hit refreshes
an entry's mtime) until they total at most ``VerdictCache.max_bytes``; temporary files older
than an hour (a writer killed mid-write) are removed too.

**Configuration**: ``c.VerdictCache.directory`` in ``nbgrader_config.py``, else
``$CH11_VERDICT_CACHE``; empty (the default) turns the cache off. The path must be absolute
(a relative one is refused with an error in the log, since ``ch11-grade batch`` runs
nbgrader in a temporary course directory).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from traitlets import Integer, Unicode
from traitlets.config import LoggingConfigurable

from ..grading_digest import VERDICT_CACHE_ENV
from .verdicts import VERDICT_METADATA_KEY

__all__ = [
    "CACHE_ENV",
    "ENTRY_VERSION",
    "LOG_HIT",
    "LOG_MISS",
    "CacheEntryError",
    "CacheState",
    "VerdictCache",
    "apply_entry",
    "cache_state",
    "cell_identity",
    "entry_key",
    "is_hit",
    "lookups_in_log",
    "mark_unrepeatable",
    "notebook_digest",
    "plain",
    "prune",
    "read_entry",
    "runtime_digest",
    "snapshot",
    "suites_digest",
    "support_digest",
    "write_entry",
]

log = logging.getLogger(__name__)

#: Environment variable naming the cache directory when ``c.VerdictCache.directory`` is empty.
CACHE_ENV = VERDICT_CACHE_ENV
#: Format of an entry; an entry of another version is a miss.
ENTRY_VERSION = 1
#: Where the lookup step leaves its :class:`CacheState` for the steps after it.
_RESOURCE_KEY = "ch11_verdict_cache"
#: Libraries whose version can change what a notebook's execution or grading produces.
_RUNTIME_DISTRIBUTIONS = (
    "hypothesis", "ipykernel", "ipython", "matplotlib", "nbclient", "nbconvert", "nbformat", "nbgrader",
    "nh3", "numpy", "trainable-harness",
)
#: How the lookup step reports each notebook in nbgrader's log (one line per notebook; see :func:`lookups_in_log`).
LOG_HIT = "verdict cache: hit for"
LOG_MISS = "verdict cache: miss for"
#: A temporary file older than this (seconds) belongs to a writer that died; pruning removes it.
_STALE_TEMP_SECONDS = 3600.0


def lookups_in_log(text: str) -> tuple[int, int]:
    """How many notebooks the lookup step found in the cache, and how many it did not: ``(hits, misses)``
    counted in the text of an ``nbgrader autograde`` log (``(0, 0)``: the cache was off)."""
    return text.count(LOG_HIT), text.count(LOG_MISS)


class CacheEntryError(ValueError):
    """A cache entry that cannot be used (corrupt, foreign, for another notebook)."""


class VerdictCache(LoggingConfigurable):
    """Where verdicts are cached and how much they may take (``c.VerdictCache.*``)."""

    directory = Unicode(
        "",
        help=f"Absolute path of the verdict cache directory. Empty: ${CACHE_ENV}; empty too: no cache.",
    ).tag(config=True)
    max_bytes = Integer(
        512 * 1024**2, help="Total size of cache entries kept, bytes; least recently used entries go first."
    ).tag(config=True)
    max_entry_bytes = Integer(64 * 1024**2, help="Largest entry read or written, bytes.").tag(config=True)

    def location(self) -> Path | None:
        """The cache directory, or ``None`` when the cache is off (or refused: a relative path)."""
        raw = self.directory.strip() or os.environ.get(CACHE_ENV, "").strip()
        if not raw:
            return None
        path = Path(raw)
        if not path.is_absolute():
            self.log.error("verdict cache %r is not an absolute path; grading without the cache", raw)
            return None
        return path


@dataclass
class CacheState:
    """What the lookup step found, for the steps after it (kept in nbgrader's ``resources``).

    Attributes:
        directory: the cache directory.
        key: the entry key (hex sha256).
        identity: :func:`cell_identity` of the notebook as the lookup step saw it.
        cells: the cached per-cell payload on a hit, ``None`` on a miss.
        unrepeatable: why this run's verdict must not be stored (``""``: it may).
    """

    directory: Path
    key: str
    identity: list[dict[str, Any]]
    cells: list[dict[str, Any]] | None = None
    unrepeatable: str = ""


def cache_state(resources: Mapping[str, Any]) -> CacheState | None:
    """The lookup step's state for this notebook, or ``None`` (cache off, or no key)."""
    state = resources.get(_RESOURCE_KEY)
    return state if isinstance(state, CacheState) else None


def set_cache_state(resources: dict[str, Any], state: CacheState) -> None:
    """Leave ``state`` for the later steps of this notebook."""
    resources[_RESOURCE_KEY] = state


def is_hit(resources: Mapping[str, Any]) -> bool:
    """Whether this notebook's outputs come from the cache (execution and verdicts are skipped)."""
    state = cache_state(resources)
    return state is not None and state.cells is not None


def mark_unrepeatable(resources: Mapping[str, Any], reason: str) -> None:
    """Keep this run's outputs out of the cache (they depend on load, or something failed)."""
    state = cache_state(resources)
    if state is not None and not state.unrepeatable:
        state.unrepeatable = reason


# --------------------------------------------------------------------------- the key


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plain(value: Any) -> Any:
    """``value`` as JSON-able data that prints the same in every process.

    Sets are sorted (their iteration order depends on the hash seed), classes and functions
    become their dotted names, anything else unknown its type name and ``repr``.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, type) or callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}"
    return f"{type(value).__name__}:{value!r}"


def entry_key(parts: Mapping[str, str]) -> str:
    """sha256 (hex) over the named key parts, in sorted order, with the entry format's version."""
    digest = hashlib.sha256(f"ch11-verdict-cache\0{ENTRY_VERSION}\n".encode())
    for name in sorted(parts):
        digest.update(name.encode() + b"\0" + parts[name].encode() + b"\n")
    return digest.hexdigest()


def notebook_digest(nb: NotebookNode) -> str:
    """sha256 of ``nbformat.writes(nb)`` in UTF-8: the notebook's canonical bytes."""
    return _sha256(nbformat.writes(nb).encode("utf-8"))


def support_digest(files: Mapping[str, bytes]) -> str:
    """sha256 over the sorted (relative name, sha256 of content) pairs of the support files."""
    return _sha256("".join(f"{name}\0{_sha256(files[name])}\n" for name in sorted(files)).encode())


def suites_digest(modules: Iterable[str]) -> str:
    """sha256 over each suite module's name and the bytes of its file (a dotted name or a .py path).

    A module that cannot be found or read counts by its name alone: grading will report it,
    and the key still differs from one where it exists.
    """
    lines = []
    for name in modules:
        origin: str | None = name if name.endswith(".py") else None
        if origin is None:
            with contextlib.suppress(ImportError, ValueError, AttributeError):
                spec = importlib.util.find_spec(name)
                origin = spec.origin if spec is not None else None
        content = "missing"
        if origin:
            with contextlib.suppress(OSError):
                content = _sha256(Path(origin).read_bytes())
        lines.append(f"{name}\0{content}\n")
    return _sha256("".join(lines).encode())


def runtime_digest() -> str:
    """sha256 over the Python version and the versions of the libraries that execute and grade."""
    versions = [f"python\0{sys.version}\n"]
    for dist in _RUNTIME_DISTRIBUTIONS:
        try:
            versions.append(f"{dist}\0{importlib.metadata.version(dist)}\n")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist}\0-\n")
    return _sha256("".join(versions).encode())


# --------------------------------------------------------------------------- entries


def cell_identity(nb: NotebookNode) -> list[dict[str, Any]]:
    """Each cell's type, id and sha256 of its source: what an entry must match to apply."""
    identity = []
    for cell in nb.cells:
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        identity.append({"cell_type": str(cell.get("cell_type")), "id": cell.get("id"),
                         "source_sha256": _sha256(str(source).encode("utf-8"))})
    return identity


def _payload_digest(cells: list[dict[str, Any]]) -> str:
    return _sha256(json.dumps(cells, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode())


def snapshot(nb: NotebookNode, identity: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The entry for ``nb`` as the autograde steps left it: per code cell its outputs,
    execution count and verdict record (``None`` where the cell has none)."""
    cells = []
    for ident, cell in zip(identity, nb.cells, strict=True):
        item = dict(ident)
        if cell.cell_type == "code":
            item["outputs"] = json.loads(json.dumps(cell.get("outputs", [])))
            item["execution_count"] = cell.get("execution_count")
            verdict = cell.get("metadata", {}).get(VERDICT_METADATA_KEY)
            item["verdict"] = json.loads(json.dumps(verdict)) if verdict is not None else None
        cells.append(item)
    return {"version": ENTRY_VERSION, "key": key, "cells": cells, "payload_sha256": _payload_digest(cells)}


def apply_entry(nb: NotebookNode, cells: list[dict[str, Any]]) -> None:
    """Write a validated entry's outputs, execution counts and verdict records into ``nb``."""
    for item, cell in zip(cells, nb.cells, strict=True):
        if cell.cell_type != "code":
            continue
        cell.outputs = [nbformat.from_dict(o) for o in item["outputs"]]
        cell.execution_count = item["execution_count"]
        if item["verdict"] is not None:
            cell.metadata[VERDICT_METADATA_KEY] = nbformat.from_dict(item["verdict"])


def _validate(entry: Any, key: str, nb: NotebookNode, identity: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not isinstance(entry, dict):
        raise CacheEntryError("not a JSON object")
    if entry.get("version") != ENTRY_VERSION:
        raise CacheEntryError(f"format version {entry.get('version')!r}, expected {ENTRY_VERSION}")
    if entry.get("key") != key:
        raise CacheEntryError("it names another key")
    cells = entry.get("cells")
    if not isinstance(cells, list) or len(cells) != len(identity):
        raise CacheEntryError("its cells do not match the notebook's")
    if entry.get("payload_sha256") != _payload_digest(cells):
        raise CacheEntryError("its payload does not match its digest")
    for index, (item, ident) in enumerate(zip(cells, identity, strict=True)):
        if not isinstance(item, dict) or any(item.get(k) != v for k, v in ident.items()):
            raise CacheEntryError(f"cell {index} does not match the notebook's")
        if ident["cell_type"] != "code":
            continue
        count = item.get("execution_count")
        if not isinstance(item.get("outputs"), list) or not (count is None or type(count) is int):
            raise CacheEntryError(f"cell {index}: malformed outputs or execution count")
        if item.get("verdict") is not None and not isinstance(item["verdict"], dict):
            raise CacheEntryError(f"cell {index}: malformed verdict record")
    trial = copy.deepcopy(nb)
    try:
        apply_entry(trial, cells)
        nbformat.validate(trial)
    except Exception as exc:  # any schema error or malformed output: the entry is unusable
        raise CacheEntryError(f"its outputs are not valid notebook outputs ({type(exc).__name__})") from exc
    return cells


def read_entry(
    directory: Path, key: str, nb: NotebookNode, identity: list[dict[str, Any]], *, max_bytes: int
) -> list[dict[str, Any]] | None:
    """The validated cells of entry ``key`` for ``nb``, or ``None`` when there is none.

    Raises:
        CacheEntryError: the entry exists but cannot be used (a symlink, not a regular file,
            too large, not JSON, another version or key, a payload not matching its digest,
            cells not matching ``nb``, invalid outputs).
    """
    path = directory / f"{key}.json"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP for a symlink, EACCES ...
        raise CacheEntryError(f"cannot be opened ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CacheEntryError("not a regular file")
        if info.st_size > max_bytes:
            raise CacheEntryError(f"larger than {max_bytes} bytes")
        raw = handle.read(max_bytes + 1)
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CacheEntryError("not valid JSON") from exc
    cells = _validate(entry, key, nb, identity)
    with contextlib.suppress(OSError):
        os.utime(path)  # least recently used goes first when pruning
    return cells


def write_entry(directory: Path, entry: dict[str, Any], *, max_bytes: int) -> bool:
    """Store ``entry`` atomically as ``<directory>/<key>.json``; ``False`` when it is too large.

    The directory is created with mode 0700; the entry is written to a temporary file in
    it, flushed to disk and renamed over any earlier entry of that key.
    """
    data = json.dumps(entry, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()
    if len(data) > max_bytes:
        return False
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, directory / f"{entry['key']}.json")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return True


def prune(directory: Path, max_bytes: int, *, now: float | None = None) -> list[str]:
    """Remove least recently used entries (oldest mtime first) until the rest total at most
    ``max_bytes``, and temporary files older than an hour. Returns the names removed."""
    now = time.time() if now is None else now
    entries: list[tuple[float, str, int]] = []
    removed = []
    with os.scandir(directory) as listing:
        for item in listing:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if item.name.startswith(".tmp-"):
                if now - info.st_mtime > _STALE_TEMP_SECONDS:
                    with contextlib.suppress(OSError):
                        os.unlink(item.path)
                        removed.append(item.name)
            elif item.name.endswith(".json"):
                entries.append((info.st_mtime, item.name, info.st_size))
    total = sum(size for _, _, size in entries)
    for _mtime, name, size in sorted(entries):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            os.unlink(directory / name)
            removed.append(name)
        total -= size
    return removed
