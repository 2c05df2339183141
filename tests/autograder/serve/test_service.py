"""The service's scanning and status publishing on a real inbound folder, and its stop on SIGTERM and SIGINT.

Run as root, folders are given to system users (``daemon``, ``bin``, ``sys``), who play the
students: a flood from one of them, a classmate each, and a forgery. Grading itself is
exercised by the exchange tier (tests/exchange/test_serve_loop.py) and the batch's tests; here
two real gradings show a submission starting on the free slot while another is graded. The
stop tests run the service in a real subprocess (any user) and stop it idle and mid-grading, with
SIGTERM (systemd) and with SIGINT (a JupyterHub stopping its managed service).
"""

from __future__ import annotations

import io
import os
import pwd
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.nbgrader_cli import nbgrader_env
from ch11_autograder.paths import COURSE_CONFIG, DEMO_CLASS_DIR, SOURCE_DIR
from ch11_autograder.serve.extend import set_extension
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import REFUSAL_PAGES, Service
from nbgrader.api import Gradebook
from support import process_leaks
from support.inbound_folder import own_submission

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to other users needs root")

FLOODER, CLASSMATES = "daemon", ("bin", "sys")


def drop(inbound: Path, owner: str, n: int, claimed: str | None = None, stamp: str | None = None) -> tuple[str, str]:
    """A submission folder as ``nbgrader submit`` leaves it, owned by ``owner`` (named for ``claimed``), submitted at
    ``stamp`` (default: 2026-12-02 10:00:<n> UTC)."""
    stamp = stamp or f"2026-12-02 10:00:{n:02d}.000000 UTC"
    folder = inbound / f"{claimed or owner}+ch11+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    secret = secrets.token_hex(64)
    (folder / "ex4_audit.ipynb").write_text('{"nbformat": 4, "cells": []}')
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secret)
    entry = pwd.getpwnam(owner)
    for path in (folder, *folder.iterdir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o777)
    return folder.name, secret


@pytest.fixture
def service(tmp_path: Path) -> Service:
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    (exchange / "c1" / "inbound").mkdir(parents=True)
    settings = ServeSettings(course, exchange, "c1", ServePolicy(attempts=6, workers=1), course / "practice")
    return Service(settings, out=io.StringIO())


def page(service: Service, secret: str) -> str:
    return (service.settings.feedback / feedback_name(secret, "ex4_audit")).read_text()


@needs_root
def test_flood_classmates_and_forgery(service: Service) -> None:
    inbound = service.settings.inbound
    flood = [drop(inbound, FLOODER, n) for n in range(10)]
    mates = [drop(inbound, name, 20 + i) for i, name in enumerate(CLASSMATES)]
    forged = drop(inbound, FLOODER, 30, claimed=CLASSMATES[0])
    hostile = drop(inbound, FLOODER, 31)
    os.rename(inbound / hostile[0], inbound / hostile[0].replace("+ch11+", "\n\x1b[2J+ch11+"))

    assert service.scan() == 8  # 6 of the flood (5 replaced at once), 2 classmates

    states = {row.folder: row.state for row in service.queue.in_state(*("queued", "refused", "superseded"))}
    assert [states[name] for name, _ in flood] == ["superseded"] * 5 + ["queued"] + ["refused"] * 4
    assert [states[name] for name, _ in mates] == ["queued", "queued"]
    assert states[forged[0]] == "refused"
    # Pages: the flooder's refusals and replacements, each classmate's position; nothing for the forgery.
    assert "Replaced" in page(service, flood[0][1])
    assert "attempts used up: 6" in page(service, flood[9][1])
    positions = [page(service, secret) for secret in (flood[5][1], mates[0][1], mates[1][1])]
    assert ["position 1" in p for p in positions] == [True, False, False]
    assert "position 2" in positions[1] and "position 3" in positions[2]
    assert not (service.settings.feedback / feedback_name(forged[1], "ex4_audit")).exists()
    # The flooder's turn comes; its next submission is past the budget; the classmates are next.
    assert [s.student for s in service.queue.claim(1)] == [FLOODER]
    _, late_secret = drop(inbound, FLOODER, 40)
    assert service.scan() == 0
    assert "attempts used up" in page(service, late_secret)
    assert [s.student for s in service.queue.order()] == list(CLASSMATES)
    log = service.out.getvalue()  # type: ignore[attr-defined]
    assert "\x1b" not in log and "\\n\\x1b[2J" in log  # the hostile name, escaped on one line
    assert "claims to be bin's submission" in log


