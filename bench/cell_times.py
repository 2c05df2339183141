"""What a submission's own cells cost in a plain kernel: the part of grading no pipeline can remove.

    .venv/bin/python bench/cell_times.py [--student ada] [--out bench/results/cell-times-ada.json]

Runs each notebook of ``demo/class/<student>/ch11`` in a fresh local kernel with nbclient
(no sandbox, no nbgrader), timing the kernel's start and every code cell, and sorts the
cells by nbgrader role: ``imports`` (the locked first code cell; a pre-imported runtime
does that work once), ``solution`` (the student's cells, figures included: the inline
backend renders each figure here, which the feedback shows), ``test`` (autograded test
cells: their visible checks). ``solution`` + ``test`` is what executing the notebook for
its outputs costs at the least, whatever runs it. A benchmark aid: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR
from common import machine


def _role(cell: Any, first_code: bool) -> str:
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("grade") and not meta.get("solution"):
        return "test"
    if meta.get("solution"):
        return "solution"
    return "imports" if first_code else "other"


def time_notebook(path: Path) -> dict[str, Any]:
    """Kernel start and per-cell seconds of one notebook, executed in order in one kernel."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    cells: list[dict[str, Any]] = []
    with client.setup_kernel():
        ready = time.perf_counter()
        first = True
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            before = time.perf_counter()
            client.execute_cell(cell, index)
            cells.append({"index": index, "grade_id": cell.metadata.get("nbgrader", {}).get("grade_id"),
                          "role": _role(cell, first), "seconds": round(time.perf_counter() - before, 4)})
            first = False
    by_role: dict[str, float] = {}
    for c in cells:
        by_role[c["role"]] = round(by_role.get(c["role"], 0.0) + c["seconds"], 4)
    return {"kernel_start": round(ready - started, 4), "by_role": by_role, "cells": cells,
            "total": round(time.perf_counter() - started, 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="ada")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folder = DEMO_CLASS_DIR / args.student / ASSIGNMENT
    notebooks = {p.stem: time_notebook(p) for p in sorted(folder.glob("*.ipynb"))}
    totals: dict[str, float] = {}
    for nb in notebooks.values():
        for role, seconds in nb["by_role"].items():
            totals[role] = round(totals.get(role, 0.0) + seconds, 3)
    totals["kernel_start"] = round(sum(nb["kernel_start"] for nb in notebooks.values()), 3)
    result = {"machine": machine(), "student": args.student, "totals": totals, "notebooks": notebooks}
    print(f"{args.student}: " + ", ".join(f"{k} {v:.2f} s" for k, v in totals.items()))
    for name, nb in notebooks.items():
        print(f"  {name}: kernel {nb['kernel_start']:.2f} s, " +
              ", ".join(f"{k} {v:.2f} s" for k, v in nb["by_role"].items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
