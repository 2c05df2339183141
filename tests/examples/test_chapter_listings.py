"""examples/chapter_listings.py runs the chapter's two listings and reproduces their output."""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.paths import CHAPTER_LISTINGS, HARNESS_MANIFEST, REPO_ROOT

SCRIPT = CHAPTER_LISTINGS

# sha256 of the two listings as printed in the chapter text (sections 11.1 and 11.5),
# from the first code line through the last, each line ending in "\n".
LISTING_SHA256 = {
    "11.1": "b7e365c92dfb9f2249c635a450bc940fe72476c796e60b36dd9e65cd818d471b",
    "11.5": "2509cf4b224bfaa793ae922e9cf5f8b6f8a075fd4f05f07d6bf6ddc343f766e8",
}
# Set to the chapter's plain-text file to compare the listings with it directly.
CHAPTER_TEXT_ENV = "CH11_CHAPTER_TEXT"

# The chapter's printed lines after the harness line (numpy 2 reprs included).
CHAPTER_LINES = [
    "contributions into a=[np.float64(18.0), np.float64(24.0)]; accumulated=42.0",
    "correct: dx=144.0, dy=132.0",
    "overwrite: dx=90.0, dy=96.0",
    "depth=64; block=8; peak_states=16; extra_forwards=56; store_all=65",
]
EXPECTED_NUMBERS = {
    "contributions": [18.0, 24.0],
    "accumulated": 42.0,
    "correct_dx": 144.0,
    "correct_dy": 132.0,
    "overwrite_dx": 90.0,
    "overwrite_dy": 96.0,
    "depth": 64,
    "block": 8,
    "peak_states": 16,
    "extra_forwards": 56,
    "store_all": 65,
}
# (width, height) at matplotlib's default 100 dpi for the listings' figsize.
FIGURES = {"figure-11-1.png": (660, 360), "figure-11-2.png": (720, 380)}
NUMBER = r"(-?\d+(?:\.\d+)?)"
COUNT_KEYS = ("depth", "block", "peak_states", "extra_forwards", "store_all")


def parse_output(stdout: str) -> tuple[str, dict[str, object]]:
    """Split the script's output into the harness line's wheel prefix and the numbers.

    Raises:
        AssertionError: a line is missing or not in the chapter's format.
    """
    lines = stdout.splitlines()
    assert len(lines) == 5, stdout
    harness = re.fullmatch(r"harness=ch-11 wheel=([0-9a-f]{12})", lines[0])
    assert harness, lines[0]
    contributions = re.fullmatch(
        rf"contributions into a=\[np\.float64\({NUMBER}\), np\.float64\({NUMBER}\)\]; accumulated={NUMBER}", lines[1]
    )
    correct = re.fullmatch(rf"correct: dx={NUMBER}, dy={NUMBER}", lines[2])
    overwrite = re.fullmatch(rf"overwrite: dx={NUMBER}, dy={NUMBER}", lines[3])
    counts = re.fullmatch(
        rf"depth={NUMBER}; block={NUMBER}; peak_states={NUMBER}; extra_forwards={NUMBER}; store_all={NUMBER}",
        lines[4],
    )
    assert contributions and correct and overwrite and counts, stdout
    numbers = {
        "contributions": [float(contributions[1]), float(contributions[2])],
        "accumulated": float(contributions[3]),
        "correct_dx": float(correct[1]),
        "correct_dy": float(correct[2]),
        "overwrite_dx": float(overwrite[1]),
        "overwrite_dy": float(overwrite[2]),
        **dict(zip(COUNT_KEYS, map(int, counts.groups()), strict=True)),
    }
    return harness[1], numbers


def check_output(stdout: str, wheel_sha256: str) -> None:
    """Every printed number is the chapter's, and the harness line names the pinned wheel."""
    prefix, numbers = parse_output(stdout)
    assert prefix == wheel_sha256[:12]
    assert numbers == EXPECTED_NUMBERS


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONWARNINGS", "MPLBACKEND"}}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("chapter")
    result = _run("--out", str(out))
    return result, out


# ---------------------------------------------------------------- output


@pytest.mark.slow
def test_script_runs_quietly(run):
    result, _ = run
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.slow
def test_every_printed_number_is_the_chapters(run):
    result, _ = run
    pinned = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))["wheel_sha256"]
    check_output(result.stdout, pinned)
    assert result.stdout.splitlines()[0] == f"harness=ch-11 wheel={pinned[:12]}"
    assert result.stdout.splitlines()[1:] == CHAPTER_LINES


def test_the_output_check_rejects_wrong_numbers_and_the_wrong_wheel():
    pinned = json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8"))["wheel_sha256"]
    good = "\n".join([f"harness=ch-11 wheel={pinned[:12]}", *CHAPTER_LINES]) + "\n"
    check_output(good, pinned)
    variants = {
        # the chapter's own wheel, not the one pinned here
        "chapter wheel": good.replace(pinned[:12], "c9e645efbb2e"),
        # a sibling-order flip of the overwrite bug gives other wrong numbers
        "overwrite": good.replace("overwrite: dx=90.0, dy=96.0", "overwrite: dx=54.0, dy=72.0"),
        "accumulated": good.replace("accumulated=42.0", "accumulated=24.0"),
        "store-all": good.replace("store_all=65", "store_all=64"),
        "missing line": good.replace(CHAPTER_LINES[2] + "\n", ""),
    }
    if pinned.startswith("c9e645efbb2e"):
        del variants["chapter wheel"]
    for name, variant in variants.items():
        with pytest.raises(AssertionError):
            check_output(variant, pinned)
            pytest.fail(f"variant {name!r} passed the check")


