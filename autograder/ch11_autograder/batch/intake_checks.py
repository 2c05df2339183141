"""What intake checks of one student's work: an nbgrader-safe student id, files that are nbformat-4
notebooks, and the digest of the inputs staged (the rules: ``batch/intake.py``)."""

from __future__ import annotations

import hashlib
import json
import re

__all__ = [
    "MAX_ID_CHARS",
    "check_notebook",
    "inputs_sha256",
    "sanitize_student_id",
]

MAX_ID_CHARS = 64
_ID_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def sanitize_student_id(raw: str) -> str:
    """An nbgrader-safe id for ``raw`` (see the module docstring); never empty."""
    cleaned = _ID_BAD.sub("_", raw.strip())
    cleaned = cleaned.lstrip(".-_")[:MAX_ID_CHARS].rstrip(".-_")
    return cleaned or "student"


def check_notebook(data: bytes, name: str) -> str | None:
    """``None`` if ``data`` looks like an nbformat-4 notebook, else the cause, naming ``name``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{name}: not UTF-8 text (byte {exc.start})"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{name}: malformed JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return f"{name}: malformed JSON (nested too deeply)"
    if not isinstance(nb, dict):
        return f"{name}: not a notebook (the JSON is a {type(nb).__name__}, not an object)"
    major = nb.get("nbformat")
    if major != 4:
        shown = "missing" if major is None else repr(major)[:20]
        return f"{name}: wrong nbformat ({shown}); nbgrader grades nbformat 4 notebooks (save it with Jupyter 4+)"
    if not isinstance(nb.get("cells"), list):
        return f"{name}: not a notebook (no list of cells)"
    return None


def inputs_sha256(files: dict[str, bytes], timestamp: str | None) -> str:
    """sha256 over the sorted (name, sha256 of content) pairs and the timestamp.

    Stable across runs and sources: the same notebooks give the same digest
    whether they came from a folder or a zip.
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).hexdigest().encode() + b"\n")
    digest.update(b"timestamp\0" + (timestamp or "").encode())
    return digest.hexdigest()


