"""The pinned manifest: which harness a reader's numbers come from.

The manifest cannot live inside the wheel it describes (the wheel's hash would
change with it), so it is a small JSON file published beside the wheel:
``harness/manifest.json`` in the course repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HARNESS_REF = "ch-11"
MANIFEST_ENV = "TRAINABLE_HARNESS_MANIFEST"
MANIFEST_NAME = "manifest.json"

__all__ = ["HARNESS_REF", "MANIFEST_ENV", "load_manifest"]


def load_manifest(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Read and check the manifest.

    Args:
        path: the manifest file. ``None`` means ``$TRAINABLE_HARNESS_MANIFEST``.

    Returns:
        a dict with at least ``harness_ref`` (``"ch-11"``), ``wheel_sha256``
        (64 lowercase hex digits) and ``wheel_filename``.

    Raises:
        FileNotFoundError: no path was given and the variable is unset, or the
            file does not exist.
        ValueError: the file is not a manifest of this harness.
    """
    if path is None:
        env = os.environ.get(MANIFEST_ENV)
        if not env:
            raise FileNotFoundError(f"no manifest path given and ${MANIFEST_ENV} is unset")
        path = env
    manifest_path = Path(path)
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{manifest_path}: a manifest is a JSON object")
    if data.get("harness_ref") != HARNESS_REF:
        found = data.get("harness_ref")
        raise ValueError(f"{manifest_path}: harness_ref is {found!r}, this harness is {HARNESS_REF!r}")
    digest = data.get("wheel_sha256", "")
    if not (isinstance(digest, str) and len(digest) == 64 and all(ch in "0123456789abcdef" for ch in digest)):
        raise ValueError(f"{manifest_path}: wheel_sha256 must be 64 lowercase hex digits, got {digest!r}")
    return data
