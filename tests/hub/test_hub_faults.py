"""No course fault takes the hub down: docs/course.md, "The hub", step 9, "No course fault stops the hub".

The hub of ``test_hub.py`` (the page's config, ``support/hub.py``), with one course and two
students, and the faults an instructor's course meets, each with a student logging in, starting
their server and working in a JupyterLab terminal while it lasts. Two hub starts share them:

1. Started in a terminal (``script``: its output a tty, so JupyterLab's terminals are not login
   shells), with the grading environment slow to start (a ``sitecustomize`` that sleeps
   :data:`SLOW` seconds in the service's and the formgrader server's start): the hub answers
   at once and ``s1`` logs in (their JupyterLab loaded before the service serves) and fetches
   the assignment; the instructor's terminal finds the grading environment; their formgrader
   server comes up late, and only it waits. Then, with the course config made to fail (its
   import of the grading package fails: the fail-closed line), the instructor's formgrader
   server, started again, stops with that line in ``~/formgrader.log`` (read through the
   instructor's own server); ``s2`` logs in and fetches meanwhile.
2. Started with its output to a file (as under systemd), with ``~/course`` renamed away: the
   service refuses (no course) and holds; the instructor's formgrader server fails at once
   (``~/formgrader.log`` says why); ``s1`` logs in and submits. Then the
   course comes back with its config failing: the service's next start refuses with the
   fail-closed line; ``s2`` logs in again. Then the config is put back and the service serves
   at its next start. Every start of the service in this run is at least 60 s after the one
   before (the hub restarts a service that exits at its next poll; ``--hold-refusal 60``).

In each fault the instructor runs the page's ``ch11-grade doctor`` in a terminal of their server
(docs/course.md, "Checking the deployment"; in the background while the fault's other steps go
on): each run exits 1 with one problem line, naming the fault and the page's section that fixes it.
Run 2 ends with two faults planted for the doctor alone, one after the other, each put back after:
the exchange root at 0777, and the instructor out of the graders' group (the PATH the hub gives
their server finds the students' ``nbgrader``).

The hub answers throughout. Wall time: docs/course.md, "The tiers".
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from support import browser, exchange_course
from support import hub as hub_support
from support.hub import STEP_MS, HubCourse, Terminal, assert_grading_environment_first, instructor_terminal
from support.paths import BUILD_DIR
from support.serve_exchange import served_course, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.hub]

COURSE_ID = "ch11-hubf"
ASSIGNMENT = exchange_course.ASSIGNMENT
POLICY = """
c.ServePolicy.workers = 1
c.ServePolicy.rescan_seconds = 2
"""
SCREENSHOTS = BUILD_DIR / "hub-faults"
#: Seconds every process of the grading environment sleeps at its start in fault 1 (JupyterHub's default
#: timeout for a service with a url is 30 s: such a service would have stopped the hub). More than half the tier's
#: formgrader http_timeout (the doctor's line), less than all of it (the formgrader server still comes up).
SLOW = 95
assert hub_support.FORMGRADER_TIMEOUT / 2 < SLOW < hub_support.FORMGRADER_TIMEOUT - 60
#: The page's ``--hold-refusal``: no start of the service within this many seconds of the one before.
HOLD = 60
#: What the course config's fail-closed line says (nbgrader_config.py), and the module the fault makes it miss.
FAIL_CLOSED = "this course grades only with the ch11_autograder package"
MISSING = "ch11_autograder_planted_missing"
SERVICE_START = re.compile(r"\[\w (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) JupyterHub \S+\] Starting service 'ch11-serve'")


@dataclass
class Faulted(HubCourse):
    """What each fault's steps saw, for the tests."""

    seen: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    run_two_from: int = 0  # the hub log's length when the second start began
    doctor: dict[str, hub_support.Doctor] = field(default_factory=dict)

    def run_two_text(self) -> str:
        """The hub's log since its second start, terminal escapes removed."""
        return hub_support.ANSI.sub("", self.log.read_bytes()[self.run_two_from:].decode(errors="replace"))

    def hub_answers(self) -> bool:
        assert self.hub is not None and self.hub.process.poll() is None, "the hub exited"
        with urllib.request.urlopen(f"{self.hub_url}/hub/api/", timeout=30) as answer:
            return answer.status == 200


def _student_works(course: Faulted, chromium, role: str, command: str, tag: str = "") -> str:
    """``role`` logs in (their server starts), runs ``command`` in a JupyterLab terminal; its output. With
    ``tag``, how many times the grading service had said it serves when their JupyterLab had loaded."""
    user = course.students[role]
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        hub_support.log_in(page, course.hub_url, user, course.passwords[role],
                           f"{course.hub_url}{course.user_prefix(role)}lab**")
        hub_support.wait_for_lab(page)
        if tag:
            course.seen[f"{tag}: serving at login"] = str(hub_support.serving_lines(course))
        status, out = Terminal(page, course.user_prefix(role)).run(command)
        assert status == 0, f"{role}: {command!r} exited {status}:\n{out[-3000:]}"
        return out
    finally:
        context.close()


