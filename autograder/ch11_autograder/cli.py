"""``ch11-grade``: the command line of the chapter 11 grader.

    ch11-grade batch SOURCE --course DIR [--workers N] [--sandbox bwrap|container-user|none]
                            [--docker IMAGE | --cluster tcp://HOST:PORT|tls://HOST:PORT|local]
                            [--timeout SECONDS] [--regrade]
    ch11-grade gradescope build --out autograder.zip

``batch`` grades a folder (nbgrader layout) or an LMS zip into an nbgrader
course directory, one line per finished submission, then prints the grade
table and where the reports are (docs/batch.md). With ``--docker IMAGE`` the
whole batch runs inside the grading image instead; with ``--cluster`` the
submissions are graded on the workers of a Dask cluster (the ``dask`` extra).

``gradescope build`` writes the Gradescope autograder zip (docs/batch.md,
"Gradescope"). ``gradescope run`` and ``gradescope prepare`` are what the
zip's ``run_autograder`` and ``setup.sh`` call.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["main"]

EXIT_OK = 0
EXIT_ERRORS = 1  # the batch finished, some submissions are errors
EXIT_REFUSED = 2  # nothing graded: bad arguments, unusable course, source or sandbox


def _batch(args: argparse.Namespace) -> int:
    from .batch import BatchError, IntakeError, grade_class
    from .batch.report import format_duration, format_progress, grade_rows, render_table
    from .paths import ASSIGNMENT

    if args.docker and args.cluster:
        print("ch11-grade: --docker and --cluster exclude each other", file=sys.stderr)
        return EXIT_REFUSED
    if args.docker:
        from .batch.docker import DockerError, run_in_docker

        try:
            return run_in_docker(args.source, args.course, image=args.docker, workers=args.workers,
                                 timeout=args.timeout, regrade=args.regrade, memory=args.docker_memory,
                                 pids=args.docker_pids)
        except DockerError as exc:
            print(f"ch11-grade: {exc}", file=sys.stderr)
            return EXIT_REFUSED

    def progress(event) -> None:
        print(format_progress(event), flush=True)

    try:
        result = grade_class(args.source, args.course, workers=args.workers, sandbox=args.sandbox,
                             progress=progress, timeout=args.timeout, regrade=args.regrade,
                             cluster=args.cluster)
    except (BatchError, IntakeError) as exc:
        print(f"ch11-grade: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("\nch11-grade: interrupted; submissions merged so far are kept. Run the same command again to "
              "resume.", file=sys.stderr)
        return 130
    print()
    statuses = {r.student: r.status for r in result.records}
    print(render_table(grade_rows(args.course.resolve(), ASSIGNMENT, result.records), statuses))
    counts = {s: sum(r.status == s for r in result.records) for s in ("graded", "skipped_resume", "error")}
    print()
    print(f"{counts['graded']} graded, {counts['skipped_resume']} unchanged since the last run, "
          f"{counts['error']} errors, in {format_duration(result.elapsed_seconds)}")
    for record in result.records:
        if record.status == "error":
            print(f"  error  {record.student}: {record.error}")
    for problem in result.problems:
        print(f"  batch step failed: {problem}")
    print(f"grades:   {result.csv_path}")
    print(f"summary:  {result.summary_path}")
    print(f"feedback: {result.feedback_dir}/<student>/ch11/*.html")
    return EXIT_ERRORS if counts["error"] or result.problems else EXIT_OK


def _gradescope(args: argparse.Namespace) -> int:
    from . import gradescope

    if args.gs_command == "build":
        path = gradescope.build_zip(args.out, visibility=args.visibility)
        print(f"wrote {path}")
        return EXIT_OK
    if args.gs_command == "prepare":
        gradescope.prepare(Path(args.root))
        return EXIT_OK
    return gradescope.run(Path(args.root))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ch11-grade", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("batch", help="grade a class: a folder in nbgrader layout or an LMS zip")
    b.add_argument("source", type=Path, help="folder (<student>/ch11/*.ipynb, or submitted/...) or zip")
    b.add_argument("--course", type=Path, required=True,
                   help="instructor's nbgrader course directory (created from the repository's course if absent)")
    b.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    b.add_argument("--sandbox", choices=("bwrap", "container-user", "none"), default=None,
                   help="backend for student code (default $CH11_SANDBOX, else bwrap)")
    b.add_argument("--docker", metavar="IMAGE", default=None,
                   help="run the whole batch inside this grading image (container-user backend inside)")
    b.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="grade on a Dask cluster: a scheduler's address (tcp://HOST:8786, tls://HOST:8786) or "
                        "'local' (a cluster of --workers processes on 127.0.0.1); needs the dask extra")
    b.add_argument("--docker-memory", default="6g", help="memory limit of the container (default 6g)")
    b.add_argument("--docker-pids", type=int, default=2048, help="process limit of the container (default 2048)")
    b.add_argument("--timeout", type=float, default=1800.0, help="seconds per submission (default 1800)")
    b.add_argument("--regrade", action="store_true", help="regrade everything, ignoring the resume ledger")
    b.set_defaults(func=_batch)

    g = sub.add_parser("gradescope", help="the Gradescope autograder")
    gsub = g.add_subparsers(dest="gs_command", required=True)
    gb = gsub.add_parser("build", help="write the autograder zip to upload to Gradescope")
    gb.add_argument("--out", type=Path, default=Path("autograder.zip"))
    gb.add_argument("--visibility", choices=("visible", "after_due_date", "after_published", "hidden"),
                    default="visible", help="visibility of the test results for students (default visible)")
    gp = gsub.add_parser("prepare", help="(setup.sh) prepare the course inside the autograder image")
    gp.add_argument("--root", default="/autograder")
    gr = gsub.add_parser("run", help="(run_autograder) grade /autograder/submission, write results.json")
    gr.add_argument("--root", default="/autograder")
    g.set_defaults(func=_gradescope)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "workers", 1) < 1:
        print("ch11-grade: --workers must be at least 1", file=sys.stderr)
        return EXIT_REFUSED
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
