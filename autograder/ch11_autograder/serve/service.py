"""The grade-on-submit service: watch the inbound folder, queue, grade as ``ch11-grade batch`` does, publish.

:class:`Service` ties the parts together; ``ch11-grade serve --course DIR`` runs :meth:`Service.run`.

* A **scanner** thread (woken by :class:`.watch.Watcher`, and at least every ``rescan_seconds``)
  has the exchange bring what arrived (:meth:`..exchange.api.Submissions.bring`: nothing to do for the folder
  exchange, whose ``<exchange>/<course>/inbound`` is read where it is; with ``ServePolicy.exchange = "hub"``
  the hub exchange service is asked every ``hub_poll_seconds`` for what it kept since, each copied into the
  practice course's state folder, and the pages go back to the service), then reads every new submission folder
  (:mod:`.inbound`: whose it is by the exchange's rule, for the folder exchange the owner check of ``collect``;
  hostile-safe reads), records it in the :class:`.queue.Queue` (queued, or refused
  with the reason: not the student's folder, no notebook of the assignment, attempts used up)
  and publishes its status page; queued students' pages show their position and expected wait.
* The **main** thread grades, on a :class:`..batch.session.GradingSession` kept open for the
  service's life on the practice course (``ServePolicy.practice_directory``, never the official
  gradebook): the batch grader's set-up done once (sandbox check, course, assignment, template
  gradebook, one nbgrader fork server per slot or the Dask client), with the batch's sandbox,
  workers or Dask cluster and resume ledger. Whenever a slot is free it claims the next queued
  submission (one at a time, in the queue's order: students in turn, one grading per student),
  copies it into a job folder and hands it to the session; each one is merged and published as
  soon as it finishes, while the others go on. Nothing here decides a score. For
  ``feedback_level = "full"`` it runs ``nbgrader generate_feedback`` for that student in the
  practice course, forked from the session's nbgrader server (:meth:`..batch.session.GradingSession.course_server`).
* Each graded submission's pages replace its status pages (:mod:`.publish`), then it is marked
  ``done``, under one lock with every other publication, so a stale status never overwrites
  feedback.
* The practice course's class report is refreshed every few finished submissions or minutes
  (:mod:`.live_report`, in a child process), so the instructor's one page stays current.

Stopped by SIGTERM or SIGINT (systemd sends the first, a JupyterHub stopping its managed service the second,
a terminal's Ctrl-C the second too), it abandons the gradings in flight (killed, their submissions queued again).
Killed at any moment, the service restarts where it was: submissions left ``grading`` are
graded again (the batch's ledger makes an already merged one a cheap ``skipped_resume``, never
a second merge), pages are published again to the same names, and folders that arrived while
it was down are found by the first scan.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from ..batch import BatchError, BatchOptions, IntakeError, SubmissionRecord
from ..batch.course import course_step
from ..batch.records import format_score
from ..batch.session import GradingSession
from ..course_layout import AUTOGRADED, CONFIG, FEEDBACK, GRADEBOOK, SOURCE, assignment_source, student_folder
from ..exchange.api import Feedback, Submissions, Unreachable, folder_exchange, hub_exchange, instructor_uid
from ..paths import ASSIGNMENT
from ..textsafe import escape
from ..trusted.verdict_cache import lookups_in_log
from .budget import Budget
from .deadline import DeadlineReader, Deadlines, DeadlinesUnreadable, format_due, submitted_at
from .inbound import SECRET_FILE, TIMESTAMP_FILE, parse_folder, read_folder, ready
from .live_report import LiveReport
from .policy import STATE_DIR, ServeSettings
from .prune import Pruner, drop_refusal_pages
from .queue import Queue, Submission
from .status import feedback_page, pages_digest, status_page
from .watch import Watcher

__all__ = ["STATE_DIR", "IdentityRefused", "Service", "Stopped"]

#: Per student, the refused submissions whose status pages stay published (the newest): however many folders a
#: student writes into the inbound folder, their refusals publish at most this many pages per notebook.
REFUSAL_PAGES = 3

#: The signals that stop the service cleanly (:meth:`Service._on_stop_signal`).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

#: While a slot is free and gradings are in flight, how often the main thread looks for new submissions, seconds.
POLL_SECONDS = 0.25

log = logging.getLogger(__name__)


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived while submissions were being graded: they are abandoned (a BaseException, so the
    batch's ``except Exception`` handlers do not take it for a grading failure; closing the session kills
    the graders in flight, as on Ctrl-C)."""


