"""Part b inside the grading image: the pipeline and plain nbgrader, each in one container of the same image.

    .venv/bin/python bench/image_b.py [--image ch11-grader:test] [--repeats 2] [--students ada,hal]
                                      [--out bench/results/image_b.json]

Both variants run in a container started from the same image with the same settings
(``batch/docker.py``'s ``docker_argv``: ``--init``, no network, the memory and pids limits,
one worker slot's tmpfs), on a fresh copy of a course whose assignment was generated once
on the host, grading the same demo students (``demo/class/<student>``):

* ``pipeline``: the container's own ``ch11-grade batch /grading/source --course
  /grading/course --workers 1 --sandbox container-user``, as ``ch11-grade batch --docker``
  starts it (feedback, export and the class report included);
* ``plain``: ``nbgrader autograde ch11``, ``nbgrader generate_feedback ch11`` and
  ``nbgrader export`` in a plain course (nbgrader's defaults, only the layout set;
  the submissions copied into ``submitted/``), each its own process.

Clocks, in seconds from ``docker run`` (the container's start is in both):

* ``autograded``: the pipeline's progress line for its ``generate_feedback`` step (every
  submission merged), or the mark plain's script prints after ``nbgrader autograde``;
* ``end_to_end``: the container's exit.

CPU: the container's own cgroup, read inside it at the end of its script (cgroup v2's
``cpu.stat``, or v1's ``cpuacct.usage``): every process of the container, sandboxed ones
included. Each repetition runs both variants, alternating which goes first. Medians over
repetitions. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from ch11_autograder.batch.docker import CONTAINER_COURSE, CONTAINER_ROOT, docker_argv
from ch11_autograder.paths import ASSIGNMENT, BUILD_DIR, DEMO_CLASS_DIR
from common import TIMING_FOOTER, fresh_copy, machine, make_course_template, median, ratio, spread, write_json

WORK = BUILD_DIR / "bench" / "image-b"

#: Printed by the container's script at its end: the container cgroup's CPU time, in microseconds.
CPU_PROBE = ("if [ -r /sys/fs/cgroup/cpu.stat ]; then "
             "echo CH11_CPU_USEC $(awk '/^usage_usec/ {print $2}' /sys/fs/cgroup/cpu.stat); "
             "else echo CH11_CPU_USEC $(( $(cat /sys/fs/cgroup/cpuacct/cpuacct.usage) / 1000 )); fi")
AUTOGRADED_MARK = "CH11_MARK_AUTOGRADED"


def _template(kind: str) -> Path:
    """A course of ``kind`` (``pipeline`` or ``plain``) with the assignment generated, its config without the
    benchmarks' timing footer (a host path the image does not have)."""
    course = make_course_template(WORK, kind)
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text().replace(TIMING_FOOTER, ""))
    return course


def _run(argv: list[str], autograded: str) -> dict[str, Any]:
    """Run ``argv`` (a ``docker run``), timestamping its output lines; the seconds at which a line containing
    ``autograded`` arrived, at the exit, and the CPU the container reported."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    marked, cpu, tail = None, None, []
    for line in proc.stdout:
        if marked is None and autograded in line:
            marked = time.perf_counter() - started
        if line.startswith("CH11_CPU_USEC"):
            cpu = int(line.split()[1]) / 1e6
        tail = [*tail[-40:], line]
    code = proc.wait()
    end = time.perf_counter() - started
    if code != 0 or marked is None or cpu is None:
        raise SystemExit(f"{shlex.join(argv[:4])} ... exited {code} (autograded mark {marked}, cpu {cpu}):\n"
                         + "".join(tail))
    return {"autograded": round(marked, 3), "end_to_end": round(end, 3), "cpu_seconds": round(cpu, 2)}


def _argv(image: str, source: Path, course: Path, name: str, script: str | None) -> list[str]:
    """``docker_argv``'s command for a one-worker batch; ``script`` replaces the batch (same container)."""
    argv = docker_argv(source, course, image=image, name=name, workers=1, timeout=1800.0, regrade=False,
                       memory="6g", pids=2048)
    inner = argv[-1] if script is None else script
    return [*argv[:-1], f"{inner}; status=$?; chown -R {os.getuid()}:{os.getgid()} {CONTAINER_COURSE}; {CPU_PROBE}; "
                        "exit $status"]


