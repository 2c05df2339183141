"""One student's wait: one submission from the grader's start to its feedback written, with 1 and 2 cores.

    .venv/bin/python bench/one_submission.py [--student ada] [--repeats 3] [--cores 1,2] [--workers 1]
                                             [--out bench/results/one_submission.json]

Grading on submit makes one submission's wait the number that matters. For one demo student
(``demo/class/<student>``) and each core count, in rotated order per repetition:

* ``pipeline``: ``ch11-grade batch <folder holding only that student> --course <fresh copy of a
  course whose assignment was generated once> --workers W`` (bwrap; ``--workers``, default 1;
  ``ch11-grade``'s own default is 2), the command started under
  ``taskset`` with the first ``cores`` CPUs (every process it starts inherits the set);
* ``plain``: plain nbgrader on a fresh copy of a plain course (nbgrader's defaults, only the
  layout set; the submission copied into ``submitted/``): ``nbgrader autograde ch11 --student
  <student>`` then ``nbgrader generate_feedback ch11 --student <student>``, each its own
  process (its own start included), under the same ``taskset``.

The clock runs from starting the first command to the last of the student's feedback pages
(``feedback/<student>/ch11/*.html``, one per notebook) existing, polled every 20 ms; the
pipeline's command goes on with ``export`` and its reports after that, which is not counted.
Medians over repetitions; ratio pipeline / plain per core count. A benchmark: nothing is
asserted.

With ``--timings``, every nbgrader process of a pipeline run (the isolated autograde, the
course's ``generate_feedback``) records its spans (``bench/pipeline_timing.py``), and each
run's ``timeline`` says, in seconds from the command's start, when each process started,
loaded the course config and ended, with its largest spans: where one student's wait goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR, DEMO_CLASS_DIR, REPO_ROOT
from common import (
    TIMINGS_ENV,
    Measure,
    account_own_cpu,
    machine,
    make_course_template,
    median,
    ratio,
    release_own_cpu,
    write_json,
)

WORK = BUILD_DIR / "bench" / "one-submission"
BIN = Path(sys.executable).parent


def _pages(course: Path, student: str) -> list[Path]:
    notebooks = sorted(p.stem for p in (course / "source" / ASSIGNMENT).glob("*.ipynb"))
    return [course / "feedback" / student / ASSIGNMENT / f"{nb}.html" for nb in notebooks]


def _wait_for(pages: list[Path], procs: list[subprocess.Popen], started: float) -> float:
    """Seconds from ``started`` until every page exists (a process that fails first ends the run)."""
    while not all(p.is_file() for p in pages):
        for proc in procs:
            code = proc.poll()
            if code not in (None, 0):
                raise SystemExit(f"{proc.args} failed with exit {code}")
        time.sleep(0.02)
    return time.perf_counter() - started


def _taskset(cores: int) -> list[str]:
    return ["taskset", "-c", ",".join(str(c) for c in range(cores))]


def pipeline_once(template: Path, student: str, cores: int, label: str,
                  timings: Path | None = None, workers: int = 1) -> tuple[float, list[dict[str, Any]]]:
    course = WORK / label
    shutil.rmtree(course, ignore_errors=True)
    shutil.copytree(template, course, symlinks=True)
    source = WORK / f"{label}-source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(DEMO_CLASS_DIR / student, source / student)
    env = {k: v for k, v in os.environ.items() if k != "CH11_VERDICT_CACHE"}
    if timings is not None:
        shutil.rmtree(timings, ignore_errors=True)
        timings.mkdir(parents=True)
        env[TIMINGS_ENV] = str(timings)
    epoch = time.time()
    started = time.perf_counter()
    proc = subprocess.Popen([*_taskset(cores), str(BIN / "ch11-grade"), "batch", str(source), "--course",
                             str(course), "--workers", str(workers), "--sandbox", "bwrap"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    seconds = _wait_for(_pages(course, student), [proc], started)
    if proc.wait() != 0:
        raise SystemExit(f"ch11-grade batch failed for {student} ({label})")
    return seconds, (_timeline(timings, epoch) if timings is not None else [])


def _timeline(directory: Path, epoch: float) -> list[dict[str, Any]]:
    """Each recorded nbgrader process: start, config loaded, end (s from ``epoch``), its three longest span kinds."""
    out = []
    for path in sorted(directory.glob("*.json")):
        record = json.loads(path.read_text())
        kinds: dict[str, float] = {}
        for span in record.get("spans", []):
            kind = span["name"].split(":", 1)[0] if span["name"].startswith("suite:") else span["name"]
            kinds[kind] = kinds.get(kind, 0.0) + span["seconds"]
        argv = record.get("argv") or []
        out.append({
            "process": " ".join(str(a) for a in argv[1:3]),
            "created": round((record.get("created") or epoch) - epoch, 2),
            "config_loaded": round((record.get("config_loaded") or epoch) - epoch, 2),
            "exit": round(record["exit"] - epoch, 2),
            "spans": {k: round(v, 2) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:8]},
        })
    return sorted(out, key=lambda p: p["created"])


def plain_once(template: Path, student: str, cores: int, label: str,
               timings: Path | None = None, workers: int = 1) -> tuple[float, list[dict[str, Any]]]:
    course = WORK / label
    shutil.rmtree(course, ignore_errors=True)
    shutil.copytree(template, course, symlinks=True)
    shutil.copytree(DEMO_CLASS_DIR / student / ASSIGNMENT, course / "submitted" / student / ASSIGNMENT)
    nbgrader = [*_taskset(cores), str(BIN / "nbgrader")]
    started = time.perf_counter()
    for step in ("autograde", "generate_feedback"):
        done = subprocess.run([*nbgrader, step, ASSIGNMENT, "--student", student], cwd=course,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f"nbgrader {step} failed ({label}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return _wait_for(_pages(course, student), [], started), []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", default="ada")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", default="1,2", help="core counts, comma-separated")
    parser.add_argument("--workers", type=int, default=1, help="the pipeline command's --workers")
    parser.add_argument("--timings", action="store_true",
                        help="record each pipeline run's nbgrader processes and spans (its timeline)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "one_submission.json")
    args = parser.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    if max(cores) > (os.cpu_count() or 1):
        raise SystemExit(f"this machine has {os.cpu_count()} cores")
    WORK.mkdir(parents=True, exist_ok=True)
    cpu_method = account_own_cpu()  # sandboxed processes are never reaped: count their CPU in a cgroup
    try:
        return _bench(args, cores, cpu_method)
    finally:
        release_own_cpu()


def _bench(args: argparse.Namespace, cores: list[int], cpu_method: str) -> int:
    templates = {"pipeline": make_course_template(WORK, "pipeline"), "plain": make_course_template(WORK, "plain")}
    variants = [(kind, n) for n in cores for kind in ("pipeline", "plain")]
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    for rep in range(args.repeats):
        shift = rep % len(variants)
        for kind, n in variants[shift:] + variants[:shift]:
            label = f"{kind}-{n}core"
            once = pipeline_once if kind == "pipeline" else plain_once
            timings = WORK / f"{label}-timings" if args.timings else None
            with Measure() as m:
                seconds, timeline = once(templates[kind], args.student, n, label, timings, args.workers)
            runs.append({"variant": kind, "cores": n, "rep": rep + 1, "seconds": round(seconds, 3),
                         "conditions": m.conditions, **({"timeline": timeline} if timeline else {})})
            print(f"rep {rep + 1}/{args.repeats} {label:16s} {seconds:6.1f} s  load {m.conditions.load_before[0]}"
                  f"->{m.conditions.load_after[0]}  other processes {m.conditions.foreign_cores} cores", flush=True)
    summary: dict[str, Any] = {}
    for n in cores:
        pipe = median(r["seconds"] for r in runs if r["variant"] == "pipeline" and r["cores"] == n)
        plain = median(r["seconds"] for r in runs if r["variant"] == "plain" and r["cores"] == n)
        summary[f"{n}_cores"] = {"pipeline": pipe, "plain": plain, "ratio": ratio(pipe, plain)}
    result = {"machine": machine(), "student": args.student, "repeats": args.repeats, "workers": args.workers,
              "cpu_method": cpu_method,
              "runs": runs,
              "summary": summary, "seconds": round(time.perf_counter() - started, 1)}
    write_json(args.out, result)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
