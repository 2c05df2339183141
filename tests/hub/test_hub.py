"""The course on a real JupyterHub, set up as docs/course.md ("The hub") says, with real people's tools.

JupyterHub from PyPI (``requirements/hub.txt``) runs as root from the students' environment,
with Debian's ``configurable-http-proxy``, PAM logins of real unix users (passwords set with
``chpasswd``, homes 0700) and the default local-process spawner; every user's JupyterLab is
``jupyterhub-singleuser`` of the students' environment, with nbgrader's Assignments tab. Its
config, the graders' group and the ``/etc/profile.d`` file are the page's blocks (``support/hub.py``):
the grading service ``ch11-serve`` run by the hub as the instructor from the grading environment,
each server's PATH by the graders' group, and the instructor's ``formgrader`` server. The hub's
output goes to a file, as under systemd (so JupyterLab's terminals are login shells); the fault
tier (``test_hub_faults.py``) starts it in a terminal. Everything listens on 127.0.0.1.

1. ``lab``, in Chromium: logs in, opens Nbgrader > Assignments, fetches ch11, answers
   Exercise 4 (the file written as the student), submits, fetches feedback while the service is
   held (SIGSTOP) and opens the status page, then, once graded, fetches again, follows
   "(view feedback)" and opens the practice feedback.
2. ``term``, in a JupyterLab terminal of their hub server (a login shell: PATH from their
   ``~/.profile``, the page's ``/etc/profile.d`` line): the page's ``nbgrader`` commands, with
   the catalogued "general DAG" mistake; the feedback names it.
3. The instructor logs in: ``command -v nbgrader`` and ``command -v ch11-grade`` in a JupyterLab
   terminal of their server are the grading environment's; the page's ``ch11-grade doctor`` there
   finds nothing wrong; their ``formgrader`` server lists the course's assignment.
4. ``term`` submits again; while that submission is being graded the hub is stopped with SIGINT
   (Ctrl-C: it stops its services with SIGINT) and started again. Nothing is lost: the
   submission is graded after the restart, ``term`` fetches its feedback in a new terminal,
   every submission has exactly one page per notebook and the practice ledger merged none twice.
5. The due date passes: in a terminal of their server the instructor gives the assignment a due
   date a day ago (``nbgrader db assignment add``) and ``lab`` two more days
   (``ch11-grade extend``), the page's commands. ``lab`` submits in the Assignments tab and gets
   practice feedback showing their own due date; ``term`` submits in a terminal and fetches a
   status page saying practice feedback closed at the class's due date.

Students answer Exercise 4 only (the cheapest notebook to grade). Screenshots go to
``build/hub/``. Wall time: docs/course.md, "The tiers".
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from support import browser, exchange_course
from support import hub as hub_support
from support.hub import HubCourse, Terminal
from support.paths import BUILD_DIR
from support.serve_exchange import queue_rows, sandbox_running, served_course, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.hub]

COURSE_ID = "ch11-hub"
ASSIGNMENT, NOTEBOOK = exchange_course.ASSIGNMENT, exchange_course.NOTEBOOK
POLICY = """
c.ServePolicy.attempts = 4
c.ServePolicy.window_minutes = 60
c.ServePolicy.workers = 1
c.ServePolicy.rescan_seconds = 2
"""
SCREENSHOTS = BUILD_DIR / "hub"
#: The service's command line, as the page's block gives it (what finds its process).
SERVE_NEEDLE = "serve --course"
NBGRADER_MENU, STEP_MS = hub_support.NBGRADER_MENU, hub_support.STEP_MS
_assignments_tab, _rows = hub_support.assignments_tab, hub_support.list_rows


@dataclass
class Observed(HubCourse):
    """What the steps saw, for the tests to inspect."""

    markers: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, list[str]] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)
    terminal_out: dict[str, str] = field(default_factory=dict)
    formgrader_text: str = ""
    stop_status: int | None = None
    interrupted_stamp: str = ""
    interrupted_state: str = ""
    stop_log: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    doctor: hub_support.Doctor | None = None
    #: The queue, the practice ledger and the exchange's feedback pages after step 4 (step 5 adds to them).
    rows_after_restart: list[dict] = field(default_factory=list)
    ledger_after_restart: str = ""
    pages_after_restart: list[str] = field(default_factory=list)
    class_due: str = ""
    lab_due: str = ""

    def new_stamp(self, role: str) -> str:
        """The submission time of ``role``'s newest submission (from their nbgrader cache), recorded."""
        stamps = sorted(p.name.split("+")[2] for p in self.cache(role).iterdir())
        fresh = [s for s in stamps if s not in self.stamps.get(role, [])]
        assert len(fresh) == 1, (role, stamps)
        self.stamps.setdefault(role, []).append(fresh[0])
        return fresh[0]

    def graded(self, role: str, stamp: str) -> None:
        line = f"graded   {self.students[role].name} {stamp}"
        wait_for(lambda: line in self.log.read_text(errors="replace"), f"{role}'s grading of {stamp}", self)


