"""Where one student's wait goes, second by second: how many cores the grader keeps busy, and with what.

    .venv/bin/python bench/cpu_timeline.py [--student ada] [--workers 2] [--bucket 1.0]
                                           [--out bench/results/cpu_timeline_ada.json]

Runs ``ch11-grade batch`` for one demo student into a fresh course (as ``one_submission.py``'s
pipeline run does, bwrap, every core) and, every 20 ms, reads ``/proc/<pid>/stat`` of every process
that was not there before it started: CPU seconds (user + system) per process, each process put in
one role by its ancestry when first seen:

* ``ch11-grade``: the batch command itself;
* ``nbgrader server``: the nbgrader fork server (its imports, then its forks' bookkeeping);
* ``nbgrader forks``: the server's children (the submission's ``autograde``, hypothesis drawing
  included, and the course's ``generate_feedback`` and ``export``);
* ``zygote starts``: a submission's zygotes (imports, before any run);
* ``runs``: the zygotes' forks (notebook runners, kernels, verdict workers);
* ``other``: sandbox probes, the font list, anything else.

Per bucket (``--bucket`` seconds) it reports the cores busy in each role, and the moment the
student's last feedback page exists (the end of the wait ``one_submission.py`` measures); the
command's later steps (export, reports) are shown after it. A second idle core is what more
concurrency could still use; two busy cores are what only less CPU can shorten. Also written: a
stacked plot of the same (``--out`` with ``.png``). The machine must be otherwise idle: every new
process is counted. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR, DEMO_CLASS_DIR, REPO_ROOT
from common import machine, make_course_template, write_json

WORK = BUILD_DIR / "bench" / "cpu-timeline"
BIN = Path(sys.executable).parent
TICK = os.sysconf("SC_CLK_TCK")
ROLES = ("ch11-grade", "nbgrader server", "nbgrader forks", "zygote starts", "runs", "other")


def _scan() -> dict[tuple[int, int], tuple[int, int, str]]:
    """Every process: (pid, start tick) -> (CPU ticks, parent pid, command)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        found[(int(entry), int(fields[19]))] = (int(fields[11]) + int(fields[12]), int(fields[1]), cmd or f"[{comm}]")
    return found


def _role(pid: int, parents: dict[int, int], commands: dict[int, str], main: int) -> str:
    """The role of ``pid`` by its command and its ancestors' (as first seen)."""
    cmd = commands.get(pid, "")
    parent = parents.get(pid, 0)
    if pid == main:
        return "ch11-grade"
    if "nbgrader_fork" in cmd and parent == main:
        return "nbgrader server"
    if "zygote.py" in cmd and "bwrap" in commands.get(parent, ""):
        return "zygote starts"
    chain, seen = parent, set()
    while chain and chain not in seen:
        seen.add(chain)
        above = commands.get(chain, "")
        if "zygote.py" in above:
            return "runs"
        if "nbgrader_fork" in above and parents.get(chain) == main:
            return "nbgrader forks"
        chain = parents.get(chain, 0)
    return "other"


