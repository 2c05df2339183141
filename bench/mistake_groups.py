"""Grouping failing answers by behaviour: completeness and purity on a class built from the catalogue,
and the cost of grouping 1,000 students' records.

    .venv/bin/python bench/mistake_groups.py [--exercises ex1,ex4] [--mixes 3] [--students 1000]
                                             [--out bench/results/mistake-groups.json]
    .venv/bin/python bench/mistake_groups.py --course DIR [--students 1000]    # part 2 alone

Part 1, quality. For each exercise asked, a class is built from its catalogue and graded for real
(each notebook through a verdict worker, unsandboxed, as the exercises' tests grade; the records
are ``CellVerdict.record()``, what ``TrustedVerdicts`` writes):

* each entry submitted by 3 students with cosmetic differences: the entry's source as it is; its
  local names renamed; other local names, a comment per statement and no docstring;
* 3 students with the reference answers;
* ``--mixes`` students per exercise who each make two entries' mistakes (entries of different
  answer cells, the first pairs in catalogue order).

``trusted.mistake_groups.group_answers`` groups them. Completeness, per entry: the largest share
of the students holding it (alone or in a mix) that one group holds. Purity, per group: the share
of its members whose answer holds the entry most of its members hold; weighted by group size.
A correct answer in any group is counted as an error. Goal: both >= 0.95.

Part 2, cost. ``--students`` synthetic students, each the graded records of one student of part 1
per exercise (drawn with a fixed seed, so the class repeats real records as a large class repeats
its mistakes), grouped once; the wall and CPU seconds of ``group_answers`` (reading the records
included). A benchmark, not a test: nothing is asserted.

``--course DIR`` runs part 2 alone, drawing from a graded course instead (a class graded by
``ch11-grade batch``, every notebook's records as ``TrustedVerdicts`` wrote them): each synthetic
student takes, per notebook, the records of one of DIR's students; results in
``--out`` (default ``bench/results/mistake-groups-cost.json``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ch11_autograder.authoring.build import build_notebook
from ch11_autograder.authoring.submissions import answer_sources, fill
from ch11_autograder.course_layout import AUTOGRADED
from ch11_autograder.exercises import EXERCISES, WORKER_SKIP_CELLS, exercise
from ch11_autograder.exercises.catalogue import WrongAnswer, catalogue
from ch11_autograder.report.autograded import read_notebook
from ch11_autograder.trusted.grading import grade_suites
from ch11_autograder.trusted.mistake_groups import answer_from_records, group_answers
from ch11_autograder.trusted.registry import get_suite, load_suite_modules
from ch11_autograder.trusted.submission_cells import autograded_test_cells, worker_cells
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from nbgrader.preprocessors import ClearSolutions

OUT = Path(__file__).resolve().parent / "results" / "mistake-groups.json"
COST_OUT = OUT.with_name("mistake-groups-cost.json")


class _Rename(ast.NodeTransformer):
    """Renames the names a function assigns (not its parameters, not what it reads from outside)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node


def cosmetic(entry: WrongAnswer, variant: int) -> str:
    """``entry.source`` (variant 0), its locals renamed (1), or renamed otherwise, commented, no docstring (2)."""
    source = entry.source
    if variant == 0:
        return source
    tree = ast.parse(source)
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    params = {a.arg for a in (*func.args.args, *func.args.kwonlyargs, *func.args.posonlyargs)}
    assigned = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    prefix = "my_" if variant == 1 else "the_"
    _Rename({name: prefix + name for name in assigned - params}).visit(func)
    if variant == 2:
        body = func.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            func.body = body[1:] or [ast.Pass()]
        lines = ast.unparse(tree).splitlines()
        return "\n".join(f"{line}  # step {i}" if line.strip() and not line.rstrip().endswith(":") else line
                         for i, line in enumerate(lines))
    return ast.unparse(tree)


def grade(key: str, extra: dict[str, str]) -> list[dict[str, Any]]:
    """The verdict records of one submission of exercise ``key``: the reference answers, ``extra`` appended."""
    nb = build_notebook(exercise(key).cells())
    answers = answer_sources(nb)
    released, _ = ClearSolutions().preprocess(build_notebook(exercise(key).cells()), {})
    filled = fill(released, {cell: src + ("\n\n\n" + extra[cell] if cell in extra else "")
                             for cell, src in answers.items()})
    # The source notebook's test cells (hidden regions removed by worker_cells), the student's answers.
    by_id = {cell.get("id"): cell for cell in filled.cells}
    for cell in nb.cells:
        if cell.get("id") in by_id and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell.source = by_id[cell["id"]].source
    cells = worker_cells(nb, skip=set(WORKER_SKIP_CELLS))
    suites = [get_suite(cell.metadata["nbgrader"]["grade_id"]) for _, cell in autograded_test_cells(nb)]
    with WorkerSession(list(cells.sources), UnsandboxedLauncher(quiet=True), call_timeout=10.0) as session:
        verdicts = grade_suites(cells, suites, session)
    return [v.record() for v in verdicts.values()]