class IdentityRefused(ValueError):
    """The exchange cannot say who submitted: another user can take over its root or the course's folder
    (:func:`..exchange.api.exchange_problems`), or folder owners in the inbound folder cannot tell students apart
    (:func:`..exchange.api.identity_problem`). The service does not start."""


class Service:
    """One course's grade-on-submit service (see the module)."""

    def __init__(self, settings: ServeSettings, *, assignment: str = ASSIGNMENT, out: TextIO | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.policy = settings.policy
        self.assignment = assignment
        self.out = out or sys.stdout
        self.clock = clock
        self.practice = settings.practice
        #: The uid that must own the course's folder in the exchange (raises ValueError for an unknown name).
        self.instructor = instructor_uid(settings.instructor)
        self._prepare_practice()
        self.state = self.practice / STATE_DIR
        self.state.mkdir(mode=0o700, exist_ok=True)
        self.queue = Queue(self.state / "queue.db")
        #: Submissions in and feedback out (:mod:`..exchange.api`).
        self.source, self.publisher = self._open_exchange()
        self.notebooks = {p.name for p in assignment_source(settings.course, assignment).glob("*.ipynb")}
        self.publish_lock = threading.Lock()
        self.work = threading.Event()
        self.stopping = threading.Event()
        self._skipped: set[str] = set()
        #: The assignment's due date and the students' extensions in the instructor's gradebook, read at each scan
        #: (:mod:`.deadline`).
        self.deadlines = Deadlines()
        self._deadline_reader = DeadlineReader(settings.course / GRADEBOOK, assignment)
        #: Why the gradebook's due dates cannot be read, as last said (``None``: they can).
        self._unreadable: str | None = None
        #: Why no submission may be taken (the exchange can be taken over, folder owners cannot tell students
        #: apart), as last said (``None``: they may).
        self.identity: str | None = None
        #: Why the exchange could not be reached, as last said (``None``: it could).
        self._unreachable: str | None = None
        #: The batch grader kept open (opened by :meth:`hand_out`, closed when the service stops).
        self.session: GradingSession | None = None
        #: Submissions handed to the session and not finished yet, by student.
        self._grading: dict[str, Submission] = {}
        #: True while waiting for gradings or generating feedback: the only phases a stop signal interrupts
        #: (publishing is never cut in half).
        self._abandonable = False
        #: The stop signal received (its name goes into the log's ``stopping`` line), or ``None``.
        self._signal: signal.Signals | None = None
        os.environ.setdefault("CH11_VERDICT_CACHE", str(self.state / "verdict-cache"))
        self.pruner = Pruner(settings, self.queue, self.publisher, clock=clock, say=self.say)
        self.live_report = LiveReport(self.practice, every=self.policy.report_every, minutes=self.policy.report_minutes,
                                      log=self.state / "logs" / "report.log", say=self.say)

    # ------------------------------------------------------------------ setup

    def _prepare_practice(self) -> None:
        """The practice course: the course's config and source notebooks, its own gradebook."""
        practice, course = self.practice, self.settings.course
        if (practice / CONFIG).is_file():
            return
        practice.mkdir(mode=0o700, parents=True, exist_ok=True)
        (practice / SOURCE).mkdir(exist_ok=True)
        shutil.copy2(course / CONFIG, practice / CONFIG)
        shutil.copytree(assignment_source(course, self.assignment), assignment_source(practice, self.assignment),
                        dirs_exist_ok=True)

    def _open_exchange(self) -> tuple[Submissions, Feedback]:
        """The course's exchange (``ServePolicy.exchange``): nbgrader's folder (``c.Exchange.root``), or the hub
        exchange service, copied into :attr:`ServeSettings.hub_copy`."""
        settings = self.settings
        if self.policy.exchange == "hub":
            return hub_exchange(settings.hub_url, settings.hub_token, settings.course_id, settings.hub_copy,
                                poll_seconds=self.policy.hub_poll_seconds)
        return folder_exchange(settings.exchange, settings.course_id, self.instructor, settings.feedback)

    def say(self, line: str) -> None:
        """One line for the instructor (the service's terminal or journal)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.clock()))
        print(f"{stamp}  {line}", file=self.out, flush=True)

    # ------------------------------------------------------------------ scanning

    def _reach(self) -> None:
        """The exchange brings what arrived, and is sent the pages it could not be sent before; an exchange that
        cannot be reached is said once (what is here already is still taken)."""
        unreachable: str | None = None
        try:
            self.publisher.flush()
            self.source.bring()
        except Unreachable as exc:
            unreachable = str(exc)
        if unreachable != self._unreachable:
            self._unreachable = unreachable
            self.say(f"waiting  {escape(unreachable)}: tried again at the next scan" if unreachable
                     else "reached  the exchange again")

    def scan(self) -> int:
        """Record every new, complete submission folder of the inbound folder; returns how many were queued."""
        self._reach()
        inbound = self.source.inbound
        try:
            names = os.listdir(inbound)
        except FileNotFoundError:
            return 0
        # An exchange taken over (a course folder renamed and replaced meanwhile) or students whose accounts share a
        # uid: nothing is taken while it lasts (no probe file here: it would wake the watcher, which would scan again).
        problem = self.source.problem(names)
        if problem != self.identity:
            self.identity = problem
            self.say(f"refused  every submission: {escape(problem)}" if problem else "identity  the exchange is "
                     "the instructor's and folder owners tell students apart again: submissions are taken")
        if problem is not None:
            return 0
        unreadable: str | None = None
        try:
            self.deadlines = self._deadline_reader.read()
        except DeadlinesUnreadable as exc:
            # With the stop on, which submissions are late cannot be told: they wait in the inbound folder. Without
            # it, lateness decides nothing and the pages show the due dates last read.
            unreadable = str(exc) if self.policy.after_due_date == "stop" else None
        if unreadable != self._unreadable:
            self._unreadable = unreadable
            self.say("due dates read again: submissions are taken" if unreadable is None
                     else f"waiting  {escape(unreadable)}: no submission is taken until it can be read")
        if unreadable is not None:
            return 0
        known = self.queue.known()
        self._skipped.intersection_update(names)  # forget names that left the folder: memory follows the folder
        queued = 0
        now = self.clock()
        for name in sorted(names):
            if name in known or name in self._skipped:
                continue
            folder = parse_folder(name, self.assignment)
            if folder is None:
                self._skipped.add(name)
                continue
            if not self.source.whole and not ready(inbound, name, now):
                continue
            snap = read_folder(inbound, folder, self.notebooks, contents=False, whose=self.source.refusal)
            if snap.refused is None and snap.secret is None:
                snap.refused = "it has no valid submission_secret.txt (submit with nbgrader submit)"
            if snap.refused is None:
                snap.refused = self.closed(folder.student, snap.timestamp, snap.arrived or now)
            # A folder without any notebook of the assignment gets its refusal where fetch_feedback looks for the
            # feedback of the notebooks it does hold.
            pages_for = sorted(snap.notebooks) or sorted(snap.others)
            sub, superseded = self.queue.admit(
                name, folder.student, folder.timestamp, snap.secret, pages_for,
                snap.arrived or now, refused=snap.refused, attempts=self.policy.attempts,
                window_seconds=self.policy.window_minutes * 60)
            if sub.state == "queued":
                queued += 1
                self.say(f"queued   {escape(folder.student)} {escape(folder.timestamp)}")
            else:
                self.say(f"refused  {escape(name)}: {escape(sub.reason or '')}")
            # A queued submission's page is published by refresh_queued below, with its position: published here
            # it would say "position 0" until then.
            for old in [*superseded, sub]:
                if old.state != "queued":
                    self.publish_status(old)
            if sub.state == "refused":
                self._bound_refusals(folder.student)
        if queued:
            self.work.set()
        self.refresh_queued()
        return queued

    # ------------------------------------------------------------------ publishing

    def _bound_refusals(self, student: str) -> None:
        """Unpublish the pages of ``student``'s refused submissions older than the :data:`REFUSAL_PAGES` newest."""
        with self.publish_lock:
            drop_refusal_pages(self.queue, self.publisher, student, keep=REFUSAL_PAGES)

    def closed(self, student: str, timestamp: str | None, arrived: float) -> str | None:
        """Why a submission of ``student`` made at ``timestamp`` (its ``timestamp.txt``; else ``arrived``) is not
        graded for practice: it came after their own due date (``ServePolicy.after_due_date = "stop"``); or
        ``None``."""
        deadlines = self.deadlines
        due = deadlines.due(student)
        if self.policy.after_due_date != "stop" or due is None:
            return None
        if deadlines.seconds_late(student, submitted_at(timestamp, arrived)) <= 0:
            return None
        return f"practice feedback closed at {format_due(due)}; your submission is kept for the instructor's grading"

    def budget(self, student: str) -> Budget:
        """``student``'s attempts left now and their own due date, as their pages state them."""
        now, window = self.clock(), self.policy.window_minutes * 60
        left = max(0, self.policy.attempts - self.queue.used(student, now, window))
        deadlines = self.deadlines
        return Budget(left, self.policy.attempts, self.policy.window_minutes, now,
                      format_due(deadlines.due(student)), student in deadlines.extensions)

    def _pages_published(self, sub: Submission, pages: dict[str, str]) -> None:
        """Write ``pages`` (notebook file name -> HTML) of ``sub`` unless the same set was published last."""
        digest = pages_digest(pages)
        if sub.published == digest or sub.secret is None:
            return
        self.publisher.publish_pages(sub.secret, {nb.removesuffix(".ipynb"): page for nb, page in pages.items()})
        self.queue.mark_published(sub.id, digest)

    def publish_status(self, sub: Submission, position: int = 0, expected_wait: float = 0.0) -> None:
        """Publish the status pages of ``sub`` as it stands now (re-read under the lock; feedback is never
        overwritten: a graded submission's pages are published by :meth:`_finish` only)."""
        with self.publish_lock:
            sub = self.queue.get(sub.id)
            if sub.state == "done" or (sub.state == "refused" and sub.secret is None):
                return
            if sub.state == "refused" and sub.reason and sub.reason.startswith("Refusing "):
                return  # a folder not owned by the student it names: its secret may be anyone's, publish nothing
            if sub.state == "refused" and "secret was already used" in (sub.reason or ""):
                return
            budget = self.budget(sub.student)
            pages = {nb: status_page(sub, nb.removesuffix(".ipynb"), position=position, expected_wait=expected_wait,
                                     budget=budget) for nb in sub.notebooks}
            self._pages_published(sub, pages)

    def refresh_queued(self) -> None:
        """Publish every queued submission's status with its current position and expected wait."""
        order = self.queue.order()
        if not order:
            return
        mean = self.queue.mean_grade_seconds()
        workers = max(1, self.policy.workers)
        for index, sub in enumerate(order):
            self.publish_status(sub, index + 1, math.ceil((index + 1) / workers) * mean)

    # ------------------------------------------------------------------ grading

    def hand_out(self) -> int:
        """Claim queued submissions one at a time, in the queue's order, while the session has a free slot, and
        start grading each; returns how many were claimed. Opens the session when there is none; when it cannot
        open (said), each submission claimed ends with the reason."""
        claimed = 0
        while not self.stopping.is_set():
            session = self._open_session()
            if session is not None and session.free() < 1:
                break
            picked = self.queue.claim(1, self.clock(), busy=self._grading)  # one grading per student
            if not picked:
                break
            sub = picked[0]
            claimed += 1
            self.say(f"grading  {escape(sub.student)} {escape(sub.stamp)}")
            self.publish_status(sub)
            self._start(sub, session)
        if claimed:
            self.refresh_queued()
        return claimed

    _failure = "the grader did not grade it"

    def _open_session(self) -> GradingSession | None:
        """The open grading session, opened now when there is none; ``None`` when it cannot open (said once per
        attempt; :attr:`_failure` then says why)."""
        if self.session is None:
            try:
                options = BatchOptions(workers=max(1, self.policy.workers), sandbox=self.policy.sandbox or None,
                                       timeout=self.policy.timeout, assignment=self.assignment,
                                       cluster=self.policy.cluster or None)
                self.session = GradingSession(self.practice, options, say=self.say)
            except (BatchError, IntakeError) as exc:
                self._failure = f"the grader could not run: {exc}"
                self.say(f"error    the grader could not start: {escape(str(exc), 500)}")
                return None
            self._failure = "the grader did not grade it"
        return self.session

    def _close_session(self) -> None:
        """Close the session: gradings in flight are killed (their submissions stay ``grading``, queued again)."""
        session, self.session = self.session, None
        self._grading.clear()
        if session is not None:
            session.close()

    def _start(self, sub: Submission, session: GradingSession | None) -> None:
        """Copy ``sub`` into its job folder and hand it to the session (or finish it with the reason it cannot be)."""
        job = self.state / "jobs" / str(sub.id)
        shutil.rmtree(job, ignore_errors=True)
        job.mkdir(parents=True)
        try:
            problem = self._stage(sub, job)
            if problem is None and session is None:
                self._finish(sub, None, self._failure, grader_failed=True)
                return
            if problem is not None or session is None:
                self._finish(sub, None, problem)
                return
            try:
                records = session.submit(job)  # read into the session's own staging: the job folder can go
            except (BatchError, IntakeError, ValueError) as exc:
                self._finish(sub, None, f"the grader could not take it: {exc}")
                return
            if sub.student in session.in_flight():
                self._grading[sub.student] = sub
            else:  # not graded (refused by the batch's intake, or merged before from the same inputs)
                self._complete(sub, next((r for r in records if r.student == sub.student), None))
        finally:
            shutil.rmtree(job, ignore_errors=True)

    def collect(self, timeout: float | None) -> int:
        """Publish the submissions whose grading finished, waiting up to ``timeout`` seconds (``None``: until one
        does) when none has yet; returns how many. A stop signal abandons the wait."""
        if self.session is None or not self._grading:
            return 0
        with self._may_abandon():
            records = self.session.wait(timeout)
        if records:
            self.hand_out()  # the freed slots take the next submissions before these are published
        for record in records:
            self._complete(self._grading.pop(record.student), record)
        return len(records)

    def _complete(self, sub: Submission, record: SubmissionRecord | None) -> None:
        """The feedback of a submission the session is done with (``feedback_level = "full"``: nbgrader's own,
        generated now), then :meth:`_finish`."""
        if self.stopping.is_set() and (record is None or record.status == "error"):
            # A stop signalled to the whole group (systemd's KillMode=control-group) can kill the graders before
            # they finish: not the submission's fault, it stays `grading` to be redone.
            return
        if record is not None and record.status != "error" and self.policy.feedback_level == "full":
            logs = self.state / "logs"
            logs.mkdir(exist_ok=True)
            # A fork of the session's server: no interpreter start and no imports in the student's wait.
            forks = self.session.course_server() if self.session is not None else None
            with self._may_abandon():
                problems = course_step(self.practice, logs / f"generate_feedback-{sub.student}.log",
                                       "generate_feedback", self.assignment, "--student", sub.student, "--force",
                                       forks=forks)
            if problems:
                record.status, record.error = "error", "; ".join(problems)
        if record is None:
            self._finish(sub, None, self._failure, grader_failed=True)
        else:  # an error record of a grading that ran (it has a log) failed in the grader: sandbox, nbgrader, worker
            self._finish(sub, record, None, grader_failed=record.status == "error" and record.log is not None)

    def _stage(self, sub: Submission, job: Path) -> str | None:
        """Copy the submission's files (read again, hostile-safe) into ``job/<student>/<assignment>/``."""
        folder = parse_folder(sub.folder, self.assignment)
        if folder is None:
            return "not a submission folder"
        snap = read_folder(self.source.inbound, folder, self.notebooks, whose=self.source.refusal)
        if snap.refused is not None:
            return snap.refused
        dest = job / sub.student / self.assignment
        dest.mkdir(parents=True)
        for name, data in snap.notebooks.items():
            (dest / name).write_bytes(data)
        if snap.timestamp is not None:
            (dest / TIMESTAMP_FILE).write_text(snap.timestamp)
        if snap.secret is not None:
            (dest / SECRET_FILE).write_text(snap.secret)
        return None

    def _finish(self, sub: Submission, record: SubmissionRecord | None, problem: str | None, *,
                grader_failed: bool = False) -> None:
        """Publish a graded submission's pages, then mark it done (one lock: no status overwrites them).
        ``grader_failed``: it ended without grades for the grader's own reasons, and uses up no attempt."""
        reason = problem if record is None else record.error if record.status == "error" else None
        with self.publish_lock:
            if reason is None and record is not None:
                pages = self._feedback_pages(sub, record, self.budget(sub.student))
                done = self.queue.finish(sub.id, score=record.score, max_score=record.max_score, reason=None,
                                         now=self.clock())
                self._pages_published(done, pages)
            else:
                done = self.queue.finish(sub.id, score=None, max_score=None, reason=reason, now=self.clock(),
                                         spent=not grader_failed)
                budget = self.budget(sub.student)
                pages = {nb: status_page(done, nb.removesuffix(".ipynb"), budget=budget) for nb in done.notebooks}
                self._pages_published(done, pages)
        seconds = (done.finished or 0) - (done.started or 0)
        if reason is None:
            self.say(f"graded   {escape(sub.student)} {escape(sub.stamp)}  "
                     f"{format_score(done.score)}/{format_score(done.max_score)}  {seconds:.1f} s"
                     f"{_cache_note(record)}")
        else:
            spent = "" if done.spent else " (the grader's failure: no attempt used up)"
            self.say(f"error    {escape(sub.student)} {escape(sub.stamp)}: {escape(reason, 500)}{spent}")
        # Old practice runs (serve/prune.py). Other slots may be grading: the ledger is compacted under the open
        # session's lock, from this thread, which alone merges into it.
        self.pruner.finished(self.session.compact_ledger if self.session is not None else None)
        self.live_report.finished()  # the practice class report, refreshed in a child process when due

    def _feedback_pages(self, sub: Submission, record: SubmissionRecord, budget: Budget) -> dict[str, str]:
        level = self.policy.feedback_level
        pages: dict[str, str] = {}
        for nb in sub.notebooks:
            stem = nb.removesuffix(".ipynb")
            if level == "full":
                path = student_folder(self.practice, FEEDBACK, sub.student, self.assignment) / f"{stem}.html"
                pages[nb] = path.read_text(encoding="utf-8")
            else:
                path = student_folder(self.practice, AUTOGRADED, sub.student, self.assignment) / nb
                notebook = json.loads(path.read_text(encoding="utf-8"))
                pages[nb] = feedback_page(stem, sub.stamp, level, notebook, record.score, record.max_score, budget)
        return pages

    # ------------------------------------------------------------------ the loop

    def start(self) -> list[Submission]:
        """Recover from a stop: submissions left ``grading`` are queued again (returned).

        Raises:
            IdentityRefused: another user can take over the exchange, or folder owners in the inbound folder
                cannot tell students apart (said first).
        """
        problem = self.source.problem()
        if problem is not None:
            self.say(f"refused  to start: {escape(problem)}")
            self.queue.close()
            raise IdentityRefused(problem)
        recovered = self.queue.recover()
        shutil.rmtree(self.state / "jobs", ignore_errors=True)  # copies left by a stopped service
        for sub in recovered:
            self.say(f"resume   {escape(sub.student)} {escape(sub.stamp)} (was being graded when the service stopped)")
        return recovered

    # ------------------------------------------------------------------ stopping

    @contextlib.contextmanager
    def _may_abandon(self) -> Iterator[None]:
        """A stop signal may abandon what runs inside (grading only); a stop asked for before it starts skips it."""
        if self.stopping.is_set():
            raise Stopped
        self._abandonable = True
        try:
            yield
        finally:
            self._abandonable = False

    def _on_stop_signal(self, signum: int, _frame: object) -> None:
        """SIGTERM (systemd stop) or SIGINT (a hub stopping its service, Ctrl-C): stop after the current step,
        abandoning the submissions being graded (they are graded again at the next start)."""
        # Nothing is printed here: the main thread may be inside a print, and a reentrant write raises.
        self._signal = signal.Signals(signum)
        self.stopping.set()
        self.work.set()
        if self._abandonable:
            self._abandonable = False
            raise Stopped

    @contextlib.contextmanager
    def _stoppable(self) -> Iterator[None]:
        """Handle :data:`STOP_SIGNALS` while inside (main thread only: elsewhere Python cannot install handlers)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {signum: signal.signal(signum, self._on_stop_signal) for signum in STOP_SIGNALS}
        try:
            yield
        except Stopped:
            pass  # gradings were abandoned: _stopped() puts their submissions back in the queue
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _stopped(self) -> None:
        """After the loop: submissions abandoned mid-grading go back to the queue, the database is closed."""
        self.say(f"stopping ({self._signal.name if self._signal is not None else 'stop requested'})")
        for sub in self.queue.recover():
            self.say(f"abandoned {escape(sub.student)} {escape(sub.stamp)} (graded again at the next start)")
        shutil.rmtree(self.state / "jobs", ignore_errors=True)
        self.queue.close()
        self.say("stopped")

    # ------------------------------------------------------------------ the loop

    def run_once(self) -> int:
        """Scan, then grade until the queue is empty (or a stop signal); returns how many were claimed (``--once``)."""
        self.start()
        total = 0
        try:
            with self._stoppable():
                self.scan()
                while not self.stopping.is_set():
                    claimed = self.hand_out()
                    total += claimed
                    if self._grading:
                        self.collect(self.policy.rescan_seconds)
                    elif not claimed:
                        break
                    self.scan()
            if not self.stopping.is_set():
                self.live_report.flush()  # --once: the report shows what this run graded before it exits
        finally:
            self._close_session()
            self.live_report.close()
        if self.stopping.is_set():
            self._stopped()
        return total

    def run(self) -> None:
        """Serve until :attr:`stopping` is set or a stop signal arrives (then it returns normally, the queue
        consistent and closed): scanner thread + grading here."""
        self.start()
        watcher = Watcher(self.source.inbound, self.policy.rescan_seconds)
        scanner = threading.Thread(target=self._scan_loop, args=(watcher,), name="ch11-serve-scan", daemon=True)
        try:
            with self._stoppable():
                self._open_session()  # the grader's set-up, once, before the first submission needs it
                self.say(f"serving  {self.source.where()} -> practice course {self.practice} "
                         f"(feedback level {self.policy.feedback_level}, {self.policy.attempts} attempts per "
                         f"{self.policy.window_minutes:g} min, {self.policy.workers} workers)")
                self.scan()  # what arrived while the service was down
                scanner.start()
                while not self.stopping.is_set():
                    self.work.clear()
                    claimed = self.hand_out()
                    if self._grading:
                        # A finished grading wakes this at once; with a slot free, new arrivals are looked for too.
                        free = self.session is not None and self.session.free() > 0
                        self.collect(POLL_SECONDS if free else self.policy.rescan_seconds)
                    elif not claimed:
                        self.work.wait(self.policy.rescan_seconds)
                    self.live_report.poll()
        finally:
            self.stopping.set()
            self._close_session()
            self.live_report.close()
            watcher.close()
            watcher.poke()
            if scanner.is_alive():
                scanner.join(timeout=30)  # a scan in progress finishes its transaction and its pages
        self._stopped()

    def _scan_loop(self, watcher: Watcher) -> None:
        while not self.stopping.is_set():
            try:
                self.scan()
            except Exception:  # a scan that fails is retried at the next wake; grading goes on
                log.exception("scanning the inbound folder failed")
            watcher.wait(self.source.poll_seconds)


def _cache_note(record: SubmissionRecord | None) -> str:
    """``"  verdict cache: 5 of 6 notebooks reused"`` from the grading's nbgrader log ("" without a cache or log).

    A resubmission that changes one notebook regrades only that one; this is where the instructor sees it."""
    if record is None or not record.log:
        return ""
    try:
        text = Path(record.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    hits, misses = lookups_in_log(text)
    return f"  verdict cache: {hits} of {hits + misses} notebooks reused" if hits + misses else ""
