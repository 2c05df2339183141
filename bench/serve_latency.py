"""Grade on submit: from ``nbgrader submit`` returning to the feedback being fetchable.

    .venv/bin/python bench/serve_latency.py [--students ada,blank,hal,lin] [--repeats 1]
                                            [--changed ex3_block_length] [--out bench/results/serve_latency.json]

For each demo student (``demo/class/<student>/ch11/``), one at a time: the notebooks go into
the student's fetched assignment folder, ``nbgrader submit ch11`` runs, and the clock starts
when it returns; it stops when the practice feedback page is in the exchange's feedback
directory under the name ``nbgrader fetch_feedback`` looks for (polled every 0.1 s). The
service is the real ``ch11-grade serve`` (1 worker, ``properties`` level) in its own process,
started once. Three kinds of submission per student and repetition, in this order:

* ``cold``: the service's verdict cache (``$CH11_VERDICT_CACHE``, a folder of this run) is
  emptied first, so every notebook is graded (the demo students share notebooks: hal's answered
  exercises are ada's, its stubs blank's, so without emptying most of them would be reused);
* ``identical``: the same notebooks again (every notebook's verdicts reused);
* ``one_changed``: the same notebooks with one (``--changed``) edited: a comment line appended
  to its last code cell, so that notebook alone is graded again.

Against it, for the same submission: ``ch11-grade batch`` of a folder holding only that student,
into a fresh course, without a verdict cache (the command's wall time, and the submission's own
``seconds`` from the batch's records: the batch grader's own time for it). Reported: median and
95th percentile of the cold latencies; per cold submission, latency over the batch's own
time (the service's overhead); per ``one_changed`` submission, its latency over the same
student's cold one.

Everything runs as the current user, who is both the instructor and the student (the owner
check passes: the user owns the folders they submit). Scratch lives in ``build/bench/serve``.
Results: ``--out``, with the load averages before and after. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ch11_autograder.batch import init_course
from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.paths import ASSIGNMENT, COURSE_CONFIG, DEMO_CLASS_DIR, REPO_ROOT, SOURCE_DIR

RESULTS = REPO_ROOT / "bench" / "results"
SCRATCH = REPO_ROOT / "build" / "bench" / "serve"
COURSE_ID = "ch11-bench"
BIN = Path(sys.executable).parent


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def _course(where: Path, exchange: Path) -> Path:
    init_course(where, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    with (where / "nbgrader_config.py").open("a") as config:
        config.write(f"\nc.Exchange.root = {str(exchange)!r}\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
                     "c.ServePolicy.workers = 1\nc.ServePolicy.attempts = 1000\nc.ServePolicy.rescan_seconds = 5\n")
    return where


#: The submissions made per student and repetition, in order (see the module).
KINDS = ("cold", "identical", "one_changed")


def _edit(path: Path) -> None:
    """Append a comment line to the notebook's last code cell: the notebook's bytes change, its behaviour not."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    cell["source"] = source + "\n# edited before resubmitting"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT)
    return done.stdout.strip()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", default="ada,blank,hal,lin", help="demo students, comma-separated")
    parser.add_argument("--repeats", type=int, default=1, help="cold submissions per student (each followed by "
                        "an identical and a one-notebook-changed resubmission)")
    parser.add_argument("--changed", default="ex3_block_length", help="the notebook a one_changed resubmission edits")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve_latency.json")
    args = parser.parse_args()
    students = args.students.split(",")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    home, exchange = SCRATCH / "home", SCRATCH / "exchange"
    home.mkdir(parents=True)
    exchange.mkdir()
    exchange.chmod(0o1777)  # docs/course.md, step 7: serve refuses a root without the sticky bit
    course = _course(SCRATCH / "course", exchange)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_CONFIG_PATH": str(home / ".jupyter"), "PATH": f"{BIN}:{os.environ['PATH']}"}
    nbgrader = [str(BIN / "nbgrader")]
    flags = [f"--Exchange.root={exchange}", "--course", COURSE_ID]
    _run([*nbgrader, "generate_assignment", ASSIGNMENT], cwd=course, env=env)
    _run([*nbgrader, "release_assignment", ASSIGNMENT, *flags], cwd=course, env=env)
    _run([*nbgrader, "fetch_assignment", ASSIGNMENT, *flags], cwd=home, env=env)
    load_before = [round(x, 2) for x in os.getloadavg()]

    verdicts = SCRATCH / "verdict-cache"
    log = (SCRATCH / "serve.log").open("w")
    service = subprocess.Popen([str(BIN / "ch11-grade"), "serve", "--course", str(course)], cwd=course,
                               env={**env, "CH11_VERDICT_CACHE": str(verdicts)}, stdout=log, stderr=subprocess.STDOUT)
    cache = home / ".local/share/jupyter/nbgrader_cache" / COURSE_ID
    runs: list[dict] = []
    try:
        for repeat, student, kind in ((r, s, k) for r in range(args.repeats) for s in students for k in KINDS):
            for nb in (home / ASSIGNMENT).glob("*.ipynb"):
                nb.unlink()
            for nb in (DEMO_CLASS_DIR / student / ASSIGNMENT).glob("*.ipynb"):
                shutil.copy2(nb, home / ASSIGNMENT / nb.name)
            if kind == "cold":
                shutil.rmtree(verdicts, ignore_errors=True)
            elif kind == "one_changed":
                _edit(home / ASSIGNMENT / f"{args.changed}.ipynb")
            before = set(os.listdir(cache)) if cache.is_dir() else set()
            _run([*nbgrader, "submit", ASSIGNMENT, *flags], cwd=home, env=env)
            submitted = time.monotonic()
            (new,) = set(os.listdir(cache)) - before
            secret = (cache / new / "submission_secret.txt").read_text()
            notebooks = sorted(p.stem for p in (cache / new).glob("*.ipynb"))
            pages = [exchange / COURSE_ID / "feedback" / feedback_name(secret, nb) for nb in notebooks]
            while not all(p.is_file() and "practice feedback" in p.read_text(errors="replace") for p in pages):
                if service.poll() is not None:
                    raise SystemExit(f"the service stopped; see {SCRATCH / 'serve.log'}")
                time.sleep(0.1)
            latency = time.monotonic() - submitted
            runs.append({"student": student, "repeat": repeat, "kind": kind, "serve_seconds": round(latency, 2)})
            print(f"serve  {student} {kind}: {latency:.1f} s", flush=True)
    finally:
        service.terminate()
        service.wait(timeout=60)
        log.close()

    batch_env = {k: v for k, v in env.items() if k != "CH11_VERDICT_CACHE"}
    for run in [r for r in runs if r["kind"] == "cold"]:  # the batch grader on the same submission, alone
        student = run["student"]
        source = SCRATCH / f"batch-{student}-{run['repeat']}"
        shutil.copytree(DEMO_CLASS_DIR / student, source / student)
        fresh = _course(SCRATCH / f"batch-course-{student}-{run['repeat']}", exchange)
        started = time.monotonic()
        _run([str(BIN / "ch11-grade"), "batch", str(source), "--course", str(fresh), "--workers", "1"], env=batch_env)
        run["batch_seconds"] = round(time.monotonic() - started, 2)
        records = json.loads((fresh / "reports" / f"{ASSIGNMENT}-records.json").read_text())
        run["batch_submission_seconds"] = next(r["seconds"] for r in records if r["student"] == student)
        run["over_batch_submission"] = round(run["serve_seconds"] / run["batch_submission_seconds"], 3)
        print(f"batch  {student}: {run['batch_seconds']:.1f} s (its submission {run['batch_submission_seconds']} s)",
              flush=True)
    cold = {(r["student"], r["repeat"]): r["serve_seconds"] for r in runs if r["kind"] == "cold"}
    for run in runs:
        if run["kind"] != "cold":
            run["over_cold"] = round(run["serve_seconds"] / cold[run["student"], run["repeat"]], 3)

    def of(kind: str, key: str) -> list[float]:
        return [r[key] for r in runs if r["kind"] == kind]

    result = {
        "what": "nbgrader submit returning -> feedback fetchable (serve, 1 worker) vs ch11-grade batch of the same "
                "submission alone (1 worker, its own seconds)",
        "user": getpass.getuser(), "cpus": os.cpu_count(), "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()], "commit": _commit(), "changed": args.changed,
        "runs": runs,
        "cold_median": statistics.median(of("cold", "serve_seconds")),
        "cold_p95": _percentile(of("cold", "serve_seconds"), 0.95),
        "cold_over_batch_submission_median": statistics.median(of("cold", "over_batch_submission")),
        "identical_over_cold_median": statistics.median(of("identical", "over_cold")),
        "one_changed_over_cold_median": statistics.median(of("one_changed", "over_cold")),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