@needs_root
def test_a_queued_page_is_published_with_its_position_only(service: Service) -> None:
    """Every page the scan writes for a queued submission states its real place (a student who fetches between
    two writes sees that page), never a placeholder position 0."""
    written: list[str] = []
    publish = service.publisher.publish

    def recording(secret: str, notebook: str, page: str) -> Path:
        written.append(page)
        return publish(secret, notebook, page)

    service.publisher.publish = recording  # type: ignore[method-assign]
    drop(service.settings.inbound, CLASSMATES[0], 1)
    drop(service.settings.inbound, CLASSMATES[1], 2)
    service.scan()
    queued = [page for page in written if "Queued" in page]
    assert queued, "the scan published no status page"
    assert not [page for page in queued if "position 0" in page]
    assert any("position 2" in page for page in queued)


@needs_root
def test_publishing_is_idempotent(service: Service) -> None:
    _, secret = drop(service.settings.inbound, FLOODER, 1)
    service.scan()
    path = service.settings.feedback / feedback_name(secret, "ex4_audit")
    first = path.stat().st_ino
    service.scan()
    service.refresh_queued()
    assert path.stat().st_ino == first, "an unchanged page is not written again"
    assert "position 1" in path.read_text()


@needs_root
def test_a_folder_of_the_wrong_notebooks_gets_its_refusal(service: Service) -> None:
    """fetch_feedback looks for the feedback of the notebooks the student submitted: the refusal is there."""
    name, secret = drop(service.settings.inbound, FLOODER, 1)
    folder = service.settings.inbound / name
    os.rename(folder / "ex4_audit.ipynb", folder / "ex4_audit <b>copy.ipynb")
    assert service.scan() == 0
    refusal = (service.settings.feedback / feedback_name(secret, "ex4_audit <b>copy")).read_text()
    assert "Not graded" in refusal and "no notebook of the assignment" in refusal
    assert "&lt;b&gt;copy" in refusal and "<b>copy" not in refusal


@needs_root
def test_a_student_s_refusal_pages_are_bounded(service: Service) -> None:
    """However many folders a student writes past the budget, their refusals keep the newest few pages."""
    inbound = service.settings.inbound
    flood = [drop(inbound, FLOODER, n) for n in range(40)]
    mate = drop(inbound, CLASSMATES[0], 50)
    service.scan()
    refused = {row.folder for row in service.queue.in_state("refused")}
    assert {name for name, _ in flood[6:]} <= refused and len(refused) == 34
    shown = [n for n, (_, secret) in enumerate(flood)
             if (service.settings.feedback / feedback_name(secret, "ex4_audit")).exists()]
    # The 5 replaced and the queued one keep their pages (pruning's rule); of 34 refusals, the newest REFUSAL_PAGES.
    assert shown == [*range(6), *range(40 - REFUSAL_PAGES, 40)]
    assert "attempts used up" in page(service, flood[-1][1])
    assert "position" in page(service, mate[1])  # a classmate's page is not touched
    _, late = drop(inbound, FLOODER, 59)
    service.scan()
    assert "attempts used up" in page(service, late)
    assert not (service.settings.feedback / feedback_name(flood[40 - REFUSAL_PAGES][1], "ex4_audit")).exists()


