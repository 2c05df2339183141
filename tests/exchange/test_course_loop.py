"""The course loop as a JupyterHub runs it, with real unix users and nbgrader's own file exchange.

One instructor and three students, each a unix user with a private home, and an exchange
directory laid out as nbgrader documents it (world-writable root; ``inbound`` 0733,
``outbound`` 0755 and ``feedback`` 0711, made by nbgrader itself). With the repository's
``nbgrader_config.py`` as the course's config:

1. the instructor runs ``nbgrader generate_assignment ch11`` and ``release_assignment ch11``;
2. each student, as themselves: ``fetch_assignment``, answers Exercise 4 (``complete``:
   every answer; ``mistake``: the catalogued "general DAG" mark; ``hostile``: the complete
   answer plus code that hunts for the exchange's other submissions, the other students'
   homes and the instructor's course, and later drops a newer submission named for
   ``complete`` in the exchange), ``validate``, ``submit``. ``mistake`` submits after the
   due date the instructor set in the gradebook;
3. the instructor: ``collect``, ``autograde`` (student code in the bwrap sandbox), and
   ``ch11-grade batch`` of the collected folder into a copy of the course, which must give
   the same gradebook; ``generate_feedback``, ``release_feedback``;
4. each student: ``fetch_feedback``, and finds exactly their own feedback.

Students answer Exercise 4 only (the cheapest notebook to grade) and submit that one
notebook; nbgrader warns about the others and scores them 0. The late penalty is the
course's policy in the instructor's own nbgrader config (``penalty_method = "zero"``), so
nbgrader's number is the whole notebook score. The loop runs once per module (about
two minutes, plus about a minute to build the users' venvs the first time on a machine);
each test checks one promise of it.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from ch11_autograder.batch import init_course
from support import course_users, exchange_course
from support.course_users import User, run_as
from support.paths import COURSE_CONFIG, RELEASE_DIR, SOURCE_DIR

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

COURSE_ID = "ch11-course"
ASSIGNMENT = "ch11"
NOTEBOOK = "ex4_audit"
WRONG = "general_dag"
HIDDEN_TEXT = "hidden checks run outside this notebook"
ROLES = ("complete", "mistake", "hostile")
_LOCK = threading.Lock()

#: Appended to the hostile student's ``audit_marks`` answer cell. It runs as the student
#: (``nbgrader validate``) and inside the grader's sandbox (autograde, the verdict worker),
#: records every path it could list or read in probe.json beside the notebook, and prints it.
HOSTILE_CODE = '''

import glob as _glob, json as _json, os as _os
def _hunt(targets):
    found = []
    for target in targets:
        try:
            names = _os.listdir(target)
        except OSError:
            names = []
        for path in [*(_os.path.join(target, n) for n in names), *_glob.glob(target + "/**", recursive=True)]:
            if _os.path.normpath(path) == _os.path.normpath(target):
                continue
            try:
                with open(path, "rb") as handle:
                    found.append([path, handle.read(4000).decode("utf-8", "replace")])
            except OSError:
                if _os.path.isdir(path) and path != target:
                    found.append([path, "(a directory it could list)"])
    return found
_found = _hunt({targets!r})
try:
    with open("probe.json", "w") as _handle:
        _json.dump(_found, _handle)
except OSError:
    pass
print("HOSTILE-PROBE", len(_found), _found[:5])
'''


@dataclass
class Loop:
    """What the loop left behind, for the tests to inspect."""

    root: Path
    exchange: Path
    course: Path
    batch_course: Path
    instructor: User
    students: dict[str, User]
    markers: dict[str, str]
    due: datetime
    log: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    probe_as_hostile: list = field(default_factory=list)
    student_venv: Path | None = None
    grader_venv: Path | None = None
    collect_output: str = ""
    forged: str = ""


def _ok(done, what: str):
    assert done.returncode == 0, (f"{what} failed (exit {done.returncode}):\n"
                                  f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return done


def _write_user_config(user: User, exchange: Path, extra: str = "") -> None:
    exchange_course.write_user_config(user, exchange, COURSE_ID, extra)


def _answer(user: User, role: str, marker: str, targets: list[str]) -> None:
    extra = HOSTILE_CODE.replace("{targets!r}", repr(targets)) if role == "hostile" else ""
    exchange_course.answer_exercise4(user, marker, wrong=WRONG if role == "mistake" else None, extra_code=extra)


def _hostile_targets(exchange: Path, course: Path, homes: Path, students: dict[str, User]) -> list[str]:
    return [str(exchange / COURSE_ID / "inbound"), str(exchange / COURSE_ID / "feedback"), str(course),
            str(course / "submitted"), *(str(u.home) for r, u in students.items() if r != "hostile")]


def _gradebook_rows(course: Path) -> dict[str, dict]:
    """Student -> submission time, seconds late, and per notebook the penalty and every grade's scores."""
    from nbgrader.api import Gradebook

    rows: dict[str, dict] = {}
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")  # nbgrader's SQLAlchemy warnings; the rows are right
        for sub in gb.assignment_submissions(ASSIGNMENT):
            rows[sub.student.id] = {
                "timestamp": sub.timestamp, "seconds_late": sub.total_seconds_late,
                "notebooks": {nb.name: {"penalty": nb.late_submission_penalty,
                                        "grades": {g.name: (g.auto_score, g.manual_score) for g in nb.grades}}
                              for nb in sub.notebooks}}
    return rows


