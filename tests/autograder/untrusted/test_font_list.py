"""The checks a font list passes before every sandboxed run starts with a copy of it.

The list checked here is one matplotlib writes on this host (its layout is the same as inside
the sandbox); building it inside, and giving each run a private copy, is tested with the real
sandbox in ``backends/test_bwrap.py``. A list saved for other processes (the batch's graders)
loads back through the same checks.
"""

from __future__ import annotations

import json
import threading

import pytest
from ch11_autograder.untrusted.font_list import (
    FONT_LIST_MAX_BYTES,
    FontList,
    check_font_list,
    load_font_list,
    save_font_list,
)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bytes]:
    from matplotlib import font_manager

    path = tmp_path_factory.mktemp("mpl") / f"fontlist-v{font_manager.FontManager.__version__}.json"
    font_manager.json_dump(font_manager.FontManager(), path)
    return path.name, path.read_bytes()


def test_a_list_matplotlib_wrote_passes_unchanged(written):
    name, content = written
    fonts = check_font_list(name, content)
    assert (fonts.name, fonts.content) == (name, content)


def _with_entry(content: bytes, fname: str) -> bytes:
    data = json.loads(content)
    data["ttflist"][0]["fname"] = fname
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("name", "change", "words"),
    [
        ("fontlist.json", None, "is not fontlist-v<version>.json"),
        ("../fontlist-v3.11.0.json", None, "is not fontlist-v<version>.json"),
        (None, lambda c: c + b" " * FONT_LIST_MAX_BYTES, "more than"),
        (None, lambda c: c[: len(c) // 2], "is not JSON"),
        (None, lambda c: b'{"__class__": "FontManager"}', "with a version"),
        (None, lambda c: b"[]", "with a version"),
        (None, lambda c: json.dumps({**json.loads(c), "afmlist": {}}).encode(), "afmlist is not a list"),
        (None, lambda c: _with_entry(c, "/scratch/planted.ttf"), "neither in mpl-data nor below /usr"),
        (None, lambda c: _with_entry(c, "fonts/../../../../scratch/planted.ttf"), "neither in mpl-data"),
        (None, lambda c: _with_entry(c, "/usr/../scratch/planted.ttf"), "neither in mpl-data"),
    ],
)
def test_anything_else_is_refused_with_the_reason(written, name, change, words):
    good_name, content = written
    with pytest.raises(ValueError, match="font list") as error:
        check_font_list(name or good_name, change(content) if change else content)
    assert words in str(error.value)


# --------------------------------------------------------------------------- saved for other processes


def test_a_saved_list_loads_back_checked(written, tmp_path):
    name, content = written
    path = tmp_path / "font-list.json"
    save_font_list(check_font_list(name, content), path)
    fonts = load_font_list(path)
    assert (fonts.name, fonts.content) == (name, content)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["font-list.json"]  # nothing partial left


def test_a_saved_file_that_fails_a_check_is_refused_by_the_same_check(written, tmp_path):
    name, content = written
    path = tmp_path / "font-list.json"
    save_font_list(FontList(name, _with_entry(content, "/scratch/planted.ttf")), path)
    with pytest.raises(ValueError, match="neither in mpl-data nor below /usr"):
        load_font_list(path)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"", "is not JSON"),
        (b'{"name": "fontlist-v3.json"}', "is not {name, content}"),
        (b'{"error": "the sandboxed build failed"}', "holds no font list: the sandboxed build failed"),
        (b" " * (2 * FONT_LIST_MAX_BYTES + 4097), "larger than a font list can be"),
    ],
)
def test_a_file_that_is_not_a_saved_list_is_refused_with_the_reason(tmp_path, raw, words):
    path = tmp_path / "font-list.json"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match="font list file") as error:
        load_font_list(path)
    assert words in str(error.value)


def test_a_build_without_a_list_saves_why(tmp_path):
    path = tmp_path / "font-list.json"
    save_font_list(None, path, error="exit status 1")
    with pytest.raises(ValueError, match="holds no font list: exit status 1"):
        load_font_list(path)


def test_a_reader_waits_for_the_file_its_writer_is_still_building(written, tmp_path):
    name, content = written
    path = tmp_path / "font-list.json"
    writer = threading.Timer(0.3, save_font_list, args=(check_font_list(name, content), path))
    writer.start()
    try:
        assert load_font_list(path, wait_seconds=30).content == content
    finally:
        writer.join()
    with pytest.raises(ValueError, match="cannot be read"):
        load_font_list(tmp_path / "never-written.json", wait_seconds=0.05)
