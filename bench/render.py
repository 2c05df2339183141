"""Markdown tables from bench/results/cost.json and memory.json.

    .venv/bin/python bench/render.py            # full tables (also written to bench/results/summary.md)
    .venv/bin/python bench/render.py --short    # the ratio table of parts a-d alone

Only formats what the benchmarks measured; it computes no new numbers except
sums of medians that the tables label as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _load(name: str, results: Path) -> dict[str, Any] | None:
    path = results / name
    return json.loads(path.read_text()) if path.is_file() else None


def _s(value: float | None, unit: str = " s", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def _range(spread: dict[str, Any], unit: str = " s") -> str:
    """``12.3 s (11.9-13.0)``: median (min-max)."""
    if not spread:
        return "n/a"
    if spread.get("n", 1) == 1:
        return _s(spread["median"], unit)
    return f"{spread['median']:.1f}{unit} ({spread['min']:.1f}-{spread['max']:.1f})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def short(cost: dict[str, Any] | None, mem: dict[str, Any] | None) -> list[str]:
    """The README's table: one line per measured ratio."""
    rows: list[list[str]] = []
    if cost:
        s = cost["summary"]
        n = str(cost["repeats"])
        if "a_isolation" in s:
            a = s["a_isolation"]
            per = ", ".join(f"{k} {v['ratio']:.2f}" for k, v in a["per_submission"].items())
            rows.append(["(a) isolation: bwrap / `CH11_SANDBOX=none`, wall time per submission",
                         f"{per}; all {len(a['per_submission'])}: **{a['ratio_all_submissions']:.2f}x**",
                         "<= 1.3x", n])
            if "per_submission_cpu" in a:
                per_cpu = ", ".join(f"{k} {v['ratio']:.2f}" for k, v in a["per_submission_cpu"].items())
                rows.append(["(a) same, CPU time per submission (nbgrader and everything it starts)",
                             f"{per_cpu}; all: **{a['ratio_cpu_all_submissions']:.2f}x**", "<= 1.3x", n])
        if "b_vs_plain" in s:
            b = s["b_vs_plain"]
            ag, e2e = b["autograde_all_submissions_seconds"], b["class_end_to_end_seconds"]
            rows.append(["(b) pipeline / plain `nbgrader autograde`, autograding the class",
                         f"**{b['ratio_autograde']:.2f}x** ({_range(ag['pipeline'])} vs {_range(ag['plain'])})",
                         "report", n])
            rows.append(["(b) same, end to end with feedback and export",
                         f"**{b['ratio_end_to_end']:.2f}x** ({_range(e2e['pipeline'])} vs {_range(e2e['plain'])})",
                         "report", n])
            if "ratio_cpu_end_to_end" in b:
                cpu = b["cpu_seconds_end_to_end"]
                rows.append(["(b) same, end to end, CPU time",
                             f"**{b['ratio_cpu_end_to_end']:.2f}x** ({_range(cpu['pipeline'], ' CPU-s')} vs "
                             f"{_range(cpu['plain'], ' CPU-s')})", "report", n])
        if "c_workers" in s:
            c = s["c_workers"]
            rows.append(["(c) speedup 1 -> 2 workers (bwrap), grading phase / whole batch",
                         f"**{c['speedup_grading']:.2f}x** / {c['speedup_elapsed']:.2f}x (job-length bound "
                         f"{c['speedup_bound_from_job_lengths']:.2f}x)", ">= 1.7x", n])
    if mem:
        sp = mem["sampled_peak"]
        rows.append([f"(d) orchestrator peak RSS, {mem['submissions']} submissions",
                     f"**{mem['orchestrator_max_rss_mib']:.0f} MiB** (whole process tree, sampled: "
                     f"{sp['tree_rss_mib']:.0f} MiB RSS, {sp['tree_pss_mib']:.0f} MiB PSS)", "report", "1"])
    return _table(["measure", "result (median)", "target", "runs"], rows)


