"""docs/course.md's hub path run as written on a fresh Debian 12: the admin's steps, the hub, Week 1, a student.

The machine is the installed one of ``support.debian_machine.installed_image``: a fresh container of
the debootstrap base after the page's install steps 1-4 (run as ``test_install_steps.py`` runs them,
root under umask 077), committed to a local image keyed on those steps' text and the checkout's
installed files, so a rerun starts here in seconds instead of repeating a 20-minute install. From a
container of it (seccomp, AppArmor and /proc's masks off: bubblewrap needs the user namespaces a
real machine has, :data:`USER_NAMESPACES`; host network: the page's hub listens on
127.0.0.1:8000, reached from this machine's Chromium):

1. the page's marked admin blocks of steps 5-9 run as written, as root under umask 077, with only the
   page's placeholders replaced (``support.page_runner``; the users' block once per user: the
   instructor and two students): users and private homes, the graders' group, the
   ``/etc/profile.d`` file, the exchange, ``/etc/jupyter/nbgrader_config.py``, ``/etc/jupyterhub``
   and its ``jupyterhub_config.py`` (the page's hub block and services block, appended in page
   order);
2. the hub is started with the page's command (its block ``admin-start-hub``), its output to a
   file as under a service manager;
3. the instructor logs in through the hub in Chromium, opens a JupyterLab terminal
   (``support.hub.Terminal``) and runs the page's Week 1 block, its due-date block and its
   ``ch11-grade doctor`` block there (``support.hub.TerminalTarget``): the terminal's own PATH
   decides which ``nbgrader`` runs, and the doctor exits non-zero on any problem;
4. a student (``<student1>``) logs in, fetches ch11 in the Assignments tab, answers Exercise 4,
   submits there, and clicks Fetch Feedback until the page the grading service (the page's
   ``ch11-serve`` service) published is the graded practice feedback.

A step that fails (its command exits non-zero, or times out) fails the test with the page's step
named (``PageStepError``). Two wrong steps planted on the page show it, each on a machine of its
own up to the instructor's terminal: the exchange made 0777 instead of 1777 (the doctor's step
fails) and the graders' line of ``/etc/profile.d/ch11.sh`` left out (Week 1 fails: the
terminal's login shell finds the students' ``nbgrader``, which cannot load the course).

Minutes from a fresh container to the first feedback (the install's seconds, kept on the image,
plus this run's) are printed and recorded in bench/README.md.

Mark ``page``: root, a Docker engine and Chromium; the ports 8000, 8001 and 8081 of this machine
free (the page's hub and proxy). Opt-in (``make test-page``).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import batch_support, browser, debian_machine, exchange_course, page_runner, tier_gate
from support import hub as hub_support
from support.course_users import User
from support.page_runner import PageStep
from support.paths import BUILD_DIR, DOCS_DIR

pytestmark = pytest.mark.page

SUITE = "bookworm"
PAGE = DOCS_DIR / "course.md"
INSTALL_STEPS = ("admin-harness-wheel", "admin-install-students", "admin-install-grader", "admin-proxy")
#: The page's admin blocks after the install, in page order (``admin-user`` runs once per user).
ADMIN_STEPS = ("admin-user", "admin-graders", "admin-profile", "admin-exchange", "admin-jupyter-dir",
               "admin-nbgrader-config", "admin-hub-dir", "admin-hub-config", "admin-hub-services")
INSTRUCTOR_STEPS = ("instructor-week1", "instructor-due-date", "instructor-doctor")
HUB_URL = "http://127.0.0.1:8000"
#: The page's hub (bind_url), the proxy's API and the hub's own port: JupyterHub's defaults.
PORTS = (8000, 8001, 8081)
HUB_LOG = "/var/log/ch11-hub.log"
OUT = BUILD_DIR / "page"
#: Seconds for the student's first feedback after their submit (the service starts within about a minute and
#: a half of Week 1, then grades one Exercise 4 on a loaded machine).
FEEDBACK_TIMEOUT = 900.0
ASSIGNMENT, NOTEBOOK = exchange_course.ASSIGNMENT, exchange_course.NOTEBOOK
#: What bubblewrap needs of the container that a real machine gives: user namespaces (Docker's default seccomp
#: profile refuses them) and a /proc it may mount (not masked). ``--privileged`` would do too, where the engine
#: itself may grant every capability (not inside another container).
USER_NAMESPACES = ("--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                   "--security-opt", "systempaths=unconfined")


@dataclass(frozen=True)
class People:
    """The page's names, as this run fills them."""

    instructor: str = "instructor"
    students: tuple[str, str] = ("alice", "bob")
    graders: str = "ch11-graders"


