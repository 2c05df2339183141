"""The deadline rush through the grade-on-submit service, against the batch grader on the same submissions.

    .venv/bin/python bench/serve_rush.py [--students 30] [--per-student 2] [--window 120] [--variants local,dask]

As root (the students are real unix users). ``--students`` users (``ch11rush00``, ...) are
created with ``useradd`` for the run and removed after it. Each submits ``--per-student`` times
at moments drawn uniformly (seed ``--seed``) from a window of ``--window`` seconds; the
submissions are part e's mixed class (bench/large_class.py: the demo students' answers and ada
with each catalogue wrong answer), student ``i``'s ``k``-th submission being profile
``i * per_student + k`` in turn.

How a submission reaches the exchange: the folder nbgrader 0.9.6's ``submit`` leaves in
``<exchange>/<course>/inbound`` is written directly (``<student>+ch11+<timestamp>+<random>``
holding the notebooks, ``timestamp.txt`` and a fresh 128-hex-digit ``submission_secret.txt``),
every path given to the student's unix user with ``chown``, and the folder made mode 0777 last,
as ``submit``'s final step does. This is what the service sees from a real ``nbgrader submit``
run by that user (the owner check, the readiness rule and the secret are exercised), without
paying a Python start-up of nbgrader per submission inside the measured window; the exchange
tier runs the real ``nbgrader submit`` as real users (tests/exchange/test_serve_loop.py).

Per variant, one after the other, each in a fresh copy of one course (assignment generated once):

* ``local``: ``ch11-grade serve`` (its own process, ``c.ServePolicy.workers = 2``, level
  ``properties``, attempts unlimited) grading on 2 local workers;
* ``dask``: the same with ``c.ServePolicy.cluster`` set to the address of a 2-worker
  ``LocalCluster`` (one thread per worker, 127.0.0.1 only) that this script starts once and
  keeps for the service and then the batch.

A submission's **wait** runs from its folder being complete to all of its practice feedback pages
being in the feedback directory (polled every 0.2 s); a submission replaced by a newer one of the
same student while queued never gets feedback of its own (its page says so). Reported per variant:
the longest and the median wait of each student's *first* submission until that student's first
feedback; the service's throughput, graded submissions per minute from the start of its first
grading to the end of its last (queue.db's ``started``/``finished``); and, on exactly the
submissions it graded (each as its own student id), the batch grader's throughput:
``grade_class`` (what ``ch11-grade batch`` runs) with the same workers or cluster, feedback off as
at the service's ``properties`` level, over its whole run. Scratch: ``build/bench/serve-rush``;
results: ``bench/results/serve_rush.json`` (``--out``), with the load averages. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR
from common import RESULTS, fresh_copy, load, machine, write_json

SCRATCH = BUILD_DIR / "bench" / "serve-rush"
COURSE_ID = "ch11-rush"
BIN = Path(sys.executable).parent
USER_PREFIX = "ch11rush"
#: The service prints this line once it watches the inbound folder.
SERVING = "serving  "


@dataclass
class Drop:
    """One submission of the rush."""

    student: str
    index: int
    profile: str
    at: float
    folder: str = ""
    secret: str = ""
    notebooks: tuple[str, ...] = ()
    arrived: float = 0.0
    done: float | None = None
    outcome: str = ""


def _users(n: int) -> list[str]:
    names = [f"{USER_PREFIX}{i:02d}" for i in range(n)]
    for name in names:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    return names


def _remove_users(names: list[str]) -> None:
    for name in names:
        subprocess.run(["userdel", name], capture_output=True)


def _schedule(students: list[str], per_student: int, window: float, seed: int) -> list[Drop]:
    from large_class import profiles

    kinds = list(profiles())
    rng = random.Random(seed)
    drops = []
    for i, student in enumerate(students):
        moments = sorted(rng.uniform(0, window) for _ in range(per_student))
        for k, at in enumerate(moments):
            drops.append(Drop(student, k, kinds[(i * per_student + k) % len(kinds)], at))
    return sorted(drops, key=lambda d: d.at)


def _submit(inbound: Path, drop: Drop, texts: dict[str, str]) -> None:
    """The folder ``nbgrader submit`` run by ``drop.student`` leaves (see the module)."""
    import pwd

    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d} UTC"
    folder = inbound / f"{drop.student}+{ASSIGNMENT}+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    for name, text in texts.items():
        (folder / name).write_text(text)
    (folder / "timestamp.txt").write_text(stamp)
    drop.secret = secrets.token_hex(64)
    (folder / "submission_secret.txt").write_text(drop.secret)
    entry = pwd.getpwnam(drop.student)
    for path in (folder, *folder.iterdir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o777)
    drop.arrived = time.monotonic()
    drop.folder = folder.name
    drop.notebooks = tuple(sorted(n.removesuffix(".ipynb") for n in texts))


def _poll(feedback: Path, drops: list[Drop], stop: threading.Event) -> None:
    """Mark each submitted drop done when all its pages are feedback (or one says it was replaced)."""
    while not stop.is_set():
        for drop in drops:
            if drop.done is not None or not drop.folder:
                continue
            texts = []
            for nb in drop.notebooks:
                try:
                    texts.append((feedback / feedback_name(drop.secret, nb)).read_text(errors="replace"))
                except FileNotFoundError:
                    texts.append("")
            if all("practice feedback" in t for t in texts):
                drop.done, drop.outcome = time.monotonic(), "feedback"
            elif any("<strong>Replaced</strong>" in t for t in texts):
                drop.done, drop.outcome = time.monotonic(), "replaced"
            elif any("<strong>Not graded</strong>" in t or "Could not be graded" in t for t in texts):
                drop.done, drop.outcome = time.monotonic(), "refused or failed"
        time.sleep(0.2)


def _course(template: Path, where: Path, exchange: Path, workers: int, cluster: str) -> Path:
    course = fresh_copy(template, where)
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"\nc.Exchange.root = {str(exchange)!r}\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
                     f"c.ServePolicy.workers = {workers}\nc.ServePolicy.attempts = 1000\n"
                     f"c.ServePolicy.cluster = {cluster!r}\nc.ServePolicy.rescan_seconds = 5\n"
                     "c.ServePolicy.sandbox = 'bwrap'\n")
    return course


def _template() -> Path:
    from ch11_autograder.batch import init_course
    from ch11_autograder.batch.course import ensure_assignment

    course = SCRATCH / "template"
    init_course(course)
    ensure_assignment(course, ASSIGNMENT, SCRATCH / "generate_assignment.log")
    return course


def _serve(label: str, template: Path, drops: list[Drop], texts: dict[str, dict[str, str]], workers: int,
           cluster: str, limit: float) -> dict[str, Any]:
    """One rush through ``ch11-grade serve``; fills each drop's times and returns the service's numbers."""
    exchange = SCRATCH / label / "exchange"
    inbound = exchange / COURSE_ID / "inbound"
    inbound.mkdir(parents=True)
    exchange.chmod(0o755)
    inbound.chmod(0o733)  # nbgrader's inbound: anyone may add, only the instructor lists
    course = _course(template, SCRATCH / label / "course", exchange, workers, cluster)
    log_path = SCRATCH / label / "serve.log"
    log = log_path.open("w")
    service = subprocess.Popen([str(BIN / "ch11-grade"), "serve", "--course", str(course)], cwd=course,
                               stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(exchange / COURSE_ID / "feedback", drops, stop), daemon=True)
    before = load()
    try:
        while SERVING not in log_path.read_text(errors="replace"):
            if service.poll() is not None:
                raise SystemExit(f"the service stopped; see {log_path}")
            time.sleep(0.1)
        poller.start()
        start = time.monotonic()
        for drop in drops:
            time.sleep(max(0.0, start + drop.at - time.monotonic()))
            _submit(inbound, drop, texts[drop.profile])
        while any(d.done is None for d in drops):
            if service.poll() is not None:
                raise SystemExit(f"the service stopped; see {log_path}")
            if time.monotonic() - start > limit:
                print(f"{label}: {sum(d.done is None for d in drops)} submissions without feedback after {limit:.0f} s",
                      flush=True)
                break
            time.sleep(0.5)
    finally:
        stop.set()
        service.terminate()
        service.wait(timeout=120)
        log.close()
    with sqlite3.connect(course / "practice" / ".ch11-serve" / "queue.db") as db:
        rows = db.execute("SELECT folder, state, started, finished FROM submissions").fetchall()
    graded = [r for r in rows if r[1] == "done" and r[2] is not None and r[3] is not None]
    span = max(r[3] for r in graded) - min(r[2] for r in graded) if graded else float("nan")
    firsts = {}
    for d in drops:  # each student's first submission, until that student's first feedback
        first = min((x for x in drops if x.student == d.student), key=lambda x: x.arrived)
        got = [x.done for x in drops if x.student == d.student and x.outcome == "feedback" and x.done is not None]
        if got:
            firsts[d.student] = round(min(got) - first.arrived, 2)
    return {"label": label, "workers": workers, "cluster": cluster or None, "submissions": len(drops),
            "graded": len(graded), "states": _count(r[1] for r in rows),
            "outcomes": _count(d.outcome or "none" for d in drops),
            "grading_span_seconds": round(span, 2),
            "serve_per_minute": round(60 * len(graded) / span, 2) if graded else None,
            "first_wait_max": max(firsts.values(), default=None),
            "first_wait_median": statistics.median(firsts.values()) if firsts else None,
            "first_waits": firsts, "graded_folders": [r[0] for r in graded],
            "load_before": before, "load_after": load()}


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _batch(label: str, template: Path, drops: list[Drop], graded: list[str], texts: dict[str, dict[str, str]],
           workers: int, cluster: str) -> dict[str, Any]:
    """``grade_class`` on the submissions the service graded, each as its own student id."""
    from ch11_autograder.batch import BatchOptions, grade_class

    source = SCRATCH / label / "batch-class"
    for drop in drops:
        if drop.folder in graded:
            folder = source / f"{drop.student}-{drop.index}" / ASSIGNMENT
            folder.mkdir(parents=True)
            for name, text in texts[drop.profile].items():
                (folder / name).write_text(text)
    course = fresh_copy(template, SCRATCH / label / "batch-course")
    shutil.copyfile(SCRATCH / label / "course" / "nbgrader_config.py", course / "nbgrader_config.py")
    before = load()
    started = time.monotonic()
    options = BatchOptions(workers=workers, sandbox="bwrap", feedback=False, cluster=cluster or None)
    report = grade_class(source, course, options)
    seconds = time.monotonic() - started
    n = sum(r.status == "graded" for r in report.records)
    return {"batch_seconds": round(seconds, 2), "batch_graded": n,
            "batch_statuses": _count(r.status for r in report.records),
            "batch_per_minute": round(60 * n / seconds, 2), "batch_load_before": before, "batch_load_after": load()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--per-student", type=int, default=2)
    parser.add_argument("--window", type=float, default=120.0, help="seconds over which the submissions arrive")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--variants", default="local,dask", help="comma-separated: local, dask")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--limit", type=float, default=3600.0, help="give up on a variant after this many seconds")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve_rush.json")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("serve_rush.py creates the students' unix users: run it as root")
    from large_class import profiles

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the users and the service are cleaned up
    texts = profiles()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    template = _template()
    students = _users(args.students)
    runs: list[dict[str, Any]] = []
    try:
        for label in args.variants.split(","):
            drops = _schedule(students, args.per_student, args.window, args.seed)
            cluster, address = None, ""
            if label == "dask":
                import distributed

                # Workers grade with the course named by $CH11_WORKER_COURSE and refuse a coordinator whose release
                # and suites differ: the service's course and the batch's share one config, so one digest.
                os.environ["CH11_WORKER_COURSE"] = str(SCRATCH / label / "course")

                cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                                   host="127.0.0.1", scheduler_port=0, dashboard_address=None)
                address = cluster.scheduler_address
            try:
                run = _serve(label, template, drops, texts, args.workers, address, args.limit)
                run.update(_batch(label, template, drops, run["graded_folders"], texts, args.workers, address))
            finally:
                if cluster is not None:
                    cluster.close()
            if run["serve_per_minute"] and run["batch_per_minute"]:
                run["serve_over_batch_throughput"] = round(run["serve_per_minute"] / run["batch_per_minute"], 3)
            run["drops"] = [asdict(d) | {"secret": None} for d in drops]
            runs.append(run)
            print({k: v for k, v in run.items() if k not in ("drops", "first_waits", "graded_folders")}, flush=True)
            _write(args, runs)  # after each variant: a run stopped later keeps what it measured
    finally:
        _remove_users(students)
    print(_write(args, runs))
    return 0


def _write(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any]:
    summary = {r["label"]: {k: r.get(k) for k in ("submissions", "graded", "serve_per_minute", "batch_per_minute",
                                                   "serve_over_batch_throughput", "first_wait_max",
                                                   "first_wait_median")} for r in runs}
    write_json(args.out, {"machine": machine(), "args": vars(args) | {"out": str(args.out)}, "summary": summary,
                          "runs": runs})
    return summary


if __name__ == "__main__":
    sys.exit(main())
