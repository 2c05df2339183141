"""Grade on submit through nbgrader's own exchange, with real unix users and the real service.

One instructor runs ``ch11-grade serve --course ~/course`` as themselves (in the background,
as a hub's managed service would); three students, each a unix user with a private home,
use nothing but nbgrader 0.9.6's ``submit`` and ``fetch_feedback``:

1. ``ann`` (every answer) and ``bob`` (the catalogued "general DAG" mistake) submit at once;
   their first ``fetch_feedback`` shows the status page (queued or being graded: the service is
   held with SIGSTOP meanwhile, since it grades faster than nbgrader starts), and a later one
   the practice feedback, which replaced it;
2. while they are graded, ``eve`` submits her own work, then drops by hand a folder named for
   ``ann`` holding her notebook, and a folder of her own with a newline and an ANSI escape in
   its name whose notebook is a symbolic link to ``/etc/passwd``; ``ann`` resubmits (now with
   the mistake) and gets the new verdict for the new submission;
3. ``bob`` resubmits; the service is killed with SIGKILL while it grades that submission;
   ``eve`` submits again while it is down; the service is started again.

Every submission then has exactly one published page per notebook, graded ones their
feedback; the practice ledger merged none twice; ``eve`` got nothing of the others and the
service graded nothing she does not own. Students answer Exercise 4 only (the cheapest
notebook). The policy is ``properties`` (the default), 4 attempts per hour.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
from support import exchange_course
from support.course_users import run_as
from support.serve_exchange import WAIT_SECONDS, ServedCourse, sandbox_running, served_course
from support.serve_exchange import kill_service as _kill_service
from support.serve_exchange import ok as _ok
from support.serve_exchange import queue_rows as _rows
from support.serve_exchange import start_service as _start_service
from support.serve_exchange import wait_for as _wait

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

COURSE_ID = "ch11-serve"
ASSIGNMENT, NOTEBOOK = exchange_course.ASSIGNMENT, exchange_course.NOTEBOOK
POLICY = """
c.ServePolicy.attempts = 4
c.ServePolicy.window_minutes = 60
c.ServePolicy.workers = 2
c.ServePolicy.rescan_seconds = 2
"""


@dataclass
class Served(ServedCourse):
    """What the loop left behind, for the tests to inspect."""

    markers: dict[str, str] = field(default_factory=dict)
    #: student -> the pages their fetch_feedback showed, in order, per submission time
    seen: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    stamps: dict[str, list[str]] = field(default_factory=dict)
    forged: str = ""
    hostile_name: str = ""
    killed_stamp: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def _submit(served: Served, role: str, *, wrong: str | None = None, fetch: bool = True) -> str:
    """``role`` answers Exercise 4 (fetching the assignment first when ``fetch``) and submits; the submission time."""
    user, venv = served.students[role], served.student_venv
    if fetch:
        _ok(run_as(user, ["nbgrader", "fetch_assignment", ASSIGNMENT], venv=venv), "fetch_assignment")
    exchange_course.answer_exercise4(user, served.markers[role], wrong=wrong)
    _ok(run_as(user, ["nbgrader", "submit", ASSIGNMENT], venv=venv), f"{role}: submit")
    cache = served.cache(role)
    stamp = sorted(p.name.split("+")[2] for p in cache.iterdir() if p.name not in
                   {f"{user.name}+{ASSIGNMENT}+{s}" for s in served.stamps.get(role, [])})[-1]
    served.stamps.setdefault(role, []).append(stamp)
    return stamp


def _fetch(served: Served, role: str, stamp: str) -> str | None:
    """``role``'s ``nbgrader fetch_feedback``, then the page it gave for the submission of ``stamp`` (or None)."""
    user = served.students[role]
    _ok(run_as(user, ["nbgrader", "fetch_feedback", ASSIGNMENT], venv=served.student_venv), f"{role}: fetch_feedback")
    page = user.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html"
    if not page.is_file():
        return None
    text = page.read_text()
    pages = served.seen.setdefault(role, {}).setdefault(stamp, [])
    if not pages or pages[-1] != text:
        pages.append(text)
    return text