def test_a_grading_the_grader_could_not_run_uses_up_no_attempt(tmp_path: Path, monkeypatch) -> None:
    """The grader cannot start (here: a sandbox backend that does not exist): the student keeps the attempt, and
    the pages say so, with the attempts left and the due date of the instructor's gradebook."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    monkeypatch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs nbgrader's alembic
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ch11", duedate="2026-12-14 17:00:00")
    (tmp_path / "exchange" / "c1" / "inbound").mkdir(parents=True)
    policy = ServePolicy(attempts=1, workers=1, sandbox="no-such-backend")
    service = Service(ServeSettings(course, tmp_path / "exchange", "c1", policy, course / "practice"),
                      out=io.StringIO())
    me = pwd.getpwuid(os.getuid()).pw_name
    _, secret = drop(service.settings.inbound, me, 1)
    assert service.scan() == 1
    assert service.hand_out() == 1
    (row,) = service.queue.in_state("done")
    assert not row.spent and "the grader could not run" in (row.reason or "")
    text = page(service, secret)
    assert "did not use up an attempt" in text and "1 of 1 in any 60 minutes" in text, text
    assert "Due date: 2026-12-14 17:00 UTC" in text
    assert "no attempt used up" in service.out.getvalue()  # type: ignore[attr-defined]
    _, again = drop(service.settings.inbound, me, 2)
    assert service.scan() == 1, "a grading the grader failed must not use up the only attempt"
    assert "Queued" in page(service, again)


def test_a_folder_named_for_a_student_without_an_account_is_refused_as_such(service: Service) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    name, _ = drop(service.settings.inbound, me, 1, claimed=f"nobody-here-{secrets.token_hex(3)}")
    assert service.scan() == 0
    (row,) = service.queue.in_state("refused")
    assert row.folder == name and "has no unix account on this machine" in (row.reason or "")
    assert "Several machines" in (row.reason or "")


def drop_notebooks(inbound: Path, owner: str, n: int, notebooks: list[Path]) -> str:
    """A submission folder of ``owner`` holding copies of ``notebooks`` (see :func:`drop`); its name."""
    name, _secret = drop(inbound, owner, n)
    folder = inbound / name
    (folder / "ex4_audit.ipynb").unlink()
    entry = pwd.getpwnam(owner)
    for notebook in notebooks:
        (folder / notebook.name).write_bytes(notebook.read_bytes())
        os.chown(folder / notebook.name, entry.pw_uid, entry.pw_gid)
    return name


@needs_root
def test_a_submission_arriving_while_another_is_graded_starts_on_the_free_slot(tmp_path: Path) -> None:
    """The service's own loop (in a thread) with 2 workers: the second submission does not wait for the first."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    inbound = exchange / "c1" / "inbound"
    inbound.mkdir(parents=True)
    policy = ServePolicy(attempts=6, workers=2, rescan_seconds=1)
    service = Service(ServeSettings(course, exchange, "c1", policy, course / "practice"), out=io.StringIO())
    loop = threading.Thread(target=service.run, name="test-serve")
    loop.start()

    def until(check, what: str) -> None:
        deadline = time.monotonic() + 600
        while not check():
            assert loop.is_alive() and time.monotonic() < deadline, f"no {what}:\n{service.out.getvalue()}"  # type: ignore[attr-defined]
            time.sleep(0.1)

    try:
        until(lambda: "serving" in service.out.getvalue(), "serving line")  # type: ignore[attr-defined]
        first = drop_notebooks(inbound, FLOODER, 1, sorted((DEMO_CLASS_DIR / "ada" / "ch11").glob("*.ipynb")))
        until(lambda: first in {s.folder for s in service.queue.in_state("grading", "done")}, "first grading")
        second = drop_notebooks(inbound, CLASSMATES[0], 2, [SOURCE_DIR / "ex4_audit.ipynb"])
        until(lambda: len(service.queue.in_state("done")) == 2, "two gradings done")
    finally:
        service.stopping.set()
        service.work.set()
        loop.join(timeout=120)
    assert not loop.is_alive()
    done = {row.folder: row for row in service.queue.in_state("done")}
    a, b = done[first], done[second]
    assert a.reason is None and b.reason is None and a.score is not None and b.score is not None
    assert a.started is not None and b.started is not None and a.finished is not None
    # The second started before the first finished: on the free slot, not in a round after the first one's.
    assert a.started < b.started < a.finished
    assert "practice feedback" in page(service, b.secret or "")


