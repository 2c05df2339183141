"""The checks a font list passes before every sandboxed run starts with a copy of it.

The list checked here is one matplotlib writes on this host (its layout is the same as inside
the sandbox); building it inside, and giving each run a private copy, is tested with the real
sandbox in ``backends/test_bwrap.py``.
"""

from __future__ import annotations

import json

import pytest
from ch11_autograder.untrusted.font_list import FONT_LIST_MAX_BYTES, check_font_list


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