def values(people: People, **more: str) -> dict[str, str]:
    """The page's placeholders this tier fills (``more``: the per-user ``<user>`` and ``<password>``)."""
    return {"<checkout>": debian_machine.CHECKOUT, "<instructor>": people.instructor,
            "<student1>": people.students[0], "<student2>": people.students[1], "<graders>": people.graders,
            "<exchange>": "/usr/local/share/nbgrader/exchange", **more}


def admin_steps(page: str, people: People, passwords: dict[str, str]) -> list[PageStep]:
    """The page's admin steps 5-9 and its hub start, substituted, in page order; the users' block once per user."""
    rest = [*(s for s in ADMIN_STEPS if s != "admin-user"), "admin-start-hub"]
    steps = page_runner.page_steps(page, values(people), only=rest)
    users = [page_runner.page_steps(page, values(people, **{"<user>": name, "<password>": passwords[name]}),
                                    only=("admin-user",))[0] for name in passwords]
    return users + steps


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        # As the hub, the proxy and tornado bind: the last run's closed connections (TIME_WAIT) do not hold the
        # port for them, and without this the probe took them for a listener and skipped the next test.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (docker, and the machine's users)"
    taken = [p for p in PORTS if not _port_free(p)]
    if taken:
        return f"the page's hub needs this machine's ports {PORTS}, and {taken} are in use"
    return browser.browser_reason()


def _exec(machine: str, user: str, script: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "exec", "-i", "--user", user, "--workdir", "/", machine, "bash", "-euo",
                           "pipefail", "-c", script], input=stdin, capture_output=True, text=True, timeout=600)


