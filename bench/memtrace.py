"""Where the orchestrator's memory goes per submission: tracemalloc across a cheap batch.

``python bench/memtrace.py N`` grades N submissions made by ``run.make_large_class`` (one
notebook each, ``CH11_SANDBOX=none``, the ``pipeline-noexec`` course of part d, no
feedback, 2 workers) in this process, takes tracemalloc snapshots after the (N/3)th and
the Nth finished submission, and prints the growth per submission and the twelve largest
differences with their tracebacks. A benchmark aid, not a test.
"""

from __future__ import annotations

import gc
import os
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench
from ch11_autograder.batch import BatchOptions, grade_class
from ch11_autograder.paths import BUILD_DIR, DEMO_CLASS_DIR
from common import fresh_copy, make_course_template


def main(n: int) -> None:
    work = BUILD_DIR / "bench" / "memtrace"
    work.mkdir(parents=True, exist_ok=True)
    template = make_course_template(work, "pipeline-noexec")
    source = work / f"class-{n}"
    bench.make_large_class(source, n, ["ex4_audit.ipynb"], DEMO_CLASS_DIR)
    course = fresh_copy(template, work / f"course-{n}")
    tracemalloc.start(25)
    snaps = {}

    def progress(event) -> None:
        if event.record is not None and event.done in (n // 3, n):
            gc.collect()
            snaps[event.done] = tracemalloc.take_snapshot()

    os.environ["CH11_SANDBOX"] = "none"
    grade_class(source, course, BatchOptions(workers=2, sandbox="none", feedback=False), progress=progress)
    stats = snaps[n].compare_to(snaps[n // 3], "traceback")
    total = sum(s.size_diff for s in stats)
    print(f"growth {total} bytes from submission {n // 3} to {n}: {total / (n - n // 3):.0f} bytes per submission")
    for stat in stats[:12]:
        print(stat.size_diff, stat.count_diff)
        for line in stat.traceback.format()[-16:]:
            print("   ", line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
