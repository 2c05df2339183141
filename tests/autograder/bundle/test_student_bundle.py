"""The student bundle, tried as a new student would: a fresh venv, the bundle and nothing else.

``ch11-grade student-bundle`` writes a zip; a fresh ``python3.11 -m venv`` installs
``requirements.txt`` (from PyPI, through pip's cache) and the harness wheel by its hash
(``harness.txt``, no index), then runs every released notebook with nbclient in that venv's
own kernel. Every cell that fails must fail with ``NotImplementedError``, the stubs' error,
and every notebook must have such a cell: a missing package, a harness that does not import,
or a check broken for another reason fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile

import pytest
from ch11_autograder.bundle import LAYOUT, TOP, BundleError, build_bundle, pinned_closure
from ch11_autograder.cli import main
from support.paths import HARNESS_DIR, RELEASE_DIR

#: Runs inside the bundle's venv: executes each notebook, prints one JSON line of errors per cell.
RUNNER = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
out = {}
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, allow_errors=True).execute()
    out[path] = [[o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                 for cell in nb.cells if cell.cell_type == "code"]
print(json.dumps(out))
"""


def _lock_version(name: str) -> str:
    from support.paths import REPO_ROOT

    for line in (REPO_ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if line.lower().startswith(name + "=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{name} not in the lock")


def test_bundle_zip_holds_notebooks_wheel_manifest_and_pins(tmp_path):
    out = tmp_path / "ch11-student.zip"
    assert main(["student-bundle", "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read(f"{TOP}/manifest.json"))
        requirements = archive.read(f"{TOP}/requirements.txt").decode().splitlines()
        harness = archive.read(f"{TOP}/harness.txt").decode()
        wheel = archive.read(f"{TOP}/{manifest['wheel_filename']}")
    notebooks = {f"{TOP}/notebooks/{p.name}" for p in RELEASE_DIR.glob("*.ipynb")}
    assert len(notebooks) == 5 and notebooks <= names
    assert {f"{TOP}/{name}" for name in LAYOUT if not name.endswith("/")} <= names
    assert manifest == json.loads((HARNESS_DIR / "manifest.json").read_text())
    import hashlib

    assert hashlib.sha256(wheel).hexdigest() == manifest["wheel_sha256"]
    assert f"--hash=sha256:{manifest['wheel_sha256']}" in harness
    assert f"numpy=={_lock_version('numpy')}" in requirements
    assert f"matplotlib=={_lock_version('matplotlib')}" in requirements
    assert any(line.startswith("ipykernel==") for line in requirements)
    # A second bundle never overwrites the first.
    with pytest.raises(BundleError, match="exists"):
        build_bundle(out)


def test_closure_names_what_the_lock_lacks(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("numpy==2.4.6\n")
    with pytest.raises(BundleError, match="no pin for"):
        pinned_closure(("matplotlib",), lock)
    assert pinned_closure(("numpy",), lock) == ["numpy==2.4.6"]


@pytest.mark.slow
def test_bundle_installs_in_a_fresh_venv_and_only_the_stubs_fail(tmp_path):
    started = time.perf_counter()
    bundle = build_bundle(tmp_path / "ch11-student.zip")
    with zipfile.ZipFile(bundle.path) as archive:
        archive.extractall(tmp_path)
    root = tmp_path / TOP
    venv = tmp_path / "venv"
    python3_11 = sys.executable if sys.version_info[:2] == (3, 11) else "python3.11"
    subprocess.run([python3_11, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # Nothing of this machine's Jupyter or user site may stand in for what the bundle installs.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path)),
           "PYTHONNOUSERSITE": "1", "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"), "JUPYTER_PLATFORM_DIRS": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [py, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "-r", "requirements.txt"], cwd=root, env=env, check=True)
    subprocess.run([*pip, "--no-index", "--no-deps", "--require-hashes", "-r", "harness.txt"], cwd=root, env=env,
                   check=True)
    installed = time.perf_counter()
    notebooks = sorted(str(p.relative_to(root)) for p in (root / "notebooks").glob("*.ipynb"))
    run = subprocess.run([py, "-c", RUNNER, *notebooks], cwd=root, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"bundle: install {installed - started:.1f} s, notebooks {time.perf_counter() - installed:.1f} s")
    assert set(errors) == set(notebooks)
    for path, cells in errors.items():
        names = [name for cell in cells for name in cell]
        assert names, f"{path}: no cell failed, but every notebook's stubs raise NotImplementedError"
        assert set(names) == {"NotImplementedError"}, f"{path}: cells failed with {names}"