PHASE_LABELS = [
    ("startup", "nbgrader process start (Python, imports, app)"),
    ("init_assignment", "nbgrader per-student set-up"),
    ("sanitize", "sanitize pass (5 notebooks)"),
    ("execute", "notebook execution"),
    ("worker_start", "verdict worker starts"),
    ("suite_import", "importing the suites"),
    ("suites", "hypothesis suites (worker starts excluded)"),
    ("verdicts_other", "rest of TrustedVerdicts"),
    ("autograde_other", "rest of the autograde pass (nbconvert, SaveAutoGrades, ...)"),
    ("orchestrator_side", "outside nbgrader: isolated course copy, spawn, reading the result"),
]
PIPELINE_ONLY = {"startup", "worker_start", "suite_import", "suites", "verdicts_other", "orchestrator_side"}


def _phase_table(phases: dict[str, dict[str, Any]], students: list[str], plain: bool) -> list[str]:
    rows = []
    for key, label in PHASE_LABELS:
        if plain and key in PIPELINE_ONLY:
            continue
        if key == "execute":
            label += " (Execute, in the kernel)" if plain else " (SandboxedExecute)"
        rows.append([label, *(_s(phases[st].get(key)) for st in students)])
    if plain:
        totals = [phases[st]["process"] for st in students]
        label = "**total** (this student's stretch of the one process)"
    else:
        totals = [phases[st]["process"] + phases[st].get("orchestrator_side", 0) for st in students]
        label = "**total** (SubmissionRecord.seconds)"
    rows.append([label, *(_s(t) for t in totals)])
    return _table(["phase (median seconds)", *students], rows)


def _machine(cost: dict[str, Any]) -> list[str]:
    s, m = cost["summary"], cost["machine"]
    load, other = s["noise"]["load_1min_before_and_after_runs"], s["noise"]["other_processes_cores"]
    return [
        "## Machine and noise (parts a-c)", "",
        f"- {m['nproc']} cores ({m['cpu_model']}), {m['mem_gib']} GiB, kernel {m['kernel']}, "
        f"Python {m['python']}, commit {m['commit']}",
        f"- load at start: {m['load_at_start']} (`{m['uptime']}`)",
        f"- 1-minute load before/after each run: median {load['median']}, range {load['min']}-{load['max']}",
        f"- CPU used by other processes during each run, in cores (of {m['nproc']}): median {other['median']}, "
        f"range {other['min']}-{other['max']} (own CPU accounted by {m.get('own_cpu_accounting', '?')})",
        f"- {cost['repeats']} repetitions, {cost['total_seconds']:.0f} s in all; scores identical in every "
        f"pipeline run: {s['scores_identical_across_pipeline_runs']}; every submission graded: {s['all_graded']}",
        f"- scores: {s['scores']}", "",
    ]


def _runs(cost: dict[str, Any]) -> list[str]:
    rows = []
    for name, runs in cost["runs"].items():
        for i, r in enumerate(runs):
            c = r["conditions"]
            rows.append([name, str(i + 1), _s(r["elapsed"]), f"{c['load_before'][0]} -> {c['load_after'][0]}",
                         f"{c['foreign_cores']:.2f}"])
    return ["### Every run", "",
            *_table(["variant", "rep", "wall", "load (1 min)", "other processes (cores)"], rows), ""]


def _part_a(a: dict[str, Any], students: list[str]) -> list[str]:
    rows = [[st, _range(v["bwrap"]), _range(v["none"]), f"{v['ratio']:.2f}"]
            for st, v in a["per_submission"].items()]
    reps = ", ".join(f"{x:.2f}" for x in a["ratio_same_repetition"])
    total = a["all_submissions_seconds"]
    rows.append(["all", _range(total["bwrap"]), _range(total["none"]),
                 f"{a['ratio_all_submissions']:.2f} (per repetition: {reps})"])
    diff = []
    for st in students:
        pb, pn = a["phases_bwrap"][st], a["phases_none"][st]
        diff.append([st, f"{_s(pb['execute_sandbox_run'])} / {_s(pn['execute_sandbox_run'])}",
                     f"{_s(pb['worker_start'])} / {_s(pn['worker_start'])}",
                     f"{_s(pb['suites'])} / {_s(pn['suites'])}", _s(pb["sandbox_probe"], digits=2)])
    cpu_rows = []
    if "per_submission_cpu" in a:
        cpu_rows = [[st, _range(v["bwrap"], " CPU-s"), _range(v["none"], " CPU-s"), f"{v['ratio']:.2f}"]
                    for st, v in a["per_submission_cpu"].items()]
        total = a["all_submissions_cpu_seconds"]
        cpu_rows.append(["all", _range(total["bwrap"], " CPU-s"), _range(total["none"], " CPU-s"),
                         f"{a['ratio_cpu_all_submissions']:.2f}"])
        cpu_rows = ["CPU time (the nbgrader process and everything it started, sandboxed processes included):",
                    "", *_table(["submission", "bwrap", "none", "ratio"], cpu_rows), ""]
    return ["## (a) Cost of isolation", "", a["what"] + ".", "",
            *_table(["submission", "bwrap", "none", "ratio"], rows), "", *cpu_rows,
            "Where the difference is (median seconds, bwrap / none):", "",
            *_table(["submission", "notebook runs (5)", "worker starts", "suites", "bwrap probe"], diff), ""]


