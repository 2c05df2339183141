"""The harness wheel is reproducible, matches the committed manifest, and installs on its own.

The build tool is a stdlib script (harness/build_wheel.py), loaded here by path.
Builds take well under a second each, but they shell out to ``build`` and pip,
so those tests carry the ``slow`` marker (they still run in ``make test``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import trainable_harness
from support.paths import HARNESS_DIR, HARNESS_MANIFEST

SCRIPT = HARNESS_DIR / "build_wheel.py"


def _load_build_tool():
    spec = importlib.util.spec_from_file_location("harness_build_wheel", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve annotations through sys.modules, so register before executing.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build_tool = _load_build_tool()


def _run_tool(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False, env=env, timeout=300
    )


def _copy_harness_source(destination: Path) -> Path:
    """Copy the files a build reads (pyproject + package), without caches."""
    destination.mkdir(parents=True)
    shutil.copyfile(HARNESS_DIR / "pyproject.toml", destination / "pyproject.toml")
    shutil.copytree(HARNESS_DIR / "src", destination / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return destination


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return build_tool.build_wheel(tmp_path_factory.mktemp("baseline"))


# ---------------------------------------------------------------- fast checks


def test_build_tool_names_the_same_harness_ref_as_the_package():
    assert build_tool.HARNESS_REF == trainable_harness.HARNESS_REF


def test_committed_manifest_is_in_the_tools_canonical_form():
    text = HARNESS_MANIFEST.read_text(encoding="utf-8")
    data = json.loads(text)
    assert sorted(data) == ["harness_ref", "version", "wheel_filename", "wheel_sha256"]
    assert text.endswith("}\n") and not text.endswith("\n\n")
    fake = build_tool.BuiltWheel(
        path=Path(data["wheel_filename"]),
        filename=data["wheel_filename"],
        sha256=data["wheel_sha256"],
        version=data["version"],
        seconds=0.0,
    )
    assert build_tool.render_manifest(fake) == text
    assert trainable_harness.load_manifest(HARNESS_MANIFEST) == data


def test_manifest_version_is_the_projects_version():
    import tomllib

    project = tomllib.loads((HARNESS_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    data = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))
    assert data["version"] == project["version"]
    assert data["wheel_filename"] == f"trainable_harness-{project['version']}-py3-none-any.whl"


def test_readme_shows_the_committed_manifest():
    readme = (HARNESS_DIR / "README.md").read_text(encoding="utf-8")
    assert "```json\n" + HARNESS_MANIFEST.read_text(encoding="utf-8") + "```" in readme, (
        "harness/README.md quotes an old manifest; paste the current harness/manifest.json"
    )


def test_manifest_mismatches_names_each_differing_key(tmp_path):
    wheel = build_tool.BuiltWheel(
        path=tmp_path / "w.whl", filename="w.whl", sha256="a" * 64, version="11.0.0", seconds=0.0
    )
    good = tmp_path / "good.json"
    good.write_text(build_tool.render_manifest(wheel), encoding="utf-8")
    assert build_tool.manifest_mismatches(wheel, good) == []

    tampered = json.loads(good.read_text(encoding="utf-8"))
    tampered["wheel_sha256"] = "b" * 64
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tampered), encoding="utf-8")
    problems = build_tool.manifest_mismatches(wheel, bad)
    assert len(problems) == 1 and problems[0].startswith("wheel_sha256:")

    assert build_tool.manifest_mismatches(wheel, tmp_path / "absent.json")[0].startswith("cannot read")
    listed = tmp_path / "list.json"
    listed.write_text("[]", encoding="utf-8")
    assert build_tool.manifest_mismatches(wheel, listed) == [f"{listed} is not a JSON object"]


def test_write_manifest_and_check_are_exclusive():
    result = _run_tool("--write-manifest", "--check")
    assert result.returncode == 2
    assert "not allowed with" in result.stderr


# ---------------------------------------------------------------- builds


@pytest.mark.slow
def test_two_builds_give_identical_bytes(baseline, tmp_path):
    again = build_tool.build_wheel(tmp_path / "again")
    assert again.filename == baseline.filename
    assert again.path.read_bytes() == baseline.path.read_bytes()


@pytest.mark.slow
def test_rebuilt_wheel_matches_the_committed_manifest(baseline):
    pinned = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))
    assert baseline.sha256 == pinned["wheel_sha256"], (
        "harness source changed without a new manifest: run `python harness/build_wheel.py --write-manifest`"
    )
    assert baseline.filename == pinned["wheel_filename"]
    assert baseline.version == pinned["version"]


@pytest.mark.slow
def test_cli_check_passes_and_prints_the_sha(tmp_path):
    result = _run_tool("--check", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    pinned = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))
    assert result.stdout == f"{pinned['wheel_sha256']}  {tmp_path / pinned['wheel_filename']}\n"
    assert "matches" in result.stderr


@pytest.mark.slow
def test_cli_check_fails_clearly_against_a_stale_manifest(tmp_path):
    stale = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))
    stale["wheel_sha256"] = "0" * 64
    stale_path = tmp_path / "manifest.json"
    stale_path.write_text(json.dumps(stale), encoding="utf-8")
    result = _run_tool("--check", "--manifest", str(stale_path))
    assert result.returncode == 1
    assert "does not match" in result.stderr
    assert f"wheel_sha256: manifest pins {'0' * 64!r}" in result.stderr
    assert "--write-manifest" in result.stderr


@pytest.mark.slow
def test_write_manifest_writes_the_canonical_file(tmp_path):
    target = tmp_path / "manifest.json"
    result = _run_tool("--write-manifest", "--manifest", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_text(encoding="utf-8") == HARNESS_MANIFEST.read_text(encoding="utf-8")


@pytest.mark.slow
def test_bytes_do_not_depend_on_checkout_path_umask_mtimes_or_callers_epoch(baseline, tmp_path):
    source = _copy_harness_source(tmp_path / "a" / "different" / "checkout")
    for path in source.rglob("*"):
        if path.is_file():
            path.chmod(0o600)  # what a umask-077 checkout leaves behind
            os.utime(path, (2_000_000_000, 2_000_000_000))
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--source", str(source), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
        preexec_fn=lambda: os.umask(0o077),
    )
    assert result.returncode == 0, result.stderr
    rebuilt = tmp_path / "out" / baseline.filename
    assert rebuilt.read_bytes() == baseline.path.read_bytes()


@pytest.mark.slow
def test_a_one_byte_source_change_changes_the_sha(baseline, tmp_path):
    # The reproducibility check above could pass vacuously if the build ignored
    # the source; it does not: any content change moves the hash.
    source = _copy_harness_source(tmp_path / "edited")
    tape = source / "src" / "trainable_harness" / "tape.py"
    tape.write_text(tape.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    edited = build_tool.build_wheel(tmp_path / "out", source_dir=source)
    assert edited.filename == baseline.filename
    assert edited.sha256 != baseline.sha256
    assert build_tool.manifest_mismatches(edited, HARNESS_MANIFEST) != []


@pytest.mark.slow
def test_wheel_holds_only_the_package_and_its_metadata(baseline):
    with zipfile.ZipFile(baseline.path) as archive:
        names = archive.namelist()
        infos = archive.infolist()
    package = sorted(p.name for p in (HARNESS_DIR / "src" / "trainable_harness").glob("*.py"))
    assert sorted(n for n in names if n.startswith("trainable_harness/")) == [f"trainable_harness/{p}" for p in package]
    dist_info = f"trainable_harness-{baseline.version}.dist-info/"
    assert sorted(n for n in names if not n.startswith("trainable_harness/")) == [
        f"{dist_info}METADATA",
        f"{dist_info}RECORD",
        f"{dist_info}WHEEL",
    ]
    # fixed timestamps and normalized permissions are what make the bytes reproducible
    assert {info.date_time for info in infos} == {(2020, 2, 2, 0, 0, 0)}
    assert {(info.external_attr >> 16) & 0o777 for info in infos} == {0o644}


@pytest.mark.slow
def test_wheel_installs_and_imports_without_the_checkout(baseline, tmp_path):
    target = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-index", "--no-deps", "--no-compile", "--target", str(target), str(baseline.path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    # numpy, and nothing else, from the current environment: the package's one dependency.
    numpy_only = tmp_path / "numpy-only"
    numpy_only.mkdir()
    site_packages = Path(np.__file__).resolve().parents[1]
    for name in ("numpy", "numpy.libs"):
        if (site_packages / name).exists():
            (numpy_only / name).symlink_to(site_packages / name)
    probe = (
        "import sys, importlib.metadata as md\n"
        "from trainable_harness import TapeNode, reverse_accumulate, uniform_checkpoint_cost\n"
        "import trainable_harness\n"
        "cot = reverse_accumulate([TapeNode(3.0), TapeNode(9.0, ((0, 3.0), (0, 3.0)))])\n"
        "print(trainable_harness.__file__)\n"
        "print(md.version('trainable-harness'))\n"
        "print(cot[0], uniform_checkpoint_cost(64, 8).peak_state_units)\n"
        "print(any('site-packages' in p and 'numpy-only' not in p for p in sys.path))\n"
    )
    # -S: no site module, so neither the venv's site-packages nor the editable
    # install of the checkout is importable; -E would drop PYTHONPATH, so not that.
    env = {"PYTHONPATH": os.pathsep.join([str(target), str(numpy_only)]), "PATH": os.environ.get("PATH", "")}
    run = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=False, env=env, cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    module_file, version, numbers, leaked = run.stdout.splitlines()
    assert Path(module_file).is_relative_to(target)
    assert version == baseline.version
    assert numbers == "6.0 16"
    assert leaked == "False"