@pytest.mark.slow
def test_manifest_option_names_the_wheel_printed(tmp_path):
    other = {**json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8")), "wheel_sha256": "abcdef012345" + "0" * 52}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    result = _run("--out", str(tmp_path / "figs"), "--manifest", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "harness=ch-11 wheel=abcdef012345"


@pytest.mark.slow
def test_a_manifest_of_another_harness_stops_the_script(tmp_path):
    path = tmp_path / "ch12.json"
    path.write_text(json.dumps({**json.loads(HARNESS_MANIFEST.read_text(encoding="utf-8")), "harness_ref": "ch-12"}))
    result = _run("--out", str(tmp_path / "figs"), "--manifest", str(path))
    assert result.returncode != 0
    assert "harness_ref is 'ch-12'" in result.stderr
    assert result.stdout == ""
    assert not any((tmp_path / "figs").glob("*.png"))


# ---------------------------------------------------------------- figures


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk; AssertionError if the file is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name}: not a PNG signature"
    assert data[12:16] == b"IHDR", f"{path.name}: first chunk is not IHDR"
    return struct.unpack(">II", data[16:24])


def color_fraction(pixels: np.ndarray, hex_color: str) -> float:
    target = np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)])
    close = np.all(np.abs(pixels[..., :3].astype(int) - target) <= 8, axis=-1)
    return float(close.mean())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figures_are_valid_pngs_of_plausible_size(run, name):
    _, out = run
    path = out / name
    assert png_size(path) == FIGURES[name]
    assert 5_000 < path.stat().st_size < 1_000_000
    with Image.open(path) as image:
        image.verify()  # CRCs and structure
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB"))
    assert pixels.shape == (FIGURES[name][1], FIGURES[name][0], 3)
    assert pixels.std() > 10, "figure is blank"


@pytest.mark.slow
def test_figures_carry_the_listings_colors(run):
    _, out = run
    with Image.open(out / "figure-11-1.png") as image:
        bars = np.asarray(image.convert("RGB"))
    with Image.open(out / "figure-11-2.png") as image:
        curves = np.asarray(image.convert("RGB"))
    # two bar series of comparable area: navy "add contributions", red "last writer wins"
    navy, red = color_fraction(bars, "#232D4B"), color_fraction(bars, "#9C2F2F")
    assert navy > 0.05 and red > 0.03
    assert navy > red  # 144 + 132 against 90 + 96
    # the cost curves: navy peak states, orange replays, red marker at k = 8
    assert color_fraction(curves, "#232D4B") > 0.001
    assert color_fraction(curves, "#E57200") > 0.001
    assert color_fraction(curves, "#9C2F2F") > 0.0001
    assert color_fraction(bars, "#E57200") == 0, "figure 11.1 has no orange series"


def test_png_check_rejects_a_non_png(tmp_path):
    fake = tmp_path / "figure.png"
    fake.write_bytes(b"GIF89a" + b"\0" * 40)
    with pytest.raises(AssertionError, match="not a PNG signature"):
        png_size(fake)


# ---------------------------------------------------------------- verbatim listings


def listing_blocks(source: str) -> dict[str, str]:
    """The text under each ``listing of section X (verbatim)`` marker, up to the next marker."""
    parts = re.split(r"^# -+ (.*)\n", source, flags=re.MULTILINE)
    blocks = {}
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        found = re.fullmatch(r"listing of section (11\.\d) \(verbatim\)", title)
        if found:
            blocks[found[1]] = body.strip("\n") + "\n"
    return blocks


def test_listings_are_the_chapters_text():
    blocks = listing_blocks(SCRIPT.read_text(encoding="utf-8"))
    assert sorted(blocks) == ["11.1", "11.5"]
    for section, block in blocks.items():
        digest = hashlib.sha256(block.encode("utf-8")).hexdigest()
        assert digest == LISTING_SHA256[section], f"listing {section} no longer matches the chapter text"


def test_the_verbatim_check_notices_an_edit():
    source = SCRIPT.read_text(encoding="utf-8").replace(
        "cotangents[parent_index] = contribution", "cotangents[parent_index] += contribution"
    )
    block = listing_blocks(source)["11.1"]
    assert hashlib.sha256(block.encode("utf-8")).hexdigest() != LISTING_SHA256["11.1"]


def _chapter_file() -> Path | None:
    # The course's shared folder sits beside the repository (as in CI); the variable overrides it.
    named = os.environ.get(CHAPTER_TEXT_ENV)
    beside = REPO_ROOT.parent / "shared" / "seed" / "chapter-11-the-gradient-has-a-memory.txt"
    candidate = Path(named) if named else beside
    return candidate if candidate.is_file() else None


@pytest.mark.skipif(_chapter_file() is None, reason=f"no chapter text beside the repo; ${CHAPTER_TEXT_ENV} unset")
def test_listings_appear_in_the_chapter_file():
    chapter = _chapter_file().read_text(encoding="utf-8")
    for block in listing_blocks(SCRIPT.read_text(encoding="utf-8")).values():
        assert block in chapter
