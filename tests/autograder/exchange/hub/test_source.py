"""Grading on submit from the hub exchange: ``ch11-grade serve`` with ``c.ServePolicy.exchange = "hub"``.

The unit test needs no hub: pages published while the service cannot be reached stay marked and are
not lost. The real-hub tests (``hub`` marker; one hub start for the module, 18-35 s here): pages missed
while the service was away reach it at the next flush (10 s); a flood from one student does not hold
back a classmate's copy (4-6 s); and the whole path (about three minutes at a load of 13-20 on 2 cores,
three gradings): a student submits through the plug-in with her hub token; the grade-on-submit
service (a real subprocess, as the instructor's hub token) copies the submission from the exchange
service, grades it in the practice course and posts the practice feedback back; the student's
``fetch_feedback`` through the plug-in shows it. Midway the grading service is killed with SIGKILL
while it grades, and the exchange service too; a classmate submits while the grader is down; after
the restart both are graded, each submission copied once, no page left unsent.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ch11_autograder.exchange.api import Unreachable, hub_exchange
from ch11_autograder.paths import ASSIGNMENT, COURSE_CONFIG, SOURCE_DIR
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeFactory
from support import hub_exchange as hub_support
from support.hub_exchange import ExchangeHub
from traitlets.config import Config

COURSE = "ch11"
SECRET = "ab" * 64
NAME = f"alice+{ASSIGNMENT}+2026-12-07 10:00:00.000000 UTC+20261207T100000.000000Z"


def test_pages_the_service_cannot_take_stay_marked_until_a_flush_sends_them(tmp_path: Path) -> None:
    """A service that cannot be reached (nothing listens on the port): publishing does not fail, the page is kept
    and marked pending, and a flush says the service is unreachable while the mark stays."""
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source, feedback = hub_exchange(f"http://127.0.0.1:{port}/services/x/", "token", COURSE, tmp_path / "copy")
    assert (tmp_path / "copy").stat().st_mode & 0o777 == 0o700
    # A submission as bring() leaves it: its folder, and its secret's index.
    folder = source.inbound / NAME
    folder.mkdir()
    (folder / "submission_secret.txt").write_text(SECRET)
    (tmp_path / "copy" / "secrets" / hashlib.sha256(SECRET.encode()).hexdigest()).write_text(NAME)

    feedback.publish_pages(SECRET, {"ex4_audit": "<p>queued</p>"})
    assert (tmp_path / "copy" / "pages" / NAME / f"{b'ex4_audit'.hex()}.html").read_text() == "<p>queued</p>"
    assert feedback.read(SECRET, "ex4_audit") is None, "what the student gets cannot be known: nothing to prune"
    # A notebook name a student chose is no path here (kept by its hex).
    feedback.publish_pages(SECRET, {"../x ü": "<p>odd</p>"})
    assert (tmp_path / "copy" / "pages" / NAME / f"{'../x ü'.encode().hex()}.html").is_file()
    assert [p.name for p in (tmp_path / "copy" / "pending").iterdir()] == [NAME]
    with pytest.raises(Unreachable, match="cannot be reached"):
        feedback.flush()
    with pytest.raises(Unreachable, match="cannot be reached"):
        source.bring()
    assert [p.name for p in (tmp_path / "copy" / "pending").iterdir()] == [NAME], "the mark went without a send"
    with pytest.raises(ValueError, match="no submission copied from the hub exchange has this secret"):
        feedback.publish_pages("cd" * 64, {"ex4_audit": "<p>x</p>"})


PLUGIN = "ch11_autograder.exchange.hub.plugin."
ACTIONS = {"submit": ("HubSubmit", "Submit"), "fetch_feedback": ("HubFetchFeedback", "FetchFeedback")}

_SERVE = """
import sys
from pathlib import Path
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import Service
course, url, token = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
policy = ServePolicy(workers=1, rescan_seconds=5, hub_poll_seconds=0.5, exchange="hub")
Service(ServeSettings(course, course / "no-folder-exchange", "ch11", policy, course / "practice", "", url,
                      token)).run()
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExchangeHub]:
    hub_support.require_exchange_hub()
    with hub_support.exchange_hub(tmp_path_factory.mktemp("serve-hub")) as running:
        for student in ("alice", "bob", "mallory"):
            running.user(student, f"nbgrader-{COURSE}")
        running.user("prof", f"formgrade-{COURSE}")
        yield running