def _wait_for_hub(machine: str, timeout: float = hub_support.HUB_START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{HUB_URL}/hub/api/", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    raise AssertionError(f"the hub did not answer at {HUB_URL} within {timeout:.0f} s:\n{_hub_log(machine)}")


def _hub_log(machine: str) -> str:
    return _exec(machine, "root", f"tail -n 60 {HUB_LOG}").stdout


def _user(name: str) -> User:
    return User(name, Path(f"/home/{name}"), 0, 0)  # the uid is the container's: only the name is used here


def _instructor_term(page_text: str, people: People, passwords: dict[str, str], context, log: Path) -> None:
    """The instructor logs in through the hub and runs the page's Week 1, due-date and doctor blocks in a
    JupyterLab terminal of their server."""
    steps = page_runner.page_steps(page_text, values(people), only=INSTRUCTOR_STEPS)
    page = context.new_page()
    name = people.instructor
    hub_support.log_in(page, HUB_URL, _user(name), passwords[name], f"{HUB_URL}/user/{name}/lab**")
    hub_support.wait_for_lab(page)
    terminal = hub_support.Terminal(page, f"/user/{name}/")
    page_runner.run_steps(steps, hub_support.TerminalTarget(terminal, name), log=log)
    page.close()


def _feedback_text(machine: str, student: str) -> str:
    """The newest fetched feedback page of Exercise 4 in the student's home, or ''."""
    done = _exec(machine, student, f"cd /home/{student}/{ASSIGNMENT}/feedback 2>/dev/null && "
                                   f"cat \"$(ls -1 | sort | tail -n 1)/{NOTEBOOK}.html\" 2>/dev/null || true")
    return done.stdout


def _student_gets_feedback(machine: str, student: str, password: str, context) -> str:
    page = context.new_page()
    hub_support.log_in(page, HUB_URL, _user(student), password, f"{HUB_URL}/user/{student}/lab**")
    hub_support.assignments_tab(page)
    hub_support.list_rows(page, "released", 1).first.locator(".item_status button").click()
    hub_support.list_rows(page, "fetched", 1)
    notebook = f"/home/{student}/{ASSIGNMENT}/{NOTEBOOK}.ipynb"
    released = _exec(machine, student, f"cat {notebook}")
    assert released.returncode == 0, released.stderr
    answered = exchange_course.exercise4_answered(released.stdout, f"private-{secrets.token_hex(8)}")
    wrote = _exec(machine, student, f"cat > {notebook} && find /home/{student}/{ASSIGNMENT} -maxdepth 1 "
                                    f"-name '*.ipynb' ! -name {NOTEBOOK}.ipynb -delete", stdin=answered)
    assert wrote.returncode == 0, wrote.stderr
    hub_support.list_rows(page, "fetched", 1).first.locator('.item_status button:text("Submit")').click()
    hub_support.list_rows(page, "submitted", 1)
    deadline = time.monotonic() + FEEDBACK_TIMEOUT
    while True:
        page.locator("#refresh_assignments_list").click()
        hub_support.list_rows(page, "submitted", 1).first.locator(
            '.item_status button:text("Fetch Feedback")').click()
        time.sleep(5)
        text = _feedback_text(machine, student)
        if "practice feedback" in text and "audit_marks:" in text:
            page.close()
            return text
        assert time.monotonic() < deadline, (f"no graded practice feedback for {student} within "
                                             f"{FEEDBACK_TIMEOUT:.0f} s; last page:\n{text[-2000:]}\n"
                                             f"the hub's log:\n{_hub_log(machine)}")
        time.sleep(10)


def _installed() -> debian_machine.InstalledImage:
    tier_gate.require("page", _reason())
    batch_support.require_docker()
    OUT.mkdir(parents=True, exist_ok=True)
    install = page_runner.page_steps(PAGE.read_text(), {"<checkout>": debian_machine.CHECKOUT}, only=INSTALL_STEPS)
    return debian_machine.installed_image(SUITE, install, OUT / f"install-{SUITE}.log")


def hub_path(page_text: str, image: debian_machine.InstalledImage, name: str, *, student: bool = True
             ) -> tuple[dict[str, float], str]:
    """The page's hub path (the module docstring's steps 1-4; with ``student`` false, 1-3) from ``page_text`` on a
    container of ``image``; the cumulative seconds of each part, and the student's feedback page ('' without).

    Raises:
        PageStepError: the first of the page's steps that fails, named.
    """
    people = People()
    passwords = {who: secrets.token_urlsafe(12) for who in (people.instructor, *people.students)}
    steps = admin_steps(page_text, people, passwords)
    log = OUT / f"hub-term-{name}.log"
    log.unlink(missing_ok=True)
    seconds: dict[str, float] = {}
    feedback = ""
    start = time.monotonic()
    with debian_machine.machine_of(image.tag, f"hub-{name}", *USER_NAMESPACES) as machine:
        target = page_runner.DockerTarget(machine, env=debian_machine.host_env(), umask="077")
        try:
            page_runner.run_steps(steps[:-1], target, log=log)
            seconds["admin steps 5-9"] = time.monotonic() - start
            target.start(steps[-1], HUB_LOG)
            _wait_for_hub(machine)
            seconds["hub up"] = time.monotonic() - start
            with browser.chromium() as chromium:
                instructor, learner = (chromium.new_context(viewport={"width": 1280, "height": 800})
                                       for _ in range(2))
                _instructor_term(page_text, people, passwords, instructor, log)
                seconds["Week 1, due date, doctor in the instructor's terminal"] = time.monotonic() - start
                if student:
                    feedback = _student_gets_feedback(machine, people.students[0], passwords[people.students[0]],
                                                      learner)
                    seconds["first feedback in the Assignments tab"] = time.monotonic() - start
        finally:
            (OUT / f"hub-{name}.log").write_text(_exec(machine, "root", f"cat {HUB_LOG} || true").stdout)
    return seconds, feedback


def test_the_hub_path_runs_as_written_on_a_fresh_debian_12():
    image = _installed()
    seconds, feedback = hub_path(PAGE.read_text(), image, SUITE)
    assert "audit_marks: 4 / 4 points" in feedback, feedback[-2000:]
    total = image.install_seconds + seconds["first feedback in the Assignments tab"]
    print(f"\n{SUITE}: install {image.install_seconds:.0f} s ({'now' if image.made_now else 'cached image'}); "
          + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
          + f"; fresh container to first feedback {total / 60:.1f} min")


#: A wrong step planted on the page (the text it replaces, and with what) -> the page's step that must fail.
PLANTED = {
    "the exchange at 0777": (("chmod 1777 /usr/local/share/nbgrader/exchange\n",
                              "chmod 0777 /usr/local/share/nbgrader/exchange\n"), "instructor-doctor"),
    "the graders' PATH line missing": (('case " $(id -Gn) " in *" <graders> "*) PATH="/opt/ch11/grader/bin:$PATH" ;; '
                                        'esac\n', ""), "instructor-week1"),
}


@pytest.mark.parametrize("plant", sorted(PLANTED))
def test_a_planted_wrong_step_fails_with_the_page_s_step_named(plant):
    (old, new), step = PLANTED[plant]
    page_text = PAGE.read_text()
    assert page_text.count(old) == 1, f"the page no longer has {old!r} once"
    image = _installed()
    with pytest.raises(page_runner.PageStepError) as caught:
        hub_path(page_text.replace(old, new), image, f"{SUITE}-planted", student=False)
    print(f"\n{plant}: {caught.value}")
    assert caught.value.step == step, str(caught.value)