_SERVE = """
import sys
from pathlib import Path
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import REFUSAL_PAGES, Service
from nbgrader.api import Gradebook
course, exchange = Path(sys.argv[1]), Path(sys.argv[2])
policy = ServePolicy(workers=1, rescan_seconds=1)
Service(ServeSettings(course, exchange, "c1", policy, course / "practice")).run()
"""


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    """The service in a real subprocess on a fresh course; (process, its log, the queue database)."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    (tmp_path / "exchange" / "c1" / "inbound").mkdir(parents=True)
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(course), str(tmp_path / "exchange")],
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    return proc, log, course / "practice" / ".ch11-serve" / "queue.db"


def _until(log: Path, text: str, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, f"no {text!r} in:\n{log.read_text(errors='replace')}"
        time.sleep(0.1)


def _processes_in(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (graders left behind would)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(path).encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


#: Seconds a stopped service's processes (fork servers, nbgrader, sandboxes, kernels) have to end (docs/batch.md).
STOPPED_WITHIN = 10


#: systemd stops a service with SIGTERM, a JupyterHub its managed services with SIGINT: both stop it cleanly.
STOP_SIGNALS = pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])


@STOP_SIGNALS
def test_a_stop_signal_stops_an_idle_service_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    proc, log, db = _serve(tmp_path)
    tree = process_leaks.Descendants([proc.pid])
    try:
        _until(log, "serving", proc)
        started = time.monotonic()
        tree.look()
        proc.send_signal(stop)
        assert proc.wait(timeout=30) == 0, log.read_text()
        left = process_leaks.still_running(list(tree.seen.values()), STOPPED_WITHIN)
        assert left == [], f"{STOPPED_WITHIN} s after {stop.name} these still run: {left}"
    finally:
        tree.stop()
        if proc.poll() is None:  # a failed assertion above: the service must not outlive its test
            proc.kill()
        proc.wait()
    assert time.monotonic() - started < 10, "the wait for work must wake on the signal, not after a rescan"
    text = log.read_text()
    assert f"stopping ({stop.name})" in text and text.rstrip().endswith("stopped"), text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0  # checkpointed on close


@STOP_SIGNALS
def test_a_stop_signal_mid_grading_abandons_the_round_and_requeues_it(tmp_path: Path, stop: signal.Signals) -> None:
    proc, log, db = _serve(tmp_path)
    tree = process_leaks.Descendants([proc.pid])
    try:
        _until(log, "serving", proc)
        me, stamp = own_submission(tmp_path / "exchange" / "c1" / "inbound", SOURCE_DIR / "ex4_audit.ipynb")
        _until(log, f"grading  {me} {stamp}", proc)
        time.sleep(1.0)  # into grade_class (a round is several seconds of nbgrader at the least)
        tree.look()
        proc.send_signal(stop)
        assert proc.wait(timeout=60) == 0, log.read_text()
        left = process_leaks.still_running(list(tree.seen.values()), STOPPED_WITHIN)
        assert left == [], f"{STOPPED_WITHIN} s after {stop.name} these still run: {left}"
        assert tree.seen, "no process of the grading was seen: the check above covered nothing"
    finally:
        tree.stop()
        if proc.poll() is None:  # a failed assertion above: the service must not outlive its test
            proc.kill()
        proc.wait()
    text = log.read_text()
    assert f"abandoned {me} {stamp}" in text and f"graded   {me}" not in text and "error " not in text, text
    assert text.rstrip().endswith("stopped") and "Traceback" not in text, text
    row = sqlite3.connect(db).execute("SELECT state, gradings FROM submissions").fetchall()
    assert row == [("queued", 1)]  # graded again, from the start, at the next start
    assert not (db.parent / "jobs").exists()
    deadline = time.monotonic() + 10
    while _processes_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_in(tmp_path) == [], "graders of the abandoned round are left running"


@needs_root
def test_full_feedback_is_forked_from_the_sessions_server(tmp_path: Path, monkeypatch) -> None:
    """``feedback_level = "full"``: nbgrader's own pages, generated by a fork of the session's slot server."""
    import ch11_autograder.serve.service as service_module

    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    inbound = exchange / "c1" / "inbound"
    inbound.mkdir(parents=True)
    policy = ServePolicy(attempts=6, workers=1, feedback_level="full", rescan_seconds=1)
    service = Service(ServeSettings(course, exchange, "c1", policy, course / "practice"), out=io.StringIO())
    steps: list[tuple[tuple[str, ...], object, bool]] = []
    real_step = service_module.course_step

    def recording_step(course_dir, log_path, *args, forks=None):  # records, then runs the real step
        steps.append((args, forks, forks is not None and forks is service.session.course_server()))
        return real_step(course_dir, log_path, *args, forks=forks)

    monkeypatch.setattr(service_module, "course_step", recording_step)
    loop = threading.Thread(target=service.run, name="test-serve-full")
    loop.start()
    try:
        deadline = time.monotonic() + 600
        while "serving" not in service.out.getvalue():  # type: ignore[attr-defined]
            assert loop.is_alive() and time.monotonic() < deadline
            time.sleep(0.1)
        name = drop_notebooks(inbound, FLOODER, 1, [SOURCE_DIR / "ex4_audit.ipynb"])
        while not service.queue.in_state("done"):
            assert loop.is_alive() and time.monotonic() < deadline, service.out.getvalue()  # type: ignore[attr-defined]
            time.sleep(0.1)
    finally:
        service.stopping.set()
        service.work.set()
        loop.join(timeout=120)
    assert not loop.is_alive()
    [done] = service.queue.in_state("done")
    assert done.folder == name and done.reason is None
    assert [(args[0], via_server) for args, _forks, via_server in steps] == [("generate_feedback", True)]
    log = (service.state / "logs" / f"generate_feedback-{FLOODER}.log").read_text()
    assert "fork server is gone" not in log
    assert (course / "practice" / "feedback" / FLOODER / "ch11" / "ex4_audit.html").is_file()


def dated_service(tmp_path: Path, monkeypatch, due: str | None, **policy: object) -> Service:
    """A service whose course's gradebook has ch11 due at ``due`` (``None``: no due date) and the three test students
    (``policy``: traits)."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    monkeypatch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs nbgrader's alembic
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ch11", **({} if due is None else {"duedate": due}))
        for student in (FLOODER, *CLASSMATES):
            gradebook.update_or_create_student(student)
    (tmp_path / "exchange" / "c1" / "inbound").mkdir(parents=True)
    settings = ServeSettings(course, tmp_path / "exchange", "c1", ServePolicy(**{"workers": 1, **policy}),
                             course / "practice")
    return Service(settings, out=io.StringIO())