@pytest.fixture(scope="module")
def loop():
    course_users.require_root()
    started = time.monotonic()
    student_venv, grader_venv = course_users.course_venvs()
    venvs_seconds = time.monotonic() - started

    root = Path(tempfile.mkdtemp(prefix="ch11-exchange-", dir="/tmp"))
    root.chmod(0o755)
    homes = root / "home"
    homes.mkdir(mode=0o755)
    exchange = root / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # docs/course.md, step 7: writable by everyone, sticky (no one renames the course)
    users: list[User] = []
    try:
        course_users.install_package_copy(root / "lib")
        instructor = course_users.make_user("c11i", homes)
        users.append(instructor)
        students = {}
        for role in ROLES:
            students[role] = course_users.make_user(f"c11{role[0]}", homes)
            users.append(students[role])
        course = instructor.home / "course"
        # The instructor's own config: the hub's two lines, and the course's late policy.
        _write_user_config(instructor, exchange, 'c.LateSubmissionPlugin.penalty_method = "zero"\n')
        for user in students.values():
            _write_user_config(user, exchange)
        init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
        course_users.chown_tree(course, instructor)
        markers = {role: f"private-{role}-{secrets.token_hex(8)}" for role in ROLES}
        loop = Loop(root, exchange, course, instructor.home / "batch-course", instructor, students, markers,
                    due=datetime.now(UTC), student_venv=student_venv, grader_venv=grader_venv)
        loop.seconds["venvs"] = venvs_seconds
        _run_loop(loop, homes)
        loop.seconds["total"] = time.monotonic() - started
        print("exchange tier timings (s):", {k: round(v, 1) for k, v in loop.seconds.items()})
        yield loop
    finally:
        for user in users:
            course_users.remove_user(user)
        shutil.rmtree(root, ignore_errors=True)


