"""``ch11-grade``: the command line of the chapter 11 grader.

    ch11-grade batch SOURCE --course DIR [--workers N] [--sandbox bwrap|container-user|none]
                            [--docker IMAGE | --cluster tcp://HOST:PORT|tls://HOST:PORT|local]
                            [--timeout SECONDS] [--regrade]
    ch11-grade report --course DIR
    ch11-grade catalogue draft --course DIR --group INDEX|ID [--out FILE]
    ch11-grade doctor [--course DIR] [--exchange ROOT] [--hub-config FILE] ...
    ch11-grade extend ASSIGNMENT --course DIR --student ID (--by 2d | --until MOMENT | --remove) | --list
    ch11-grade serve --course DIR [--once] [--hold-refusal SECONDS]
    ch11-grade student-bundle --out ch11-student.zip
    ch11-grade gradescope build --out autograder.zip
    ch11-grade lms-export --course DIR --roster ROSTER.csv --out IMPORT.csv [--format canvas|moodle]

``batch`` grades a folder (nbgrader layout) or an LMS zip into an nbgrader
course directory, one line per finished submission, then prints the grade
table and where the reports are (docs/batch.md). With ``--docker IMAGE`` the
whole batch runs inside the grading image instead; with ``--cluster`` the
submissions are graded on the workers of a Dask cluster (the ``dask`` extra).

``report`` (re)writes the class report from the course's gradebook and the
batch's records.

``catalogue draft`` writes a draft catalogue entry for one group of the report's
``reports/<assignment>-mistakes.json`` (its index or id): the representative
answer, the properties it fails, placeholders for the name, title and advice
(docs/authoring.md, "From a mistake group to named feedback").

``serve`` grades each submission in the course's nbgrader exchange as it
arrives, into a practice course, and publishes its feedback where the
student's ``nbgrader fetch_feedback`` finds it (docs/course.md, "Feedback
before the due date"); its policy is ``c.ServePolicy`` in the course config.
When it cannot start (no course directory, a course config that stops, folder
owners that cannot tell students apart) it says why and exits 2; with
``--hold-refusal SECONDS`` it stays up that long first, so a hub that restarts
it does so at most once per that many seconds (docs/course.md, "The hub").

``doctor`` checks the deployment docs/course.md builds (the environments' nbgrader, the instructor's
PATH, the sandbox, the proxy, the exchange, the course folder, the hub's config, the formgrader's
start time): one line per problem, naming the page's section that fixes it, and exit 1; or "all
checks passed".

``extend`` gives one student more time: it writes the extension into the
course's nbgrader gradebook, where autograde's late flag and the service read
it (docs/course.md, "Extensions").

``student-bundle`` writes what students install: the released notebooks, the
chapter harness wheel, requirements and a README (a folder, or a zip).

``gradescope build`` writes the Gradescope autograder zip (docs/batch.md,
"Gradescope"). ``gradescope run`` and ``gradescope prepare`` are what the
zip's ``run_autograder`` and ``setup.sh`` call.

``lms-export`` writes the LMS's gradebook import file from the course's
gradebook and the LMS's own gradebook export (the roster): students matched by
login, an empty cell for no submission, every gradebook student the roster
lacks listed on stderr (exit 1). docs/course.md, "Grades to the LMS".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .batch.defaults import DEFAULT_TIMEOUT, DEFAULT_WORKERS
from .course_layout import CONFIG, GRADEBOOK
from .nbgrader_main import skip_costly_imports
from .paths import ASSIGNMENT
from .textsafe import escape

if TYPE_CHECKING:
    from .batch.nbgrader_fork import NbgraderForkServer

__all__ = ["main"]

EXIT_OK = 0
EXIT_ERRORS = 1  # the batch finished, some submissions are errors
EXIT_REFUSED = 2  # nothing graded: bad arguments, unusable course, source or sandbox


def _first_server(args: argparse.Namespace) -> NbgraderForkServer | None:
    """Slot 0's nbgrader fork server, started before this command imports nbgrader, or ``None``.

    Its imports (nbgrader, nbconvert, the suites: several seconds) then run beside the command's
    own instead of after them, so a batch's first submission starts sooner where a second core
    is free. Only for grading on this machine into an existing course; ``grade_class`` closes it.
    """
    config = args.course.resolve() / CONFIG
    if args.docker or args.cluster or not config.is_file():
        return None
    from .batch.nbgrader_fork import ForkServerGone, NbgraderForkServer  # light: not nbgrader itself

    try:
        return NbgraderForkServer(config, wait=False)
    except ForkServerGone:
        return None  # the pool starts its own, and logs why one cannot start


def _batch(args: argparse.Namespace) -> int:
    if args.docker and args.cluster:
        print("ch11-grade: --docker and --cluster exclude each other", file=sys.stderr)
        return EXIT_REFUSED
    first_server = _first_server(args)
    from .batch import BatchError, BatchOptions, IntakeError, grade_class
    from .batch.report import format_duration, format_progress, grade_rows, render_table
    if args.docker:
        from .batch.docker import DockerError, run_in_docker

        try:
            return run_in_docker(args.source, args.course, image=args.docker, workers=args.workers,
                                 timeout=args.timeout, regrade=args.regrade, memory=args.docker_memory,
                                 pids=args.docker_pids)
        except DockerError as exc:
            print(f"ch11-grade: {escape(exc)}", file=sys.stderr)
            return EXIT_REFUSED

    def progress(event) -> None:
        print(format_progress(event), flush=True)

    try:
        options = BatchOptions(workers=args.workers, sandbox=args.sandbox, timeout=args.timeout, regrade=args.regrade,
                               cluster=args.cluster)
        result = grade_class(args.source, args.course, options, progress=progress, first_server=first_server)
    except (BatchError, IntakeError) as exc:
        print(f"ch11-grade: {escape(exc)}", file=sys.stderr)
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
            print(f"  error  {escape(record.student)}: {escape(record.error)}")
    for problem in result.problems:
        print(f"  batch step failed: {escape(problem)}")
    print(f"grades:   {result.csv_path}")
    print(f"summary:  {result.summary_path}")
    print(f"feedback: {result.feedback_dir}/<student>/ch11/*.html")
    report_ok = _write_report(args.course.resolve(), after_batch=True)
    return EXIT_ERRORS if counts["error"] or result.problems or not report_ok else EXIT_OK


def _write_report(course: Path, *, after_batch: bool) -> bool:
    """Write the class report; on failure say why (and, after a batch, that its grades are saved)."""
    try:
        from .report import build_report

        files = build_report(course)
    except Exception as exc:  # the grades are committed already: a report failure must not hide them
        kept = " The batch's grades are saved (gradebook, CSV, summary, feedback); run `ch11-grade report " \
               f"--course {course}` once the cause is fixed." if after_batch else ""
        print(f"ch11-grade: the class report could not be written: {type(exc).__name__}: {escape(exc)}.{kept}",
              file=sys.stderr)
        return False
    print(f"report:   {files.html} (and {files.markdown.name}, {len(files.pngs)} PNGs)")
    return True


def _report(args: argparse.Namespace) -> int:
    course = args.course.resolve()
    if not (course / GRADEBOOK).is_file():
        print(f"ch11-grade: {course}: no gradebook.db; grade a batch into it first", file=sys.stderr)
        return EXIT_REFUSED
    return EXIT_OK if _write_report(course, after_batch=False) else EXIT_ERRORS


def _catalogue_draft(args: argparse.Namespace) -> int:
    from .report.catalogue_draft import DraftError, draft_entry, pick_group
    from .report.mistakes import mistakes_path

    course = args.course.resolve()
    path = mistakes_path(course, args.assignment)
    try:
        text = draft_entry(course, args.assignment, pick_group(path, args.group))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        kind = "" if isinstance(exc, DraftError | OSError) else f"{path}: malformed group ({type(exc).__name__}) "
        print(f"ch11-grade: {kind}{escape(exc)}", file=sys.stderr)  # the message may quote a student's cell
        return EXIT_REFUSED
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"draft:    {args.out}")
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from .serve.policy import load_settings
    from .serve.service import IdentityRefused, Service

    try:
        if not args.course.is_dir():
            raise ValueError(f"{args.course}: no course directory there (docs/course.md, \"Week 1\", makes it)")
        service = Service(load_settings(args.course))
    except (ValueError, OSError) as exc:
        return _serve_refused(str(exc), args.hold_refusal)
    except SystemExit as exc:  # the course config's fail-closed stop (nbgrader_config.py): its line is the reason
        return _serve_refused(str(exc.code), args.hold_refusal)
    try:
        if args.once:
            service.run_once()
            return EXIT_OK
        service.run()
    except IdentityRefused as exc:
        return _serve_refused(str(exc), args.hold_refusal)
    except KeyboardInterrupt:
        print("\nch11-grade: stopped; the queue is kept, run the same command to go on.", file=sys.stderr)
        return 130
    return EXIT_OK


def _doctor(args: argparse.Namespace) -> int:
    from .doctor.resolve import resolve
    from .doctor.run import report

    lines, status = report(resolve(args.course, exchange=args.exchange, course_id=args.course_id,
                                   instructor=args.instructor, grader_env=args.grader_env,
                                   students_env=args.students_env, hub_config=args.hub_config))
    for line in lines:
        print(escape(line, 2000))
    return status


def _extend(args: argparse.Namespace) -> int:
    from .serve.extend import ExtendError, grant, list_extensions, parse_duration

    try:
        if args.list:
            for extension in list_extensions(args.course, args.assignment):
                print(escape(extension.line()))
            return EXIT_OK
        if not args.student:
            raise ExtendError("--student is needed with --by, --until or --remove")
        by = parse_duration(args.by) if args.by is not None else None
        written = grant(args.course, args.assignment, args.student, by=by, until=args.until, remove=args.remove)
    except ExtendError as exc:
        print(f"ch11-grade: {escape(exc)}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"{escape(args.assignment)}: {escape(written.line())}")
    return EXIT_OK


def _serve_refused(reason: str, hold: float) -> int:
    """Say why the service cannot start; stay up refusing ``hold`` seconds (SIGINT ends it), then exit 2.

    A hub restarts a managed service that exits at its next poll (about every 30 s): held, a refusal that lasts
    (a missing course, a course config that stops, owners that cannot tell students apart) restarts at most once
    per ``hold`` seconds, each time saying why again.
    """
    print(f"ch11-grade: {escape(reason, 1000)}", file=sys.stderr, flush=True)
    if hold > 0:
        print(f"ch11-grade: serve refuses to start (above); it exits in {hold:g} s (--hold-refusal)",
              file=sys.stderr, flush=True)
        try:
            time.sleep(hold)
        except KeyboardInterrupt:
            pass
    return EXIT_REFUSED


def _student_bundle(args: argparse.Namespace) -> int:
    from .bundle import BundleError, build_bundle

    try:
        result = build_bundle(args.out)
    except BundleError as exc:
        print(f"ch11-grade: {escape(exc)}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"wrote {result.path}: {len(result.files)} files, {result.wheel} (sha256 {result.wheel_sha256[:12]}...)")
    return EXIT_OK


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


def _lms_export(args: argparse.Namespace) -> int:
    from .lms import RosterError, export_grades
    from .lms.export import format_points

    try:
        result = export_grades(args.course, args.roster, args.out, assignment=args.assignment, fmt=args.format,
                               column=args.column, login_column=args.login_column)
    except (RosterError, FileNotFoundError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"ch11-grade: {escape(message)}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"wrote {result.out}: column {result.column!r}, {len(result.scored)} scored, "
          f"{len(result.no_submission)} without a submission (cell left empty)")
    for login in result.no_submission:
        print(f"  no submission: {escape(login)}")
    for line in result.without_login:
        print(f"  roster line {line}: no login; its cell is left empty")
    for login, cells in sorted(result.pending_manual.items()):
        print(f"  warning: {escape(login)} has {cells} cell(s) not yet graded by hand (scored 0 so far)",
              file=sys.stderr)
    for warning in result.warnings:
        print(f"  warning: {escape(warning)}", file=sys.stderr)
    for student in result.unmatched:
        got = format_points(student.score) if student.score is not None else "no submission"
        print(f"  NOT EXPORTED: gradebook student {escape(repr(student.student))} ({got}) is not in the roster "
              f"{args.roster}", file=sys.stderr)
    if result.unmatched:
        print(f"ch11-grade: {len(result.unmatched)} gradebook student(s) are not in the roster and are not in "
              f"{result.out}; add them to the LMS course or enter their grades by hand", file=sys.stderr)
        return EXIT_ERRORS
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    from .untrusted.choose import per_process_backends

    parser = argparse.ArgumentParser(prog="ch11-grade", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("batch", help="grade a class: a folder in nbgrader layout or an LMS zip")
    b.add_argument("source", type=Path, help="folder (<student>/ch11/*.ipynb, or submitted/...) or zip")
    b.add_argument("--course", type=Path, required=True,
                   help="instructor's nbgrader course directory (created from the repository's course if absent)")
    b.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                   help=f"submissions graded at once (default {DEFAULT_WORKERS})")
    b.add_argument("--sandbox", choices=per_process_backends(), default=None,
                   help="backend for student code (default $CH11_SANDBOX, else bwrap)")
    b.add_argument("--docker", metavar="IMAGE", default=None,
                   help="run the whole batch inside this grading image (container-user backend inside)")
    b.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="grade on a Dask cluster: a scheduler's address (tcp://HOST:8786, tls://HOST:8786) or "
                        "'local' (a cluster of --workers processes on 127.0.0.1); needs the dask extra")
    b.add_argument("--docker-memory", default="6g", help="memory limit of the container (default 6g)")
    b.add_argument("--docker-pids", type=int, default=2048, help="process limit of the container (default 2048)")
    b.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per submission (default {DEFAULT_TIMEOUT:g})")
    b.add_argument("--regrade", action="store_true", help="regrade everything, ignoring the resume ledger")
    b.set_defaults(func=_batch)

    r = sub.add_parser("report", help="(re)write the class report from the course's gradebook and records")
    r.add_argument("--course", type=Path, required=True, help="the nbgrader course directory graded by batch")
    r.set_defaults(func=_report)

    c = sub.add_parser("catalogue", help="the catalogue of named wrong answers")
    csub = c.add_subparsers(dest="catalogue_command", required=True)
    cd = csub.add_parser("draft", help="a draft catalogue entry from a group of reports/<assignment>-mistakes.json")
    cd.add_argument("--course", type=Path, required=True, help="the nbgrader course directory the report read")
    cd.add_argument("--group", required=True, help="the group's index or id in the mistakes JSON")
    cd.add_argument("--assignment", default=ASSIGNMENT, help=f"nbgrader assignment (default {ASSIGNMENT})")
    cd.add_argument("--out", type=Path, default=None, help="write the draft here (default: standard output)")
    cd.set_defaults(func=_catalogue_draft)

    sv = sub.add_parser("serve", help="grade submissions as they arrive in the exchange (feedback before the due date)")
    sv.add_argument("--course", type=Path, required=True,
                    help="the instructor's course directory (its nbgrader config names the exchange and course id)")
    sv.add_argument("--once", action="store_true", help="grade what is pending, then exit")
    sv.add_argument("--hold-refusal", type=float, default=0.0, metavar="SECONDS",
                    help="when it cannot start, say why and stay up this long before exiting 2 (default 0; a hub "
                         "restarting it then does so at most once per SECONDS)")
    sv.set_defaults(func=_serve)

    dr = sub.add_parser("doctor", help="check the deployment of docs/course.md: one line per problem, with its fix")
    dr.add_argument("--course", type=Path, default=Path("~/course"), help="the course folder (default ~/course)")
    dr.add_argument("--exchange", type=Path, default=None, help="the exchange root (default: the nbgrader config's)")
    dr.add_argument("--course-id", default=None, help="the course id (default: the nbgrader config's)")
    dr.add_argument("--instructor", default=None,
                    help="the instructor's unix user (default: the hub services' user, else the current user)")
    dr.add_argument("--hub-config", type=Path, default=None, help="the hub's jupyterhub_config.py")
    dr.add_argument("--grader-env", type=Path, default=None,
                    help="the instructor's environment (default: the nbgrader on PATH)")
    dr.add_argument("--students-env", type=Path, default=None,
                    help="the students' environment (default: the hub config's Spawner.cmd's)")
    dr.set_defaults(func=_doctor)

    ex = sub.add_parser("extend", help="give a student more time: an extension in the course's nbgrader gradebook")
    ex.add_argument("assignment", help=f"the nbgrader assignment (e.g. {ASSIGNMENT})")
    ex.add_argument("--course", type=Path, required=True, help="the instructor's course directory (its gradebook.db)")
    ex.add_argument("--student", default=None, help="the student's nbgrader id (on a hub, their login)")
    how = ex.add_mutually_exclusive_group(required=True)
    how.add_argument("--by", metavar="DURATION", help="extension past the assignment's due date: 2d, 36h, 90m, 1w")
    how.add_argument("--until", metavar="MOMENT",
                     help="the student's new due date ('2026-12-16 17:00' is UTC; a zone or offset may follow)")
    how.add_argument("--remove", action="store_true", help="take the student's extension back")
    how.add_argument("--list", action="store_true", help="list the students with an extension and their due dates")
    ex.set_defaults(func=_extend)

    sb = sub.add_parser("student-bundle", help="write the students' bundle: notebooks, wheel, requirements, README")
    sb.add_argument("--out", type=Path, required=True, help="a new folder, or a path ending in .zip")
    sb.set_defaults(func=_student_bundle)

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

    x = sub.add_parser("lms-export", help="write an LMS gradebook import file (Canvas, Moodle) from the gradebook")
    x.add_argument("--course", type=Path, required=True, help="the instructor's nbgrader course directory")
    x.add_argument("--roster", type=Path, required=True,
                   help="the LMS's gradebook export (Canvas: Export Entire Gradebook; Moodle: plain text export)")
    x.add_argument("--out", type=Path, required=True, help="the import file to write")
    x.add_argument("--format", choices=("canvas", "moodle"), default="canvas", help="the LMS (default canvas)")
    x.add_argument("--assignment", default=ASSIGNMENT, help=f"nbgrader assignment (default {ASSIGNMENT})")
    x.add_argument("--column", default=None,
                   help="the roster's column for the assignment (default: the one named after the assignment)")
    x.add_argument("--login-column", default=None,
                   help="the roster column holding hub logins (default: canvas 'SIS Login ID', moodle 'Username')")
    x.set_defaults(func=_lms_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Before any subcommand imports nbgrader: the grader's own start pays no IRI grammar either.
    skip_costly_imports()
    args = _parser().parse_args(argv)
    if getattr(args, "workers", 1) < 1:
        print("ch11-grade: --workers must be at least 1", file=sys.stderr)
        return EXIT_REFUSED
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
