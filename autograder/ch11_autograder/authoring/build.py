"""Write (or check) the source notebooks of assignment ch11 from the exercises' builders.

    python -m ch11_autograder.authoring.build            # writes source/ch11/
    python -m ch11_autograder.authoring.build --check    # exit 1 if any differs

Output is deterministic: stable cell ids, sorted JSON keys, no outputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from ..exercises import notebook_builders
from ..paths import SOURCE_DIR

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def build_notebook(cells: list[NotebookNode]) -> NotebookNode:
    """A notebook of ``cells`` with the course's kernelspec and no outputs."""
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    return nb


def render(nb: NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def rendered_notebooks() -> dict[str, str]:
    """File name -> notebook text for every exercise, in exercise order."""
    return {f"{name}.ipynb": render(build_notebook(make_cells())) for name, make_cells in notebook_builders().items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=SOURCE_DIR, help="directory for the notebooks")
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    args = parser.parse_args(argv)
    wanted = rendered_notebooks()
    if args.check:
        stale = [n for n, text in wanted.items() if not (args.out / n).is_file() or (args.out / n).read_text() != text]
        extra = sorted(p.name for p in args.out.glob("*.ipynb") if p.name not in wanted)
        for name in stale:
            print(f"{args.out / name}: differs from its generator (run: python -m ch11_autograder.authoring.build)")
        for name in extra:
            print(f"{args.out / name}: not produced by any exercise definition")
        return 1 if stale or extra else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