def _timed(loop: Loop, name: str, user: User, argv: list[str], **kwargs):
    """Run a step as ``user``; ``loop.seconds[name]`` adds up its time (over users, also when they run at once)."""
    started = time.monotonic()
    done = run_as(user, argv, **kwargs)
    with _LOCK:
        loop.seconds[name] = loop.seconds.get(name, 0.0) + time.monotonic() - started
        loop.log.append(f"$ [{user.name}] {' '.join(argv)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return _ok(done, f"{user.name}: {' '.join(argv)}")


def _at_once(step, roles) -> None:
    """``step(role)`` for every role, in threads (each waits on its user's nbgrader); the first error is raised."""
    with ThreadPoolExecutor(len(roles)) as pool:
        list(pool.map(step, roles))


def _student_turn(loop: Loop, role: str, targets: list[str]) -> None:
    user, student = loop.students[role], {"venv": loop.student_venv}
    _timed(loop, "fetch", user, ["nbgrader", "fetch_assignment", ASSIGNMENT], **student)
    _answer(user, role, loop.markers[role], targets)
    _timed(loop, "validate", user, ["nbgrader", "validate", f"{ASSIGNMENT}/{NOTEBOOK}.ipynb"], **student)
    _timed(loop, "submit", user, ["nbgrader", "submit", ASSIGNMENT], **student)


def _forge_submission(loop: Loop) -> None:
    """The hostile student drops, in the exchange, a newer submission named for `complete`: its own notebook."""
    hostile, victim = loop.students["hostile"], loop.students["complete"]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    loop.forged = f"{victim.name}+{ASSIGNMENT}+{stamp}+forged"
    folder = loop.exchange / COURSE_ID / "inbound" / loop.forged
    script = ('mkdir "$1" && cp "$2" "$1/" && printf %s "$3" > "$1/timestamp.txt" && '
              'printf %s "$4" > "$1/submission_secret.txt" && chmod -R a+rX "$1"')
    _timed(loop, "forge", hostile, ["sh", "-c", script, "sh", str(folder),
                                    str(hostile.home / ASSIGNMENT / f"{NOTEBOOK}.ipynb"), stamp, "ab" * 64])


def _run_loop(loop: Loop, homes: Path) -> None:
    ins, course = loop.instructor, loop.course
    grader = {"venv": loop.grader_venv, "cwd": course, "env": {"PYTHONPATH": str(loop.root / "lib")}}

    # 1. Hand-out.
    _timed(loop, "generate", ins, ["nbgrader", "generate_assignment", ASSIGNMENT], **grader)
    _timed(loop, "release", ins, ["nbgrader", "release_assignment", ASSIGNMENT], **grader)

    # 2. Students, at once as in a class: fetch, answer, validate, submit. `mistake` comes after the due date.
    targets = _hostile_targets(loop.exchange, course, homes, loop.students)
    _at_once(lambda role: _student_turn(loop, role, targets), ("complete", "hostile"))
    _forge_submission(loop)
    time.sleep(1.1)
    loop.due = datetime.now(UTC).replace(microsecond=0)
    _timed(loop, "due date", ins, ["nbgrader", "db", "assignment", "add", ASSIGNMENT,
                                   f"--duedate={loop.due.strftime('%Y-%m-%d %H:%M:%S')} UTC"], **grader)
    time.sleep(1.1)
    _student_turn(loop, "mistake", targets)

    # 3. Collect, then grade twice: nbgrader autograde in the course, the batch in a copy made before grading.
    loop.collect_output = _timed(loop, "collect", ins, ["nbgrader", "collect", ASSIGNMENT], **grader).stderr
    shutil.copytree(course, loop.batch_course, symlinks=True,
                    ignore=shutil.ignore_patterns("submitted", "autograded", "feedback"))
    course_users.chown_tree(loop.batch_course, ins)
    _timed(loop, "autograde", ins, ["nbgrader", "autograde", ASSIGNMENT], **grader)
    _timed(loop, "batch", ins, ["python", "-m", "ch11_autograder.cli", "batch", str(course / "submitted"),
                                "--course", str(loop.batch_course), "--workers", "2"], **grader)
    _timed(loop, "generate_feedback", ins, ["nbgrader", "generate_feedback", ASSIGNMENT], **grader)
    _timed(loop, "release_feedback", ins, ["nbgrader", "release_feedback", ASSIGNMENT], **grader)

    # 4. Feedback back to each student.
    _at_once(lambda role: _timed(loop, "fetch_feedback", loop.students[role],
                                 ["nbgrader", "fetch_feedback", ASSIGNMENT], venv=loop.student_venv), ROLES)

    # The hostile student, knowing every path, looks again once everything is in place.
    probe = loop.students["hostile"].home / "probe_after.py"
    probe.write_text("import json, sys\n" + HOSTILE_CODE.replace("{targets!r}", repr(targets))
                     .replace('open("probe.json", "w")', 'open("probe_after.json", "w")'))
    course_users.chown_tree(probe, loop.students["hostile"])
    _timed(loop, "probe", loop.students["hostile"], ["python", str(probe)], venv=loop.student_venv)
    loop.probe_as_hostile = json.loads((loop.students["hostile"].home / "probe_after.json").read_text())


# --------------------------------------------------------------------------- the tests


def test_release_is_the_repository_release(loop):
    """The instructor's generate_assignment in the course gives the repository's released notebook, cell for cell."""
    mine = nbformat.read(loop.course / "assignments" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    shipped = nbformat.read(RELEASE_DIR / f"{NOTEBOOK}.ipynb", as_version=4)
    assert [c.source for c in mine.cells] == [c.source for c in shipped.cells]
    outbound = loop.exchange / COURSE_ID / "outbound" / ASSIGNMENT
    assert sorted(p.name for p in outbound.iterdir()) == sorted(p.name for p in RELEASE_DIR.glob("*.ipynb"))


def test_exchange_permissions_are_nbgrader_s(loop):
    modes = {name: oct((loop.exchange / COURSE_ID / name).stat().st_mode & 0o7777)
             for name in ("inbound", "outbound", "feedback")}
    assert modes == {"inbound": "0o2733", "outbound": "0o755", "feedback": "0o711"}  # inbound: setgid too
    assert (loop.instructor.home.stat().st_mode & 0o077) == 0


def test_collect_brings_the_submission_time_and_secret(loop):
    """The shipped include lets the exchange's two files through collect (the bug this tier was written for)."""
    for role, user in loop.students.items():
        folder = loop.course / "submitted" / user.name / ASSIGNMENT
        assert sorted(p.name for p in folder.iterdir()) == [f"{NOTEBOOK}.ipynb", "submission_secret.txt",
                                                            "timestamp.txt"], role
        inbound = [p for p in (loop.exchange / COURSE_ID / "inbound").iterdir()
                   if p.name.startswith(user.name + "+") and p.stat().st_uid == user.uid]
        assert len(inbound) == 1
        assert (folder / "timestamp.txt").read_text() == (inbound[0] / "timestamp.txt").read_text()
        assert (folder / "submission_secret.txt").read_text() == (inbound[0] / "submission_secret.txt").read_text()


def test_a_submission_forged_in_a_classmate_s_name_is_refused_at_collect(loop):
    """The hostile student's newer folder named for `complete` is not collected; `complete`'s own work is."""
    victim, hostile = loop.students["complete"], loop.students["hostile"]
    assert (loop.exchange / COURSE_ID / "inbound" / loop.forged).stat().st_uid == hostile.uid
    collected = (loop.course / "submitted" / victim.name / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text()
    assert loop.markers["complete"] in collected and loop.markers["hostile"] not in collected
    assert f"Refusing {loop.forged}: it claims to be {victim.name}'s submission but is owned by {hostile.name}" \
        in loop.collect_output


def test_autograde_and_the_batch_give_the_same_gradebook(loop):
    by_nbgrader = _gradebook_rows(loop.course)
    by_batch = _gradebook_rows(loop.batch_course)
    assert set(by_nbgrader) == {u.name for u in loop.students.values()}
    assert by_batch == by_nbgrader
    scores = {role: by_nbgrader[u.name]["notebooks"][NOTEBOOK]["grades"]["ex4_audit_marks_tests"][0]
              for role, u in loop.students.items()}
    # The catalogued mistake costs one of the four points; the hostile code changes nothing of an honest answer.
    assert scores == {"complete": 4.0, "mistake": 3.0, "hostile": 4.0}


def test_the_batch_keeps_what_release_feedback_needs(loop):
    """The batch's course holds each submission's time and key beside its feedback, as autograde's does."""
    for user in loop.students.values():
        collected = loop.course / "submitted" / user.name / ASSIGNMENT
        for course in (loop.course, loop.batch_course):
            feedback = course / "feedback" / user.name / ASSIGNMENT
            assert (feedback / f"{NOTEBOOK}.html").is_file()
            for name in ("timestamp.txt", "submission_secret.txt"):
                assert (feedback / name).read_text().strip() == (collected / name).read_text().strip(), (course, name)


def test_lateness_comes_from_the_exchange_timestamps(loop):
    """Only `mistake` submitted after the due date; its penalty ("zero") is its whole autograded score."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{loop.course / 'gradebook.db'}") as gb:
            lateness = {}
            for role, user in loop.students.items():
                sub = gb.find_submission(ASSIGNMENT, user.name)
                stamp = (loop.course / "submitted" / user.name / ASSIGNMENT / "timestamp.txt").read_text().strip()
                assert sub.timestamp.strftime("%Y-%m-%d %H:%M:%S") == stamp[:19]
                lateness[role] = (sub.total_seconds_late > 0, sub.late_submission_penalty, sub.score)
    assert lateness["complete"] == (False, 0.0, 4.0)
    assert lateness["hostile"] == (False, 0.0, 4.0)
    late, penalty, score = lateness["mistake"]
    assert late and penalty == score == 3.0


def test_each_student_fetches_exactly_their_own_feedback(loop):
    for role, user in loop.students.items():
        found = sorted((user.home / ASSIGNMENT / "feedback").rglob("*.html"))
        assert [p.name for p in found] == [f"{NOTEBOOK}.html"], role
        html = found[0].read_text()
        assert loop.markers[role] in html
        assert not [m for r, m in loop.markers.items() if r != role and m in html]
        assert HIDDEN_TEXT not in html and "BEGIN HIDDEN TESTS" not in html
        assert ("A general DAG where the paper analyses a chain" in html) == (role == "mistake")
        assert found[0].read_bytes() == (loop.course / "feedback" / user.name / ASSIGNMENT /
                                         f"{NOTEBOOK}.html").read_bytes()


def test_the_hostile_student_reads_nothing_that_is_not_theirs(loop):
    hostile = loop.students["hostile"]
    # As the hostile user, after everything was submitted, graded and released.
    assert loop.probe_as_hostile == []
    # As the hostile user, while validating (the notebook's own run).
    assert json.loads((hostile.home / ASSIGNMENT / "probe.json").read_text()) == []
    # Inside the grader's sandbox: the probe ran (its print is in the autograded notebook) and found nothing.
    graded = (loop.course / "autograded" / hostile.name / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text()
    assert "HOSTILE-PROBE 0 []" in graded
    # And nothing of anyone else's reached anything the hostile student holds.
    others = [m for r, m in loop.markers.items() if r != "hostile"]
    for path in hostile.home.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert not [m for m in others if m.encode() in text], path
            assert b"SQLite format 3" not in text, path


def test_lms_export_of_the_real_gradebook(loop):
    """Canvas's roster shape: the three students by login, one who never submitted, and one the roster lacks."""
    roster = loop.instructor.home / "canvas_roster.csv"
    names = {role: u.name for role, u in loop.students.items()}
    with roster.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (9001)", "ch10 (9000)",
                         "Current Score"])
        writer.writerow(["    Points Possible", "", "", "", "", "65.00", "20.00", "(read only)"])
        writer.writerow(["Complete, Casey", "101", "S101", names["complete"], "Sec 1", "", "18", "90"])
        writer.writerow(["Mistake, Mo", "102", "S102", names["mistake"].upper(), "Sec 1", "", "17", "85"])
        writer.writerow(["Absent, Al", "104", "S104", "c11absent", "Sec 2", "", "", ""])
    course_users.chown_tree(roster, loop.instructor)
    out = loop.instructor.home / "canvas_import.csv"
    done = run_as(loop.instructor, ["python", "-m", "ch11_autograder.cli", "lms-export", "--course", str(loop.course),
                                    "--roster", str(roster), "--out", str(out)], venv=loop.grader_venv,
                  cwd=loop.course, env={"PYTHONPATH": str(loop.root / "lib")})
    assert done.returncode == 1, done.stderr  # a gradebook student is not in the roster
    assert f"NOT EXPORTED: gradebook student {names['hostile']!r} (4)" in done.stderr
    with out.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ch11 (9001)"],
        ["    Points Possible", "", "", "", "", "65.00"],
        ["Complete, Casey", "101", "S101", names["complete"], "Sec 1", "4"],
        ["Mistake, Mo", "102", "S102", names["mistake"].upper(), "Sec 1", "0"],  # late: "zero" penalty
        ["Absent, Al", "104", "S104", "c11absent", "Sec 2", ""],
    ]


def test_the_users_can_reach_only_their_interpreters(loop):
    """The students' venv has no grading package (the hidden suites stay with the instructor)."""
    done = run_as(loop.students["hostile"], ["python", "-c", "import ch11_autograder"], venv=loop.student_venv)
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr
    assert os.access(loop.student_venv / "bin" / "python", os.X_OK)
