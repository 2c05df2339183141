"""Pruning old practice runs: a practice course with 1,000 submissions' files and rows, made directly.

Nothing is graded here: the queue rows go through the real :class:`Queue` (admit, claim, finish),
status pages through the service's own publishing, feedback pages through the :class:`Publisher`
with the digest the service records, and the ledger, verdict cache, logs and per-student folders
are written as the batch leaves them. The control runs the same course without pruning.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pwd
import secrets
import shutil
import sqlite3
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.batch.ledger import Ledger, LedgerEntry
from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.prune import LEFT, PRUNED, Pruner, kept_pages, prune
from ch11_autograder.serve.queue import STATES, Submission
from ch11_autograder.serve.service import Service
from ch11_autograder.serve.status import pages_digest

STUDENTS, PER_STUDENT = 50, 20  # 1,000 submissions
PENDING_STUDENTS = 5  # their last submission is still queued
NOTEBOOKS = ("ex4_audit.ipynb", "ex5_replay.ipynb")
FEEDBACK_BYTES = 8_000  # one notebook's practice feedback page
GRADED_BYTES = 20_000  # one notebook's copy in submitted/, autograded/, feedback/
CACHE_ENTRY_BYTES, CACHE_MAX_BYTES = 4_000, 1_000_000
T0 = 1_800_000_000.0
HOUR = 3600.0
#: The moment the prune runs: 10 minutes after each student's last submission.
NOW = T0 + (PER_STUDENT - 1) * HOUR + 600


def make_service(root: Path, monkeypatch: pytest.MonkeyPatch, **policy: object) -> Service:
    """The service of the course under ``root`` (made when absent), its verdict cache ``root/cache``."""
    course = root / "course"
    fresh = not course.exists()
    if fresh:
        init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
        (root / "exchange" / "c1" / "inbound").mkdir(parents=True)
    monkeypatch.setenv("CH11_VERDICT_CACHE", str(root / "cache"))
    settings = ServeSettings(course, root / "exchange", "c1", ServePolicy(**policy), course / "practice")
    service = Service(settings, out=io.StringIO(), clock=lambda: NOW)
    if fresh:
        with (service.practice / "nbgrader_config.py").open("a") as config:
            config.write(f"\nc.VerdictCache.max_bytes = {CACHE_MAX_BYTES}\n")
    return service


@contextlib.contextmanager
def scratch(fallback: Path) -> Iterator[Path]:
    """A directory on tmpfs when there is one (the queue and the publisher fsync every change: thousands here)."""
    if os.access("/dev/shm", os.W_OK):
        root = Path(tempfile.mkdtemp(prefix="ch11-prune-", dir="/dev/shm"))
        try:
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)
    else:
        yield fallback


@dataclass
class Course:
    """The synthetic practice course: the service and what each student submitted, by arrival."""

    service: Service
    subs: dict[str, list[Submission]]


def feedback(student: str, k: int) -> dict[str, str]:
    body = f"practice feedback of {student} #{k}\n".ljust(FEEDBACK_BYTES, ".")
    return {nb: f"<html>{nb}: {body}</html>" for nb in NOTEBOOKS}


def build(service: Service) -> Course:
    """1,000 submissions of 50 students, one an hour each; per student: every fifth refused (attempts), every
    fifth replaced by the next one while queued, the rest graded with their feedback published; the first
    students' last one still queued. Plus the ledger, the verdict cache, logs and each student's folders."""
    queue, practice = service.queue, service.practice
    subs: dict[str, list[Submission]] = {}
    ledger: list[str] = []
    deferred = []
    for i in range(STUDENTS):
        student = f"s{i:02d}"
        for k in range(PER_STUDENT):
            if i < PENDING_STUDENTS and k == PER_STUDENT - 1:
                deferred.append((student, k))  # admitted last, so no later claim takes it
                continue
            sub = admit(service, student, k)
            subs.setdefault(student, []).append(sub)
            if sub.state != "queued" or k % 5 == 1:  # refused, or left queued for the next one to replace
                continue
            (claimed,) = queue.claim(1, sub.arrived + 1)
            assert claimed.id == sub.id
            done = queue.finish(sub.id, score=3.0, max_score=4.0, reason=None, now=sub.arrived + 60)
            pages = feedback(student, k)
            for nb, page in pages.items():
                service.publisher.publish(done.secret or "", nb.removesuffix(".ipynb"), page)
            queue.mark_published(sub.id, pages_digest(pages))  # what the service records for its pages
            ledger.append(LedgerEntry("graded", student, secrets.token_hex(32), 3.0, 4.0, at="x").to_json())
    for student, k in deferred:
        subs[student].append(admit(service, student, k))
    assert sum(map(len, subs.values())) == STUDENTS * PER_STUDENT
    state = practice / ".ch11-batch"
    (state / "logs").mkdir(parents=True, exist_ok=True)
    (state / "ledger.jsonl").write_text("".join(line + "\n" for line in ledger))
    cache = Path(os.environ["CH11_VERDICT_CACHE"])
    cache.mkdir(mode=0o700)
    for n in range(len(ledger)):
        entry = cache / f"{n:064x}.json"
        entry.write_bytes(b"{" + b" " * (CACHE_ENTRY_BYTES - 2) + b"}")
        os.utime(entry, (T0 + n, T0 + n))
    (service.state / "logs").mkdir(exist_ok=True)
    for student in subs:  # one copy per student, replaced by each grading: bounded without pruning
        for kind in ("submitted", "autograded", "feedback"):
            folder = practice / kind / student / "ch11"
            folder.mkdir(parents=True)
            for nb in NOTEBOOKS:
                (folder / nb).write_bytes(b"x" * GRADED_BYTES)
        (state / "logs" / f"{student}.log").write_bytes(b"l" * 10_000)
        (service.state / "logs" / f"generate_feedback-{student}.log").write_bytes(b"l" * 10_000)
    return Course(service, subs)


def admit(service: Service, student: str, k: int) -> Submission:
    """Admit submission ``k`` of ``student`` (an hour after the previous; one replaced by the next a minute
    later), with its inbound folder (empty: only its name matters here), and publish its status page."""
    arrived = T0 + (k - 1) * HOUR + 60 if k % 5 == 2 else T0 + k * HOUR
    folder = f"{student}+ch11+{k:03d}+{secrets.token_hex(4)}"
    (service.settings.inbound / folder).mkdir()
    refused = "attempts used up: 6 submissions graded in the last 60 minutes (at most 6)" if k % 5 == 3 else None
    sub, superseded = service.queue.admit(folder, student, f"{k:03d}", secrets.token_hex(64), list(NOTEBOOKS),
                                          arrived, refused=refused, attempts=6, window_seconds=3600)
    for old in [*superseded, sub]:
        service.publish_status(old)
    return service.queue.get(sub.id)


def disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def footprint(service: Service) -> dict[str, int]:
    """Bytes per part, and the queue's rows and the ledger's lines."""
    practice = service.practice
    db = sqlite3.connect(service.state / "queue.db")
    try:
        (rows,) = db.execute("SELECT COUNT(*) FROM submissions").fetchone()
    finally:
        db.close()
    return {"pages": disk(service.settings.feedback), "cache": disk(Path(os.environ["CH11_VERDICT_CACHE"])),
            "ledger": (practice / ".ch11-batch" / "ledger.jsonl").stat().st_size,
            "practice": disk(practice), "rows": rows,
            "ledger_lines": len((practice / ".ch11-batch" / "ledger.jsonl").read_text().splitlines())}


def page_bound(keep_runs: int) -> int:
    """Pages kept at most: per student the keep_runs latest (a pending one is among them) and the latest graded,
    each a feedback page (the largest kind) per notebook."""
    return STUDENTS * (keep_runs + 1) * len(NOTEBOOKS) * (FEEDBACK_BYTES + 100)


#: What the practice course may hold after pruning, whatever the number of submissions: per student the graded
#: copies and logs (fixed), the ledger's two lines; the verdict cache's cap; the queue (bounded by the inbound
#: folder's rows while it holds the folders); with keep_runs = 3.
PRACTICE_BOUND = STUDENTS * (3 * len(NOTEBOOKS) * GRADED_BYTES + 20_000) + CACHE_MAX_BYTES + 2_000_000


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, list[Submission]]]]:
    """The course with its 1,000 submissions, made once; each test works on a copy."""
    with scratch(tmp_path_factory.mktemp("prune")) as root, pytest.MonkeyPatch.context() as monkeypatch:
        built = build(make_service(root / "t", monkeypatch))
        yield root / "t", built.subs


@pytest.fixture
def copy(template: tuple[Path, dict[str, list[Submission]]], tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Course]]:
    """``copy(**policy)``: a fresh copy of the template course, its service with that policy."""
    with scratch(tmp_path) as root:
        def make(**policy: object) -> Course:
            where = root / "copy"
            shutil.copytree(template[0], where, symlinks=True)
            return Course(make_service(where, monkeypatch, **policy), template[1])
        yield make


@pytest.fixture
def course(copy: Callable[..., Course]) -> Course:
    return copy(keep_runs=3, window_minutes=60.0)


def latest(subs: list[Submission]) -> Submission:
    return max(subs, key=lambda s: (s.arrived, s.id))


def test_pruning_bounds_disk_and_keeps_what_students_need(course: Course) -> None:
    service = course.service
    before = footprint(service)
    report = prune(service.settings, service.queue, service.publisher, NOW)
    after = footprint(service)
    print("1,000 submissions, before pruning:", before, "after:", after, report.line())

    assert after["pages"] <= page_bound(3) < before["pages"] / 2
    assert after["cache"] <= CACHE_MAX_BYTES < before["cache"]
    assert after["ledger_lines"] <= 2 * STUDENTS
    assert after["practice"] <= PRACTICE_BOUND
    assert report.pages_left == 0
    # Every folder is still in the inbound folder: every row stays (it is what says the folder was seen).
    assert after["rows"] == STUDENTS * PER_STUDENT and report.rows_removed == 0

    feedback_dir = service.settings.feedback
    for student, subs in course.subs.items():
        now = {s.id: s for s in service.queue.in_state(*STATES) if s.student == student}
        last = latest(subs)
        graded = [now[s.id] for s in subs if now[s.id].state == "done"]
        last_graded = latest(graded)
        # fetch_feedback finds the latest submission's pages, and the latest feedback (its exact bytes).
        for nb in NOTEBOOKS:
            assert (feedback_dir / feedback_name(last.secret or "", nb.removesuffix(".ipynb"))).is_file()
            page = feedback_dir / feedback_name(last_graded.secret or "", nb.removesuffix(".ipynb"))
            assert page.read_text() == feedback(student, int(last_graded.stamp))[nb]
        kept = {s.id for s in subs if now[s.id].published != PRUNED}
        assert len(kept) <= 3 + 1  # the three latest, and the latest graded when older
        if int(student[1:]) < 5:
            assert now[last.id].state == "queued" and last.id in kept
    # The latest entries the batch resumes from are the ones left.
    assert Ledger(service.practice / ".ch11-batch" / "ledger.jsonl").latest().keys() == course.subs.keys()


def test_rows_go_once_their_folder_left_inbound_and_the_window(course: Course) -> None:
    service = course.service
    inbound = service.settings.inbound
    for name in os.listdir(inbound):
        os.rmdir(inbound / name)  # the instructor archived the inbound folder after collect
    report = prune(service.settings, service.queue, service.publisher, NOW)
    rows = service.queue.in_state(*STATES)
    assert report.rows_removed == len(course.subs) * PER_STUDENT - len(rows)
    assert len(rows) <= STUDENTS * (3 + 1)
    horizon = NOW - 3600
    for student, subs in course.subs.items():
        ids = {s.id for s in rows if s.student == student}
        assert {s.id for s in subs if s.arrived > horizon} <= ids  # the attempts window is intact
        assert latest(subs).id in ids


def test_a_page_replaced_since_is_left_alone(course: Course) -> None:
    """An older submission's page rewritten by the official release_feedback is not the service's any more."""
    service = course.service
    old = service.queue.get(course.subs["s10"][0].id)
    assert old.state == "done" and old.published not in (None, PRUNED)
    official = service.settings.feedback / feedback_name(old.secret or "", "ex4_audit")
    official.write_text("<html>official feedback</html>")
    report = prune(service.settings, service.queue, service.publisher, NOW)
    assert official.read_text() == "<html>official feedback</html>"
    assert report.pages_left == 1 and service.queue.get(old.id).published == LEFT


def test_attempts_after_pruning_count_as_before(copy: Callable[..., Course]) -> None:
    """keep_runs = 1 with a four-hour window: the pages of submissions inside the window are pruned (all but
    the last), their rows stay and still count against the attempts budget."""
    course = copy(keep_runs=1, window_minutes=240.0)
    service = course.service
    for name in os.listdir(service.settings.inbound):
        os.rmdir(service.settings.inbound / name)
    prune(service.settings, service.queue, service.publisher, NOW)
    student = "s20"
    in_window = [s for s in course.subs[student] if s.arrived > NOW - 4 * HOUR]
    rows = {s.id: s for s in service.queue.in_state(*STATES)}
    assert all(s.id in rows for s in in_window)
    counted = [s for s in in_window if rows[s.id].state != "refused"]
    assert len([s for s in counted if rows[s.id].published == PRUNED]) == 2  # one replaced, one graded
    sub, _ = service.queue.admit(f"{student}+ch11+new+x", student, "new", secrets.token_hex(64), list(NOTEBOOKS),
                                 NOW, refused=None, attempts=len(counted), window_seconds=4 * HOUR)
    assert sub.state == "refused" and f"{len(counted)} submissions graded" in (sub.reason or "")


def test_control_without_pruning_grows(copy: Callable[..., Course]) -> None:
    """prune_every = 0: 1,000 finished submissions and the Pruner never runs; every page stays."""
    course = copy(keep_runs=3, prune_every=0)
    service = course.service
    assert all(service.pruner.finished() is None for _ in range(STUDENTS * PER_STUDENT))
    size = footprint(service)
    print("1,000 submissions, no pruning:", size)
    assert size["pages"] > 2 * page_bound(3)
    assert size["cache"] > CACHE_MAX_BYTES
    assert size["ledger_lines"] == sum(1 for subs in course.subs.values() for s in subs
                                       if service.queue.get(s.id).state == "done")
    assert size["practice"] + size["pages"] > PRACTICE_BOUND + page_bound(3)


def test_the_pruner_runs_every_n_finished(course: Course) -> None:
    service = course.service
    service.policy.prune_every = 4
    pruner = Pruner(service.settings, service.queue, service.publisher, clock=lambda: NOW, say=service.say)
    runs = [pruner.finished() for _ in range(8)]
    assert [r is not None for r in runs] == [False, False, False, True] * 2
    assert runs[3] is not None and runs[3].pages_removed > 0 and runs[7] is not None and runs[7].pages_removed == 0
    assert "pruned   " in service.out.getvalue()  # type: ignore[attr-defined]


def test_kept_pages_rule() -> None:
    def sub(i: int, student: str, arrived: float, state: str, reason: str | None = None) -> Submission:
        return Submission(i, f"f{i}", student, "t", "ab", ("a.ipynb",), arrived, state, reason, None, None, None,
                          None, "d", 1)

    rows = [sub(1, "a", 1, "done"), sub(2, "a", 2, "done", "the grader could not run"), sub(3, "a", 3, "refused"),
            sub(4, "a", 4, "refused"), sub(5, "b", 1, "queued"), sub(6, "b", 2, "refused"), sub(7, "b", 2, "refused")]
    # a: the latest two (4, 3) and the latest graded without an error (1); b: ties by id, and the pending one.
    assert kept_pages(rows, 2) == {4, 3, 1, 7, 6, 5}
    assert kept_pages(rows, 1) == {4, 1, 7, 5}


def test_scanning_a_thousand_folders_keeps_no_memory_per_submission(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's own memory: scan() over 1,000 complete folders of the service's user (6 queued or
    replaced, then refused for attempts) and 1,000 folders another user's name claims (refused), rescans, and
    the queue's order/claim; Python memory retained after the first 200 folders, per further folder."""
    with scratch(tmp_path) as root, open(os.devnull, "w") as log:
        service = make_service(root, monkeypatch, attempts=6)
        service.out = log  # a StringIO would keep every line: the service's log goes to its journal
        scan_memory(service)


