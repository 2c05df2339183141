"""nbgrader's ``generate_feedback`` for a class, split by student over the cores.

``nbgrader generate_feedback <assignment> --force`` converts every student's notebooks one
after another in one process, about half a CPU-second a page (most of it nbconvert's HTML
pass), while the batch's other cores sit idle: for a class it is the batch's last minutes. A
student's pages read only that student's autograded notebooks and gradebook rows, so
:func:`generate_feedback` runs the same command once per *lane*, ``--student <pattern>``, the
lanes at once, each a fork of the course's nbgrader fork server.

The lanes' patterns split the graded students by the character after their common prefix
(:func:`lane_patterns`): the first lanes take sets of those characters (``[ab]*``), the last
lane every other (``[!ab]*``), so each student is matched by exactly one lane.
Each lane is nbgrader's own command on its students: ``--force`` removes and rewrites each of
its students' feedback folders as the one command would, and a course config's
``student_id_exclude`` still applies. The pages are the same, byte for byte.

With one lane, no fork server (a fresh interpreter per lane would pay nbgrader's imports once
per lane), a student pattern already given, or students that cannot be split that way, the
step is the one command, as before. Each lane writes its own log; they are joined, lane by
lane, into the step's log.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from ..course_layout import AUTOGRADED
from ..nbgrader_cli import nbgrader_env
from .course import course_step
from .nbgrader_fork import NbgraderForkServer, start_nbgrader
from .nbgrader_log import nbgrader_error_line

__all__ = ["feedback_lanes", "generate_feedback", "lane_patterns"]


def feedback_lanes() -> int:
    """How many lanes run at once: the cores this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


def graded_students(course: Path, assignment: str) -> list[str]:
    """The students with at least one notebook under ``autograded/<student>/<assignment>/``, sorted."""
    pattern = course / AUTOGRADED / "*" / glob.escape(assignment) / "*.ipynb"
    return sorted({Path(p).parent.parent.name for p in glob.glob(str(pattern))})


def lane_patterns(students: Sequence[str], lanes: int) -> list[str]:
    """``--student`` glob patterns, at most ``lanes``, that split ``students`` into groups of about equal size.

    ``P``, the students' common prefix, is followed in each id by a character: the patterns cut
    those characters (in sorted order) into runs, ``P[ab]*`` for the first runs and
    ``P[!ab]*`` (the complement of the others) for the last, so every string that starts with
    ``P`` and goes on matches exactly one pattern: each student is converted once, whatever the
    ids. Every pattern matches at least one student (a pattern matching no notebook is an error
    to nbgrader). ``["*"]`` (one lane) when ``lanes`` < 2, or a student's id is ``P`` itself,
    or the students have fewer than two characters after ``P``, or one of those is not a
    letter, a digit or ``_`` (it could mean something inside ``[...]``).
    """
    prefix = os.path.commonprefix(list(students))  # noqa: RUF071 (characters, not path components)
    if lanes < 2 or not students or prefix in students:
        return ["*"]
    counts: dict[str, int] = {}
    for student in students:
        counts[student[len(prefix)]] = counts.get(student[len(prefix)], 0) + 1
    nexts = sorted(counts)
    if len(nexts) < 2 or not all(c.isalnum() or c == "_" for c in nexts):
        return ["*"]
    lanes = min(lanes, len(nexts))
    total = sum(counts.values())
    groups: list[list[str]] = [[]]
    seen = 0
    for index, char in enumerate(nexts):
        # Cut before this character once the groups so far hold their share, if enough remain for the rest.
        if groups[-1] and len(groups) < lanes and seen >= total * len(groups) / lanes \
                and len(nexts) - index >= lanes - len(groups):
            groups.append([])
        groups[-1].append(char)
        seen += counts[char]
    if len(groups) < 2:
        return ["*"]
    head = glob.escape(prefix)
    taken = "".join("".join(g) for g in groups[:-1])
    return [f"{head}[{''.join(g)}]*" for g in groups[:-1]] + [f"{head}[!{taken}]*"]


def generate_feedback(course: Path, log_path: Path, assignment: str, *, student: str = "*",
                      forks: NbgraderForkServer | None = None, lanes: int | None = None) -> list[str]:
    """``nbgrader generate_feedback <assignment> --force`` (``--student`` when not ``*``); returns what failed.

    Args:
        course: the nbgrader course directory.
        log_path: where nbgrader's output goes (with lanes, their logs joined, lane by lane).
        assignment: the assignment whose feedback is generated.
        student: nbgrader's ``--student`` pattern; ``*``: every student (the only case split into lanes).
        forks: the course's nbgrader fork server; without one the step is the one command.
        lanes: at most this many at once; ``None``: :func:`feedback_lanes`.

    Returns:
        One line per failed run (``[]`` when all ran): the run, its exit status, the telling
        line of its log, and ``log_path``.
    """
    args = ["generate_feedback", assignment, "--force"]
    if student != "*" or forks is None:
        return course_step(course, log_path, *args, *(["--student", student] if student != "*" else []),
                           forks=forks)
    patterns = lane_patterns(graded_students(course, assignment), feedback_lanes() if lanes is None else lanes)
    if patterns == ["*"]:
        return course_step(course, log_path, *args, forks=forks)
    parts = [log_path.with_name(f"{log_path.stem}.{n}{log_path.suffix}") for n in range(len(patterns))]
    names = [f"generate_feedback --student {pattern}" for pattern in patterns]
    try:
        return _run_lanes(course, log_path, [[*args, "--student", p] for p in patterns], parts, names, forks)
    finally:
        _join(log_path, names, parts)


def _run_lanes(course: Path, log_path: Path, argvs: Sequence[list[str]], parts: Sequence[Path],
               names: Sequence[str], forks: NbgraderForkServer) -> list[str]:
    """Start every lane (``argvs[i]``, its log ``parts[i]``) at once, then wait for each; failures name ``log_path``."""
    started = []
    for argv, part in zip(argvs, parts, strict=True):
        with part.open("wb") as out:  # the run has its own descriptor for it
            started.append(start_nbgrader(argv, course, nbgrader_env(), out, forks, whose="the course's"))
    problems = []
    for name, part, proc in zip(names, parts, started, strict=True):
        returncode = proc.wait()
        if returncode != 0:
            line = nbgrader_error_line(part.read_text(errors="replace"))
            problems.append(f"nbgrader {name} failed (exit {returncode}): {line} (log: {log_path})")
    return problems


def _join(log_path: Path, names: Sequence[str], parts: Sequence[Path]) -> None:
    """``parts`` (one lane's log each) into ``log_path``, each under a line naming its lane; the parts removed."""
    with log_path.open("wb") as joined:
        for name, part in zip(names, parts, strict=True):
            joined.write(f"[ch11] {name}\n".encode())
            if part.is_file():
                joined.write(part.read_bytes())
                part.unlink()
