"""The main job: grade the bundled demo class with the real nbgrader commands.

    python -m ch11_autograder.demo            # what `make demo` runs
    python -m ch11_autograder.demo build      # regenerate demo/class/ (committed)
    python -m ch11_autograder.demo build --check

The demo class (``demo/class/<student>/ch11/*.ipynb``) is generated from the
released notebooks, the source notebooks' solutions and the catalogue:

* ``ada``: every task answered correctly;
* ``blank``: the released notebooks, untouched;
* ``lin``: complete, but with the chapter's named wrong answer "last writer
  wins" in Exercise 1 and the largest-k tie-break in Exercise 3;
* ``hal``: half done: Exercises 1 and 2 answered, the rest untouched.

``run`` lays out a fresh course directory (``build/demo-course``), then runs
``nbgrader generate_assignment``, ``autograde``, ``generate_feedback`` and
``export`` there, and prints the grade table and where the feedback is.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .authoring.submissions import answer_sources, fill, read
from .batch.course import init_course
from .course_layout import FEEDBACK, GRADEBOOK, SUBMITTED
from .exercises import NOTEBOOKS
from .exercises.catalogue import catalogue
from .nbgrader_cli import run_nbgrader
from .paths import ASSIGNMENT, BUILD_DIR, COURSE_CONFIG, DEMO_CLASS_DIR, RELEASE_DIR, SOURCE_DIR

DEFAULT_COURSE = BUILD_DIR / "demo-course"


@dataclass(frozen=True)
class Student:
    """One demo student: which notebooks are answered, and which wrong answers they hold."""

    student_id: str
    description: str
    answered: tuple[str, ...]
    wrong: tuple[tuple[str, str], ...] = field(default=())  # (exercise, catalogue entry name)


ALL = NOTEBOOKS
STUDENTS = (
    Student("ada", "complete and correct", ALL),
    Student("blank", "submitted the released notebooks untouched", ()),
    Student("lin", "complete, with two named misconceptions", ALL,
            (("ex1", "last_writer_wins"), ("ex3", "largest_k_tie_break"))),
    Student("hal", "half done: Exercises 1 and 2", ALL[:2]),
)


def _notebooks(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.ipynb"))


def render_class() -> dict[Path, str]:
    """Relative path -> notebook text of every demo submission."""
    out: dict[Path, str] = {}
    for student in STUDENTS:
        entries = [next(e for e in catalogue(ex) if e.name == name) for ex, name in student.wrong]
        for released_path in _notebooks(RELEASE_DIR):
            stem = released_path.stem
            released = read(released_path)
            answers = answer_sources(read(SOURCE_DIR / released_path.name)) if stem in student.answered else {}
            mine = [e for e in entries if e.answer_cell in answers]
            nb = fill(released, answers, wrong=mine)
            out[Path(student.student_id) / ASSIGNMENT / released_path.name] = nbformat.writes(nb) + "\n"
    return out


def _same(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text() == text


def build(check: bool = False) -> int:
    wanted = render_class()
    if check:
        stale = [p for p, text in wanted.items() if not _same(DEMO_CLASS_DIR / p, text)]
        for path in stale:
            print(f"{DEMO_CLASS_DIR / path}: stale (run: python -m ch11_autograder.demo build)")
        return 1 if stale else 0
    if DEMO_CLASS_DIR.exists():
        shutil.rmtree(DEMO_CLASS_DIR)
    for path, text in wanted.items():
        (DEMO_CLASS_DIR / path).parent.mkdir(parents=True, exist_ok=True)
        (DEMO_CLASS_DIR / path).write_text(text)
    print(f"wrote {len(wanted)} notebooks under {DEMO_CLASS_DIR}")
    return 0


def _nbgrader(course: Path, *args: str, log) -> None:
    print(f"$ nbgrader {' '.join(args)}", flush=True)
    started = time.monotonic()
    done = run_nbgrader(course, *args, stdout=log, stderr=subprocess.STDOUT)
    print(f"  ... {time.monotonic() - started:.1f} s", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader {args[0]} failed (exit {done.returncode}); see {log.name}")


def prepare_course(course: Path, class_dir: Path = DEMO_CLASS_DIR) -> None:
    """A fresh nbgrader course: the course config, source/, and the class's submissions."""
    if course.exists():
        shutil.rmtree(course)
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR, assignment=ASSIGNMENT)
    for student_dir in sorted(p for p in class_dir.iterdir() if p.is_dir()):
        dest = course / SUBMITTED / student_dir.name / ASSIGNMENT
        shutil.copytree(student_dir / ASSIGNMENT, dest)
        (dest / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC\n")


def grade_table(course: Path) -> list[dict[str, str]]:
    """Per student: autograded score per notebook and in total, and manual points pending."""
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        for student in sorted(gb.students, key=lambda s: s.id):
            sub = gb.find_submission(ASSIGNMENT, student.id)
            row = {"student": student.id}
            auto_total = manual_pending = 0.0
            for nb in sorted(sub.notebooks, key=lambda n: n.name):
                auto = sum(g.score for g in nb.grades if g.auto_score is not None)
                auto_max = sum(g.max_score for g in nb.grades if g.cell.cell_type == "code")
                row[nb.name] = f"{auto:g}/{auto_max:g}"
                auto_total += auto
                manual_pending += sum(g.max_score for g in nb.grades if g.needs_manual_grade)
            row["auto total"] = f"{auto_total:g}"
            row["manual pending"] = f"{manual_pending:g}"
            row["max"] = f"{assignment.max_score:g}"
            rows.append(row)
    return rows


def print_table(rows: list[dict[str, str]]) -> None:
    headers = list(rows[0])
    widths = {h: max(len(h), *(len(r[h]) for r in rows)) for h in headers}
    print("  ".join(h.ljust(widths[h]) for h in headers))
    print("  ".join("-" * widths[h] for h in headers))
    for row in rows:
        print("  ".join(row[h].ljust(widths[h]) for h in headers))


def run(course: Path = DEFAULT_COURSE, class_dir: Path = DEMO_CLASS_DIR) -> list[dict[str, str]]:
    """Grade ``class_dir`` in a fresh ``course`` and print the results."""
    prepare_course(course, class_dir)
    log_path = course / "nbgrader.log"
    with log_path.open("w") as log:
        _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force", log=log)
        _nbgrader(course, "autograde", ASSIGNMENT, "--force", log=log)
        _nbgrader(course, "generate_feedback", ASSIGNMENT, "--force", log=log)
        _nbgrader(course, "export", "--to", "grades.csv", log=log)
    rows = grade_table(course)
    print()
    print_table(rows)
    with (course / "grades.csv").open() as handle:
        exported = list(csv.DictReader(handle))
    print()
    print(f"nbgrader export: {course / 'grades.csv'} ({len(exported)} rows)")
    print(f"feedback:        {course / FEEDBACK}/<student>/{ASSIGNMENT}/*.html")
    print(f"nbgrader log:    {log_path}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    b = sub.add_parser("build", help="regenerate demo/class from the release, the solutions and the catalogue")
    b.add_argument("--check", action="store_true")
    r = sub.add_parser("run", help="grade the demo class (the default)")
    r.add_argument("--course", type=Path, default=DEFAULT_COURSE)
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.check)
    run(getattr(args, "course", DEFAULT_COURSE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
