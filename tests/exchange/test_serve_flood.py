"""The flood: one student submits 40 times within a minute while 10 classmates submit once each.

The instructor runs ``ch11-grade serve`` (real sandbox, 2 workers, 6 attempts per hour) as in
tests/exchange/test_serve_loop.py. Every student is a unix user of their own and answers
Exercise 4 alone (the cheapest notebook). The classmates use nbgrader 0.9.6's ``submit`` and
``fetch_feedback`` (and ``fetch_assignment``, see :func:`_prepare`), each submitting once while
the flood runs. The flooder submits twice with ``nbgrader submit``, then 38 more times,
0.3 s apart, by writing what ``submit`` writes, as themselves (the inbound folder
``<student>+ch11+<time>+<random>`` with the notebook, ``timestamp.txt`` and a fresh
``submission_secret.txt``, made 0777 last, and the copy in their nbgrader cache), as
bench/serve_rush.py does: 40 nbgrader start-ups would take the two cores the grading needs.
Each of their notebooks differs from the others by a comment in its first answer cell, so none is
served by the verdict cache (a cached regrade can end before the next submission arrives). A
newer submission can only replace an older one that waits while another of the flooder's grades,
so the replacement needs two arrivals within one grading: 0.3 s apart, against a cold grading's
seconds.

Asserted from the service's observable state (``queue.db``, the pages, ``fetch_feedback``):

* past the budget the flooder's submissions are refused, not graded, and the flooder's own
  ``fetch_feedback`` shows the refusal pages of the newest few (``REFUSAL_PAGES``), no more;
* a newer submission of the flooder replaces their queued older one;
* fairness, structurally (not a timed bound): each classmate's grading started with at most
  one of the flooder's gradings started between the classmate's arrival and that start (a queue
  that kept each of the flooder's accepted submissions, first come first served, fails it: the
  classmates arriving after them wait for all of them);
* every classmate fetches their own feedback with ``nbgrader fetch_feedback``.
"""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
from ch11_autograder.serve.service import REFUSAL_PAGES
from support import course_users, exchange_course
from support.course_users import run_as
from support.serve_exchange import (
    ASSIGNMENT,
    ServedCourse,
    ok,
    queue_rows,
    served_course,
    start_service,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

NOTEBOOK = exchange_course.NOTEBOOK
ATTEMPTS = 6
RESCAN_SECONDS = 2
POLICY = f"""
c.ServePolicy.attempts = {ATTEMPTS}
c.ServePolicy.window_minutes = 60
c.ServePolicy.workers = 2
c.ServePolicy.rescan_seconds = {RESCAN_SECONDS}
"""
FLOOD, REAL_FLOOD, GAP = 40, 2, 0.3
CLASSMATES = [f"m{i}" for i in range(10)]

#: Run as the flooder: ``count`` submissions as nbgrader 0.9.6's submit leaves them, ``gap`` seconds apart.
PLACE = r"""
import json, os, secrets, sys, time
from datetime import datetime, timezone
inbound, cache, notebook, count, gap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
user, assignment = os.environ["USER"], sys.argv[6]
with open(notebook, encoding="utf-8") as handle:
    nb = json.load(handle)
answer = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
source = "".join(answer["source"]) if isinstance(answer["source"], list) else answer["source"]
for n in range(count):
    answer["source"] = source + f"\n# attempt {n}"  # a notebook of its own: no verdict cache hit
    body = json.dumps(nb, indent=1)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")
    secret = secrets.token_hex(64)
    for folder in (os.path.join(cache, f"{user}+{assignment}+{stamp}"),
                   os.path.join(inbound, f"{user}+{assignment}+{stamp}+{secrets.token_hex(4)}")):
        os.mkdir(folder)
        with open(os.path.join(folder, os.path.basename(notebook)), "w", encoding="utf-8") as handle:
            handle.write(body)
        for name, text in (("timestamp.txt", stamp), ("submission_secret.txt", secret)):
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
    os.chmod(folder, 0o777)  # the inbound folder, last, as submit's final step
    print(stamp, flush=True)
    time.sleep(gap)
"""


@dataclass
class Flood:
    served: ServedCourse
    stamps: dict[str, list[str]] = field(default_factory=dict)
    pages: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _prepare(served: ServedCourse, role: str) -> None:
    """``role`` fetches the assignment and answers Exercise 4. The flooder and the first classmate run
    ``nbgrader fetch_assignment``; the others get the copy of the released folder it makes (its whole effect),
    as their own files: nine nbgrader start-ups fewer."""
    user = served.students[role]
    if role in ("f", CLASSMATES[0]):
        ok(run_as(user, ["nbgrader", "fetch_assignment", ASSIGNMENT], venv=served.student_venv),
           f"{role}: fetch_assignment")
    else:
        shutil.copytree(served.exchange / served.course_id / "outbound" / ASSIGNMENT, user.home / ASSIGNMENT)
        course_users.chown_tree(user.home / ASSIGNMENT, user)
    exchange_course.answer_exercise4(user, f"answer of {role}")


def _new_stamps(served: ServedCourse, role: str, known: list[str]) -> list[str]:
    stamps = sorted(p.name.split("+")[2] for p in served.cache(role).iterdir())
    return [s for s in stamps if s not in known]


def _submit(flood: Flood, role: str) -> str:
    served = flood.served
    ok(run_as(served.students[role], ["nbgrader", "submit", ASSIGNMENT], venv=served.student_venv), f"{role}: submit")
    (stamp,) = _new_stamps(served, role, flood.stamps.get(role, []))
    flood.stamps.setdefault(role, []).append(stamp)
    return stamp


def _fetch(flood: Flood, role: str) -> None:
    """``role``'s ``nbgrader fetch_feedback``; the pages it left, by submission time."""
    user = flood.served.students[role]
    ok(run_as(user, ["nbgrader", "fetch_feedback", ASSIGNMENT], venv=flood.served.student_venv),
       f"{role}: fetch_feedback")
    flood.pages[role] = {p.parent.name: p.read_text()
                         for p in (user.home / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html")}


@pytest.fixture(scope="module")
def flood():
    started = time.monotonic()
    with served_course("ch11-flood", ["f", *CLASSMATES], POLICY, prefix="c11f") as served:
        run = Flood(served)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda role: _prepare(served, role), ["f", *CLASSMATES]))
        run.seconds["setup"] = time.monotonic() - started
        start_service(served)
        wait_for(lambda: "serving  " in served.log.read_text(errors="replace"), "the service to start", served)
        _run(run)
        run.seconds["total"] = time.monotonic() - started
        print("flood timings (s):", {k: round(v, 1) for k, v in run.seconds.items()})
        yield run


def _run(flood: Flood) -> None:
    served = flood.served
    t0 = time.monotonic()
    for _ in range(REAL_FLOOD):
        _submit(flood, "f")
    user = served.students["f"]
    placing = threading.Thread(target=lambda: ok(run_as(user, [
        "python", "-c", PLACE, str(served.inbound), str(served.cache("f")), str(user.home / ASSIGNMENT /
                                                                               f"{NOTEBOOK}.ipynb"),
        str(FLOOD - REAL_FLOOD), str(GAP), ASSIGNMENT], venv=served.student_venv), "the flood"))
    placing.start()
    # The classmates submit one at a time, spread over the flood's minute (each nbgrader submit takes seconds).
    for role in CLASSMATES:
        _submit(flood, role)
        time.sleep(1.0)
    placing.join()
    flood.stamps["f"] += _new_stamps(served, "f", flood.stamps["f"])
    flood.seconds["flood"] = time.monotonic() - t0
    assert len(flood.stamps["f"]) == FLOOD

    def settled() -> bool:
        rows = queue_rows(served)
        return len(rows) == FLOOD + len(CLASSMATES) and not [r for r in rows if r["state"] in ("queued", "grading")]

    wait_for(settled, "every submission graded, refused or replaced", served, poll=2.0)
    flood.seconds["graded"] = time.monotonic() - t0
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda role: _fetch(flood, role), ["f", *CLASSMATES]))
    flood.seconds["fetched"] = time.monotonic() - t0


