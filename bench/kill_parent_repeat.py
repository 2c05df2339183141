"""The hostile case ``kill_parent`` graded many times in a row: how often it does not get its safe outcome.

The case's kernel and graded function kill their parent process (``os.kill(os.getppid(),
SIGKILL)``). Its safe outcome (tests/support/hostile_corpus.py) is a graded submission with 0
points. Whether nbgrader then writes to a pipe whose reader is dead depends on timing, and a
forked nbgrader that did not ignore SIGPIPE as a fresh interpreter does died of it (exit -13):
the submission became an error. One run of tests/hostile shows that rarely; this grades
``--runs`` copies of the submission in one batch (``--workers`` slots, the hostile tests'
limits, the same backend the tests use) and counts the copies that missed the outcome.

Usage::

    .venv/bin/python bench/kill_parent_repeat.py --runs 20 --backend bwrap [--out FILE]
    .venv/bin/python bench/kill_parent_repeat.py --runs 20 --backend docker

Prints one line per copy (status, points, error) and a summary; ``--out`` writes it as JSON.
Exit status 0 when every copy got the safe outcome, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ch11_autograder.paths import REPO_ROOT

sys.path[:0] = [str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "hostile")]

from support.hostile_corpus import ASSIGNMENT, Context, case  # noqa: E402
from test_hostile import SUBMISSION_TIMEOUT, gradebook_scores, new_course  # noqa: E402

CASE = "kill_parent"


def build_class(root: Path, runs: int) -> Path:
    """``runs`` copies of the case's submission, students ``kill_parent-00`` and on."""
    source = root / "class"
    one = root / "one"
    c = case(CASE)
    c.build(c, Context(course=root / "course", class_dir=source, allowed_root=root), one)
    for index in range(runs):
        shutil.copytree(one / CASE, source / f"{CASE}-{index:02d}")
    return source


def grade(source: Path, course: Path, backend: str, workers: int) -> dict[str, Any]:
    """Student -> record (``status``, ``error``) of one batch over ``source``."""
    if backend == "docker":
        from ch11_autograder.batch.docker import run_in_docker
        from support import batch_support

        batch_support.require_docker()
        status = run_in_docker(source, course, image=batch_support.grading_image(), workers=workers,
                               timeout=SUBMISSION_TIMEOUT)
        rows = json.loads((course / "reports" / f"{ASSIGNMENT}-records.json").read_text())
        return {row["student"]: row for row in rows} | {"_status": status}
    from ch11_autograder.batch import BatchOptions, grade_class

    report = grade_class(source, course, BatchOptions(workers=workers, sandbox=backend, timeout=SUBMISSION_TIMEOUT))
    return {r.student: {"status": r.status, "error": r.error} for r in report.records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backend", choices=("bwrap", "docker"), default="bwrap")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ch11-kill-parent-"))
    try:
        source = build_class(root, args.runs)
        course = new_course(root / "course")
        started = time.monotonic()
        records = grade(source, course, args.backend, args.workers)
        seconds = round(time.monotonic() - started, 1)
        scores = gradebook_scores(course)
        copies = []
        for index in range(args.runs):
            student = f"{CASE}-{index:02d}"
            record = records.get(student) or {"status": "missing", "error": None}
            points = round(sum(scores.get(student, {}).values()), 6)
            safe = record["status"] == "graded" and points == 0.0
            copies.append({"student": student, "status": record["status"], "points": points,
                           "error": record.get("error"), "safe": safe})
            print(f"{student}: {record['status']:8} {points:g} points  {record.get('error') or ''}")
        failed = sum(not c["safe"] for c in copies)
        summary = {"case": CASE, "backend": args.backend, "runs": args.runs, "workers": args.workers,
                   "failed": failed, "seconds": seconds, "copies": copies}
        print(f"{CASE} under {args.backend}: {failed} of {args.runs} copies missed the safe outcome ({seconds} s)")
        if args.out:
            args.out.write_text(json.dumps(summary, indent=1))
        return 0 if failed == 0 else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
