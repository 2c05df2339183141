"""Build matplotlib's font list inside the sandbox and print it for the grader. Runs no student code.

Started by a launcher as ``font_list.py`` (no arguments) in a run of its own, before any
run of a submission. ``MPLCONFIGDIR`` names an empty directory, so importing
``matplotlib.font_manager`` scans the fonts visible inside the sandbox and writes the
list there, exactly as the first import in any other run would. One JSON line goes to
stdout: ``{"name": "<file name in MPLCONFIGDIR>", "content": "<the file's text>"}``.
The grader checks it (``untrusted.font_list``) and starts every later run with a copy,
so that their imports read it instead of scanning again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    import matplotlib
    from matplotlib import font_manager

    path = Path(matplotlib.get_cachedir(), f"fontlist-v{font_manager.FontManager.__version__}.json")
    sys.stdout.write(json.dumps({"name": path.name, "content": path.read_text(encoding="utf-8")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