def _by_student(flood: Flood) -> dict[str, list[dict]]:
    names = {user.name: role for role, user in flood.served.students.items()}
    out: dict[str, list[dict]] = {}
    for row in queue_rows(flood.served):
        out.setdefault(names[row["student"]], []).append(row)
    return out


def test_the_flood_is_refused_past_the_attempts_budget(flood):
    rows = _by_student(flood)["f"]
    assert len(rows) == FLOOD
    arrived = [r["arrived"] for r in rows]
    assert max(arrived) - min(arrived) < 60, "the 40 submissions arrived within a minute"
    refused = [r for r in rows if r["state"] == "refused"]
    assert len(refused) == FLOOD - ATTEMPTS
    assert all("attempts used up" in r["reason"] and r["gradings"] == 0 for r in refused)
    # The flooder's own fetch_feedback shows the refusal pages of the newest refused submissions; the older
    # refusals' pages were unpublished as newer ones came (at most REFUSAL_PAGES per student, whatever they write).
    pages = flood.pages["f"]
    refused.sort(key=lambda r: (r["arrived"], r["id"]))
    for row in refused[-REFUSAL_PAGES:]:
        assert "Not graded" in pages[row["stamp"]] and "attempts used up" in pages[row["stamp"]], row["stamp"]
    assert not [row["stamp"] for row in refused[:-REFUSAL_PAGES] if row["stamp"] in pages]