def scan_memory(service: Service) -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    inbound = service.settings.inbound

    def drop(n: int, claimed: str) -> None:
        folder = inbound / f"{claimed}+ch11+2026-12-02 10:{n // 60:02d}:{n % 60:02d}.000000 UTC+{n:04d}"
        folder.mkdir()
        (folder / "ex4_audit.ipynb").write_text('{"nbformat": 4, "cells": []}')
        (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
        folder.chmod(0o777)

    def rounds(start: int, stop: int) -> None:
        for n in range(start, stop):
            drop(n, me)
            drop(n, "nobody-else")
            if n % 50 == 49:
                service.scan()
                service.queue.order()
        service.scan()

    tracemalloc.start()
    try:
        rounds(0, 200)
        gc.collect()
        base, _ = tracemalloc.get_traced_memory()
        rss = rss_kib()
        started = time.monotonic()
        rounds(200, 1000)
        for _ in range(3):
            service.scan()  # rescans find nothing new
        seconds = time.monotonic() - started
        gc.collect()
        end, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    states: dict[str, int] = {}
    for row in service.queue.in_state(*STATES):
        states[row.state] = states.get(row.state, 0) + 1
    assert states == {"queued": 1, "superseded": 5, "refused": 1994}
    per_folder = (end - base) / 1600
    print(f"scan memory: {base} B after 400 folders, {end} B after 2,000 (peak {peak} B), "
          f"{per_folder:.1f} B retained per further folder; 1,600 folders scanned in {seconds:.1f} s; "
          f"RSS {rss} -> {rss_kib()} KiB")
    assert per_folder < 64, "the service keeps something per submission in memory"
    assert not service._skipped


def rss_kib() -> int:
    """This process's resident set (Linux), KiB; 0 elsewhere (reported, not asserted: the allocator keeps pages)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def test_the_service_prunes_after_finishing_submissions(copy: Callable[..., Course]) -> None:
    """The hook: a submission the service finishes (here one the grader could not grade, the cheap path) counts
    towards prune_every, and the prune runs from the grading thread."""
    course = copy(keep_runs=3, prune_every=2)
    service = course.service
    pages = len(os.listdir(service.settings.feedback))
    for sub in service.queue.claim(2, NOW):
        service._finish(sub, None, "the grader did not grade it")
    assert "pruned   " in service.out.getvalue()  # type: ignore[attr-defined]
    assert len(os.listdir(service.settings.feedback)) < pages / 2