def _formgrader_fails(course: Faulted, page, shot: str, why: str) -> str:
    """The instructor asks the hub for their formgrader server, which cannot start (``why`` is in its log);
    ``~/formgrader.log`` as their own server serves it."""
    name = course.instructor.name
    log = course.instructor.home / "formgrader.log"
    log.unlink(missing_ok=True)
    page.goto(f"{course.hub_url}/hub/spawn/{name}/formgrader", timeout=STEP_MS, wait_until="commit")
    wait_for(lambda: log.is_file() and why in log.read_text(errors="replace"), "the formgrader server's log", course)
    tab = page.context.new_page()
    try:
        # JupyterLab's contents API, as its file browser reads the file (``/files/`` would download a .log)
        tab.goto(f"{course.hub_url}/user/{name}/api/contents/formgrader.log?content=1&type=file&format=text",
                 timeout=STEP_MS)
        tab.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
        return json.loads(tab.evaluate("document.body.innerText"))["content"]
    finally:
        tab.close()


def _service_starts(course: Faulted) -> list[datetime]:
    """When the hub started ``ch11-serve`` in the second run."""
    return [datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
            for m in SERVICE_START.finditer(course.run_two_text())]


#: The hub's REST API from a page of the hub, with the page's XSRF token: ``[method, path]`` -> [status, body].
HUB_API_JS = """async ([method, path]) => {
  const xsrf = (window.jhdata && window.jhdata.xsrf_token) ||
    decodeURIComponent((document.cookie.split('; ').find(c => c.startsWith('_xsrf=')) || '=').split('=')[1]);
  const r = await fetch(path, {method, headers: {'X-XSRFToken': xsrf}});
  return [r.status, await r.text()];
}"""


def _stop_formgrader(course: Faulted, page) -> None:
    """The instructor stops their formgrader server (the hub's REST API, as its home page's Stop does)."""
    name = course.instructor.name
    page.goto(f"{course.hub_url}/hub/home", timeout=STEP_MS)
    status, body = page.evaluate(HUB_API_JS, ["DELETE", f"/hub/api/users/{name}/servers/formgrader"])
    assert status in (202, 204), (status, body)

    def stopped() -> bool:
        status, body = page.evaluate(HUB_API_JS, ["GET", f"/hub/api/users/{name}"])
        return status == 200 and '"formgrader"' not in body
    wait_for(stopped, "the formgrader server to stop", course, poll=1.0)


def _planted(config) -> str:
    """Make the course config's import of the grading package fail (the fail-closed line); the good text."""
    good = config.read_text()
    planted = good.replace("    import nbgrader\n", f"    import nbgrader\n    import {MISSING}\n", 1)
    assert planted != good
    config.write_text(planted)
    return good


def _slow_start_then_formgrader_fails_closed(course: Faulted, chromium) -> None:
    """Run 1 of the module docstring."""
    lib = course.root / "lib"
    # Each service or server of the grading environment, not each process it starts: they inherit the mark.
    (lib / "sitecustomize.py").write_text(
        "import os, sys, time\n"
        f"if sys.prefix == {str(course.grader_venv)!r} and not os.environ.get('CH11_TIER_SLOW'):\n"
        f"    os.environ['CH11_TIER_SLOW'] = '1'\n    time.sleep({SLOW})\n")
    (lib / "sitecustomize.py").chmod(0o644)
    started = time.monotonic()
    hub_support.start_served_hub(course, tty=True, serving=False)
    course.seconds["slow: hub answers"] = time.monotonic() - started
    course.seen["slow: s1"] = _student_works(course, chromium, "s1", f"nbgrader fetch_assignment {ASSIGNMENT}",
                                             tag="slow")
    course.seconds["slow: s1 worked"] = time.monotonic() - started
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page, terminal = instructor_terminal(course, context)
    status, out = terminal.run("command -v nbgrader; command -v ch11-grade")
    assert status == 0, out
    course.seen["tty: instructor"] = out
    # The doctor's own process is spared the planted sleep (the mark its children inherit): what it must see is the
    # formgrader's start, which it times in the environment the hub gives that server (without the mark).
    slow_doctor = hub_support.start_doctor(course, terminal, "slow", prefix="CH11_TIER_SLOW=1 ")
    asked = time.monotonic()
    hub_support.open_formgrader(course, page)
    page.get_by_text(ASSIGNMENT, exact=True).first.wait_for(timeout=STEP_MS)
    page.screenshot(path=str(SCREENSHOTS / "slow-formgrader.png"), full_page=True)
    course.seconds["slow: formgrader up after asking"] = time.monotonic() - asked
    wait_for(lambda: hub_support.serving_lines(course) > 0, "the slow service's serving line", course)
    course.seconds["slow: service serving"] = time.monotonic() - started
    course.doctor["slow start"] = hub_support.doctor_result(course, slow_doctor)
    (lib / "sitecustomize.py").unlink()
    assert course.hub_answers()

    phase = time.monotonic()
    _stop_formgrader(course, page)
    config = course.course / "nbgrader_config.py"
    good = _planted(config)
    config_doctor = hub_support.start_doctor(course, terminal, "formgrader-config")
    course.seen["config: formgrader.log"] = _formgrader_fails(course, page, "config-formgrader-log", FAIL_CLOSED)
    course.seen["config: s2"] = _student_works(course, chromium, "s2", f"nbgrader fetch_assignment {ASSIGNMENT}")
    course.doctor["formgrader cannot load the course"] = hub_support.doctor_result(course, config_doctor)
    assert course.hub_answers()
    config.write_text(good)
    context.close()
    course.seconds["config fails: formgrader"] = time.monotonic() - phase