def _hold(served: Served, stop: bool) -> None:
    """Stop (SIGSTOP) or continue (SIGCONT) the service's process group."""
    proc = served.service
    assert proc is not None
    os.killpg(proc.pid, signal.SIGSTOP if stop else signal.SIGCONT)


def _sandbox_running(served: Served) -> bool:
    """Whether a bubblewrap process runs among the service's descendants (a grading's notebook or suites)."""
    assert served.service is not None
    return sandbox_running(served.service.pid)


def _status_out(served: Served, role: str, stamp: str) -> bool:
    """Whether the exchange holds a status page (not the feedback) for ``role``'s submission of ``stamp``."""
    from nbgrader.utils import notebook_hash

    user = served.students[role]
    secret = (user.home / ".local/share/jupyter/nbgrader_cache" / COURSE_ID / f"{user.name}+{ASSIGNMENT}+{stamp}" /
              "submission_secret.txt").read_text().strip()
    page = served.feedback / f"{notebook_hash(secret=secret, notebook_id=NOTEBOOK)}.html"
    return page.is_file() and "practice feedback" not in page.read_text()


def _until_feedback(served: Served, role: str, stamp: str) -> str:
    """Wait for the service's ``graded`` line of the submission (a file read), then ``fetch_feedback``.

    Polling ``nbgrader fetch_feedback`` instead would start nbgrader every few seconds per student, on
    the same two cores the grading needs; the page is published before the line is printed."""
    line = f"graded   {served.students[role].name} {stamp}"
    _wait(lambda: line in served.log.read_text(errors="replace"), f"{role}'s grading of {stamp}", served)
    page = _fetch(served, role, stamp)
    assert page is not None and "practice feedback" in page, page
    return page


def _drop_folder(served: Served, role: str, name: str, script: str, *args: str) -> None:
    """``role`` makes folder ``name`` in the inbound folder by hand (``script`` gets its path as $1)."""
    folder = served.inbound / name
    _ok(run_as(served.students[role], ["sh", "-c", script, "sh", str(folder), *args]), f"{role}: drop {name!r}")


@pytest.fixture(scope="module")
def served():
    started = time.monotonic()
    with served_course(COURSE_ID, ("ann", "bob", "eve"), POLICY, prefix="c11s", make=Served) as served:
        served.markers = {role: f"private-{role}-{secrets.token_hex(8)}" for role in served.students}
        served.seconds["setup"] = time.monotonic() - started
        _start_service(served)
        _run(served)
        served.seconds["total"] = time.monotonic() - started
        print("serve tier timings (s):", {k: round(v, 1) for k, v in served.seconds.items()})
        yield served


