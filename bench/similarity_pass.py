"""The class report's similarity pass over a large class (report/similarity.py; issue 37: 1,000 students in
under 10 s on 2 cores).

    .venv/bin/python bench/similarity_pass.py --students 1000 --planted 5

The class: ``--students`` students cycling through ``large_class.profiles`` (the demo students, and ada
with each catalogue entry in its notebook), each answer cell with a few lines of the student's own
appended (a helper drawn at random: operators, constants, loops), so no two students' answers are the
same text, as in a real class. The last ``2 * --planted`` students are pairs: the second of each copies the
first's answer cells with its names renamed and a comment added. Written in the layout the report reads
(``source/ch11/``, ``autograded/<student>/ch11/``), then timed:

* ``read``: the answer cells of every notebook (``read_answers``: JSON, no validation);
* ``compare``: fingerprints and pairs (``similar_pairs``);
* ``whole``: ``find_similar``, both together, as ``ch11-grade report`` runs it.

Printed as JSON: wall and CPU seconds of each (CPU: this process and the fingerprinting pool's
processes), answers and cells compared, pairs found, planted pairs
found, the load average before and after. Fingerprinting is shared out over the cores this process may
use (at most 4) from 2,000 distinct answers on (``report.similarity.fingerprint_all``); the rest is this
process. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ch11_autograder.paths import ASSIGNMENT, SOURCE_DIR
from ch11_autograder.report.similarity import find_similar, read_answers, set_aside, similar_pairs
from large_class import profiles

_OPS = ("+", "-", "*", "//", "%")


def own_lines(rng: random.Random) -> str:
    """A helper of the student's own: 4 to 8 statements drawn at random."""
    lines = ["", "", "def _mine(a, b):"]
    for _ in range(rng.randint(4, 8)):
        kind = rng.randrange(4)
        if kind == 0:
            lines.append(f"    a = a {rng.choice(_OPS)} {rng.randint(2, 999)}")
        elif kind == 1:
            lines.append(f"    b = [a {rng.choice(_OPS)} v for v in range({rng.randint(2, 99)})]")
        elif kind == 2:
            lines += [f"    if a {rng.choice(('<', '>', '=='))} {rng.randint(0, 500)}:", "        a, b = b, a"]
        else:
            lines.append(f"    a = max(a, len(b)) {rng.choice(_OPS)} {rng.randint(2, 999)}")
    lines.append("    return a, b")
    return "\n".join(lines) + "\n"


def _answer_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")]


def _source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def make_class(course: Path, students: int, planted: int, seed: int = 11) -> list[tuple[str, str]]:
    """Write the class (see the module) into ``course``; returns the planted pairs."""
    shutil.copytree(SOURCE_DIR, course / "source" / ASSIGNMENT)
    kinds = profiles()
    names = list(kinds)
    parsed = {name: {nb: json.loads(text) for nb, text in notebooks.items()} for name, notebooks in kinds.items()}
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    copied: dict[str, dict[str, list[str]]] = {}
    for i in range(students):
        profile = names[i % len(names)]
        student = f"s{i:04d}"
        first_of_pair = i >= students - 2 * planted and (i - (students - 2 * planted)) % 2 == 0
        second_of_pair = i >= students - 2 * planted and not first_of_pair
        folder = course / "autograded" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for nb_name, template in parsed[profile].items():
            nb = json.loads(json.dumps(template))
            for number, cell in enumerate(_answer_cells(nb)):
                if second_of_pair:
                    mine = copied[f"s{i - 1:04d}"][nb_name][number]
                    cell["source"] = re.sub(r"\ba\b", "first", re.sub(r"\bb\b", "second", mine)) + "# mine\n"
                else:
                    cell["source"] = _source(cell) + own_lines(rng)
                    if first_of_pair:
                        copied.setdefault(student, {}).setdefault(nb_name, []).append(cell["source"])
            (folder / nb_name).write_text(json.dumps(nb))
        if second_of_pair:
            pairs.append((f"s{i - 1:04d}", student))
    return pairs


def _cpu() -> float:
    """CPU seconds of this process and of its children reaped so far (the fingerprinting pool's)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(fn):
    wall, cpu = time.perf_counter(), _cpu()
    value = fn()
    return value, round(time.perf_counter() - wall, 3), round(_cpu() - cpu, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--planted", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="write the class here and keep it")
    args = parser.parse_args()
    where = args.keep or Path(tempfile.mkdtemp(prefix="ch11-similarity-"))
    course = where / "course"
    if course.exists():
        shutil.rmtree(course)
    try:
        pairs = make_class(course, args.students, args.planted)
        ids = sorted(p.name for p in (course / "autograded").iterdir())
        load_before = os.getloadavg()
        (answers, _notes), read_wall, read_cpu = _timed(lambda: read_answers(course, ASSIGNMENT, ids))
        aside = set_aside(course, ASSIGNMENT)
        found, compare_wall, compare_cpu = _timed(lambda: similar_pairs(answers, aside))
        whole, whole_wall, whole_cpu = _timed(lambda: find_similar(course, ASSIGNMENT, ids))
        load_after = os.getloadavg()
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)
    result = {
        "students": args.students, "answers": whole.answers, "cells": whole.cells,
        "read": {"wall": read_wall, "cpu": read_cpu}, "compare": {"wall": compare_wall, "cpu": compare_cpu},
        "whole": {"wall": whole_wall, "cpu": whole_cpu},
        "pairs_found": len(found), "planted": len(pairs),
        "planted_found": sum(1 for p in pairs if p in {f.students for f in found}),
        "other_pairs": sorted(" ".join(f.students) for f in found if f.students not in set(pairs))[:10],
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": len(os.sched_getaffinity(0)),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
