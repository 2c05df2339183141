"""Throughput of grading on Dask workers against local workers (bench/README.md, "Dask").

    .venv/bin/python bench/dask_throughput.py [--students ada,hal] [--repeats 1]
    .venv/bin/python bench/dask_throughput.py --mixed 16     # part e's mixed class, 16 submissions

Variants, each ``grade_class`` over the same students into a fresh copy of one course
(the repository's config and source, assignment generated once; feedback off, the same
serial step for every variant), bwrap sandbox:

* ``local_w2``: the local pool, ``workers=2``;
* ``dask_w2``: ``cluster="local"``, a LocalCluster of 2 worker processes on 127.0.0.1
  (started and stopped inside the batch: its start-up counts);
* ``dask_w1``: the same with 1 worker.

Each repetition runs the three in an order rotated from the last. "grading" is from the
end of intake to the last merged submission (progress events); "batch" is the whole
``grade_class``. Results: ``bench/results/dask.json`` (``--out``). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR, DEMO_CLASS_DIR
from common import RESULTS, fresh_copy, load, machine, median, write_json

WORK = BUILD_DIR / "bench-dask"
VARIANTS = (("local_w2", None, 2), ("dask_w2", "local", 2), ("dask_w1", "local", 1))


def _template() -> Path:
    from ch11_autograder.batch import init_course
    from ch11_autograder.batch.course import ensure_assignment

    course = WORK / "template"
    if course.exists():
        shutil.rmtree(course)
    init_course(course)
    ensure_assignment(course, ASSIGNMENT, WORK / "generate_assignment.log")
    return course


def _run(label: str, cluster: str | None, workers: int, template: Path, source: Path) -> dict[str, Any]:
    from ch11_autograder.batch import BatchOptions, grade_class

    course = fresh_copy(template, WORK / label)
    marks: dict[str, float] = {}

    def progress(event: Any) -> None:
        if event.record is None and event.message.startswith("intake"):
            marks["intake"] = event.elapsed_seconds
        elif event.record is not None:
            marks["last"] = event.elapsed_seconds

    before = load()
    started = time.monotonic()
    options = BatchOptions(workers=workers, sandbox="bwrap", feedback=False, cluster=cluster)
    report = grade_class(source, course, options, progress=progress)
    return {"label": label, "workers": workers, "cluster": cluster,
            "batch": round(time.monotonic() - started, 2),
            "grading": round(marks["last"] - marks["intake"], 2),
            "per_submission": {r.student: r.seconds for r in report.records},
            "statuses": sorted({r.status for r in report.records}),
            "load_before": before, "load_after": load()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", default="ada,hal")
    parser.add_argument("--mixed", type=int, default=0,
                        help="grade this many submissions of part e's mixed class (bench/large_class.py) instead")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "dask.json", help="where the results go")
    args = parser.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / "class"
    if source.exists():
        shutil.rmtree(source)
    if args.mixed:
        from large_class import make_mixed_class

        make_mixed_class(source, args.mixed)
    else:
        for name in args.students.split(","):
            shutil.copytree(DEMO_CLASS_DIR / name, source / name)
    template = _template()
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        order = VARIANTS[rep % 3:] + VARIANTS[:rep % 3]
        for label, cluster, workers in order:
            run = _run(label, cluster, workers, template, source)
            print(run, flush=True)
            runs.append(run)
    grading = {label: median(r["grading"] for r in runs if r["label"] == label) for label, _, _ in VARIANTS}
    summary = {
        "students": f"part e's mixed class, {args.mixed} submissions" if args.mixed else args.students,
        "repeats": args.repeats, "grading_median": grading,
        "dask_w2_over_local_w2_throughput": round(grading["local_w2"] / grading["dask_w2"], 3),
        "dask_w2_over_dask_w1_throughput": round(grading["dask_w1"] / grading["dask_w2"], 3),
    }
    write_json(args.out, {"machine": machine(), "summary": summary, "runs": runs})
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