def _part_b(b: dict[str, Any], students: list[str]) -> list[str]:
    rows = [[st, _range(v["pipeline"]), _range(v["plain_in_process"]), f"{v['ratio']:.2f}"]
            for st, v in b["per_submission"].items()]
    st, ps = b["pipeline_batch_steps"], b["plain_steps"]
    pipe, plain = b["phases_pipeline"], b["phases_plain"]
    notebooks = sorted(pipe[students[0]]["execute_by_notebook"])
    execute = [[nb, *(_s(pipe[x]["execute_by_notebook"].get(nb)) for x in students),
                *(_s(plain[x]["execute_by_notebook"].get(nb)) for x in students)] for nb in notebooks]
    suites = [[nb, *(_s(pipe[x]["suites_by_notebook"].get(nb), digits=2) for x in students)] for nb in notebooks]
    out = ["## (b) The pipeline against plain nbgrader", "", b["what"] + ".", "",
           *_table(["submission", "pipeline (isolated process)", "plain (its stretch of one process)", "ratio"], rows),
           "", f"Plain nbgrader's process start, paid once for the class: {_range(b['plain_autograde_startup_once'])}.",
           "",
           f"Batch steps (median seconds). Pipeline: before grading {st['before_grading']}, grading {st['grading']} "
           f"(merges and clean-up {st['merge_and_cleanup']}), generate_feedback {st['feedback_step']}, export and "
           f"reports {st['export_and_reports']}, total {st['elapsed']}. Plain: autograde {ps['autograde']}, "
           f"generate_feedback {ps['feedback']}, export {ps['export']}, total {ps['elapsed']}.", "",
           *([f"CPU time: autograding the class, pipeline {_range(b['cpu_seconds_autograde']['pipeline'], ' CPU-s')}"
              f" vs plain {_range(b['cpu_seconds_autograde']['plain'], ' CPU-s')}; end to end "
              f"{_range(b['cpu_seconds_end_to_end']['pipeline'], ' CPU-s')} vs "
              f"{_range(b['cpu_seconds_end_to_end']['plain'], ' CPU-s')} ({b['ratio_cpu_end_to_end']:.2f}x).", ""]
             if "cpu_seconds_end_to_end" in b else []),
           "### Where the pipeline's time goes, per submission (bwrap, workers=1)", "",
           *_phase_table(pipe, students, plain=False), "",
           "Notebook execution per notebook (median seconds): pipeline (a fresh sandboxed runner per notebook) "
           "and plain (nbgrader's Execute):", "",
           *_table(["notebook", *[f"{x} pipeline" for x in students], *[f"{x} plain" for x in students]], execute),
           "", "Hypothesis suites per exercise notebook (median seconds, worker starts excluded):", "",
           *_table(["notebook", *students], suites), "",
           "### Plain nbgrader, per student (its stretch of the one autograde process)", "",
           *_phase_table(plain, students, plain=True), ""]
    if "import_costs" in b:
        ic = b["import_costs"]["seconds"]
        out += ["### Import costs (a fresh `python -s -c ...` each, 5 runs)", "",
                *_table(["statement", "wall"], [[k, _range(v)] for k, v in ic.items()]), ""]
    return out