def run(student: str, workers: int, bucket: float) -> dict[str, Any]:
    """One sampled ``ch11-grade batch`` of ``student``: per-bucket cores by role, totals, when the pages existed."""
    template = make_course_template(WORK, "pipeline")
    course, source = WORK / "course", WORK / "source"
    for folder in (course, source):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, course, symlinks=True)
    shutil.copytree(DEMO_CLASS_DIR / student, source / student)
    notebooks = sorted(p.stem for p in (course / "source" / ASSIGNMENT).glob("*.ipynb"))
    pages = [course / "feedback" / student / ASSIGNMENT / f"{nb}.html" for nb in notebooks]
    env = {k: v for k, v in os.environ.items() if k != "CH11_VERDICT_CACHE"}
    before = set(_scan())
    started = time.monotonic()
    proc = subprocess.Popen([str(BIN / "ch11-grade"), "batch", str(source), "--course", str(course),
                             "--workers", str(workers), "--sandbox", "bwrap"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    last: dict[tuple[int, int], int] = {}
    per_bucket: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    pages_at = None
    while True:
        ended = proc.poll() is not None
        now = time.monotonic() - started
        for key, (ticks, parent, cmd) in _scan().items():
            if key in before:
                continue
            if key[0] not in parents:
                parents[key[0]], commands[key[0]] = parent, cmd
            delta = ticks - last.get(key, 0)
            last[key] = ticks
            if delta:
                role = _role(key[0], parents, commands, proc.pid)
                per_bucket[int(now // bucket)][role] += delta / TICK
                totals[role] += delta / TICK
        if pages_at is None and all(p.is_file() for p in pages):
            pages_at = now
            totals_at_pages = dict(totals)
        if ended:
            break
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SystemExit(f"ch11-grade batch failed for {student} (exit {proc.returncode})")
    rows = [{"from": round(n * bucket, 2), "to": round((n + 1) * bucket, 2),
             "cores": round(sum(c.values()) / bucket, 2),
             "roles": {r: round(c[r] / bucket, 2) for r in ROLES if c[r]}}
            for n, c in sorted(per_bucket.items())]
    return {"student": student, "workers": workers, "bucket_seconds": bucket,
            "pages_seconds": round(pages_at or 0.0, 2), "command_seconds": round(time.monotonic() - started, 2),
            "cpu_seconds_to_pages": {r: round(totals_at_pages.get(r, 0.0), 2) for r in ROLES},
            "cpu_seconds_total": {r: round(totals[r], 2) for r in ROLES}, "buckets": rows}


def render(result: dict[str, Any]) -> str:
    """The buckets as a table (cores per role), marking the bucket where the pages existed."""
    short = {"ch11-grade": "cmd", "nbgrader server": "server", "nbgrader forks": "nbgrader",
             "zygote starts": "zygotes", "runs": "runs", "other": "other"}
    lines = ["    s   cores  " + "  ".join(f"{short[r]:>8}" for r in ROLES)]
    for row in result["buckets"]:
        mark = " <- pages" if row["from"] <= result["pages_seconds"] < row["to"] else ""
        cells = "  ".join(f"{row['roles'].get(r, 0.0):8.2f}" for r in ROLES)
        lines.append(f"{row['from']:5.1f}  {row['cores']:5.2f}  {cells}{mark}")
    to_pages = result["cpu_seconds_to_pages"]
    lines.append(f"feedback pages at {result['pages_seconds']} s; CPU until then {sum(to_pages.values()):.1f} s: "
                 + ", ".join(f"{r} {v:.1f}" for r, v in to_pages.items()))
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    """A stacked step plot of cores by role over time, with the pages' moment marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["buckets"]
    starts = [row["from"] for row in rows]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.stackplot(starts, *[[row["roles"].get(r, 0.0) for row in rows] for r in ROLES], labels=ROLES, step="post")
    cores = result.get("machine", {}).get("nproc") or os.cpu_count() or 2
    ax.set_ylim(0, cores + 0.3)
    ax.axhline(cores, color="grey", linewidth=0.8)
    ax.axvline(result["pages_seconds"], color="black", linestyle="--", linewidth=1)
    ax.text(result["pages_seconds"], cores + 0.25, " feedback written", va="top", fontsize=8)
    ax.set_xlabel("seconds from the command's start")
    ax.set_ylabel("cores busy")
    ax.set_title(f"ch11-grade batch, one submission ({result['student']}), cores busy by role")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, ncol=len(ROLES), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", default="ada")
    parser.add_argument("--workers", type=int, default=2, help="the command's --workers (its default is 2)")
    parser.add_argument("--bucket", type=float, default=1.0, help="seconds per row")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "cpu_timeline_ada.json")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    result = {"machine": machine(), **run(args.student, args.workers, args.bucket)}
    write_json(args.out, result)
    plot(result, args.out.with_suffix(".png"))
    text = render(result)
    args.out.with_suffix(".txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
