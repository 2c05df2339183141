"""One student's wait with and without one course setting, or one change, runs alternating: what one step is worth.

    .venv/bin/python bench/one_submission_ab.py "c.SuitesAhead.later = 'off'" [--student ada] [--repeats 6]
                                                [--cores 2] [--workers 2] [--out bench/results/ab.json]
    .venv/bin/python bench/one_submission_ab.py --against REV [...]

``one_submission.py``'s pipeline run (``ch11-grade batch`` for one demo student into a fresh copy
of a course whose assignment was generated once, bwrap, under ``taskset`` with the first
``cores`` CPUs, clock from the command's start to the last feedback page), in two variants
that differ in one thing. With a setting: ``with``, the course config as it is; ``without``,
the same config with the given line appended (a line that turns one step off). With
``--against REV``: ``with``, the code of the working tree; ``without``, the package
(``autograder/``) as commit ``REV`` has it, from a git worktree put first on ``PYTHONPATH``
(every process of the run, the sandbox's runtime scripts included, then loads that code);
both on the same course template. The two run in turn, the first of each pair alternating,
so that a machine whose speed drifts (a shared host) weighs on both alike. Medians, their
difference, and how many pairs the ``with`` run won. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ch11_autograder.paths import REPO_ROOT
from common import Measure, account_own_cpu, machine, make_course_template, median, release_own_cpu, write_json
from one_submission import WORK, pipeline_once


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("setting", nargs="?", help="a config line that turns the step off, appended for the "
                        "'without' runs")
    parser.add_argument("--against", metavar="REV", help="instead of a setting: 'without' runs the package as "
                        "commit REV has it")
    parser.add_argument("--student", default="ada")
    parser.add_argument("--repeats", type=int, default=6, help="pairs of runs")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="the pipeline command's --workers")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "one_submission_ab.json")
    args = parser.parse_args()
    if (args.setting is None) == (args.against is None):
        parser.error("give either a setting or --against REV")
    WORK.mkdir(parents=True, exist_ok=True)
    cpu_method = account_own_cpu()
    try:
        return _bench(args, cpu_method)
    finally:
        release_own_cpu()


def _bench(args: argparse.Namespace, cpu_method: str) -> int:
    with_step = make_course_template(WORK, "pipeline")
    templates = {"with": with_step, "without": with_step}
    paths = {"with": os.environ.get("PYTHONPATH"), "without": os.environ.get("PYTHONPATH")}
    if args.against:
        tree = WORK / "against"
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, capture_output=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.against], cwd=REPO_ROOT, check=True,
                       capture_output=True)
        paths["without"] = os.pathsep.join(p for p in (str(tree / "autograder"), paths["without"]) if p)
    else:
        without = WORK / "template-pipeline-without"
        shutil.rmtree(without, ignore_errors=True)
        shutil.copytree(with_step, without, symlinks=True)
        config = without / "nbgrader_config.py"
        config.write_text(config.read_text(encoding="utf-8") + f"\n{args.setting}\n", encoding="utf-8")
        templates["without"] = without
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    for rep in range(args.repeats):
        pair = ("with", "without") if rep % 2 == 0 else ("without", "with")
        for kind in pair:
            _set_pythonpath(paths[kind])
            with Measure() as m:
                seconds, _ = pipeline_once(templates[kind], args.student, args.cores, f"ab-{kind}", None,
                                           args.workers)
            runs.append({"variant": kind, "rep": rep + 1, "seconds": round(seconds, 3),
                         "conditions": m.conditions})
            print(f"pair {rep + 1}/{args.repeats} {kind:8s} {seconds:6.2f} s  other processes "
                  f"{m.conditions.foreign_cores} cores", flush=True)
    seconds = {kind: [r["seconds"] for r in runs if r["variant"] == kind] for kind in templates}
    won = sum(a < b for a, b in zip(seconds["with"], seconds["without"], strict=True))
    summary = {"with": median(seconds["with"]), "without": median(seconds["without"]),
               "difference": round(median(seconds["with"]) - median(seconds["without"]), 3),
               "pairs_won_with": f"{won} of {args.repeats}"}
    _set_pythonpath(paths["with"])
    write_json(args.out, {"machine": machine(), "student": args.student, "setting": args.setting,
                          "against": args.against,
                          "cores": args.cores, "workers": args.workers, "cpu_method": cpu_method, "runs": runs,
                          "summary": summary, "seconds": round(time.perf_counter() - started, 1)})
    print(summary)
    return 0


def _set_pythonpath(value: str | None) -> None:
    if value:
        os.environ["PYTHONPATH"] = value
    else:
        os.environ.pop("PYTHONPATH", None)


if __name__ == "__main__":
    sys.exit(main())
