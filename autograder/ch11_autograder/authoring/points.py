"""The points table of assignment ch11, read from the source notebooks' nbgrader metadata.

    python -m ch11_autograder.authoring.points            # print the Markdown table
    python -m ch11_autograder.authoring.points --write    # refresh it in README.md
    python -m ch11_autograder.authoring.points --check    # exit 1 if README.md is stale

README.md carries the table between ``<!-- points:start -->`` and
``<!-- points:end -->``; nobody types those numbers.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..paths import README, SOURCE_DIR

START, END = "<!-- points:start -->", "<!-- points:end -->"


@dataclass(frozen=True)
class GradedCell:
    """One graded cell: ``kind`` is "auto" (hidden suite) or "manual" (rubric, by a grader)."""

    notebook: str
    grade_id: str
    kind: str
    points: float


def graded_cells(source_dir: Path = SOURCE_DIR) -> list[GradedCell]:
    """Every graded cell of every source notebook, in notebook then cell order."""
    cells = []
    for path in sorted(source_dir.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                kind = "manual" if meta.get("solution") or meta.get("task") else "auto"
                cells.append(GradedCell(path.stem, meta["grade_id"], kind, float(meta["points"])))
    return cells


def render(cells: list[GradedCell]) -> str:
    """Markdown: one row per graded cell, a subtotal per notebook, the assignment total."""
    lines = ["| notebook | cell | graded by | points |", "|---|---|---|---:|"]
    for notebook in dict.fromkeys(c.notebook for c in cells):
        mine = [c for c in cells if c.notebook == notebook]
        for cell in mine:
            graded_by = "hidden suite" if cell.kind == "auto" else "grader (rubric)"
            lines.append(f"| {notebook} | `{cell.grade_id}` | {graded_by} | {cell.points:g} |")
        auto = sum(c.points for c in mine if c.kind == "auto")
        manual = sum(c.points for c in mine if c.kind == "manual")
        lines.append(f"| **{notebook}** | | auto {auto:g} + manual {manual:g} | **{auto + manual:g}** |")
    auto = sum(c.points for c in cells if c.kind == "auto")
    manual = sum(c.points for c in cells if c.kind == "manual")
    lines.append(f"| **ch11 total** | | auto {auto:g} + manual {manual:g} | **{auto + manual:g}** |")
    return "\n".join(lines)


def with_table(readme: str, table: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {START} ... {END} block")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", readme)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    table = render(graded_cells())
    if not (args.write or args.check):
        print(table)
        return 0
    current = README.read_text()
    wanted = with_table(current, table)
    if args.check:
        if wanted != current:
            print("README.md: the points table is stale (run: make release)")
            return 1
        return 0
    README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