#: A due date between the test submissions' times, each written by nbgrader submit in another zone (its
#: ``Exchange.timezone``, ``%Z``).
DUE = "2026-12-02 09:45:00 UTC"
ON_TIME = "2026-12-02 10:30:00.000000 CET"  # 09:30 UTC: on time, though 10:30 is past 09:45 on its face
LATE = "2026-12-02 04:50:00.000000 EST"  # 09:50 UTC: late, though 04:50 is before 09:45 on its face


@needs_root
def test_a_submission_after_the_due_date_is_not_practice_graded_and_its_page_says_why(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    service = dated_service(tmp_path, monkeypatch, DUE)
    inbound = service.settings.inbound
    on_time = drop(inbound, CLASSMATES[0], 1, stamp=ON_TIME)
    late = drop(inbound, CLASSMATES[1], 2, stamp=LATE)
    assert service.scan() == 1
    states = {row.folder: row for row in service.queue.in_state("queued", "refused")}
    assert states[on_time[0]].state == "queued"
    assert states[late[0]].state == "refused"
    text = page(service, late[1])
    assert "Not graded</strong>: practice feedback closed at 2026-12-02 09:45 UTC; your submission is kept for " \
           "the instructor&#x27;s grading." in text, text
    assert "Due date: 2026-12-02 09:45 UTC." in text and "1 of 1" not in text
    assert "Queued" in page(service, on_time[1]) and "Due date: 2026-12-02 09:45 UTC." in page(service, on_time[1])
    assert "practice feedback closed at 2026-12-02 09:45 UTC" in service.out.getvalue()  # type: ignore[attr-defined]
    # A late submission uses up no attempt: the student's budget is whole.
    assert service.budget(CLASSMATES[1]).left == service.policy.attempts


@needs_root
def test_after_due_date_grade_keeps_practice_open(tmp_path: Path, monkeypatch) -> None:
    service = dated_service(tmp_path, monkeypatch, DUE, after_due_date="grade")
    late = drop(service.settings.inbound, CLASSMATES[1], 2, stamp=LATE)
    assert service.scan() == 1
    assert "Queued" in page(service, late[1])


@needs_root
def test_without_a_due_date_nothing_stops(tmp_path: Path, monkeypatch) -> None:
    service = dated_service(tmp_path, monkeypatch, None)
    drop(service.settings.inbound, CLASSMATES[1], 2, stamp="2099-01-01 00:00:00.000000 UTC")
    assert service.scan() == 1


@needs_root
def test_an_extended_student_is_graded_after_the_class_s_due_date_and_one_without_is_not(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    """Real grading (``--once``): both submit after the class's due date; the one given a day is graded and reads
    their own due date, the other reads why practice feedback closed."""
    service = dated_service(tmp_path, monkeypatch, DUE)
    gradebook = service.settings.course / "gradebook.db"
    set_extension(gradebook, "ch11", FLOODER, timedelta(days=1))
    inbound = service.settings.inbound
    extended = drop_notebooks(inbound, FLOODER, 1, [SOURCE_DIR / "ex4_audit.ipynb"])  # 10:00:01 UTC
    (inbound / extended / "timestamp.txt").write_text(LATE)
    _, without = drop(inbound, CLASSMATES[0], 2, stamp=LATE)
    assert service.run_once() == 1
    (done,) = service.queue.in_state("done")
    assert done.folder == extended and done.reason is None and done.score is not None
    text = page(service, done.secret or "")
    assert "practice feedback for your submission" in text
    assert "Due date: 2026-12-03 09:45 UTC (your extension included)." in text, text
    refused = page(service, without)
    assert "practice feedback closed at 2026-12-02 09:45 UTC" in refused
    assert "extension" not in refused


@needs_root
def test_a_gradebook_whose_due_dates_cannot_be_read_holds_submissions_until_it_can(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    """Fail closed: with the stop on, a submission is taken only once it can be told whether it is late."""
    service = dated_service(tmp_path, monkeypatch, DUE)
    gradebook = service.settings.course / "gradebook.db"
    good = gradebook.read_bytes()
    gradebook.write_bytes(b"not a database" * 100)
    late = drop(service.settings.inbound, CLASSMATES[1], 2, stamp=LATE)
    assert service.scan() == 0
    assert service.queue.known() == set()
    log = service.out.getvalue()  # type: ignore[attr-defined]
    assert f"waiting  {gradebook}: its due dates cannot be read" in log, log
    gradebook.write_bytes(good)
    assert service.scan() == 0
    assert "due dates read again" in service.out.getvalue()  # type: ignore[attr-defined]
    assert "practice feedback closed at 2026-12-02 09:45 UTC" in page(service, late[1])