def pipeline_once(image: str, template: Path, students: list[str], label: str) -> dict[str, Any]:
    stage = WORK / label
    shutil.rmtree(stage, ignore_errors=True)
    fresh_copy(template, stage / "course")
    for student in students:
        shutil.copytree(DEMO_CLASS_DIR / student, stage / "source" / student)
    argv = _argv(image, stage / "source", stage / "course", f"ch11-bench-{uuid.uuid4().hex[:8]}", None)
    return _run(argv, "generate_feedback")


def plain_once(image: str, template: Path, students: list[str], label: str) -> dict[str, Any]:
    stage = WORK / label
    shutil.rmtree(stage, ignore_errors=True)
    course = fresh_copy(template, stage / "course")
    (stage / "source").mkdir()
    for student in students:
        shutil.copytree(DEMO_CLASS_DIR / student / ASSIGNMENT, course / "submitted" / student / ASSIGNMENT)
    steps = [f"nbgrader autograde {ASSIGNMENT}", f"echo {AUTOGRADED_MARK}",
             f"nbgrader generate_feedback {ASSIGNMENT}", "nbgrader export --to grades.csv"]
    script = f"chmod 0700 {CONTAINER_ROOT} && cd {CONTAINER_COURSE} && {' && '.join(steps)}"
    argv = _argv(image, stage / "source", course, f"ch11-bench-{uuid.uuid4().hex[:8]}", script)
    return _run(argv, AUTOGRADED_MARK)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="ch11-grader:test")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--students", default="ada,hal")
    parser.add_argument("--out", type=Path, default=Path("bench/results/image_b.json"))
    args = parser.parse_args()
    if subprocess.run(["docker", "image", "inspect", args.image], capture_output=True).returncode != 0:
        raise SystemExit(f"no image {args.image}: build it with `python -m ch11_autograder.image build --tag "
                         f"{args.image}`")
    students = args.students.split(",")
    WORK.mkdir(parents=True, exist_ok=True)
    info = machine()
    templates = {kind: _template(kind) for kind in ("pipeline", "plain")}
    runs: list[dict[str, Any]] = []
    began = time.perf_counter()
    for rep in range(1, args.repeats + 1):
        order = ("pipeline", "plain") if rep % 2 else ("plain", "pipeline")
        for variant in order:
            once = pipeline_once if variant == "pipeline" else plain_once
            result = once(args.image, templates[variant], students, f"{variant}-{rep}")
            runs.append({"variant": variant, "rep": rep, **result, "load_after": os.getloadavg()})
            print(f"rep {rep} {variant:8s} autograded {result['autograded']:6.1f} s  end to end "
                  f"{result['end_to_end']:6.1f} s  cpu {result['cpu_seconds']:6.1f} s", flush=True)
    summary: dict[str, Any] = {}
    for measure in ("autograded", "end_to_end", "cpu_seconds"):
        by = {v: [r[measure] for r in runs if r["variant"] == v] for v in ("pipeline", "plain")}
        summary[measure] = {**{v: spread(vals) for v, vals in by.items()},
                            "ratio": ratio(median(by["pipeline"]), median(by["plain"]))}
    write_json(args.out, {"machine": info, "image": args.image, "students": students, "repeats": args.repeats,
                          "what": __doc__.split("\n\n", 2)[2], "runs": runs, "summary": summary,
                          "seconds": round(time.perf_counter() - began, 1)})
    for measure, row in summary.items():
        print(f"{measure:12s} pipeline {row['pipeline']['median']:7.2f}  plain {row['plain']['median']:7.2f}  "
              f"ratio {row['ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