def planted(key: str, mixes: int) -> list[tuple[str, tuple[str, ...], dict[str, str]]]:
    """(student, entries held, extra source per answer cell) of the exercise's built class."""
    entries = catalogue(key)
    out = [(f"{key}-ok-{i}", (), {}) for i in range(3)]
    for entry in entries:
        for variant in range(3):
            out.append((f"{key}-{entry.name}-{variant}", (entry.name,), {entry.answer_cell: cosmetic(entry, variant)}))
    pairs = [(a, b) for i, a in enumerate(entries) for b in entries[i + 1:] if a.answer_cell != b.answer_cell]
    for a, b in pairs[:mixes]:
        extra = {a.answer_cell: a.source, b.answer_cell: b.source}
        out.append((f"{key}-mix-{a.name}+{b.name}", (a.name, b.name), extra))
    return out


def quality(students: Sequence[tuple[str, tuple[str, ...], list[dict[str, Any]]]]) -> dict[str, Any]:
    holds = {student: set(entries) for student, entries, _ in students}
    groups = group_answers(answer_from_records(student, records) for student, _, records in students)
    complete = {}
    for entry in sorted({e for es in holds.values() for e in es}):
        holders = {s for s, es in holds.items() if entry in es}
        best = max((len(holders & set(g.students)) for g in groups), default=0)
        complete[entry] = best / len(holders)
    # An entry's name as the feedback gives it: a suite names entries whose answers it cannot tell apart
    # by one name (Exercise 5's broken snapshots); purity_by_name counts those as one mistake.
    named: dict[str, str] = {}
    for _student, entries, records in students:
        titles = {p.get("misconception") for r in records for p in r["properties"] if p.get("misconception")}
        if len(entries) == 1 and len(titles) == 1:
            named[entries[0]] = titles.pop()
    correct_in_groups = sorted({s for g in groups for s in g.students if not holds[s]})
    return {
        "students": len(students),
        "groups": len(groups),
        "completeness": sum(complete.values()) / len(complete) if complete else 1.0,
        "purity": _purity(groups, holds),
        "incomplete_entries": {e: round(v, 3) for e, v in complete.items() if v < 1.0},
        "purity_by_name": _purity(groups, {s: {named.get(e, e) for e in es} for s, es in holds.items()}),
        "impure_groups": [{"students": list(g.students), "named": g.named} for g in groups
                          if not set.intersection(*(holds[s] for s in g.students))],
        "correct_answers_in_a_group": correct_in_groups,
    }


def _purity(groups: Sequence[Any], holds: dict[str, set[str]]) -> float:
    """Per group, the share of its members holding the mistake most of them hold; weighted by group size."""
    weighted = members = 0
    for group in groups:
        counts = Counter(e for s in group.students for e in holds[s])
        top = counts.most_common(1)[0][0] if counts else None
        weighted += sum(top in holds[s] for s in group.students)
        members += len(group.students)
    return weighted / members if members else 1.0


def cost(graded: dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]], n: int) -> dict[str, Any]:
    rng = random.Random(11)
    synthetic = [(f"s{i:04d}", [rec for key in sorted(graded) for rec in rng.choice(graded[key])[2]])
                 for i in range(n)]
    wall, cpu = time.perf_counter(), time.process_time()
    groups = group_answers(answer_from_records(student, records) for student, records in synthetic)
    return {"students": n, "groups": len(groups), "wall_seconds": round(time.perf_counter() - wall, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3), "load_before": os.getloadavg()}


def graded_course(course: Path) -> dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]]:
    """Per notebook, ``(student, (), verdict records)`` of every student of ``course`` whose autograded notebook
    holds records."""
    graded: dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]] = {}
    for folder in sorted(p for p in (course / AUTOGRADED).iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*/*.ipynb")):
            nb = read_notebook(path) or {}
            records = [c["metadata"][VERDICT_METADATA_KEY] for c in nb.get("cells", [])
                       if VERDICT_METADATA_KEY in c.get("metadata", {})]
            if records:
                graded.setdefault(path.stem, []).append((folder.name, (), records))
    return graded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exercises", default=",".join(e.key for e in EXERCISES))
    parser.add_argument("--mixes", type=int, default=3)
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--course", type=Path, default=None, help="part 2 alone, drawing from this graded course")
    args = parser.parse_args(argv)
    if args.course is not None:
        graded = graded_course(args.course)
        drawn = {key: len(students) for key, students in sorted(graded.items())}
        result = {"course_students_per_notebook": drawn, "cpus": os.cpu_count(),
                  "cost": cost(graded, args.students), "load_after": os.getloadavg()}
        out = args.out or COST_OUT
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print("cost", json.dumps(result["cost"]))
        return 0
    args.out = args.out or OUT
    keys = [k for k in args.exercises.split(",") if k]
    load_suite_modules([exercise(k).suite_module for k in keys])
    graded: dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]] = {}
    result: dict[str, Any] = {"per_exercise": {}, "load_before": os.getloadavg(), "cpus": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for key in keys:  # the results are written after each exercise: a long run cut short keeps what it measured
        start = time.perf_counter()
        graded[key] = [(s, es, grade(key, extra)) for s, es, extra in planted(key, args.mixes)]
        result["per_exercise"][key] = {**quality(graded[key]), "grading_seconds": round(time.perf_counter() - start)}
        print(key, json.dumps(result["per_exercise"][key]), flush=True)
        result["cost"] = {"exercises": sorted(graded), **cost(graded, args.students)}
        result["load_after"] = os.getloadavg()
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        records = args.out.with_name(args.out.stem + "-records.json")  # for looking into a group afterwards
        kept = {k: [[s, list(es), recs] for s, es, recs in v] for k, v in graded.items()}
        records.write_text(json.dumps(kept) + "\n")
    print("cost", json.dumps(result["cost"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
