"""Cost benchmarks of the grading pipeline (bench/README.md has the method and the results).

    .venv/bin/python bench/run.py                  # everything (what `make bench` runs)
    .venv/bin/python bench/run.py --parts abc --repeats 3
    .venv/bin/python bench/run.py --parts d --memory-submissions 200

Parts, all on the demo class (demo/class: ada, blank, hal, lin):

a. isolation: ``grade_class`` with the bwrap sandbox against the same with
   ``CH11_SANDBOX=none``, per submission (workers=1);
b. the pipeline against plain ``nbgrader autograde`` (a course with nbgrader's
   default config: ``Execute`` in the kernel, no trusted verdicts, same
   source notebooks), per submission and for the class end to end, with a
   breakdown of where the pipeline's time goes;
c. ``grade_class`` with 2 workers against 1 worker (bwrap);
d. peak memory of the orchestrator for a large batch (copies of the demo
   class with distinct student ids), in a child process sampled from here;
e. a class of ``--class-size`` submissions made from the demo students and the
   catalogue's wrong answers, graded end to end by the pipeline (2 workers) and
   by plain nbgrader: submissions per minute and CPU seconds per submission.

Each repetition of a-c runs every variant once, interleaved, so slow drift
in the machine's load hits all variants alike. Results go to
bench/results/cost.json and bench/results/memory.json. Nothing here asserts a
time: the numbers are reported, not tested.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from breakdown import process_seconds, student_breakdowns
from ch11_autograder.paths import BUILD_DIR, DEMO_CLASS_DIR
from common import (
    ASSIGNMENT,
    RESULTS,
    TIMINGS_ENV,
    Measure,
    account_own_cpu,
    fresh_copy,
    machine,
    make_course_template,
    median,
    process_kind,
    ratio,
    read_timings,
    release_own_cpu,
    run_nbgrader,
    spread,
    students,
    write_json,
)

WORK = BUILD_DIR / "bench"
#: Parts a-c grade these demo students by default: ada answered everything correctly (every suite
#: passes, every cell runs), hal answered two of five exercises (the others' suites fail). Their
#: batches take about as long each, so a 2-worker batch of the two is not dominated by one long
#: job. ``--students all`` grades the whole demo class (about twice as long).
DEFAULT_STUDENTS = ("ada", "hal")


def class_subset(class_dir: Path, names: str) -> Path:
    """``class_dir`` itself for ``all``, else a copy holding only the named students."""
    if names == "all":
        return class_dir
    dest = WORK / "class-subset"
    if dest.exists():
        shutil.rmtree(dest)
    for name in names.split(","):
        shutil.copytree(class_dir / name, dest / name)
    return dest


# --------------------------------------------------------------------------- one pipeline batch


def pipeline_run(label: str, template: Path, source: Path, *, workers: int, sandbox: str,
                 feedback: bool = True, fork_nbgrader: bool = True) -> dict[str, Any]:
    """``grade_class`` over ``source`` into a fresh copy of ``template``; times, records and breakdowns."""
    from ch11_autograder.batch import BatchOptions, grade_class

    course = fresh_copy(template, WORK / label)
    timings = WORK / f"{label}-timings"
    if timings.exists():
        shutil.rmtree(timings)
    timings.mkdir(parents=True)
    events: list[tuple[float, str]] = []

    def progress(event: Any) -> None:
        if event.record is None:
            events.append((event.elapsed_seconds, event.message.split(":")[0]))

    os.environ[TIMINGS_ENV] = str(timings)
    try:
        with Measure() as m:
            options = BatchOptions(workers=workers, sandbox=sandbox, feedback=feedback, fork_nbgrader=fork_nbgrader)
            report = grade_class(source, course, options, progress=progress)
    finally:
        del os.environ[TIMINGS_ENV]
    steps = dict((name, t) for t, name in events)
    intake_done = steps.get("intake (folder)", steps.get("intake", 0.0))
    feedback_start = steps.get("nbgrader generate_feedback", report.elapsed_seconds)
    export_start = steps.get("nbgrader export", report.elapsed_seconds)
    records = {r.student: {"status": r.status, "score": r.score, "seconds": r.seconds, "error": r.error}
               for r in report.records}
    procs = read_timings(timings)
    per_student: dict[str, Any] = {}
    feedback_process = export_process = None
    for record in procs:
        command, student = process_kind(record)
        if command == "autograde" and student:
            b = student_breakdowns(record)[student]
            b["orchestrator_side"] = round(records[student]["seconds"] - b["process"], 3)
            b["cpu_seconds"] = record.get("cpu_seconds")
            per_student[student] = b
        elif command == "generate_feedback":
            feedback_process = {"wall": process_seconds(record), "cpu_seconds": record.get("cpu_seconds")}
        elif command == "export":
            export_process = {"wall": process_seconds(record), "cpu_seconds": record.get("cpu_seconds")}
    grading = feedback_start - intake_done
    return {
        "label": label, "workers": workers, "sandbox": sandbox, "feedback": feedback,
        "elapsed": round(report.elapsed_seconds, 3),
        "before_grading": round(intake_done, 3),  # lock, sandbox check, course, intake
        "grading": round(grading, 3),  # isolated autogrades + merges
        "merge_and_cleanup": round(grading - sum(r["seconds"] for r in records.values()), 3) if workers == 1 else None,
        "feedback_step": round(export_start - feedback_start, 3),
        "export_and_reports": round(report.elapsed_seconds - export_start, 3),
        "feedback_process": feedback_process, "export_process": export_process,
        "records": records, "breakdown": per_student, "conditions": m.conditions,
        "problems": report.problems,
    }


# --------------------------------------------------------------------------- plain nbgrader


def _submit(course: Path, class_dir: Path) -> list[str]:
    names = students(class_dir)
    for name in names:
        shutil.copytree(class_dir / name / ASSIGNMENT, course / "submitted" / name / ASSIGNMENT)
    return names


def _nbgrader_timed(course: Path, *args: str) -> float:
    started = time.perf_counter()
    done = run_nbgrader(course, *args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"nbgrader {' '.join(args)} failed in {course}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return round(seconds, 3)


def plain_run(label: str, template: Path, class_dir: Path) -> dict[str, Any]:
    """Plain nbgrader as an instructor runs it: ``autograde`` (one process, the whole class), feedback, export."""
    course = fresh_copy(template, WORK / label)
    _submit(course, class_dir)
    timings = WORK / f"{label}-timings"
    if timings.exists():
        shutil.rmtree(timings)
    timings.mkdir(parents=True)
    os.environ[TIMINGS_ENV] = str(timings)
    try:
        with Measure() as m:
            autograde = _nbgrader_timed(course, "autograde", ASSIGNMENT)
            feedback = _nbgrader_timed(course, "generate_feedback", ASSIGNMENT)
            export = _nbgrader_timed(course, "export", "--to", str(course / "grades.csv"))
    finally:
        del os.environ[TIMINGS_ENV]
    breakdown: dict[str, Any] = {}
    startup = None
    cpu: dict[str, float | None] = {}
    for record in read_timings(timings):
        command, _ = process_kind(record)
        cpu[command] = record.get("cpu_seconds")
        if command == "autograde":
            breakdown = student_breakdowns(record)
            startup = round(min(s["start"] for s in record["spans"]) - record["created"], 3)
    return {"label": label, "autograde": autograde, "autograde_startup": startup, "feedback": feedback,
            "export": export, "elapsed": m.conditions.wall_seconds, "breakdown": breakdown,
            "cpu_seconds_by_process": cpu, "conditions": m.conditions}


# --------------------------------------------------------------------------- import costs

#: Statements timed in a fresh ``python -s`` each. Every nbgrader process and every
#: sandboxed ``execute_notebook.py`` run imports nbformat; nbformat imports
#: jsonschema, whose format checkers import rfc3987_syntax when it is installed
#: (it builds its Lark parsers at import).
IMPORTS = {
    "python_empty": "pass",
    "import_nbformat": "import nbformat",
    "import_nbformat_without_rfc3987_syntax": "import sys; sys.modules['rfc3987_syntax'] = None; import nbformat",
}


def import_costs(runs: int = 5) -> dict[str, Any]:
    """Wall seconds of each :data:`IMPORTS` statement in a fresh interpreter, interleaved, ``runs`` times."""
    times: dict[str, list[float]] = {k: [] for k in IMPORTS}
    with Measure() as m:
        for _ in range(runs):
            for name, statement in IMPORTS.items():
                started = time.perf_counter()
                subprocess.run([sys.executable, "-s", "-c", statement], check=True)
                times[name].append(round(time.perf_counter() - started, 3))
    return {"seconds": {k: spread(v) for k, v in times.items()}, "conditions": m.conditions}


# --------------------------------------------------------------------------- parts a, b, c


def run_cost(repeats: int, parts: str, class_dir: Path) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    templates = {"pipeline": make_course_template(WORK, "pipeline")}
    if "b" in parts:
        templates["plain"] = make_course_template(WORK, "plain")
        templates["nofork"] = make_course_template(WORK, "pipeline-nofork")
    print(f"course templates ready in {time.perf_counter() - t0:.1f} s", flush=True)
    imports = import_costs() if "b" in parts else None
    pipe = templates["pipeline"]
    # The 1-worker bwrap batch is the baseline of a, b and c alike.
    variants: list[tuple[str, Any]] = [
        ("bwrap_w1", lambda r: pipeline_run(f"r{r}-bwrap-w1", pipe, class_dir, workers=1, sandbox="bwrap"))]
    if "a" in parts:  # feedback is the same nbgrader step either way and does not run student code
        variants.append(("none_w1", lambda r: pipeline_run(f"r{r}-none-w1", pipe, class_dir, workers=1,
                                                           sandbox="none", feedback=False)))
    if "c" in parts:
        variants.append(("bwrap_w2", lambda r: pipeline_run(f"r{r}-bwrap-w2", pipe, class_dir, workers=2,
                                                            sandbox="bwrap")))
    if "b" in parts:
        variants.append(("plain", lambda r: plain_run(f"r{r}-plain", templates["plain"], class_dir)))
        variants.append(("bwrap_w1_freshnb", lambda r: pipeline_run(f"r{r}-bwrap-w1-freshnb", pipe, class_dir,
                                                                    workers=1, sandbox="bwrap", fork_nbgrader=False)))
        variants.append(("bwrap_w1_nofork", lambda r: pipeline_run(f"r{r}-bwrap-w1-nofork", templates["nofork"],
                                                                   class_dir, workers=1, sandbox="bwrap")))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    for rep in range(repeats):
        # Rotate the order each repetition so no variant always runs first (or right after another).
        order = variants[rep % len(variants):] + variants[: rep % len(variants)]
        for name, fn in order:
            result = fn(rep)
            runs[name].append(result)
            c = result["conditions"]
            print(f"rep {rep + 1}/{repeats} {name:9s} {result['elapsed']:7.1f} s  load {c.load_before[0]:.2f}->"
                  f"{c.load_after[0]:.2f}  other processes used {c.foreign_cores:.2f} cores", flush=True)
    summary = summarize(runs, class_dir)
    if imports is not None:
        summary["b_vs_plain"]["import_costs"] = imports
    return {"runs": runs, "summary": summary}


def _per_student(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for run in runs:
        for student, rec in run["records"].items():
            out.setdefault(student, []).append(rec["seconds"])
    return out


def _cpu_per_student(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for run in runs:
        for student, b in run["breakdown"].items():
            if b.get("cpu_seconds") is not None:
                out.setdefault(student, []).append(b["cpu_seconds"])
    return out


def _own(runs: list[dict[str, Any]], what: str) -> list[float]:
    """Per run: ``cpu`` (own CPU seconds of the run) or ``cores`` (own CPU / wall)."""
    c = [r["conditions"] for r in runs]
    if what == "cpu":
        return [x.own_cpu_seconds for x in c]
    return [round(x.own_cpu_seconds / x.wall_seconds, 2) for x in c if x.wall_seconds]


def _phase_medians(runs: list[dict[str, Any]], student: str) -> dict[str, Any]:
    """Median over runs of each phase of ``student``'s breakdown (nested per-notebook dicts too)."""
    rows = [run["breakdown"][student] for run in runs if student in run.get("breakdown", {})]
    out: dict[str, Any] = {}
    for key in rows[0] if rows else []:
        if isinstance(rows[0][key], dict):
            inner: dict[str, list[float]] = {}
            for r in rows:
                for k, v in r.get(key, {}).items():
                    inner.setdefault(k, []).append(v)
            out[key] = {k: median(v) for k, v in sorted(inner.items())}
        else:
            out[key] = median(r[key] for r in rows if key in r)
    return out