def _missing_course_then_failing_config(course: Faulted, chromium) -> None:
    """Run 2 of the module docstring."""
    assert course.hub is not None
    hub_support.stop_hub(course.hub)
    course.run_two_from = course.log.stat().st_size
    away = course.course.with_name("course.away")
    course.course.rename(away)
    started = time.monotonic()
    hub_support.start_served_hub(course, serving=False)
    course.seconds["missing: hub answers"] = time.monotonic() - started
    wait_for(lambda: "no course directory there" in course.run_two_text(), "the service's refusal", course)
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page, terminal = instructor_terminal(course, context)
    missing_doctor = hub_support.start_doctor(course, terminal, "missing-course")
    course.seen["missing: formgrader.log"] = _formgrader_fails(course, page, "missing-formgrader-log", "can't cd")
    page.screenshot(path=str(SCREENSHOTS / "missing-spawn-page.png"), full_page=True)
    exchange_course.answer_exercise4(course.students["s1"], "during the fault")
    course.seen["missing: s1"] = _student_works(course, chromium, "s1", f"nbgrader submit {ASSIGNMENT}")
    course.doctor["missing course"] = hub_support.doctor_result(course, missing_doctor)
    assert course.hub_answers()
    course.seconds["missing course"] = time.monotonic() - started

    # The course back, its config failing: the service's next start refuses with the fail-closed line.
    phase = time.monotonic()
    good = _planted(away / "nbgrader_config.py")
    away.rename(course.course)
    refusing_doctor = hub_support.start_doctor(course, terminal, "service-refuses")
    wait_for(lambda: len(_service_starts(course)) >= 2, "the service's next start", course, timeout=HOLD + 120)
    wait_for(lambda: FAIL_CLOSED in course.run_two_text(), "the service's fail-closed refusal", course)
    course.doctor["ch11-serve refuses"] = hub_support.doctor_result(course, refusing_doctor)
    course.seen["config: s2 again"] = _student_works(course, chromium, "s2", "nbgrader list")
    assert course.hub_answers()
    (course.course / "nbgrader_config.py").write_text(good)
    course.seconds["config fails: service"] = time.monotonic() - phase

    phase = time.monotonic()
    serving = hub_support.serving_lines(course)
    wait_for(lambda: hub_support.serving_lines(course) > serving, "the service serving again", course,
             timeout=HOLD + 120)
    course.seconds["serving again"] = time.monotonic() - phase
    course.seen["run two log"] = course.run_two_text()
    assert course.hub_answers()

    phase = time.monotonic()
    course.exchange.chmod(0o777)
    try:
        course.doctor["exchange at 0777"] = hub_support.run_doctor(course, terminal, "exchange-0777")
    finally:
        course.exchange.chmod(0o1777)
    _grader(course, False)
    try:
        course.doctor["instructor's PATH"] = hub_support.run_doctor(course, terminal, "instructor-path")
    finally:
        _grader(course, True)
    context.close()
    course.seconds["doctor: exchange, PATH"] = time.monotonic() - phase


