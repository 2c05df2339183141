"""The term through the hub exchange on a hub whose users' servers all run as one unix uid (Zero to JupyterHub).

Zero to JupyterHub runs every user's server as ``singleuser.uid: 1000``, so the folder exchange cannot tell
students apart there (docs/course.md, "Several machines"). This hub models that on one machine: JupyterHub 6.1.1
from the students' environment, Debian's proxy, the ``DummyAuthenticator`` (one password; logins through the
hub's form), and a small subclass of JupyterHub's ``SimpleLocalProcessSpawner`` that starts every user's
server as ONE unix user made for the module (as every pod is uid 1000), each in a home of its own under that
user's home (as each pod has its own volume), with the students' image: the students' environment, the
plug-in's three paths alone on ``PYTHONPATH`` (not the grading package), and an ``nbgrader_config.py`` every
server reads from Jupyter's config path (the chart's ``singleuser.extraFiles`` mount) holding the page's
``c.ExchangeFactory`` lines. The hub's config adds docs/course.md's "Exchange through the hub" block as
written (the service as a hub-managed service, its role, ``extra_user_scopes``, ``server_token_scopes``,
``CH11_EXCHANGE_URL``); only its paths and ports are this machine's. The service runs as the hub's user
(root here), so its storage is out of the shared uid's reach, as on Zero to JupyterHub, where no user's pod
mounts it. What separates the users is their hub token alone.

The term, everything through the plug-in and the service: the instructor (hub user ``prof`` in
``formgrade-<course>``; their commands run as the shared uid in their home with their hub token, as in a
terminal of their server, from the grading environment) releases; ``ch11-grade serve`` with
``c.ServePolicy.exchange = "hub"`` grades on submit; ``ada`` (in Chromium, the Assignments tab) and ``ben``
(the REST API of his own server, which the tab calls) fetch, submit and fetch the practice feedback; the
instructor collects, autogrades, generates and releases feedback; both fetch it. Then ``ben``, with a
token of his own, asks the service for ``ada``'s submission and feedback: refused.

One hub start for the module. Wall time of ``nice -n 19 .venv/bin/python -m pytest -m hub -s
tests/hub/test_hub_exchange_term.py`` on the shared 2-core machine, not idle: 3 min 52 s at a load
average of 5.4 to 6.6 (pytest's 225 s); 3 min 15 s at about 4 to 5 (pytest's 191 s: 9 s until the hub
and the service answer, 45 s more to generate and release, 35 s for both students to fetch and submit,
35 s until both practice pages are fetched, 40 s to collect, autograde, generate and release feedback,
1 s to fetch it; 11 s to stop the hub and clean up). Not measured on an idle machine.
Screenshots, the hub's log and the grading service's go to ``build/hub-exchange/``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import signal
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.course_layout import CONFIG
from support import browser, course_users, exchange_course, hub_exchange
from support import hub as hub_support
from support.course_users import User
from support.paths import BUILD_DIR, COURSE_CONFIG, SOURCE_DIR

pytestmark = [pytest.mark.slow, pytest.mark.hub]

COURSE = "ch11-z2jh"
ASSIGNMENT, NOTEBOOK = exchange_course.ASSIGNMENT, exchange_course.NOTEBOOK
INSTRUCTOR, BROWSER_STUDENT, API_STUDENT = "prof", "ada", "ben"
POLICY = """
c.ServePolicy.attempts = 4
c.ServePolicy.window_minutes = 60
c.ServePolicy.workers = 1
c.ServePolicy.rescan_seconds = 2
c.ServePolicy.hub_poll_seconds = 1
c.ServePolicy.exchange = "hub"
"""
SCREENSHOTS = BUILD_DIR / "hub-exchange"
WAIT = 400.0


@dataclass
class Term:
    """The hub, its shared unix user, and what the steps saw, for the tests to inspect."""

    root: Path
    shared: User
    running: hub_exchange.ExchangeHub | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    markers: dict[str, str] = field(default_factory=dict)
    practice: dict[str, str] = field(default_factory=dict)
    final: dict[str, bytes] = field(default_factory=dict)
    generated: dict[str, bytes] = field(default_factory=dict)
    server_uids: dict[str, int] = field(default_factory=dict)
    password: str = ""
    collect_out: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def homes(self) -> Path:
        return self.shared.home / "users"

    @property
    def course(self) -> Path:
        return self.homes / INSTRUCTOR / "course"

    @property
    def serve_log(self) -> Path:
        return self.root / "serve.log"

    def as_user(self, name: str) -> User:
        """Hub user ``name`` as the files see them: the shared uid, their own home."""
        return User(name, self.homes / name, self.shared.uid, self.shared.gid)

    def environment(self, token: str) -> dict[str, str]:
        """The instructor's terminal: their home, the grading package, the pods' config, their hub token."""
        assert self.running is not None
        return {"HOME": str(self.homes / INSTRUCTOR), "USER": INSTRUCTOR, "PYTHONPATH": str(self.root / "lib"),
                "JUPYTER_CONFIG_PATH": str(self.root / "etc-jupyter"), "JUPYTERHUB_API_TOKEN": token,
                "CH11_EXCHANGE_URL": self.running.service_url}

    def wait(self, check, what: str, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                log = self.serve_log.read_text(errors="replace")[-3000:] if self.serve_log.is_file() else ""
                hub = self.running.hub.log_text()[-3000:] if self.running else ""
                raise AssertionError(f"timed out waiting for {what}\nserve log:\n{log}\nhub log:\n{hub}")
            time.sleep(0.5)

    def graded(self, student: str) -> bool:
        return self.serve_log.is_file() and f"graded   {student} " in self.serve_log.read_text(errors="replace")


def _nbgrader(term: Term, *argv: str) -> str:
    """``nbgrader <argv>`` as the instructor in the course (see :meth:`Term.environment`); its output."""
    _student_venv, grader_venv = course_users.course_venvs()
    done = course_users.run_as(term.shared, ["nbgrader", *argv], cwd=term.course, venv=grader_venv,
                               env=term.environment(term.tokens[INSTRUCTOR]))
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"nbgrader {' '.join(argv)} exited {done.returncode}:\n{out[-4000:]}"
    return out


def _server_post(term: Term, student: str, action: str) -> dict:
    """POST ``/user/<student>/assignments/<action>`` (nbgrader's handler the Assignments tab calls), with the
    student's token; the JSON answer."""
    assert term.running is not None
    body = urllib.parse.urlencode({"course_id": COURSE, "assignment_id": ASSIGNMENT}).encode()
    request = urllib.request.Request(f"{term.running.url}/user/{student}/assignments/{action}", data=body,
                                     method="POST", headers={"Authorization": f"token {term.tokens[student]}"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def _service_get(term: Term, path: str, token: str) -> tuple[int, bytes]:
    """GET ``<service>/api/<path>`` with ``token``: the status and the body."""
    assert term.running is not None
    request = urllib.request.Request(f"{term.running.service_url}api/{path}",
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _fetched(term: Term, student: str) -> Path | None:
    """The feedback page of ``student``'s one submission in their assignment folder, if fetched."""
    found = sorted((term.homes / student / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
    assert len(found) <= 1, found
    return found[0] if found else None


def _server_uid(term: Term, student: str) -> int:
    """The uid of ``student``'s running single-user server (its process's, found by its command line)."""
    for pid in hub_support.processes_of({term.shared.uid}):
        with contextlib.suppress(OSError):
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if b"jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_bytes() and \
                    f"JUPYTERHUB_USER={student}".encode() in environ:
                return Path(f"/proc/{pid}").stat().st_uid
    raise AssertionError(f"no server of {student}'s runs")


def _set_up(term: Term) -> None:
    """The course (as the instructor, the shared uid), the pods' config, the hub's config; the hub started."""
    student_venv, grader_venv = course_users.course_venvs()
    package = course_users.install_package_copy(term.root / "lib")
    plugin = hub_exchange.plugin_copy(package, term.root / "plugin")
    etc = term.root / "etc-jupyter"
    etc.mkdir()
    places = hub_exchange.SharedUidPlaces(term.shared.name, term.homes, student_venv, grader_venv, plugin, package,
                                          etc, term.root / "exchange-storage")
    password = term.password = secrets.token_urlsafe(12)
    term.markers = {who: f"private-{who}-{secrets.token_hex(8)}" for who in (BROWSER_STUDENT, API_STUDENT)}
    state = term.root / "hub"
    state.mkdir(mode=0o700)
    ports = {name: hub_support.free_port() for name in ("public", "hub", "proxy_api", "service")}
    admin = secrets.token_hex(32)
    (state / "jupyterhub_config.py").write_text(hub_exchange.shared_uid_config(state, ports, places, admin, password))
    plugin_lines = hub_exchange.page_exchange_blocks(places.storage, grader_venv, 0, 0)[hub_exchange.PLUGIN_BLOCK_MARK]
    (etc / CONFIG).write_text(f"c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = {COURSE!r}\n"
                              f"{plugin_lines}")
    init_course(term.course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    with (term.course / CONFIG).open("a") as config:  # the course's config adds to the pods' (docs/course.md)
        config.write(f"\nc.CourseDirectory.course_id = {COURSE!r}\n{POLICY}\n{plugin_lines}\n")
    course_users.chown_tree(term.homes, term.shared)
    url = f"http://127.0.0.1:{ports['public']}"
    hub = hub_support.start_hub(url, state, student_venv)
    term.running = hub_exchange.ExchangeHub(hub, url, admin, places.storage)
    hub_exchange.wait_for_service(term.running)
    term.running.user(INSTRUCTOR, f"formgrade-{COURSE}")
    for student in (BROWSER_STUDENT, API_STUDENT):
        term.running.user(student, f"nbgrader-{COURSE}")
    term.tokens = {who: term.running.token(who) for who in (INSTRUCTOR, BROWSER_STUDENT)}
    term.tokens[API_STUDENT] = term.running.token(
        API_STUDENT, scopes=[hub_exchange.ACCESS_SCOPE, f"access:servers!user={API_STUDENT}"])


def _api_student_starts(term: Term) -> None:
    """``ben``'s server, started through the hub's REST API (as the hub's home page's button does)."""
    assert term.running is not None
    term.running.api("POST", f"/users/{API_STUDENT}/server")


def _api_student_fetches(term: Term) -> None:
    assert term.running is not None
    running = term.running
    term.wait(lambda: running.api("GET", f"/users/{API_STUDENT}")["servers"].get("", {}).get("ready"),
              f"{API_STUDENT}'s server")
    _server_post(term, API_STUDENT, "fetch")
    released = term.homes / API_STUDENT / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    assert released.is_file(), f"{API_STUDENT}'s fetch brought nothing"
    exchange_course.answer_exercise4(term.as_user(API_STUDENT), term.markers[API_STUDENT], wrong="general_dag")
    answer = _server_post(term, API_STUDENT, "submit")
    assert answer.get("success"), answer


def _browser_student(term: Term, page) -> None:
    """``ada`` in the Assignments tab: log in, fetch, answer Exercise 4, submit."""
    assert term.running is not None
    url = term.running.url
    hub_support.log_in(page, url, term.as_user(BROWSER_STUDENT), term.password,
                       f"{url}/user/{BROWSER_STUDENT}/lab**")
    hub_support.assignments_tab(page)
    hub_support.list_rows(page, "released", 1).first.locator(".item_status button").click()
    hub_support.list_rows(page, "fetched", 1)
    page.screenshot(path=str(SCREENSHOTS / "fetched.png"))
    exchange_course.answer_exercise4(term.as_user(BROWSER_STUDENT), term.markers[BROWSER_STUDENT])
    hub_support.list_rows(page, "fetched", 1).first.locator('.item_status button:text("Submit")').click()
    hub_support.list_rows(page, "submitted", 1)


def _browser_fetches_feedback(term: Term, page, what: str, check) -> None:
    """``ada`` presses Fetch Feedback in the tab (after a refresh) until ``check`` holds for the fetched page."""
    def fetched() -> bool:
        page.locator("#refresh_assignments_list").click()
        hub_support.list_rows(page, "submitted", 1).first.locator(
            '.item_status button:text("Fetch Feedback")').click()
        page.locator(".nested_list_item a", has_text="view feedback").first.wait_for(timeout=hub_support.STEP_MS)
        found = _fetched(term, BROWSER_STUDENT)
        return found is not None and check(found.read_bytes())

    term.wait(fetched, f"{BROWSER_STUDENT}'s {what} in the tab")
    page.screenshot(path=str(SCREENSHOTS / f"{what}.png"))


@pytest.fixture(scope="module")
def term() -> Iterator[Term]:
    hub_exchange.require_exchange_hub()
    hub_support.require_hub()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix=f"{COURSE}-", dir="/tmp"))
    root.chmod(0o755)
    (root / "home").mkdir(mode=0o755)
    shared = course_users.make_user("c11z", root / "home")
    made = Term(root, shared)
    made.homes.mkdir()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    serve = None
    try:
        _set_up(made)
        made.seconds["hub and service up"] = time.monotonic() - started
        _api_student_starts(made)
        _nbgrader(made, "generate_assignment", ASSIGNMENT)
        _nbgrader(made, "release_assignment", ASSIGNMENT)
        _student_venv, grader_venv = course_users.course_venvs()
        serve = course_users.start_as(shared, ["python", "-m", "ch11_autograder.cli", "serve", "--course",
                                               str(made.course)], log=made.serve_log, cwd=made.course,
                                      venv=grader_venv, env=made.environment(made.tokens[INSTRUCTOR]))
        made.seconds["released, serving"] = time.monotonic() - started
        with browser.chromium() as chromium:
            context = chromium.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            _browser_student(made, page)
            _api_student_fetches(made)
            made.seconds["both submitted"] = time.monotonic() - started
            made.server_uids = {who: _server_uid(made, who) for who in (BROWSER_STUDENT, API_STUDENT)}
            for student in (BROWSER_STUDENT, API_STUDENT):
                made.wait(lambda s=student: made.graded(s), f"{student}'s grading on submit")
            _browser_fetches_feedback(made, page, "practice",
                                      lambda text: b"practice feedback for your submission of" in text)
            _server_post(made, API_STUDENT, "fetch_feedback")
            for student in (BROWSER_STUDENT, API_STUDENT):
                fetched = _fetched(made, student)
                assert fetched is not None, f"{student} fetched no practice feedback"
                made.practice[student] = fetched.read_text()
            made.seconds["practice feedback fetched"] = time.monotonic() - started

            made.collect_out = _nbgrader(made, "collect", ASSIGNMENT)
            _nbgrader(made, "autograde", ASSIGNMENT)
            _nbgrader(made, "generate_feedback", ASSIGNMENT)
            _nbgrader(made, "release_feedback", ASSIGNMENT)
            made.seconds["graded, feedback released"] = time.monotonic() - started
            for student in (BROWSER_STUDENT, API_STUDENT):
                made.generated[student] = (made.course / "feedback" / student / ASSIGNMENT /
                                           f"{NOTEBOOK}.html").read_bytes()
            _browser_fetches_feedback(made, page, "final", lambda text: text == made.generated[BROWSER_STUDENT])
            _server_post(made, API_STUDENT, "fetch_feedback")
            for student in (BROWSER_STUDENT, API_STUDENT):
                fetched = _fetched(made, student)
                assert fetched is not None
                made.final[student] = fetched.read_bytes()
            made.seconds["final feedback fetched"] = time.monotonic() - started
            context.close()
        print("hub exchange term timings (s, cumulative):", {k: round(v, 1) for k, v in made.seconds.items()})
        yield made
    finally:
        if serve is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)
        running = made.running
        if running is not None and running.hub.process.poll() is None:
            with contextlib.suppress(AssertionError, OSError):
                hub_support.stop_hub(running.hub)
        state = root / "hub"
        if (state / "hub.log").is_file():
            shutil.copy(state / "hub.log", SCREENSHOTS / "hub.log")
        if made.serve_log.is_file():
            shutil.copy(made.serve_log, SCREENSHOTS / "serve.log")
        hub_support.end_everything(running.hub if running else None, [shared], state)
        for pid in hub_exchange.service_pids(root / "exchange-storage"):  # none may outlive the hub
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        course_users.remove_user(shared)
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------- the tests


def test_every_server_runs_as_the_one_shared_uid(term: Term) -> None:
    assert term.server_uids == {BROWSER_STUDENT: term.shared.uid, API_STUDENT: term.shared.uid}


def test_grading_on_submit_gives_each_student_their_practice_feedback(term: Term) -> None:
    ada, ben = term.practice[BROWSER_STUDENT], term.practice[API_STUDENT]
    assert "practice feedback for your submission of" in ada and "audit_marks: 4 / 4 points" in ada, ada
    assert "audit_marks: 3 / 4 points" in ben and "general DAG" in ben, ben


def test_the_instructor_collects_both_and_each_fetches_their_own_released_feedback(term: Term) -> None:
    assert (term.course / "submitted" / BROWSER_STUDENT / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()
    assert (term.course / "submitted" / API_STUDENT / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()
    assert term.generated[BROWSER_STUDENT] != term.generated[API_STUDENT]
    for student in (BROWSER_STUDENT, API_STUDENT):
        assert term.final[student] == term.generated[student], f"{student}'s fetched feedback"
        assert term.markers[student].encode() in term.final[student]


#: What ``ben`` asks the service for with his own token: ``ada``'s submissions and feedback, each way the API has.
CLASSMATE_REQUESTS = (
    f"courses/{COURSE}/view?parts=feedback&student={BROWSER_STUDENT}",
    f"courses/{COURSE}/view?parts=feedback&assignment={ASSIGNMENT}&student={BROWSER_STUDENT}",
    f"courses/{COURSE}/view?parts=inbound&student={BROWSER_STUDENT}",
    f"courses/{COURSE}/view?parts=inbound&assignment={ASSIGNMENT}",
    f"courses/{COURSE}/view?parts=inbound",
    f"courses/{COURSE}/submissions",
)


def _members(body: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        return tar.getnames()


def test_a_student_asking_for_a_classmates_submission_or_feedback_is_refused(term: Term) -> None:
    token = term.running.token(API_STUDENT) if term.running else ""
    # His own feedback, with the same token: the service answers him (so the refusals below are its choice).
    status, body = _service_get(term, f"courses/{COURSE}/view?parts=feedback&assignment={ASSIGNMENT}", token)
    assert status == 200 and any(n.endswith(".html") for n in _members(body)), (status, body[:300])
    for request in CLASSMATE_REQUESTS:
        status, body = _service_get(term, request, token)
        assert status in (403, 404), f"{request}: {status}"
        assert not body.startswith(b"\x1f\x8b"), f"{request}: an archive came back"
        assert term.markers[BROWSER_STUDENT].encode() not in body
        assert "error" in json.loads(body), body[:300]