def _makespan(durations: list[float], workers: int) -> float:
    """Finish time of jobs taken in order by the first free of ``workers`` slots (how grade_class schedules)."""
    free = [0.0] * workers
    for d in durations:
        i = free.index(min(free))
        free[i] += d
    return max(free)


def summarize(runs: dict[str, list[dict[str, Any]]], class_dir: Path) -> dict[str, Any]:
    names = students(class_dir)
    summary: dict[str, Any] = {"students": names}
    bw = runs["bwrap_w1"]
    graded = [r for name, rs in runs.items() if name != "plain" for r in rs]  # every pipeline variant
    summary["scores"] = {n: bw[0]["records"][n]["score"] for n in names}
    summary["scores_identical_across_pipeline_runs"] = len(
        {tuple(r["records"][n]["score"] for n in names) for r in graded}) == 1
    summary["all_graded"] = all(r["records"][n]["status"] == "graded" for r in graded for n in names)
    conditions = [r["conditions"] for rs in runs.values() for r in rs]
    summary["noise"] = {
        "load_1min_before_and_after_runs": spread([x for c in conditions for x in (c.load_before[0],
                                                                                     c.load_after[0])]),
        "other_processes_cores": spread([c.foreign_cores for c in conditions]),
    }
    seconds_bw = _per_student(bw)
    total_bw = [sum(r["records"][n]["seconds"] for n in names) for r in bw]
    if "none_w1" in runs:  # (a)
        none = runs["none_w1"]
        seconds_none = _per_student(none)
        per = {n: {"bwrap": spread(seconds_bw[n]), "none": spread(seconds_none[n]),
                   "ratio": ratio(median(seconds_bw[n]), median(seconds_none[n]))} for n in names}
        total_none = [sum(r["records"][n]["seconds"] for n in names) for r in none]
        cpu_bw, cpu_none = _cpu_per_student(bw), _cpu_per_student(none)
        cpu_per = {n: {"bwrap": spread(cpu_bw.get(n, [])), "none": spread(cpu_none.get(n, [])),
                       "ratio": ratio(median(cpu_bw.get(n, [])), median(cpu_none.get(n, [])))} for n in names}
        cpu_total_bw = [sum(r["breakdown"][n].get("cpu_seconds") or 0 for n in names) for r in bw]
        cpu_total_none = [sum(r["breakdown"][n].get("cpu_seconds") or 0 for n in names) for r in none]
        summary["a_isolation"] = {
            "what": "per-submission wall seconds of the isolated nbgrader autograde (SubmissionRecord.seconds), "
                    "workers=1, bwrap vs CH11_SANDBOX=none; CPU: the nbgrader process and everything it started",
            "per_submission_cpu": cpu_per,
            "all_submissions_cpu_seconds": {"bwrap": spread(cpu_total_bw), "none": spread(cpu_total_none)},
            "ratio_cpu_all_submissions": ratio(median(cpu_total_bw), median(cpu_total_none)),
            "per_submission": per,
            "all_submissions_seconds": {"bwrap": spread(total_bw), "none": spread(total_none)},
            "ratio_all_submissions": ratio(median(total_bw), median(total_none)),
            "ratio_same_repetition": [ratio(b, n) for b, n in zip(total_bw, total_none, strict=False)],
            "max_ratio_per_submission": max(v["ratio"] for v in per.values()),
            "target": "<= 1.3",
            "phases_bwrap": {n: _phase_medians(bw, n) for n in names},
            "phases_none": {n: _phase_medians(none, n) for n in names},
        }
    if "plain" in runs:  # (b)
        plain = runs["plain"]
        per = {}
        for n in names:
            stretch = [r["breakdown"][n]["process"] for r in plain]
            per[n] = {"pipeline": spread(seconds_bw[n]), "plain_in_process": spread(stretch),
                      "ratio": ratio(median(seconds_bw[n]), median(stretch))}
        summary["b_vs_plain"] = {
            "what": "pipeline: grade_class(workers=1, bwrap) with feedback and export; plain: nbgrader autograde "
                    "(one process for the class), generate_feedback, export with nbgrader's default config",
            "per_submission": per,
            "plain_autograde_startup_once": spread([r["autograde_startup"] for r in plain]),
            "autograde_all_submissions_seconds": {"pipeline": spread(total_bw),
                                                  "plain": spread([r["autograde"] for r in plain])},
            "ratio_autograde": ratio(median(total_bw), median(r["autograde"] for r in plain)),
            "class_end_to_end_seconds": {"pipeline": spread([r["elapsed"] for r in bw]),
                                         "plain": spread([r["elapsed"] for r in plain])},
            "ratio_end_to_end": ratio(median(r["elapsed"] for r in bw), median(r["elapsed"] for r in plain)),
            "cpu_seconds_end_to_end": {"pipeline": spread(_own(bw, "cpu")), "plain": spread(_own(plain, "cpu"))},
            "ratio_cpu_end_to_end": ratio(median(_own(bw, "cpu")), median(_own(plain, "cpu"))),
            "cpu_seconds_autograde": {
                "pipeline": spread([sum(r["breakdown"][n].get("cpu_seconds") or 0 for n in names) for r in bw]),
                "plain": spread([r["cpu_seconds_by_process"].get("autograde") or 0 for r in plain])},
            "pipeline_batch_steps": {k: median(r[k] for r in bw) for k in
                                     ("before_grading", "grading", "merge_and_cleanup", "feedback_step",
                                      "export_and_reports", "elapsed")},
            "plain_steps": {k: median(r[k] for r in plain) for k in ("autograde", "feedback", "export", "elapsed")},
            "phases_pipeline": {n: _phase_medians(bw, n) for n in names},
            "phases_plain": {n: _phase_medians(plain, n) for n in names},
        }
        if "bwrap_w1_nofork" in runs:
            nofork = runs["bwrap_w1_nofork"]
            cpu_bw, cpu_nofork = _cpu_per_student(bw), _cpu_per_student(nofork)
            cpu_plain = {n: [r["breakdown"][n].get("cpu_seconds") for r in plain
                             if r["breakdown"][n].get("cpu_seconds") is not None] for n in names}
            seconds_nofork = _per_student(nofork)
            summary["b_vs_plain"]["zygote"] = {
                "what": "the pipeline with its zygote (bwrap_w1) and without (bwrap_w1_nofork: an interpreter per "
                        "runner, kernel and worker), against plain nbgrader: per-submission wall seconds and CPU "
                        "seconds of the isolated nbgrader process and everything it started",
                "per_submission_seconds": {n: {"zygote": spread(seconds_bw[n]), "no_zygote": spread(seconds_nofork[n]),
                                               "plain": per[n]["plain_in_process"]} for n in names},
                "per_submission_cpu": {n: {"zygote": spread(cpu_bw.get(n, [])),
                                           "no_zygote": spread(cpu_nofork.get(n, [])),
                                           "plain": spread(cpu_plain[n])} for n in names},
                "cpu_seconds_autograde": {
                    "zygote": spread([sum(r["breakdown"][n].get("cpu_seconds") or 0 for n in names) for r in bw]),
                    "no_zygote": spread([sum(r["breakdown"][n].get("cpu_seconds") or 0 for n in names)
                                         for r in nofork])},
                "autograde_all_submissions_seconds": {
                    "zygote": spread(total_bw),
                    "no_zygote": spread([sum(r["records"][n]["seconds"] for n in names) for r in nofork])},
                "ratio_autograde_zygote_vs_plain": ratio(median(total_bw), median(r["autograde"] for r in plain)),
                "ratio_autograde_no_zygote_vs_plain": ratio(
                    median(sum(r["records"][n]["seconds"] for n in names) for r in nofork),
                    median(r["autograde"] for r in plain)),
                "phases_no_zygote": {n: _phase_medians(nofork, n) for n in names},
            }
        if "bwrap_w1_freshnb" in runs:
            fresh = runs["bwrap_w1_freshnb"]
            seconds_fresh, cpu_bw, cpu_fresh = _per_student(fresh), _cpu_per_student(bw), _cpu_per_student(fresh)
            summary["b_vs_plain"]["nbgrader_fork"] = {
                "what": "the pipeline forking each submission's nbgrader from one pre-imported process per slot "
                        "(bwrap_w1) and starting it afresh (bwrap_w1_freshnb); per-submission wall seconds "
                        "(SubmissionRecord.seconds), the nbgrader process's start (created to first span) and CPU "
                        "seconds of the nbgrader process and everything it started; whole runs' own CPU includes "
                        "the fork server's imports, once per slot",
                "per_submission_seconds": {n: {"forked": spread(seconds_bw[n]), "fresh": spread(seconds_fresh[n])}
                                           for n in names},
                "startup_seconds": {n: {"forked": _phase_medians(bw, n).get("startup"),
                                        "fresh": _phase_medians(fresh, n).get("startup")} for n in names},
                "per_submission_cpu": {n: {"forked": spread(cpu_bw.get(n, [])), "fresh": spread(cpu_fresh.get(n, []))}
                                       for n in names},
                "autograde_all_submissions_seconds": {
                    "forked": spread(total_bw),
                    "fresh": spread([sum(r["records"][n]["seconds"] for n in names) for r in fresh])},
                "run_cpu_seconds_end_to_end": {"forked": spread(_own(bw, "cpu")), "fresh": spread(_own(fresh, "cpu"))},
                "ratio_autograde_fresh_vs_plain": ratio(
                    median(sum(r["records"][n]["seconds"] for n in names) for r in fresh),
                    median(r["autograde"] for r in plain)),
            }
    if "bwrap_w2" in runs:  # (c)
        w2 = runs["bwrap_w2"]
        durations = [median(seconds_bw[n]) for n in names]  # grade_class takes jobs in student-id order
        bound = sum(durations) / _makespan(durations, 2)
        seconds_w2 = _per_student(w2)
        summary["c_workers"] = {
            "what": "grade_class over the same class with workers=1 and workers=2 (bwrap); grading = from intake "
                    "to the last merge, elapsed = the whole call including feedback and export",
            "elapsed_seconds": {"w1": spread([r["elapsed"] for r in bw]), "w2": spread([r["elapsed"] for r in w2])},
            "grading_seconds": {"w1": spread([r["grading"] for r in bw]), "w2": spread([r["grading"] for r in w2])},
            "speedup_elapsed": ratio(median(r["elapsed"] for r in bw), median(r["elapsed"] for r in w2)),
            "speedup_grading": ratio(median(r["grading"] for r in bw), median(r["grading"] for r in w2)),
            "speedup_bound_from_job_lengths": round(bound, 3),
            "own_cores_used": {"w1": spread(_own(bw, "cores")), "w2": spread(_own(w2, "cores"))},
            "own_cpu_seconds": {"w1": spread(_own(bw, "cpu")), "w2": spread(_own(w2, "cpu"))},
            "speedup_same_repetition": [ratio(a["elapsed"], b["elapsed"]) for a, b in zip(bw, w2, strict=False)],
            "other_processes_cores": {"w1": [r["conditions"].foreign_cores for r in bw],
                                      "w2": [r["conditions"].foreign_cores for r in w2]},
            "per_submission_slowdown_w2_over_w1": {n: ratio(median(seconds_w2[n]), median(seconds_bw[n]))
                                                   for n in names},
            "target": ">= 1.7",
        }
    return summary