def _run(served: Served) -> None:
    t0 = time.monotonic()
    # 1. ann and bob submit at once, and fetch at once: a status page first, the feedback later.
    with ThreadPoolExecutor(2) as pool:
        # The service grades an Exercise 4 in less time than a student's nbgrader takes to start, so it is held
        # (SIGSTOP to its process group; the graders it started run in groups of their own) while both submit,
        # let go until both status pages are out, and held again while the students' first fetch_feedback runs:
        # students fetching while they are queued or graded.
        _hold(served, True)
        try:
            stamps = dict(zip(("ann", "bob"), pool.map(lambda args: _submit(served, args[0], wrong=args[1]),
                                                        [("ann", None), ("bob", "general_dag")]), strict=True))
        finally:
            _hold(served, False)
        deadline = time.monotonic() + WAIT_SECONDS
        while not all(_status_out(served, role, stamp) for role, stamp in stamps.items()):
            assert time.monotonic() < deadline, served.log.read_text(errors="replace")[-4000:]
            time.sleep(0.05)
        _hold(served, True)
        try:
            for role, stamp in stamps.items():
                assert _fetch(served, role, stamp) is not None, f"{role}'s first status page"
        finally:
            _hold(served, False)

        # 2. While they are graded: eve submits her own work, then drops a folder forged in ann's name and a
        # hostile-named folder of her own whose notebook is a link; ann resubmits, now with the mistake.
        eve_stamp = _submit(served, "eve")
        served.forged = f"{served.students['ann'].name}+{ASSIGNMENT}+2030-01-01 00:00:00.000000 UTC+forged"
        _drop_folder(served, "eve", served.forged, 'mkdir "$1" && cp "$2" "$1/" && printf %s "$3" > '
                     '"$1/submission_secret.txt" && chmod 777 "$1"',
                     str(served.students["eve"].home / ASSIGNMENT / f"{NOTEBOOK}.ipynb"), "cd" * 64)
        served.hostile_name = f"{served.students['eve'].name}+{ASSIGNMENT}+2030\n\x1b[31mgraded ann 40 of 40+x"
        _drop_folder(served, "eve", served.hostile_name, 'mkdir "$1" && ln -s /etc/passwd "$1/ex4_audit.ipynb" && '
                     'printf %s "$2" > "$1/submission_secret.txt" && chmod 777 "$1"', "ef" * 64)
        ann = served.students["ann"].name
        # ann's first submission must be taken for grading before the second arrives, or it is (rightly) replaced.
        _wait(lambda: f"grading  {ann} {stamps['ann']}" in served.log.read_text(errors="replace"),
              "ann's first submission being graded", served)
        ann2 = _submit(served, "ann", wrong="general_dag", fetch=False)
        list(pool.map(lambda r: _until_feedback(served, r, stamps[r]), stamps))
    served.seconds["first feedback"] = time.monotonic() - t0
    _until_feedback(served, "eve", eve_stamp)
    _until_feedback(served, "ann", ann2)
    served.seconds["resubmission"] = time.monotonic() - t0

    # 3. bob resubmits; the service is killed while grading it; eve submits while it is down; restart.
    t1 = time.monotonic()
    served.killed_stamp = _submit(served, "bob", fetch=False)
    bob = served.students["bob"].name
    _wait(lambda: f"grading  {bob} {served.killed_stamp}" in served.log.read_text(errors="replace"),
          "bob's resubmission being graded", served, poll=0.05)

    def bobs_state() -> list[str]:
        return [r["state"] for r in _rows(served) if r["stamp"] == served.killed_stamp]

    # Into the grading itself: its notebook or its suites run in a sandbox. An Exercise 4 is graded in about a
    # second now, so no fixed pause: hold as soon as one runs (or the grading ended, which the assert reports).
    _wait(lambda: _sandbox_running(served) or bobs_state() != ["grading"], "bob's resubmission in a sandbox", served,
          poll=0.02)
    _hold(served, True)  # the kill must find it still being graded
    state = bobs_state()
    assert state == ["grading"], f"bob's resubmission was {state} before the kill"
    _kill_service(served)
    eve2 = _submit(served, "eve", fetch=False)
    _start_service(served)
    _until_feedback(served, "bob", served.killed_stamp)
    _until_feedback(served, "eve", eve2)
    served.seconds["after the kill"] = time.monotonic() - t1


# --------------------------------------------------------------------------- the tests


def test_status_page_first_then_feedback_replaces_it(served):
    for role in ("ann", "bob"):
        stamp = served.stamps[role][0]
        pages = served.seen[role][stamp]
        assert re.search(r"<strong>(Queued|Being graded)</strong>", pages[0]), pages[0]
        assert "practice feedback" in pages[-1]
        assert "fetch_feedback" in pages[0]


def test_feedback_names_the_mistake_without_counterexamples(served):
    ann, bob = served.seen["ann"], served.seen["bob"]
    complete = ann[served.stamps["ann"][0]][-1]
    mistake = bob[served.stamps["bob"][0]][-1]
    assert "audit_marks: 4 / 4 points" in complete
    assert "audit_marks: 3 / 4 points" in mistake
    assert "general DAG" in mistake and "general DAG" not in complete
    assert "inputs:" not in mistake and "expected:" not in mistake


def test_a_resubmission_gets_its_own_feedback(served):
    first, second = served.stamps["ann"]
    ann = served.students["ann"]
    pages = {stamp: (ann.home / ASSIGNMENT / "feedback" / stamp / f"{NOTEBOOK}.html").read_text()
             for stamp in (first, second)}
    assert "4 / 4 points" in pages[first] and "3 / 4 points" in pages[second]