def _action(base: Path, hub: ExchangeHub, token: str, who: str, action: str) -> Any:
    """nbgrader's exchange ``action`` through the plug-in, as ``who`` with ``token`` (as nbgrader's command runs it)."""
    c = Config()
    c.CourseDirectory.root = str(base / "nowhere")
    c.CourseDirectory.course_id = COURSE
    c.CourseDirectory.assignment_id = ASSIGNMENT
    c.Exchange.assignment_dir = str(base / who)
    c.Exchange.cache = str(base / who / ".cache")
    plugin, factory = ACTIONS[action]
    setattr(c.ExchangeFactory, action, PLUGIN + plugin)
    c.HubExchange.service_url = hub.service_url
    c.HubExchange.api_token = token
    exchange = getattr(ExchangeFactory(config=c), factory)(
        coursedir=CourseDirectory(config=c), authenticator=Authenticator(config=c), config=c)
    return exchange.start()


def _serve(course: Path, hub: ExchangeHub, token: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", _SERVE, str(course), hub.service_url, token],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _until(check: Any, what: str, log: Path, proc: subprocess.Popen[bytes] | None, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert proc is None or proc.poll() is None, f"the service ended:\n{log.read_text(errors='replace')[-4000:]}"
        assert time.monotonic() < deadline, f"no {what}:\n{log.read_text(errors='replace')[-4000:]}"
        time.sleep(0.2)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the service's whole process group (its graders, fork servers and sandboxes with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _feedback(base: Path, who: str) -> list[str]:
    """The practice feedback ``who``'s ``fetch_feedback`` put in their assignment folder, one page per submission."""
    return [p.read_text() for p in sorted((base / who / ASSIGNMENT / "feedback").glob("*/ex4_audit.html"))]


@pytest.mark.slow
@pytest.mark.hub
def test_serve_grades_what_students_submit_to_the_hub_and_a_kill_loses_nothing(hub: ExchangeHub,
                                                                              tmp_path: Path) -> None:
    from ch11_autograder.batch import init_course
    from ch11_autograder.exchange.hub.client import ServiceClient

    tokens = {who: hub.token(who) for who in ("alice", "bob", "prof")}
    ServiceClient(hub.service_url, tokens["prof"]).upload(
        f"courses/{COURSE}/released/{ASSIGNMENT}", [("ex4_audit.ipynb", SOURCE_DIR / "ex4_audit.ipynb")])
    for who in ("alice", "bob"):
        (tmp_path / who / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(SOURCE_DIR / "ex4_audit.ipynb", tmp_path / who / ASSIGNMENT / "ex4_audit.ipynb")
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    log = tmp_path / "serve.log"
    copy = course / "practice" / ".ch11-serve" / "hub-exchange"

    proc = _serve(course, hub, tokens["prof"], log)
    try:
        _until(lambda: "serving  the hub exchange service" in log.read_text(), "serving line", log, proc)
        _action(tmp_path, hub, tokens["alice"], "alice", "submit")
        _until(lambda: "grading  alice" in log.read_text(), "alice's grading", log, proc)
        time.sleep(1.0)  # into the grading
        _kill(proc)
        [exchange_pid] = hub_support.service_pids(hub.storage)
        os.kill(exchange_pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not [p for p in hub_support.service_pids(hub.storage) if p != exchange_pid]:
            assert time.monotonic() < deadline, "the hub did not start the killed exchange service again"
            time.sleep(0.5)
        hub_support.wait_for_service(hub)
        _action(tmp_path, hub, tokens["bob"], "bob", "submit")  # while the grader is down

        proc = _serve(course, hub, tokens["prof"], log)
        _until(lambda: log.read_text().count("graded   ") == 2, "both gradings", log, proc)
        _until(lambda: not any((copy / "pending").iterdir()), "every page sent", log, proc, timeout=60)
    finally:
        _kill(proc)

    text = log.read_text()
    assert "resume   alice" in text, text  # was grading when killed: graded again, from the start
    for who in ("alice", "bob"):
        _action(tmp_path, hub, tokens[who], who, "fetch_feedback")
        [page] = _feedback(tmp_path, who)
        assert "practice feedback for your submission of" in page, page
    assert sorted(p.name.split("+")[0] for p in (copy / "inbound").iterdir()) == ["alice", "bob"], "copied twice"
    db = sqlite3.connect(course / "practice" / ".ch11-serve" / "queue.db")
    rows = db.execute("SELECT student, state, reason, gradings FROM submissions ORDER BY student").fetchall()
    db.close()
    assert rows == [("alice", "done", None, 2), ("bob", "done", None, 1)], rows
    # What the pruning reads back is what the student got.
    _source, feedback = hub_exchange(hub.service_url, tokens["prof"], COURSE, copy)
    [alice] = (copy / "inbound").glob("alice+*")
    assert feedback.read((alice / "submission_secret.txt").read_text(), "ex4_audit") == _feedback(tmp_path, "alice")[0]


@pytest.mark.slow
@pytest.mark.hub
def test_a_flood_from_one_student_does_not_hold_back_a_classmates_copy(hub: ExchangeHub, tmp_path: Path) -> None:
    """Twelve submissions of one student's, then one of a classmate's: the first copy brings the classmate's with
    ten of the flood, the next the rest; nothing twice, nothing missed."""
    from ch11_autograder.exchange.hub.client import ServiceClient
    from ch11_autograder.exchange.hub.source import PER_STUDENT

    tokens = {who: hub.token(who) for who in ("bob", "mallory", "prof")}
    ServiceClient(hub.service_url, tokens["prof"]).upload(
        f"courses/{COURSE}/released/flood", [("ex4_audit.ipynb", SOURCE_DIR / "ex4_audit.ipynb")], {"force": "1"})
    source, _feedback = hub_exchange(hub.service_url, tokens["prof"], COURSE, tmp_path / "copy")
    source.bring()  # what earlier tests submitted
    before = set(os.listdir(source.inbound))
    for who in ["mallory"] * (PER_STUDENT + 2) + ["bob"]:
        ServiceClient(hub.service_url, tokens[who]).upload(
            f"courses/{COURSE}/submissions/flood", [("ex4_audit.ipynb", SOURCE_DIR / "ex4_audit.ipynb")])
    assert source.bring() == PER_STUDENT + 1
    first = {n.split("+")[0] for n in set(os.listdir(source.inbound)) - before}
    assert first == {"mallory", "bob"}
    assert source.bring() == 2 and source.bring() == 0
    new = sorted(set(os.listdir(source.inbound)) - before)
    assert [n.split("+")[0] for n in new].count("mallory") == PER_STUDENT + 2 and len(new) == PER_STUDENT + 3


@pytest.mark.slow
@pytest.mark.hub
def test_pages_missed_while_the_service_was_away_reach_the_student_at_the_next_flush(hub: ExchangeHub,
                                                                                     tmp_path: Path) -> None:
    """Published while the service cannot be reached (the same copy, a dead address): kept pending; the next flush
    with the service there sends them, and the service gives them as that submission's feedback."""
    from ch11_autograder.exchange.hub.client import ServiceClient

    tokens = {who: hub.token(who) for who in ("bob", "prof")}
    ServiceClient(hub.service_url, tokens["prof"]).upload(
        f"courses/{COURSE}/released/later", [("ex4_audit.ipynb", SOURCE_DIR / "ex4_audit.ipynb")], {"force": "1"})
    answer = ServiceClient(hub.service_url, tokens["bob"]).upload(
        f"courses/{COURSE}/submissions/later", [("ex4_audit.ipynb", SOURCE_DIR / "ex4_audit.ipynb")])
    source, feedback = hub_exchange(hub.service_url, tokens["prof"], COURSE, tmp_path / "copy")
    source.bring()
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _away, missed = hub_exchange(f"http://127.0.0.1:{port}/services/x/", tokens["prof"], COURSE, tmp_path / "copy")
    missed.publish_pages(answer["secret"], {"ex4_audit": "<p>sent later</p>"})
    assert len(list((tmp_path / "copy" / "pending").iterdir())) == 1
    assert feedback.read(answer["secret"], "ex4_audit") is None, "the service has no page yet"
    assert feedback.flush() == 1
    assert list((tmp_path / "copy" / "pending").iterdir()) == []
    assert feedback.read(answer["secret"], "ex4_audit") == "<p>sent later</p>"