def _hold(course: Observed, stop: bool) -> None:
    pid = hub_support.service_pid(course.instructor, SERVE_NEEDLE)
    assert pid is not None, "no ch11-serve process"
    os.killpg(pid, signal.SIGSTOP if stop else signal.SIGCONT)


def _status_out(course: Observed, role: str, stamp: str) -> bool:
    from nbgrader.utils import notebook_hash

    user = course.students[role]
    secret = (course.cache(role) / f"{user.name}+{ASSIGNMENT}+{stamp}" / "submission_secret.txt").read_text().strip()
    page = course.feedback / f"{notebook_hash(secret=secret, notebook_id=NOTEBOOK)}.html"
    return page.is_file() and "practice feedback" not in page.read_text()


def _open_file(context, course: Observed, role: str, path: str, shot: str) -> str:
    """``path`` (relative to the student's home) as their JupyterLab serves it (``/files/``), its text."""
    tab = context.new_page()
    try:
        tab.goto(f"{course.hub_url}{course.user_prefix(role)}files/{path}", timeout=STEP_MS)
        tab.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
        return tab.evaluate("document.body.innerText")
    finally:
        tab.close()


def _open_lab(course: Observed, context, role: str):
    """A new page of ``context`` with the student ``role`` logged in to the hub and at their JupyterLab;
    returns (page, the student's user)."""
    user = course.students[role]
    page = context.new_page()
    hub_support.log_in(page, course.hub_url, user, course.passwords[role],
                       f"{course.hub_url}{course.user_prefix(role)}lab**")
    return page, user


def _lab_student(course: Observed, context) -> None:
    """Step 1 of the module docstring."""
    role = "lab"
    page, user = _open_lab(course, context, role)
    _assignments_tab(page)
    _rows(page, "released", 1).first.locator(".item_status button").click()
    _rows(page, "fetched", 1)
    page.screenshot(path=str(SCREENSHOTS / "lab-fetched.png"))
    exchange_course.answer_exercise4(user, course.markers[role])

    _rows(page, "fetched", 1).first.locator('.item_status button:text("Submit")').click()
    submitted = _rows(page, "submitted", 1)
    stamp = course.new_stamp(role)
    # The service grades an Exercise 4 in seconds: held (SIGSTOP) as soon as the status page is out, so the
    # student's fetch finds it, as a student who fetches while queued or graded does.
    deadline = time.monotonic() + 300
    while not _status_out(course, role, stamp):
        assert time.monotonic() < deadline, course.log.read_text(errors="replace")[-4000:]
        time.sleep(0.02)
    _hold(course, True)
    try:
        submitted.first.locator('.item_status button:text("Fetch Feedback")').click()
        page.locator(".nested_list_item a", has_text="view feedback").first.wait_for(timeout=STEP_MS)
        page.screenshot(path=str(SCREENSHOTS / "lab-status-fetched.png"))
        course.seen["status"] = _open_file(context, course, role, f"{ASSIGNMENT}/feedback/{stamp}/{NOTEBOOK}.html",
                                           "lab-status-page")
    finally:
        _hold(course, False)

    course.graded(role, stamp)
    page.locator("#refresh_assignments_list").click()
    _rows(page, "submitted", 1).first.locator('.item_status button:text("Fetch Feedback")').click()
    # After a fetch of the newer page, the link is back (nbgrader compares the fetched page with the exchange's).
    page.locator(".nested_list_item a", has_text="view feedback").first.wait_for(timeout=STEP_MS)
    page.locator(".nested_list_item a", has_text="view feedback").first.click()
    page.locator(".jp-DirListing-item", has_text=f"{NOTEBOOK}.html").first.wait_for(timeout=STEP_MS)
    page.screenshot(path=str(SCREENSHOTS / "lab-feedback-folder.png"))
    course.seen["feedback"] = _open_file(context, course, role, f"{ASSIGNMENT}/feedback/{stamp}/{NOTEBOOK}.html",
                                         "lab-feedback-page")
    page.close()


