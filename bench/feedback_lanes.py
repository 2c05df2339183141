"""The course's feedback step: nbgrader's one ``generate_feedback`` against the same step split into lanes.

    .venv/bin/python bench/feedback_lanes.py [--course build/demo-course] [--repeats 3] [--lanes 2]
                                             [--out bench/results/feedback_lanes.json]

``--course`` is a graded course (``make demo`` writes ``build/demo-course``: the demo class,
autograded). Each repetition copies it twice into ``build/bench/feedback-lanes/``, starts an
nbgrader fork server on each copy (waiting for it to be ready: its imports are not timed) and
times ``batch.feedback.generate_feedback`` with one lane (nbgrader's one command, as a fork)
and with ``--lanes`` lanes (``--student`` patterns, forks at once), in alternating order. The
pages of the two must be the same bytes (checked; a difference ends the run). Medians of wall
time, and the ratio lanes / one. A benchmark: nothing else is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from ch11_autograder.batch.feedback import generate_feedback, graded_students, lane_patterns
from ch11_autograder.batch.nbgrader_fork import NbgraderForkServer
from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR, REPO_ROOT
from common import machine, median, ratio, write_json

WORK = BUILD_DIR / "bench" / "feedback-lanes"


def _pages(course: Path) -> dict[str, bytes]:
    root = course / "feedback"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def once(course: Path, lanes: int, label: str) -> tuple[float, dict[str, bytes]]:
    """Seconds of the feedback step on a fresh copy of ``course`` with ``lanes`` lanes, and its pages."""
    copy = WORK / label
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(course, copy, symlinks=True)
    shutil.rmtree(copy / "feedback", ignore_errors=True)
    server = NbgraderForkServer(copy / "nbgrader_config.py")
    try:
        started = time.perf_counter()
        problems = generate_feedback(copy, copy / "feedback.log", ASSIGNMENT, forks=server, lanes=lanes)
        seconds = time.perf_counter() - started
    finally:
        server.close()
    if problems:
        raise SystemExit(f"{label}: {problems}")
    return seconds, _pages(copy)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--course", type=Path, default=BUILD_DIR / "demo-course")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "feedback_lanes.json")
    args = parser.parse_args()
    students = graded_students(args.course, ASSIGNMENT)
    if not students:
        raise SystemExit(f"{args.course} has no autograded {ASSIGNMENT} (run `make demo` for build/demo-course)")
    WORK.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, object]] = []
    for rep in range(args.repeats):
        order = [1, args.lanes] if rep % 2 == 0 else [args.lanes, 1]
        pages: dict[int, dict[str, bytes]] = {}
        for lanes in order:
            seconds, pages[lanes] = once(args.course, lanes, f"lanes-{lanes}")
            runs.append({"repeat": rep + 1, "lanes": lanes, "seconds": round(seconds, 3)})
            print(f"rep {rep + 1}/{args.repeats} lanes={lanes}  {seconds:6.2f} s", flush=True)
        if pages[1] != pages[args.lanes]:
            raise SystemExit("the pages of one run and of the lanes differ")
    one = median(r["seconds"] for r in runs if r["lanes"] == 1)  # type: ignore[misc]
    split = median(r["seconds"] for r in runs if r["lanes"] == args.lanes)  # type: ignore[misc]
    result = {"machine": machine(), "course": str(args.course), "students": len(students),
              "pages": len(pages[1]), "patterns": lane_patterns(students, args.lanes), "runs": runs,
              "summary": {"one": one, "lanes": split, "ratio": ratio(split, one)}}
    write_json(args.out, result)
    print(f"{len(students)} students, {len(pages[1])} pages: one command {one:.2f} s, "
          f"{args.lanes} lanes {split:.2f} s ({ratio(split, one):.2f}x); pages identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