def _part_c(c: dict[str, Any]) -> list[str]:
    rows = [["grading phase", _range(c["grading_seconds"]["w1"]), _range(c["grading_seconds"]["w2"]),
             f"{c['speedup_grading']:.2f}"],
            ["whole batch", _range(c["elapsed_seconds"]["w1"]), _range(c["elapsed_seconds"]["w2"]),
             f"{c['speedup_elapsed']:.2f}"]]
    slow = ", ".join(f"{k} {v:.2f}" for k, v in c["per_submission_slowdown_w2_over_w1"].items())
    extra = []
    if "own_cores_used" in c:
        same = ", ".join(f"{x:.2f}" for x in c["speedup_same_repetition"])
        other = c["other_processes_cores"]
        extra = [f"Whole-batch speedup within each repetition: {same}; other processes used "
                 f"{other['w1']} cores during the workers=1 runs and {other['w2']} during the workers=2 runs. "
                 f"Cores the batch itself used (its CPU time / wall time): workers=1 "
                 f"{_range(c['own_cores_used']['w1'], '')}, workers=2 {_range(c['own_cores_used']['w2'], '')}; "
                 f"its CPU time: workers=1 {_range(c['own_cpu_seconds']['w1'], ' CPU-s')}, workers=2 "
                 f"{_range(c['own_cpu_seconds']['w2'], ' CPU-s')}.", ""]
    return ["## (c) 1 -> 2 workers", "", c["what"] + ".", "",
            *_table(["", "workers=1", "workers=2", "speedup"], rows), "", *extra,
            f"Bound from the job lengths alone (median workers=1 seconds, taken in student order by the first free "
            f"of 2 slots): {c['speedup_bound_from_job_lengths']:.2f}x. Per-submission wall time with 2 workers "
            f"over 1: {slow}.", ""]


def _part_d(mem: dict[str, Any]) -> list[str]:
    c, ch, sp = mem["conditions"], mem["child"], mem["sampled_peak"]
    curve = ", ".join(f"{d}: {k}" for d, k in ch["rss_curve_kib"])
    return ["## (d) Memory of a large batch", "",
            f"- {mem['submissions']} submissions, notebooks per submission {mem['notebooks_per_submission']}, "
            f"workers {mem['workers']}, sandbox `{mem['sandbox']}`, notebooks executed for outputs: "
            f"{mem['notebooks_executed_for_outputs']}; statuses {ch['statuses']}, CSV rows {ch['csv_rows']}, "
            f"batch problems: {ch['problems'] or 'none'}",
            f"- wall {ch['elapsed']:.0f} s; load {c['load_before'][0]} -> {c['load_after'][0]}, other processes "
            f"{c['foreign_cores']:.2f} cores",
            f"- orchestrator max RSS (`getrusage(RUSAGE_SELF)`): **{mem['orchestrator_max_rss_mib']} MiB**",
            f"- largest single descendant's max RSS (`RUSAGE_CHILDREN`): {mem['largest_descendant_max_rss_mib']} MiB",
            f"- whole process tree, sampled every {sp['interval_seconds']} s ({sp['samples']} samples): peak "
            f"{sp['tree_rss_mib']} MiB RSS (summed over processes, so shared pages count once in each), "
            f"{sp['tree_pss_mib']} MiB PSS, "
            f"at most {sp['tree_processes']} processes",
            f"- orchestrator RSS (KiB) after n finished submissions: {curve}", ""]


def full(cost: dict[str, Any] | None, mem: dict[str, Any] | None) -> list[str]:
    out = ["## Summary", "", *short(cost, mem), ""]
    if cost:
        s = cost["summary"]
        out += _machine(cost) + _runs(cost)
        if "a_isolation" in s:
            out += _part_a(s["a_isolation"], s["students"])
        if "b_vs_plain" in s:
            out += _part_b(s["b_vs_plain"], s["students"])
        if "c_workers" in s:
            out += _part_c(s["c_workers"])
    if mem:
        out += _part_d(mem)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    cost, mem = _load("cost.json", args.results), _load("memory.json", args.results)
    if cost is None and mem is None:
        print(f"no cost.json or memory.json in {args.results}: run bench/run.py first", file=sys.stderr)
        return 1
    lines = short(cost, mem) if args.short else full(cost, mem)
    text = "\n".join(lines) + "\n"
    if not args.short:
        (args.results / "summary.md").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