# --------------------------------------------------------------------------- part d


def make_large_class(dest: Path, n: int, notebooks: list[str], class_dir: Path) -> list[str]:
    """``n`` submissions cycling the demo students: ids ``<demo id>-<i>``, only ``notebooks``, distinct timestamps."""
    if dest.exists():
        shutil.rmtree(dest)
    base = students(class_dir)
    ids = []
    for i in range(n):
        who = base[i % len(base)]
        sid = f"{who}-{i:04d}"
        target = dest / sid / ASSIGNMENT
        target.mkdir(parents=True)
        for nb in notebooks:
            shutil.copy2(class_dir / who / ASSIGNMENT / nb, target / nb)
        # A distinct submission time per copy, so every input digest differs too.
        stamp = f"2026-11-20 {10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000000 UTC"
        (target / "timestamp.txt").write_text(stamp + "\n")
        ids.append(sid)
    return ids


def _vmrss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_child(source: Path, course: Path, workers: int, sandbox: str, out: Path) -> int:
    """The orchestrator under test: ``grade_class`` in this process, then its own rusage."""
    import resource

    from ch11_autograder.batch import BatchOptions, grade_class

    curve: list[tuple[int, int]] = []

    def progress(event: Any) -> None:
        if event.record is not None:
            curve.append((event.done, _vmrss_kib()))

    report = grade_class(source, course, BatchOptions(workers=workers, sandbox=sandbox), progress=progress)
    self_ru = resource.getrusage(resource.RUSAGE_SELF)
    kids_ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    statuses: dict[str, int] = {}
    for r in report.records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    csv_rows = len(report.csv_path.read_text().splitlines()) - 1
    out.write_text(json.dumps({
        "orchestrator_max_rss_kib": self_ru.ru_maxrss,
        "largest_descendant_max_rss_kib": kids_ru.ru_maxrss,
        "orchestrator_cpu_seconds": round(self_ru.ru_utime + self_ru.ru_stime, 2),
        "descendants_cpu_seconds": round(kids_ru.ru_utime + kids_ru.ru_stime, 2),
        "elapsed": round(report.elapsed_seconds, 1),
        "statuses": statuses,
        "csv_rows": csv_rows,
        "problems": report.problems,
        "rss_curve_kib": curve[:: max(1, len(curve) // 20)] + curve[-1:],
    }))
    return 0


class TreeSampler(threading.Thread):
    """Samples RSS and PSS of a process and all its descendants every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.interval = interval
        self.stop = threading.Event()
        self.samples = 0
        self.peak = {"orchestrator_rss": 0, "tree_rss": 0, "tree_pss": 0, "tree_processes": 0}

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            rss = pss = 0
            own = 0
            for p in procs:
                try:
                    info = p.memory_full_info()
                except psutil.Error:
                    continue
                rss += info.rss
                pss += getattr(info, "pss", info.rss)
                if p.pid == self.root.pid:
                    own = info.rss
            self.samples += 1
            for key, value in (("orchestrator_rss", own), ("tree_rss", rss), ("tree_pss", pss),
                               ("tree_processes", len(procs))):
                self.peak[key] = max(self.peak[key], value)
            self.stop.wait(self.interval)


def run_memory(n: int, notebooks: list[str], workers: int, sandbox: str, class_dir: Path,
               execute: bool) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    template = make_course_template(WORK, "pipeline" if execute else "pipeline-noexec")
    source = WORK / f"class-{n}"
    make_large_class(source, n, notebooks, class_dir)
    course = fresh_copy(template, WORK / f"memory-{n}")
    out = WORK / f"memory-{n}.json"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != TIMINGS_ENV}
    argv = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(source), str(course),
            "--workers", str(workers), "--sandbox", sandbox, "--child-out", str(out)]
    with Measure() as m:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sampler = TreeSampler(proc.pid, 0.25)
        sampler.start()
        _, err = proc.communicate()
        sampler.stop.set()
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"memory child failed ({proc.returncode}):\n{err[-3000:]}")
    child = json.loads(out.read_text())
    mib = 1024**2
    return {
        "submissions": n, "notebooks_per_submission": notebooks, "workers": workers, "sandbox": sandbox,
        "notebooks_executed_for_outputs": execute,
        "child": child,
        "orchestrator_max_rss_mib": round(child["orchestrator_max_rss_kib"] / 1024, 1),
        "largest_descendant_max_rss_mib": round(child["largest_descendant_max_rss_kib"] / 1024, 1),
        "sampled_peak": {
            "orchestrator_rss_mib": round(sampler.peak["orchestrator_rss"] / mib, 1),
            "tree_rss_mib": round(sampler.peak["tree_rss"] / mib, 1),
            "tree_pss_mib": round(sampler.peak["tree_pss"] / mib, 1),
            "tree_processes": sampler.peak["tree_processes"],
            "samples": sampler.samples, "interval_seconds": 0.25,
        },
        "conditions": m.conditions,
    }


# --------------------------------------------------------------------------- part e


def run_large(n: int, workers: int, class_dir: Path) -> dict[str, Any]:
    """Part e (bench/large_class.py): ``n`` mixed submissions, the pipeline with ``workers`` against plain nbgrader."""
    from large_class import make_mixed_class

    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / "large-class"
    made = make_mixed_class(source, n, class_dir)
    print(f"part e: {n} submissions from {made['profiles']} profiles in {source}", flush=True)
    pipe = pipeline_run("large-pipeline", make_course_template(WORK, "pipeline"), source, workers=workers,
                        sandbox="bwrap")
    c = pipe["conditions"]
    print(f"part e: pipeline {pipe['elapsed']:.0f} s, load {c.load_before[0]:.2f}->{c.load_after[0]:.2f}", flush=True)
    plain = plain_run("large-plain", make_course_template(WORK, "plain"), source)
    c = plain["conditions"]
    print(f"part e: plain {plain['elapsed']:.0f} s, load {c.load_before[0]:.2f}->{c.load_after[0]:.2f}", flush=True)

    def side(elapsed: float, cpu: float) -> dict[str, float]:
        return {"elapsed_seconds": round(elapsed, 1), "submissions_per_minute": round(n / (elapsed / 60), 2),
                "cpu_seconds": round(cpu, 1), "cpu_seconds_per_submission": round(cpu / n, 2)}

    statuses: dict[str, int] = {}
    for record in pipe["records"].values():
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    return {
        "what": "a class of n submissions (bench/large_class.py) graded end to end: the pipeline "
                f"(grade_class, workers={workers}, bwrap, feedback and export) and plain nbgrader (autograde, "
                "generate_feedback, export; one process each); CPU: this process and everything it reaped",
        "class": made,
        "pipeline": {**side(pipe["elapsed"], pipe["conditions"].own_cpu_seconds), "statuses": statuses,
                     "steps": {k: pipe[k] for k in ("before_grading", "grading", "feedback_step",
                                                    "export_and_reports")}},
        "plain": {**side(plain["elapsed"], plain["conditions"].own_cpu_seconds),
                  "steps": {k: plain[k] for k in ("autograde", "feedback", "export")},
                  "autograde_cpu_seconds": plain["cpu_seconds_by_process"].get("autograde")},
        "conditions": {"pipeline": pipe["conditions"], "plain": plain["conditions"]},
    }


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="abcd", help="any of a, b, c, d, e (default: abcd)")
    parser.add_argument("--class-size", type=int, default=200, help="submissions of part e's class (default 200)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of a-c (default 3)")
    parser.add_argument("--memory-submissions", type=int, default=200)
    parser.add_argument("--memory-notebooks", default="ex4_audit.ipynb",
                        help="comma-separated notebooks each generated submission carries (part d)")
    parser.add_argument("--memory-workers", type=int, default=2)
    parser.add_argument("--memory-sandbox", default="none")
    parser.add_argument("--memory-execute", action="store_true",
                        help="part d: keep executing notebooks for their outputs (default: skipped, cheaper)")
    parser.add_argument("--class-dir", type=Path, default=DEMO_CLASS_DIR)
    parser.add_argument("--students", default=",".join(DEFAULT_STUDENTS),
                        help="comma-separated students of the class graded in parts a-c, or 'all' "
                             f"(default: {','.join(DEFAULT_STUDENTS)})")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--memory-child", nargs=2, type=Path, metavar=("SOURCE", "COURSE"), help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--sandbox", default="none", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        return memory_child(*args.memory_child, args.workers, args.sandbox, args.child_out)

    # A TERM (or a background job's ignored INT) must still stop the batch and leave no cgroup behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    cpu_method = account_own_cpu()
    try:
        return _bench(args, argv, started, cpu_method)
    finally:
        release_own_cpu()


def _bench(args: argparse.Namespace, argv: list[str] | None, started: float, cpu_method: str) -> int:
    info = machine()
    info["own_cpu_accounting"] = cpu_method
    print(f"machine: nproc {info['nproc']}, {info['cpu_model']}, load {info['load_at_start']}", flush=True)
    cost_parts = "".join(p for p in args.parts if p in "abc")
    if cost_parts:
        WORK.mkdir(parents=True, exist_ok=True)
        cost = run_cost(args.repeats, cost_parts, class_subset(args.class_dir, args.students))
        cost["machine"] = info
        cost["repeats"] = args.repeats
        cost["parts"] = cost_parts
        cost["command"] = "python bench/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
        cost["total_seconds"] = round(time.perf_counter() - started, 1)
        write_json(args.results / "cost.json", cost)
        print(json.dumps({k: v for k, v in cost["summary"].items() if not k.startswith(("b_", "a_"))}, indent=1,
                         default=str))
    if "d" in args.parts:
        t = time.perf_counter()
        mem = run_memory(args.memory_submissions, args.memory_notebooks.split(","), args.memory_workers,
                         args.memory_sandbox, args.class_dir, args.memory_execute)
        mem["machine"] = machine()
        mem["total_seconds"] = round(time.perf_counter() - t, 1)
        write_json(args.results / "memory.json", mem)
        print(json.dumps({k: v for k, v in mem.items() if k not in ("machine", "child")}, indent=1, default=str))
    if "e" in args.parts:
        t = time.perf_counter()
        large = run_large(args.class_size, 2, args.class_dir)
        large["machine"] = machine()
        large["command"] = "python bench/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
        large["total_seconds"] = round(time.perf_counter() - t, 1)
        write_json(args.results / "large.json", large)
        print(json.dumps({k: large[k] for k in ("pipeline", "plain")}, indent=1, default=str))
    print(f"bench finished in {time.perf_counter() - started:.0f} s; results in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
