"""Grouping failing answers by behaviour: completeness and purity on a class built from the catalogue,
and the cost of grouping 1,000 students' records.

    .venv/bin/python bench/mistake_groups.py [--exercises ex1] [--mixes 3] [--students 1000]
                                             [--out bench/results/mistake-groups-ex1.json]
    .venv/bin/python bench/mistake_groups.py --from-records bench/results/mistake-groups-ex5-records.json
    .venv/bin/python bench/mistake_groups.py --cost-records bench/results/mistake-groups-ex?-records.json
    .venv/bin/python bench/mistake_groups.py --course DIR [--students 1000]

Part 1, quality. For each exercise asked, a class is built from its catalogue and graded for real
(each notebook through a verdict worker, unsandboxed, as the exercises' tests grade; the records
are ``CellVerdict.record()``, what ``TrustedVerdicts`` writes):

* each entry submitted by 3 students with cosmetic differences: the entry's source as it is; its
  local names renamed; other local names, a comment per statement and no docstring; and by a 4th
  where the entry has something to reorder or respell: adjacent independent assignments swapped
  (plain names, values that call nothing), numpy calls spelled otherwise but equally (``np.zeros(n)``
  with its default ``dtype=np.float64`` written out, ``np.copy(a)`` as ``np.array(a, copy=True)``);
* 3 students with the reference answers;
* ``--mixes`` students per exercise who each make two entries' mistakes (entries of different
  answer cells, the first pairs in catalogue order).

``trusted.mistake_groups.group_answers`` groups them. Completeness, per entry: the largest share
of the students holding it (alone or in a mix) that one group holds. Purity, per group: the share
of its members whose answer holds the entry most of its members hold; weighted by group size.
A correct answer in any group is counted as an error. Goal: both >= 0.95.

One mistake, several entries. Entries whose students (the entry as written) got byte-identical
verdict records behave the same on every input the suites drew: every property's outcome, the
shrunk counterexample, what the answer gave there and the feedback's naming are the same, so no
grouping by behaviour can tell them apart, and none should. ``behaviour_classes`` lists them and
``purity_by_behaviour`` counts each class as one mistake (``purity`` counts entries).
``purity_by_name`` counts each misconception the feedback names as one: the entries whose own
answer (variant 0) is named, in every failure that names something, by one title (Exercise 5's
``STREAM_GROUP``, four spellings of one mistake the suite names "Replay drew from an advanced
generator") count as that title; an entry named by nothing, or by several titles, as itself.

The report's label. Each group as the class report places it (``report.mistakes.class_mistakes``):
``catalogue_labels`` counts the groups it calls a catalogue entry, ``mislabelled_groups`` those
whose members do not all hold that entry's mistake (its behaviour class).

``--from-records`` reads the records a run saved (``<out>-records.json``) and measures again,
without grading: the numbers are counts over the same records. ``--extend`` grades only the
students of the class that saved records lack (a variant added since) and adds them.

Part 2, cost. ``--students`` synthetic students, each the graded records of one student of part 1
per exercise (drawn with a fixed seed, so the class repeats real records as a large class repeats
its mistakes), grouped once; the wall and CPU seconds of ``group_answers`` (reading the records
included). A benchmark, not a test: nothing is asserted.

Part 2 alone, without grading, to ``--out`` (default ``results/mistake-groups-cost.json``):
``--cost-records`` draws from the records runs saved (one file per exercise, so a full assignment),
``--course DIR`` from a graded course (a class graded by ``ch11-grade batch``: per notebook, the
records one of DIR's students has there).
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
from ch11_autograder.report.mistakes import class_mistakes
from ch11_autograder.trusted.grading import grade_suites
from ch11_autograder.trusted.mistake_groups import answer_from_records, group_answers
from ch11_autograder.trusted.registry import get_suite, load_suite_modules
from ch11_autograder.trusted.submission_cells import autograded_test_cells, worker_cells
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from nbgrader.preprocessors import ClearSolutions

RESULTS = Path(__file__).resolve().parent / "results"


#: numpy constructors whose dtype defaults to float64 (spelled out by variant 3: the same call).
_FLOAT64_BY_DEFAULT = {"zeros", "ones", "empty"}


class _EqualNumpy(ast.NodeTransformer):
    """Other but equal numpy calls: ``np.zeros(n)`` as ``np.zeros(n, dtype=np.float64)`` (also ``ones``,
    ``empty``), ``np.copy(a)`` as ``np.array(a, copy=True)`` (what ``np.copy`` calls)."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "np"):
            return node
        if func.attr in _FLOAT64_BY_DEFAULT and len(node.args) == 1 and not node.keywords:
            node.keywords = [ast.keyword("dtype", ast.Attribute(ast.Name("np", ast.Load()), "float64", ast.Load()))]
        elif func.attr == "copy" and len(node.args) == 1 and not node.keywords:
            node.func = ast.Attribute(ast.Name("np", ast.Load()), "array", ast.Load())
            node.keywords = [ast.keyword("copy", ast.Constant(True))]
        return node


