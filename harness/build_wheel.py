#!/usr/bin/env python3
"""Build the ``trainable_harness`` wheel reproducibly and pin it in ``manifest.json``.

Usage (from anywhere; paths default to this file's directory)::

    python harness/build_wheel.py --out dist          # build, print "<sha256>  <wheel path>"
    python harness/build_wheel.py --write-manifest    # build, rewrite harness/manifest.json
    python harness/build_wheel.py --check             # build, exit 1 if the sha differs from the manifest

Contract:
    * Needs only the standard library plus the pinned ``build`` and ``hatchling``
      of the running interpreter's environment; it never touches the network
      (``python -m build --wheel --no-isolation``, so missing or wrongly pinned
      build dependencies are an error, not a download).
    * ``SOURCE_DATE_EPOCH`` is forced to :data:`SOURCE_DATE_EPOCH` so that the
      caller's environment cannot change the zip timestamps; hatchling also
      normalizes permissions to 644/755 and sorts entries. The wheel's bytes
      therefore depend only on the source files' contents and exec bits, the
      hatchling version, and the zlib the interpreter links (deflate output
      is not specified across zlib implementations).
    * Standard output carries exactly one line, ``sha256sum`` style; progress
      and errors go to standard error.

Exit status: 0 on success, 1 when ``--check`` finds a mismatch, 2 when the
build itself fails or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HARNESS_DIR / "manifest.json"
#: Must equal ``trainable_harness.HARNESS_REF`` (a test checks); duplicated so
#: that this script does not need numpy to import the package.
HARNESS_REF = "ch-11"
#: hatchling's own default (2020-02-02T00:00:00Z), fixed here so that an
#: exported SOURCE_DATE_EPOCH in the caller's shell cannot move the hash.
SOURCE_DATE_EPOCH = "1580601600"
PINNED_HATCHLING = "1.33.0"


class BuildError(RuntimeError):
    """The wheel could not be built; the message says why."""


@dataclass(frozen=True)
class BuiltWheel:
    """One built wheel.

    Attributes:
        path: where the wheel was written.
        filename: its file name (``trainable_harness-<version>-py3-none-any.whl``).
        sha256: 64 lowercase hex digits of the file's bytes.
        version: the ``Version`` field of the wheel's METADATA.
        seconds: wall-clock build time, for reporting only.
    """

    path: Path
    filename: str
    sha256: str
    version: str
    seconds: float


def sha256_file(path: Path) -> str:
    """Lowercase hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def wheel_version(path: Path) -> str:
    """The ``Version`` header of the wheel's ``*.dist-info/METADATA``."""
    with zipfile.ZipFile(path) as archive:
        names = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise BuildError(f"{path.name}: expected one dist-info/METADATA, found {names}")
        headers = HeaderParser().parsestr(archive.read(names[0]).decode("utf-8"))
    version = headers.get("Version")
    if not version:
        raise BuildError(f"{path.name}: METADATA has no Version")
    return version


def build_wheel(out_dir: Path, source_dir: Path = HARNESS_DIR, python: str = sys.executable) -> BuiltWheel:
    """Build the wheel of ``source_dir`` into ``out_dir`` (created if needed).

    An existing wheel of the same name in ``out_dir`` is replaced. Nothing is
    written into ``source_dir``.

    Raises:
        BuildError: ``build`` failed (its output is in the message) or did not
            produce exactly one wheel.
    """
    source_dir = Path(source_dir).resolve()
    out_dir = Path(out_dir)
    env = dict(os.environ)
    env["SOURCE_DATE_EPOCH"] = SOURCE_DATE_EPOCH
    # Belt and braces: --no-isolation never installs, but a stray pip call must not reach an index.
    env["PIP_NO_INDEX"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="harness-wheel-") as staging:
        command = [python, "-m", "build", "--wheel", "--no-isolation", "--outdir", staging, str(source_dir)]
        started = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
            raise BuildError(
                f"`{' '.join(command)}` failed with exit status {result.returncode} "
                f"(hatchling=={PINNED_HATCHLING} and build must be installed in this environment):\n{tail}"
            )
        wheels = sorted(Path(staging).glob("*.whl"))
        if len(wheels) != 1:
            raise BuildError(f"expected one wheel from the build, found {[w.name for w in wheels]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / wheels[0].name
        # copyfile, not copy2: the wheel's on-disk metadata is irrelevant, only its bytes count.
        shutil.copyfile(wheels[0], target)
    return BuiltWheel(
        path=target,
        filename=target.name,
        sha256=sha256_file(target),
        version=wheel_version(target),
        seconds=seconds,
    )


def render_manifest(wheel: BuiltWheel) -> str:
    """The manifest text for ``wheel``: a JSON object, keys sorted, trailing newline."""
    data = {
        "harness_ref": HARNESS_REF,
        "version": wheel.version,
        "wheel_filename": wheel.filename,
        "wheel_sha256": wheel.sha256,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def manifest_mismatches(wheel: BuiltWheel, manifest_path: Path) -> list[str]:
    """Human-readable differences between ``wheel`` and the manifest; empty when they agree.

    An unreadable or non-object manifest is reported as a difference, not raised.
    """
    try:
        pinned = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"cannot read {manifest_path}: {error}"]
    if not isinstance(pinned, dict):
        return [f"{manifest_path} is not a JSON object"]
    expected = json.loads(render_manifest(wheel))
    problems = []
    for key in sorted(expected):
        if pinned.get(key) != expected[key]:
            problems.append(f"{key}: manifest pins {pinned.get(key)!r}, rebuilt wheel has {expected[key]!r}")
    return problems


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="directory for the wheel (default: a temporary one, discarded)")
    parser.add_argument("--source", type=Path, default=HARNESS_DIR, help="the harness project (default: %(default)s)")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST, help="manifest path (default: %(default)s)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write-manifest", action="store_true", help="rewrite the manifest for the built wheel")
    mode.add_argument("--check", action="store_true", help="exit 1 if the built wheel differs from the manifest")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="harness-wheel-out-") as scratch:
        out_dir = args.out if args.out is not None else Path(scratch)
        try:
            wheel = build_wheel(out_dir, source_dir=args.source)
        except BuildError as error:
            print(f"build_wheel: {error}", file=sys.stderr)
            return 2
        print(f"build_wheel: built {wheel.filename} ({wheel.version}) in {wheel.seconds:.2f} s", file=sys.stderr)
        # sha256sum format; a discarded temporary wheel is named by its file name only.
        print(f"{wheel.sha256}  {wheel.path if args.out is not None else wheel.filename}")
        if args.write_manifest:
            args.manifest.write_text(render_manifest(wheel), encoding="utf-8")
            print(f"build_wheel: wrote {args.manifest}", file=sys.stderr)
        elif args.check:
            problems = manifest_mismatches(wheel, args.manifest)
            if problems:
                print(f"build_wheel: the rebuilt wheel does not match {args.manifest}:", file=sys.stderr)
                for problem in problems:
                    print(f"  {problem}", file=sys.stderr)
                print(
                    "  If the harness source changed on purpose, run `python harness/build_wheel.py "
                    "--write-manifest` and commit the manifest. Otherwise compare the build environment: "
                    f"hatchling must be {PINNED_HATCHLING}; this interpreter links zlib {zlib.ZLIB_RUNTIME_VERSION}.",
                    file=sys.stderr,
                )
                return 1
            print(f"build_wheel: matches {args.manifest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