def _grader(course: Faulted, member: bool) -> None:
    """Put the instructor in the graders' group (docs/course.md, step 5), or take them out."""
    flag = "-a" if member else "-d"
    done = subprocess.run(["gpasswd", flag, course.instructor.name, course.graders], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def faults():
    hub_support.require_hub()
    started = time.monotonic()
    with served_course(COURSE_ID, ("s1", "s2"), POLICY, prefix="c11f", make=Faulted) as course:
        try:
            hub_support.prepare_hub(course)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            course.seconds["setup"] = time.monotonic() - started
            with browser.chromium() as chromium:
                phase = time.monotonic()
                _slow_start_then_formgrader_fails_closed(course, chromium)
                course.seconds["run 1 (tty): slow start, formgrader fails closed"] = time.monotonic() - phase
                phase = time.monotonic()
                _missing_course_then_failing_config(course, chromium)
                course.seconds["run 2 (file): missing course, failing config, serving again"] = \
                    time.monotonic() - phase
            course.seconds["total"] = time.monotonic() - started
            print("hub fault timings (s):", {k: round(v, 1) for k, v in course.seconds.items()})
            yield course
        finally:
            hub_support.end_hub(course, keep_log=SCREENSHOTS / "hub.log")


def test_a_slow_grading_environment_keeps_no_student_waiting(faults):
    assert faults.seconds["slow: hub answers"] < SLOW, "the hub waited for the grading environment"
    assert faults.seen["slow: serving at login"] == "0", "the student's JupyterLab loaded only after the slow start"
    assert faults.seconds["slow: service serving"] >= SLOW
    assert faults.seconds["slow: formgrader up after asking"] >= SLOW, "the formgrader server did not wait"


def test_the_instructor_s_terminal_of_a_hub_started_in_a_terminal_has_the_grading_environment_first(faults):
    """Here JupyterLab's terminals are not login shells: PATH comes from the hub's spawner environment."""
    assert_grading_environment_first(faults, faults.seen["tty: instructor"])


def test_a_course_config_that_cannot_load_stops_only_the_formgrader_and_the_service(faults):
    assert FAIL_CLOSED in faults.seen["config: formgrader.log"] and MISSING in faults.seen["config: formgrader.log"]
    log = faults.seen["run two log"]
    assert f"ch11-grade: nbgrader_config.py: {FAIL_CLOSED}" in log and MISSING in log, log[-3000:]
    assert "serve refuses to start (above); it exits in 60 s" in log
    assert faults.seen["config: s2"] and faults.seen["config: s2 again"]


def test_a_missing_course_stops_neither_the_hub_nor_a_student(faults):
    assert "can't cd" in faults.seen["missing: formgrader.log"], faults.seen["missing: formgrader.log"]
    assert f"{faults.course}: no course directory there" in faults.seen["run two log"]
    cache = faults.students["s1"].home / ".local/share/jupyter/nbgrader_cache" / COURSE_ID
    assert any(cache.iterdir()), "s1's submission during the fault"


def test_a_refusing_service_restarts_at_most_once_a_minute_then_serves(faults):
    starts = _service_starts(faults)
    assert len(starts) >= 3, starts  # no course, failing config, serving
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= HOLD, gaps
    assert faults.hub is not None and faults.hub.process.poll() is None, "the hub exited"


#: The doctor's line for each fault (a part of it), and the page's section it names.
DOCTOR_LINES = {
    "slow start": ("the formgrader's start (its Python, formgrader's import and the course's config) took ",
                   'docs/course.md, "The hub", step "The hub\'s config"'),
    "formgrader cannot load the course": (f"cannot load the course's nbgrader_config.py: nbgrader_config.py: "
                                          f"{FAIL_CLOSED}",
                                          'docs/course.md, "Fail closed: the course config without the package"'),
    "missing course": ("/course does not exist (or is not a folder)",
                       'docs/course.md, "Week 1: the course directory and the hand-out (instructor)"'),
    "ch11-serve refuses": (f"cannot load the course's nbgrader_config.py: nbgrader_config.py: {FAIL_CLOSED}",
                           'docs/course.md, "Fail closed: the course config without the package"'),
    "exchange at 0777": ("is writable by every user without the sticky bit (mode 0777)",
                         'docs/course.md, "What the exchange does not protect"'),
    "instructor's PATH": ("'s server a PATH whose nbgrader is ",
                          'docs/course.md, "The hub", step "PATH, however a shell starts"'),
}


@pytest.mark.parametrize("fault", sorted(DOCTOR_LINES))
def test_the_page_s_doctor_names_each_fault_and_its_fix_in_one_line(faults, fault):
    doctor = faults.doctor[fault]
    what, section = DOCTOR_LINES[fault]
    assert doctor.status == 1, doctor.text
    assert len(doctor.problems) == 1, doctor.text
    assert what in doctor.problems[0] and section in doctor.problems[0], doctor.text


def test_the_doctor_s_slow_start_is_the_formgrader_s(faults):
    """The doctor timed the formgrader as the hub starts it: the planted sleep included, against the tier's timeout."""
    [line] = faults.doctor["slow start"].problems
    seconds = float(re.search(r"took ([\d.]+) s", line).group(1))
    assert seconds >= SLOW, line
    assert f"more than half of the {hub_support.FORMGRADER_TIMEOUT} s" in line, line