def _names(node: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _plain_assignment(stmt: ast.stmt) -> bool:
    """An assignment to plain names whose value calls nothing (so running it has no effect but the names)."""
    return (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            and not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr))
                        for n in ast.walk(stmt.value)))


def _reorder(func: ast.FunctionDef) -> None:
    """Swaps adjacent plain assignments that neither read nor write what the other writes, in every block."""
    for node in ast.walk(func):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            i = 0
            while i + 1 < len(body):
                first, second = body[i], body[i + 1]
                if (isinstance(first, ast.Assign) and isinstance(second, ast.Assign) and _plain_assignment(first)
                        and _plain_assignment(second) and not _depends(first, second)):
                    body[i], body[i + 1] = second, first
                    i += 2
                else:
                    i += 1


def _depends(first: ast.Assign, second: ast.Assign) -> bool:
    written, other = _names(first, ast.Store), _names(second, ast.Store)
    return bool(written & other or written & _names(second.value, ast.Load) or other & _names(first.value, ast.Load))


class _Rename(ast.NodeTransformer):
    """Renames the names a function assigns (not its parameters, not what it reads from outside)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node


def cosmetic(entry: WrongAnswer, variant: int) -> str:
    """``entry.source`` (variant 0), its locals renamed (1), renamed otherwise, commented, no docstring (2),
    or its independent assignments reordered and its numpy calls spelled otherwise but equally (3; the
    source as written where neither applies: see :func:`variants`)."""
    source = entry.source
    if variant == 0:
        return source
    tree = ast.parse(source)
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    if variant == 3:
        _reorder(func)
        _EqualNumpy().visit(func)
        return ast.unparse(tree)
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


def variants(entry: WrongAnswer) -> list[int]:
    """The cosmetic variants an entry is submitted in: 0, 1, 2, and 3 where it changes the source."""
    return [0, 1, 2] + ([3] if cosmetic(entry, 3) != ast.unparse(ast.parse(entry.source)) else [])


def planted(key: str, mixes: int) -> list[tuple[str, tuple[str, ...], dict[str, str]]]:
    """(student, entries held, extra source per answer cell) of the exercise's built class."""
    entries = catalogue(key)
    out = [(f"{key}-ok-{i}", (), {}) for i in range(3)]
    for entry in entries:
        for variant in variants(entry):
            out.append((f"{key}-{entry.name}-{variant}", (entry.name,), {entry.answer_cell: cosmetic(entry, variant)}))
    pairs = [(a, b) for i, a in enumerate(entries) for b in entries[i + 1:] if a.answer_cell != b.answer_cell]
    for a, b in pairs[:mixes]:
        extra = {a.answer_cell: a.source, b.answer_cell: b.source}
        out.append((f"{key}-mix-{a.name}+{b.name}", (a.name, b.name), extra))
    return out


def behaviour_classes(students: Sequence[tuple[str, tuple[str, ...], list[dict[str, Any]]]]) -> dict[str, str]:
    """Entry -> its behaviour class: the entries (sorted, joined by ``=``) whose students submitting the entry as
    written (variant 0) got byte-identical records (canonical JSON); an entry alone is its own class."""
    shown: dict[str, list[str]] = {}
    for student, entries, records in students:
        if len(entries) == 1 and student.endswith("-0"):
            text = json.dumps(sorted(records, key=lambda r: str(r.get("grade_id"))), sort_keys=True)
            shown.setdefault(text, []).append(entries[0])
    return {entry: "=".join(sorted(same)) for same in shown.values() for entry in same}


def feedback_names(students: Sequence[tuple[str, tuple[str, ...], list[dict[str, Any]]]]) -> dict[str, str]:
    """Entry -> the one title its own answer's feedback names (variant 0), else the entry's name."""
    out = {}
    for student, entries, records in students:
        if len(entries) == 1 and student.endswith("-0"):
            titles = {p["misconception"] for r in records for p in r["properties"] if p.get("misconception")}
            out[entries[0]] = f"named: {titles.pop()}" if len(titles) == 1 else entries[0]
    return out


def quality(key: str, students: Sequence[tuple[str, tuple[str, ...], list[dict[str, Any]]]]) -> dict[str, Any]:
    holds = {student: set(entries) for student, entries, _ in students}
    groups = group_answers(answer_from_records(student, records) for student, _, records in students)
    complete = {}
    for entry in sorted({e for es in holds.values() for e in es}):
        holders = {s for s, es in holds.items() if entry in es}
        best = max((len(holders & set(g.students)) for g in groups), default=0)
        complete[entry] = best / len(holders)
    kind = behaviour_classes(students)
    as_classes = {s: {kind.get(e, e) for e in es} for s, es in holds.items()}
    named = feedback_names(students)
    correct_in_groups = sorted({s for g in groups for s in g.students if not holds[s]})
    return {
        "students": len(students),
        "groups": len(groups),
        "completeness": sum(complete.values()) / len(complete) if complete else 1.0,
        "purity": _purity(groups, holds),
        "incomplete_entries": {e: round(v, 3) for e, v in complete.items() if v < 1.0},
        "behaviour_classes": sorted({c for c in kind.values() if "=" in c}),
        "purity_by_behaviour": _purity(groups, as_classes),
        "purity_by_name": _purity(groups, {s: {named.get(e, e) for e in es} for s, es in holds.items()}),
        "impure_groups": [{"students": list(g.students), "named": g.named} for g in groups
                          if not set.intersection(*(as_classes[s] for s in g.students))],
        "correct_answers_in_a_group": correct_in_groups,
        **_labels(key, students, as_classes, kind),
    }