def _terminal_student(course: Observed, context) -> Terminal:
    """Step 2 of the module docstring; returns the terminal for step 4."""
    role = "term"
    page, user = _open_lab(course, context, role)
    hub_support.wait_for_lab(page)
    terminal = Terminal(page, course.user_prefix(role))

    def run(name: str, command: str) -> str:
        status, out = terminal.run(command)
        course.terminal_out[name] = out
        assert status == 0, f"{command!r} in term's terminal exited {status}:\n{out[-3000:]}"
        return out

    run("which", "command -v nbgrader")
    status, out = terminal.run('python -c "import ch11_autograder"')
    course.terminal_out["import"] = out
    assert status != 0
    run("fetch", f"nbgrader fetch_assignment {ASSIGNMENT}")
    exchange_course.answer_exercise4(user, course.markers[role], wrong="general_dag")
    run("submit", f"nbgrader submit {ASSIGNMENT}")
    stamp = course.new_stamp(role)
    course.graded(role, stamp)
    run("fetch_feedback", f"nbgrader fetch_feedback {ASSIGNMENT}")
    course.seen["term"] = (user.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html").read_text()
    return terminal


def _instructor(course: Observed, context) -> None:
    """Step 3: the instructor's terminal finds the grading environment; their formgrader server lists the course."""
    page, terminal = hub_support.instructor_terminal(course, context)
    status, out = terminal.run("command -v nbgrader; command -v ch11-grade")
    course.terminal_out["instructor"] = out
    assert status == 0, out
    doctor = hub_support.start_doctor(course, terminal, "good")
    hub_support.open_formgrader(course, page)
    page.get_by_text(ASSIGNMENT, exact=True).first.wait_for(timeout=STEP_MS)
    page.screenshot(path=str(SCREENSHOTS / "formgrader.png"), full_page=True)
    course.formgrader_text = page.inner_text("body")
    course.doctor = hub_support.doctor_result(course, doctor)
    page.close()


def _stop_mid_grading(course: Observed, context, terminal: Terminal) -> None:
    """Step 4 of the module docstring."""
    role, user = "term", course.students["term"]
    exchange_course.answer_exercise4(user, course.markers[role])
    status, out = terminal.run(f"nbgrader submit {ASSIGNMENT}")
    assert status == 0, out
    stamp = course.interrupted_stamp = course.new_stamp(role)
    line = f"grading  {user.name} {stamp}"
    wait_for(lambda: line in course.log.read_text(errors="replace"), "term's resubmission being graded", course,
             poll=0.02)
    pid = hub_support.service_pid(course.instructor, SERVE_NEEDLE)
    assert pid is not None
    wait_for(lambda: sandbox_running(pid) or [r["state"] for r in queue_rows(course) if r["stamp"] == stamp]
             != ["grading"], "term's resubmission in a sandbox", course, poll=0.02)
    rows = [r for r in queue_rows(course) if r["stamp"] == stamp]
    course.interrupted_state = rows[0]["state"]
    assert course.hub is not None
    course.stop_status = hub_support.stop_hub(course.hub)
    course.stop_log = course.log.read_text(errors="replace")
    assert hub_support.service_pid(course.instructor, SERVE_NEEDLE) is None, "the hub left its service running"
    hub_support.start_served_hub(course)
    course.graded(role, stamp)
    page = context.new_page()  # the hub stopped every server with it: the student starts theirs again
    page.goto(f"{course.hub_url}/hub/spawn?next={course.user_prefix(role)}lab", timeout=240_000)
    page.wait_for_url(f"{course.hub_url}{course.user_prefix(role)}lab**", timeout=240_000)
    hub_support.wait_for_lab(page)
    again = Terminal(page, course.user_prefix(role))
    status, out = again.run(f"nbgrader fetch_feedback {ASSIGNMENT}")
    course.terminal_out["fetch_feedback after the restart"] = out
    assert status == 0, out
    course.seen["after restart"] = (user.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html").read_text()
    page.close()
    course.rows_after_restart = queue_rows(course)
    course.ledger_after_restart = (course.practice / ".ch11-batch" / "ledger.jsonl").read_text()
    course.pages_after_restart = sorted(p.name for p in course.feedback.iterdir())


def _submitted(course: Observed, role: str, before: int) -> str:
    """Once ``role``'s nbgrader cache holds a submission more than ``before``, its stamp."""
    wait_for(lambda: len(list(course.cache(role).iterdir())) > before, f"{role}'s new submission", course, poll=0.2)
    return course.new_stamp(role)


def _published(course: Observed, role: str, stamp: str, text: str) -> None:
    """Until the exchange's page of ``role``'s submission ``stamp`` holds ``text``."""
    from nbgrader.utils import notebook_hash

    user = course.students[role]
    secret = (course.cache(role) / f"{user.name}+{ASSIGNMENT}+{stamp}" / "submission_secret.txt").read_text().strip()
    page = course.feedback / f"{notebook_hash(secret=secret, notebook_id=NOTEBOOK)}.html"
    wait_for(lambda: page.is_file() and text in page.read_text(), f"{role}'s page saying {text!r}", course)


def _due_date_passes(course: Observed, chromium) -> None:
    """Step 5 of the module docstring."""
    lab, term = course.students["lab"], course.students["term"]
    due = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(days=1)  # whole minutes: format_due's
    course.class_due, course.lab_due = (f"{d:%Y-%m-%d %H:%M} UTC" for d in (due, due + timedelta(days=2)))
    instructor = chromium.new_context(viewport={"width": 1280, "height": 800})
    _, terminal = hub_support.instructor_terminal(course, instructor)
    status, out = terminal.run(
        f'cd ~/course && nbgrader db student add {lab.name} && '
        f'nbgrader db assignment add {ASSIGNMENT} --duedate="{due:%Y-%m-%d %H:%M:%S} UTC" && '
        f"ch11-grade extend {ASSIGNMENT} --course ~/course --student {lab.name} --by 2d")
    course.terminal_out["extend"] = out
    assert status == 0, out
    instructor.close()

    # term, in a terminal of their server: after the class's due date, without an extension.
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    hub_support.log_in(page, course.hub_url, term, course.passwords["term"],
                       f"{course.hub_url}{course.user_prefix('term')}lab**")
    hub_support.wait_for_lab(page)
    terminal = Terminal(page, course.user_prefix("term"))
    exchange_course.answer_exercise4(term, course.markers["term"])
    before = len(list(course.cache("term").iterdir()))
    status, out = terminal.run(f"nbgrader submit {ASSIGNMENT}")
    assert status == 0, out
    stamp = _submitted(course, "term", before)
    _published(course, "term", stamp, "practice feedback closed")
    status, out = terminal.run(f"nbgrader fetch_feedback {ASSIGNMENT}")
    assert status == 0, out
    course.seen["term closed"] = (term.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html").read_text()
    context.close()

    # lab, in the Assignments tab: extended past it.
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    hub_support.log_in(page, course.hub_url, lab, course.passwords["lab"],
                       f"{course.hub_url}{course.user_prefix('lab')}lab**")
    _assignments_tab(page)
    exchange_course.answer_exercise4(lab, course.markers["lab"])
    before = len(list(course.cache("lab").iterdir()))
    _rows(page, "fetched", 1).first.locator('.item_status button:text("Submit")').click()
    stamp = _submitted(course, "lab", before)
    course.graded("lab", stamp)
    page.locator("#refresh_assignments_list").click()
    _rows(page, "submitted", 1).first.locator('.item_status button:text("Fetch Feedback")').click()
    fetched = lab.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html"
    wait_for(lambda: fetched.is_file() and "practice feedback" in fetched.read_text(), "lab's fetched feedback",
             course)
    page.screenshot(path=str(SCREENSHOTS / "lab-extended-fetched.png"))
    course.seen["lab extended"] = _open_file(context, course, "lab", f"{ASSIGNMENT}/feedback/{stamp}/{NOTEBOOK}.html",
                                             "lab-extended-feedback")
    context.close()


@pytest.fixture(scope="module")
def hub_course():
    hub_support.require_hub()
    started = time.monotonic()
    with served_course(COURSE_ID, ("lab", "term"), POLICY, prefix="c11h", make=Observed) as course:
        try:
            hub_support.prepare_hub(course)
            course.markers = {role: f"private-{role}-{secrets.token_hex(8)}" for role in course.students}
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            course.seconds["setup"] = time.monotonic() - started
            hub_support.start_served_hub(course)
            course.seconds["hub up"] = time.monotonic() - started
            with browser.chromium() as chromium:
                lab, term, instructor = (chromium.new_context(viewport={"width": 1280, "height": 800})
                                         for _ in range(3))
                _lab_student(course, lab)
                course.seconds["lab student"] = time.monotonic() - started
                terminal = _terminal_student(course, term)
                course.seconds["terminal student"] = time.monotonic() - started
                _instructor(course, instructor)
                course.seconds["formgrader"] = time.monotonic() - started
                _stop_mid_grading(course, term, terminal)
                course.seconds["stopped and restarted"] = time.monotonic() - started
                _due_date_passes(course, chromium)
                course.seconds["due date passed"] = time.monotonic() - started
            print("hub tier timings (s, cumulative):", {k: round(v, 1) for k, v in course.seconds.items()})
            yield course
        finally:  # the hub's and the services' output is kept for a failure's diagnosis
            hub_support.end_hub(course, keep_log=SCREENSHOTS / "hub.log")


# --------------------------------------------------------------------------- the tests


def test_homes_are_private(hub_course):
    for user in [hub_course.instructor, *hub_course.students.values()]:
        assert user.home.stat().st_mode & 0o777 == 0o700, user.name


def test_the_browser_student_sees_the_status_page_then_the_feedback(hub_course):
    assert re.search(r"(Queued|Being graded)", hub_course.seen["status"]), hub_course.seen["status"]
    assert "fetch_feedback" in hub_course.seen["status"]
    feedback = hub_course.seen["feedback"]
    assert "practice feedback" in feedback and "audit_marks: 4 / 4 points" in feedback, feedback


def test_the_terminal_is_a_login_shell_with_the_students_environment(hub_course):
    assert f"{hub_course.student_venv}/bin/nbgrader" in hub_course.terminal_out["which"]
    assert "ModuleNotFoundError" in hub_course.terminal_out["import"], "the grading package reached a student"


def test_the_instructor_s_terminal_has_the_grading_environment_first(hub_course):
    """The hub's output is a file here (as under systemd): the terminal is a login shell, PATH from /etc/profile.d."""
    hub_support.assert_grading_environment_first(hub_course, hub_course.terminal_out["instructor"])


def test_the_terminal_student_gets_the_mistake_named(hub_course):
    page = hub_course.seen["term"]
    assert "audit_marks: 3 / 4 points" in page and "general DAG" in page, page
    assert "inputs:" not in page and "expected:" not in page


def test_the_formgrader_server_serves_the_course(hub_course):
    assert ASSIGNMENT in hub_course.formgrader_text
    assert "Manage Assignments" in hub_course.formgrader_text, hub_course.formgrader_text[:2000]
    for log in (hub_course.log, hub_course.instructor.home / "formgrader.log"):
        assert "ModuleNotFoundError" not in log.read_text(errors="replace"), f"{log}: the course did not load"


def test_a_hub_stopped_mid_grading_loses_nothing(hub_course):
    from nbgrader.utils import notebook_hash

    assert hub_course.interrupted_state == "grading", "the hub was stopped after the grading, not during it"
    rows = hub_course.rows_after_restart
    interrupted = [r for r in rows if r["stamp"] == hub_course.interrupted_stamp]
    assert len(interrupted) == 1 and interrupted[0]["state"] == "done", interrupted
    assert "practice feedback" in hub_course.seen["after restart"]
    assert "audit_marks: 4 / 4 points" in hub_course.seen["after restart"]
    published = {f"{notebook_hash(secret=r['secret'], notebook_id=NOTEBOOK)}.html": r for r in rows
                 if r["published"] is not None and json.loads(r["notebooks"])}
    assert hub_course.pages_after_restart == sorted(published)
    assert [r["state"] for r in rows] == ["done"] * 3, rows  # lab once, term twice
    ledger = [json.loads(line) for line in hub_course.ledger_after_restart.splitlines() if line.strip()]
    graded = [e["sha256"] for e in ledger if e["event"] == "graded"]
    assert len(graded) == len(set(graded)) == 3, "no submission merged twice into the practice gradebook"


def test_the_service_logs_its_stop_by_the_hub_as_documented(hub_course):
    """docs/course.md, "Stopping": SIGINT (a hub stopping its service) logs ``stopping (SIGINT)``, the abandoned
    submission, and ``stopped`` last."""
    term = hub_course.students["term"].name
    lines = [line.split("  ", 1)[1] for line in hub_course.stop_log.splitlines()
             if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ", line)]
    assert lines[-3:] == ["stopping (SIGINT)",
                          f"abandoned {term} {hub_course.interrupted_stamp} (graded again at the next start)",
                          "stopped"], lines[-6:]
    assert hub_course.stop_status == 0, "the hub's own exit after SIGINT"



def test_the_page_s_doctor_finds_nothing_wrong_on_the_good_hub(hub_course):
    """docs/course.md, "Checking the deployment": run as the page says, in the instructor's terminal of the hub."""
    doctor = hub_course.doctor
    assert doctor is not None
    assert (doctor.status, doctor.problems) == (0, []), doctor.text
    assert len(doctor.lines) == 1 and doctor.lines[0].startswith("all checks passed (the formgrader starts in "), \
        doctor.text
    assert f"of the {hub_support.FORMGRADER_TIMEOUT} s {hub_course.instructor.name}'s formgrader server is given" in \
        doctor.lines[0], doctor.text


def test_after_the_due_date_only_the_extended_student_gets_practice_feedback(hub_course):
    """docs/course.md, "Extensions" and "Practice grading stops at each student's due date", through the hub."""
    lab, term = hub_course.students["lab"].name, hub_course.students["term"].name
    assert f"{lab}  due {hub_course.lab_due} (extension 2d; the class's {hub_course.class_due})" in \
        hub_course.terminal_out["extend"], hub_course.terminal_out["extend"]
    extended = hub_course.seen["lab extended"]
    assert "practice feedback" in extended and "audit_marks: 4 / 4 points" in extended, extended
    assert f"Due date: {hub_course.lab_due} (your extension included)." in extended, extended
    closed = hub_course.seen["term closed"]
    assert "audit_marks" not in closed, closed
    assert f"practice feedback closed at {hub_course.class_due}" in closed, closed
    assert "(your extension included)" not in closed, closed
    rows = [r for r in queue_rows(hub_course) if r not in hub_course.rows_after_restart]
    assert sorted((r["student"], r["state"]) for r in rows) == sorted([(lab, "done"), (term, "refused")]), rows
