"""The student bundle: everything a student installs and opens, in one folder or zip.

    ch11-grade student-bundle --out ch11-student.zip     (or --out DIR)

Contents (:data:`LAYOUT`): the released notebooks, the harness wheel (built from
``harness/`` when ``dist/`` has no copy matching ``harness/manifest.json``, and checked
against the manifest's sha256 either way), ``manifest.json``, ``requirements.txt`` (numpy,
matplotlib and what runs a notebook, ``ipykernel`` and ``nbclient``, each pinned with
everything it needs to the versions of ``requirements/lock.txt``), ``harness.txt`` (the
wheel, hash-pinned, for ``pip --require-hashes``), ``requirements-jupyterlab.txt``
(optional: JupyterLab and nbgrader, to edit and to ``nbgrader validate``) and a short
README for students.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ..paths import DEV_LOCK, HARNESS_DIR, RELEASE_DIR, REPO_ROOT

__all__ = ["LAYOUT", "TOP", "BundleError", "BundleResult", "build_bundle", "pinned_closure"]

#: What a notebook needs to run: the released notebooks import numpy, matplotlib, the harness and
#: the standard library; ipykernel runs them, nbclient runs them without a browser.
RUNTIME = ("numpy", "matplotlib", "ipykernel", "nbclient")
#: To open and edit the notebooks, and check them before submitting (``nbgrader validate``).
INTERFACE = ("jupyterlab", "nbgrader")
#: Top folder of the zip, and the bundle's files.
TOP = "ch11-student"
LAYOUT = ("README.md", "manifest.json", "requirements.txt", "harness.txt", "requirements-jupyterlab.txt",
          "notebooks/")


class BundleError(RuntimeError):
    """The bundle cannot be written; the message says why (wheel build, manifest, lock, destination)."""


@dataclass(frozen=True)
class BundleResult:
    """Where the bundle went (``path``: the folder or the zip), its files (relative POSIX paths), the wheel."""

    path: Path
    files: tuple[str, ...]
    wheel: str
    wheel_sha256: str


def _lock_pins(lock: Path) -> dict[str, str]:
    """Canonical name -> version of every ``name==version`` line of the lock."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s;#\\]+)", line.strip())
        if match:
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def pinned_closure(roots: tuple[str, ...], lock: Path = DEV_LOCK) -> list[str]:
    """``name==version`` for ``roots`` and every package they need here, versions from ``lock``, sorted.

    Dependencies are read from the installed distributions' metadata (extras left out, markers
    evaluated for this interpreter: a platform-only dependency elsewhere is left to pip).

    Raises:
        BundleError: a needed package is not installed here or has no pin in ``lock``.
    """
    pins = _lock_pins(lock)
    seen: set[str] = set()
    todo = [canonicalize_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError as exc:
            raise BundleError(f"{name} is needed by the student bundle but not installed here") from exc
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    missing = sorted(n for n in seen if n not in pins)
    if missing:
        raise BundleError(f"{lock}: no pin for {', '.join(missing)} (needed by the student bundle)")
    return [f"{name}=={pins[name]}" for name in sorted(seen)]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wheel(manifest: dict[str, str], dist: Path) -> Path:
    """The pinned wheel: ``dist/<wheel_filename>`` when its sha256 matches, else built into ``dist``."""
    wheel = dist / manifest["wheel_filename"]
    if not (wheel.is_file() and _sha256(wheel) == manifest["wheel_sha256"]):
        result = subprocess.run([sys.executable, str(HARNESS_DIR / "build_wheel.py"), "--out", str(dist), "--check"],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BundleError(f"harness/build_wheel.py --check failed (exit {result.returncode}):\n"
                              f"{result.stderr.strip()[-2000:]}")
    if _sha256(wheel) != manifest["wheel_sha256"]:
        raise BundleError(f"{wheel}: sha256 differs from harness/manifest.json's wheel_sha256")
    return wheel


def _readme(wheel: str, notebooks: list[str]) -> str:
    listed = "\n".join(f"- `notebooks/{name}`" for name in notebooks)
    return f"""# Chapter 11 exercises: the student bundle

Everything you need for the exercises of *The Gradient Has a Memory*. With Python 3.11:

```
python3.11 -m venv .venv && . .venv/bin/activate        # Windows: .venv\\Scripts\\activate
python -m pip install -r requirements.txt              # numpy, matplotlib, a Jupyter kernel (pinned)
python -m pip install --no-deps --require-hashes -r harness.txt   # the chapter's harness, checked by hash
python -m pip install -r requirements-jupyterlab.txt   # JupyterLab and nbgrader, to edit and validate
jupyter lab notebooks/
```

Run these from this folder. `harness.txt` names `{wheel}` with the sha256 that
`manifest.json` pins: pip refuses the wheel if one byte differs.

The notebooks:

{listed}

Each states its exercise, then one task per cell: a stub whose docstring is the contract your
function must meet, then a locked cell of visible checks. Until you answer a task, its checks
fail with `NotImplementedError`; that is expected. Before submitting, run
`nbgrader validate notebooks/ex3_block_length.ipynb` (any notebook): it says "Success! Your
notebook passes all the tests." or lists what failed. Grading runs the visible checks again
and then checks every rule of the docstring on many generated inputs.
"""


def _files(dest: Path, manifest_path: Path, wheel: Path, lock: Path) -> list[str]:
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    notebooks = sorted(p.name for p in RELEASE_DIR.glob("*.ipynb"))
    if not notebooks:
        raise BundleError(f"{RELEASE_DIR}: no released notebooks (run `make release`)")
    (dest / "notebooks").mkdir(parents=True)
    for name in notebooks:
        shutil.copyfile(RELEASE_DIR / name, dest / "notebooks" / name)
    shutil.copyfile(wheel, dest / wheel.name)
    shutil.copyfile(manifest_path, dest / "manifest.json")
    head = "# Generated by `ch11-grade student-bundle` from requirements/lock.txt.\n"
    (dest / "requirements.txt").write_text(head + "\n".join(pinned_closure(RUNTIME, lock)) + "\n", encoding="utf-8")
    pins = _lock_pins(lock)
    interface = [f"{name}=={pins[canonicalize_name(name)]}" for name in INTERFACE]
    (dest / "requirements-jupyterlab.txt").write_text(head + "\n".join(interface) + "\n", encoding="utf-8")
    (dest / "harness.txt").write_text(f"./{wheel.name} --hash=sha256:{manifest['wheel_sha256']}\n", encoding="utf-8")
    (dest / "README.md").write_text(_readme(wheel.name, notebooks), encoding="utf-8")
    return sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())


def build_bundle(out: Path, *, dist: Path | None = None, lock: Path = DEV_LOCK) -> BundleResult:
    """Write the student bundle to ``out``: a zip (``out`` ends in ``.zip``; one top folder
    :data:`TOP`) or a new folder. ``dist`` holds the wheel (default ``<repository>/dist``, as
    ``make wheel``).

    Raises:
        BundleError: ``out`` exists (a zip or a non-empty folder: nothing is overwritten), the
            wheel cannot be built or differs from the manifest, or the lock lacks a pin.
    """
    out = Path(out)
    if out.exists() and (out.is_file() or any(out.iterdir())):
        raise BundleError(f"{out} exists; choose a new path (nothing is overwritten)")
    manifest_path = HARNESS_DIR / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    wheel = _wheel(manifest, dist or REPO_ROOT / "dist")
    with tempfile.TemporaryDirectory(prefix="ch11-bundle-") as scratch:
        staged = Path(scratch) / TOP
        files = _files(staged, manifest_path, wheel, lock)
        if out.suffix == ".zip":
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.tmp")
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for name in files:
                    archive.write(staged / name, f"{TOP}/{name}")
            tmp.replace(out)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.exists():
                out.rmdir()
            shutil.copytree(staged, out)
    return BundleResult(out, tuple(files), wheel.name, manifest["wheel_sha256"])