def _labels(key: str, students: Sequence[tuple[str, tuple[str, ...], list[dict[str, Any]]]],
            as_classes: dict[str, set[str]], kind: dict[str, str]) -> dict[str, Any]:
    """The report's catalogue label of each group against what its members hold."""
    notebook = exercise(key).notebook
    verdicts = {(student, notebook, str(r["grade_id"])): r["properties"] for student, _, records in students
                for r in records}
    labelled = 0
    mislabelled = []
    for mistake in class_mistakes(verdicts):
        if mistake.entry is None:
            continue
        labelled += 1
        label = kind.get(mistake.entry.name, mistake.entry.name)
        if not all(label in as_classes[s] for s in mistake.group.students):
            mislabelled.append({"students": list(mistake.group.students), "catalogue": mistake.entry.name})
    return {"catalogue_labels": labelled, "mislabelled_groups": mislabelled}


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


def cost_only(graded: dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]], students: int,
              out: Path) -> int:
    """Part 2 alone, drawing from ``graded`` (per exercise or notebook: the students' records); JSON to ``out``."""
    drawn = {key: len(rows) for key, rows in sorted(graded.items())}
    result = {"drawn_from_students": drawn, "cpus": os.cpu_count(), "cost": cost(graded, students),
              "load_after": os.getloadavg()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print("cost", json.dumps(result["cost"]))
    return 0


def extend(path: Path, mixes: int) -> int:
    """Grades the students of the built class that the records at ``path`` lack (a variant added since),
    writes the records back with them, in the class's order, and prints the measure of the whole."""
    saved = json.loads(path.read_text())
    load_suite_modules([exercise(k).suite_module for k in saved])
    for key, rows in saved.items():
        have = {s: (s, tuple(es), recs) for s, es, recs in rows}
        students = [have.get(s) or (s, es, grade(key, extra)) for s, es, extra in planted(key, mixes)]
        print(key, "graded", len(students) - len(have), "students", flush=True)
        saved[key] = [[s, list(es), recs] for s, es, recs in students]
        path.write_text(json.dumps(saved) + "\n")
        print(key, json.dumps(quality(key, students)), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exercises", default=",".join(e.key for e in EXERCISES))
    parser.add_argument("--mixes", type=int, default=3)
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="default: results/mistake-groups-<exercises, joined by ->.json")
    parser.add_argument("--from-records", type=Path, help="measure the records a run saved again, without grading")
    parser.add_argument("--extend", type=Path,
                        help="a run's saved records: grade only the class's students they lack, add them, measure")
    parser.add_argument("--cost-records", type=Path, nargs="+",
                        help="part 2 alone, drawing from the records runs saved (one file per exercise)")
    parser.add_argument("--course", type=Path, help="part 2 alone, drawing from a graded course's records")
    args = parser.parse_args(argv)
    if args.cost_records or args.course:
        graded = graded_course(args.course) if args.course else {
            key: [(s, tuple(es), recs) for s, es, recs in rows]
            for path in args.cost_records for key, rows in json.loads(path.read_text()).items()}
        return cost_only(graded, args.students, args.out or RESULTS / "mistake-groups-cost.json")
    if args.extend:
        return extend(args.extend, args.mixes)
    if args.from_records:
        saved = json.loads(args.from_records.read_text())
        for key, rows in saved.items():
            print(key, json.dumps(quality(key, [(s, tuple(es), recs) for s, es, recs in rows])), flush=True)
        return 0
    keys = [k for k in args.exercises.split(",") if k]
    args.out = args.out or RESULTS / f"mistake-groups-{'-'.join(keys)}.json"
    load_suite_modules([exercise(k).suite_module for k in keys])
    graded: dict[str, list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]] = {}
    result: dict[str, Any] = {"per_exercise": {}, "load_before": os.getloadavg(), "cpus": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for key in keys:  # the results are written after each exercise: a long run cut short keeps what it measured
        start = time.perf_counter()
        graded[key] = [(s, es, grade(key, extra)) for s, es, extra in planted(key, args.mixes)]
        seconds = round(time.perf_counter() - start)
        result["per_exercise"][key] = {**quality(key, graded[key]), "grading_seconds": seconds}
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
