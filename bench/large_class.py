"""Part e: a large class graded end to end, the pipeline with 2 workers against plain nbgrader.

The class: ``n`` submissions cycling through profiles made from the demo students and the
catalogue's wrong answers, each with its own student id (``s0000-<profile>``):

* the four demo students (``ada``, ``blank``, ``hal``, ``lin``) as committed in demo/class;
* for every catalogue entry, ``ada`` with that one wrong answer in its notebook.

Both graders get the same submissions. The pipeline is ``grade_class(workers=2,
sandbox="bwrap")``, feedback and export included; plain nbgrader is ``autograde`` (one
process for the class, as nbgrader runs it), ``generate_feedback`` and ``export`` with
nbgrader's default configuration. Reported: submissions per minute (wall), and CPU seconds
per submission (this process and everything it reaped, from ``common.Measure``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.exercises import NOTEBOOKS
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR, RELEASE_DIR, SOURCE_DIR

__all__ = ["make_mixed_class", "profiles"]


def profiles(class_dir: Path = DEMO_CLASS_DIR) -> dict[str, dict[str, str]]:
    """Profile name -> {notebook file name: notebook text}, demo students first, then one per catalogue entry."""
    out: dict[str, dict[str, str]] = {}
    for student in sorted(p for p in class_dir.iterdir() if p.is_dir()):
        out[student.name] = {nb.name: nb.read_text() for nb in sorted((student / ASSIGNMENT).glob("*.ipynb"))}
    ada = out["ada"]
    for stem in NOTEBOOKS:
        exercise = stem.split("_", 1)[0]
        released = read(RELEASE_DIR / f"{stem}.ipynb")
        answers = answer_sources(read(SOURCE_DIR / f"{stem}.ipynb"))
        for entry in catalogue(exercise):
            if entry.answer_cell not in answers:
                continue
            notebooks = dict(ada)
            notebooks[f"{stem}.ipynb"] = nbformat.writes(fill(released, answers, wrong=[entry])) + "\n"
            out[f"{exercise}-{entry.name}"] = notebooks
    return out


def make_mixed_class(dest: Path, n: int, class_dir: Path = DEMO_CLASS_DIR) -> dict[str, Any]:
    """Write ``n`` submissions to ``dest/<student>/ch11/``; returns how many of each profile."""
    if dest.exists():
        shutil.rmtree(dest)
    kinds = profiles(class_dir)
    names = list(kinds)
    counts: dict[str, int] = {}
    for i in range(n):
        profile = names[i % len(names)]
        folder = dest / f"s{i:04d}-{profile}" / ASSIGNMENT
        folder.mkdir(parents=True)
        for name, text in kinds[profile].items():
            (folder / name).write_text(text)
        counts[profile] = counts.get(profile, 0) + 1
    return {"submissions": n, "profiles": len(names), "per_profile": counts}