def test_a_newer_submission_replaces_the_queued_older_one(flood):
    rows = _by_student(flood)["f"]
    superseded = [r for r in rows if r["state"] == "superseded"]
    graded = [r for r in rows if r["state"] == "done"]
    assert superseded and all(r["gradings"] == 0 and "replaced by" in r["reason"] for r in superseded)
    assert len(superseded) + len(graded) == ATTEMPTS
    # What replacing means, from the timestamps: no submission was graded after a newer one of the same student
    # had been seen (it would have been replaced while queued). A folder is seen within rescan_seconds of its
    # arrival (at once when inotify wakes the scan), hence the margin. How many get graded depends on how fast
    # the slots free up, so their number is not asserted.
    accepted = [r for r in rows if r["state"] != "refused"]
    for row in graded:
        newer = [r["stamp"] for r in accepted if row["arrived"] < r["arrived"] < row["started"] - RESCAN_SECONDS]
        assert not newer, f"{row['stamp']} was graded though {newer} arrived while it was queued"
    for row in superseded:
        assert "Replaced" in flood.pages["f"][row["stamp"]]


def test_a_classmate_waits_for_at_most_one_flood_grading(flood):
    """Round-robin, from queue.db's timestamps: between a classmate's arrival and the start of their grading, at
    most one of the flooder's gradings started."""
    by = _by_student(flood)
    starts = sorted(r["started"] for r in by["f"] if r["started"] is not None)
    waits = {}
    for role in CLASSMATES:
        (row,) = by[role]
        assert row["state"] == "done" and row["reason"] is None, row
        waits[role] = [s for s in starts if row["arrived"] < s < row["started"]]
        assert len(waits[role]) <= 1, (role, row, starts)
    print("flood gradings started while each classmate waited:", {r: len(w) for r, w in waits.items()})


def test_every_classmate_fetches_their_feedback(flood):
    for role in CLASSMATES:
        (stamp,) = flood.stamps[role]
        page = flood.pages[role][stamp]
        assert "practice feedback" in page and "audit_marks: 4 / 4 points" in page, role
        assert list(flood.pages[role]) == [stamp], "a classmate fetches their own submission's page only"
