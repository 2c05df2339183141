"""What a student reads first, and how big a page is: before/after numbers for the feedback pages.

    .venv/bin/python bench/feedback_pages.py first-lines [--ref main]   # each catalogue wrong answer's first line
    .venv/bin/python bench/feedback_pages.py sizes DIR [DIR ...]        # page bytes of a graded course's feedback

``first-lines`` reads the committed verdict outputs of the catalogue (``tests/behaviour/catalogue/*.json``,
from the working tree, or from a git ``--ref``) and prints, for every wrong answer, the first line its
verdict text gives in the first cell that loses points: today the page's highlighted line (full marks or
the first thing to fix); at a ref before it, the verdict's first line and its first ``[FAIL]`` line, which
is where the student had to look.

``sizes`` prints each page's bytes under ``DIR/<student>/<assignment>/*.html`` (``build/demo-course/
feedback`` after ``make demo``), split into the embedded images (the student's figures), the page's CSS
and the rest.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = "tests/behaviour/catalogue"


def _fixture(exercise: str, ref: str | None) -> dict:
    path = f"{FIXTURES}/{exercise}.json"
    if ref is None:
        return json.loads((REPO / path).read_text())
    shown = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{path}"], capture_output=True, text=True,
                           check=True)
    return json.loads(shown.stdout)


def _text(outputs: list[dict]) -> str:
    return "".join(str(o.get("text") or o.get("evalue") or "") for o in outputs)


def _loses(outputs: list[dict]) -> bool:
    kinds = {o.get("output_type") for o in outputs}
    return "error" in kinds or "execute_result" in kinds


def first_lines(ref: str | None) -> list[str]:
    rows = []
    for path in sorted((REPO / FIXTURES).glob("*.json")):
        exercise = path.stem
        for name, cells in sorted(_fixture(exercise, ref).items()):
            if name in ("reference", "stubs"):
                continue
            losing = [(grade_id, _text(outputs)) for grade_id, outputs in cells.items() if _loses(outputs)]
            if not losing:
                rows.append(f"{exercise}/{name}: (no cell loses points)")
                continue
            grade_id, text = losing[0]
            lines = text.splitlines()
            first = lines[0] if lines else ""
            fail = next((line for line in lines[1:] if line.startswith("[FAIL] ")), "")
            shown = first if first.startswith(("First thing to fix:", "[NOT ANSWERED]", "[FAIL] not answered")) \
                else f"{first} | {fail}"
            rows.append(f"{exercise}/{name} [{grade_id}]: {shown}")
    return rows


def sizes(directory: Path) -> list[str]:
    rows = []
    for page in sorted(directory.glob("*/*/*.html")):
        text = page.read_text(encoding="utf-8")
        images = sum(len(m) for m in re.findall(r"data:image/[^\"']+", text))
        css = sum(len(m) for m in re.findall(r"<style.*?</style>", text, re.S))
        rest = len(text.encode()) - images - css
        rows.append(f"{page.relative_to(directory)}: {len(text.encode())} bytes (images {images}, css {css}, "
                    f"rest {rest})")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    lines = sub.add_parser("first-lines")
    lines.add_argument("--ref", default=None, help="a git ref to read the fixtures at (default: the working tree)")
    size = sub.add_parser("sizes")
    size.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.what == "first-lines":
        print("\n".join(first_lines(args.ref)))
    else:
        for directory in args.dirs:
            print(f"# {directory}")
            print("\n".join(sizes(directory)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