def test_a_resubmission_regrades_only_a_changed_notebook(served):
    """The service's ``graded`` line counts the notebooks taken from the verdict cache (which the service
    points at ``<practice>/.ch11-serve/verdict-cache``). Students submit Exercise 4 alone: ann's
    resubmission changed it, so it is graded again; eve's second submission is byte for byte her first,
    so its verdict is reused."""
    log = served.log.read_text(errors="replace")

    def graded_line(role: str, stamp: str) -> str:
        lines = [line for line in log.splitlines() if f"graded   {served.students[role].name} {stamp}" in line]
        assert len(lines) == 1, lines
        return lines[0]

    first, second = served.stamps["ann"]
    assert graded_line("ann", first).endswith("verdict cache: 0 of 1 notebooks reused")
    assert graded_line("ann", second).endswith("verdict cache: 0 of 1 notebooks reused")
    assert graded_line("eve", served.stamps["eve"][1]).endswith("verdict cache: 1 of 1 notebooks reused")
    assert list((served.practice / ".ch11-serve" / "verdict-cache").glob("*.json"))


def test_forged_and_hostile_folders_are_refused_and_never_graded(served):
    rows = {r["folder"]: r for r in _rows(served)}
    forged, hostile = rows[served.forged], rows[served.hostile_name]
    assert forged["state"] == "refused" and "claims to be" in forged["reason"]
    assert hostile["state"] == "refused" and "no notebook of the assignment" in hostile["reason"]
    assert forged["gradings"] == hostile["gradings"] == 0
    ann_graded = (served.practice / "autograded" / served.students["ann"].name / ASSIGNMENT /
                  f"{NOTEBOOK}.ipynb").read_text()
    assert served.markers["ann"] in ann_graded and served.markers["eve"] not in ann_graded
    log = served.log.read_text(errors="replace")
    assert "\x1b" not in log
    assert "2030\\n\\x1b[31mgraded ann 40 of 40" in log  # the name, escaped, on the service's own line
    assert not [line for line in log.splitlines() if line.startswith(("graded ann", "[31m"))]


def test_eve_reaches_nothing_of_the_others(served):
    eve = served.students["eve"]
    probe = ("import os, sys, json\nout = []\nfor p in sys.argv[1:]:\n    try:\n        out.append(os.listdir(p))\n"
             "    except OSError as e:\n        out.append(type(e).__name__)\nprint(json.dumps(out))\n")
    done = _ok(run_as(eve, ["python", "-c", probe, str(served.feedback), str(served.course),
                            str(served.practice), str(served.exchange / COURSE_ID / "inbound")],
                      venv=served.student_venv), "eve's probe")
    assert json.loads(done.stdout) == ["PermissionError"] * 4
    others = [served.markers[r] for r in ("ann", "bob")]
    for path in eve.home.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert not [m for m in others if m.encode() in text], path
    fetched = sorted(p.parent.name for p in (eve.home / ASSIGNMENT / "feedback").rglob("*.html"))
    assert fetched == sorted(served.stamps["eve"])


def test_after_sigkill_every_submission_has_exactly_one_published_feedback(served):
    from nbgrader.utils import notebook_hash

    rows = _rows(served)
    killed = [r for r in rows if r["stamp"] == served.killed_stamp]
    assert len(killed) == 1 and killed[0]["state"] == "done"
    assert killed[0]["gradings"] == 2, "the kill came while it was being graded: graded again after the restart"
    published = {f"{notebook_hash(secret=r['secret'], notebook_id=NOTEBOOK)}.html": r for r in rows
                 if r["published"] is not None and json.loads(r["notebooks"])}
    assert sorted(p.name for p in served.feedback.iterdir()) == sorted(published)
    for name, row in published.items():
        page = (served.feedback / name).read_text()
        assert ("practice feedback" in page) == (row["state"] == "done" and row["reason"] is None), row["folder"]
    done = [r for r in rows if r["state"] == "done"]
    assert len(done) == 6  # ann x2, bob x2, eve x2
    ledger = [json.loads(line) for line in
              (served.practice / ".ch11-batch" / "ledger.jsonl").read_text().splitlines() if line.strip()]
    graded = [e["sha256"] for e in ledger if e["event"] == "graded"]
    assert len(graded) == len(set(graded)) == 6, "no submission merged twice into the practice gradebook"


def test_the_official_gradebook_is_untouched(served):
    assert not (served.course / "submitted").exists()
    assert not (served.course / "autograded").exists()
    assert (served.practice / "gradebook.db").is_file()
