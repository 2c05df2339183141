"""Old practice runs pruned by a fixed rule, so disk and memory stay bounded however often students submit.

What grows with every submission, and what bounds it:

* **Published pages** (``<exchange>/<course>/feedback/<hash>.html``, one per notebook of every
  submission that got a status page or feedback, refused and replaced ones included): per student,
  the pages of the ``ServePolicy.keep_runs`` latest submissions (by arrival) are kept, and always
  those of the student's latest graded submission and of any still queued or being graded. The
  pages of the others are removed, but only while they are exactly the pages the service
  published (the digest recorded in the queue): a page replaced since, e.g. by the official
  ``release_feedback`` of that submission, is left alone (recorded as :data:`LEFT`, not read
  again); removed ones are recorded as :data:`PRUNED`. A student's ``nbgrader fetch_feedback``
  keeps finding the pages of their latest submissions; the feedback of older ones stays in the
  student's own ``~/ch11/feedback/<time>/`` once fetched. No lock is shared with the scanner
  thread: it publishes the pages of new and pending submissions only, which this never removes.
* **Queue rows** (``queue.db``): a row is deleted once all of these hold: it is not pending, its
  pages are gone or no longer the service's (:data:`PRUNED`, :data:`LEFT`, or it never had any),
  it arrived before the current attempts window (``window_minutes``: all the attempts budget
  counts), and its folder is no longer in the exchange's inbound folder. A row whose folder is
  still there stays: it is the only memory that the folder was seen (without it the folder would
  be graded again). The inbound folder is nbgrader's, which the service never deletes from
  (``collect`` reads it): those rows are bounded by what the instructor keeps there, a few
  hundred bytes each. Fairness needs one row per student (``turns``), never pruned.
* **The batch ledger** (``<practice>/.ch11-batch/ledger.jsonl``, a line per grading): rewritten
  to each student's last entry and last ``graded`` entry, all that resuming and the class report
  read (:meth:`..batch.ledger.Ledger.compact`), under the batch's lock (skipped while a batch holds it).
* **The verdict cache** (``CH11_VERDICT_CACHE``, by default ``<practice>/.ch11-serve/verdict-cache``):
  least recently used entries removed until the rest take at most ``c.VerdictCache.max_bytes``
  (its own rule, :func:`..trusted.verdict_cache.prune`, applied after each store and here again).

Bounded without pruning (one copy per student, replaced by each grading): the practice course's
``submitted/``, ``autograded/``, ``feedback/`` folders and its ``gradebook.db`` (one submission row
per student), the nbgrader logs of ``.ch11-batch/logs/`` and ``.ch11-serve/logs/`` (one per student),
the grading reports; a round's job folder and the batch's ``work/`` and ``staging/`` are removed
after each round.

:class:`Pruner` runs :func:`prune` after every ``ServePolicy.prune_every`` finished submissions
(0: never), from the grading thread, between gradings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..batch import BatchError
from ..batch.course import STATE_DIR as BATCH_STATE_DIR
from ..batch.guards import BatchLock
from ..batch.ledger import Ledger
from ..exchange.api import Feedback
from ..textsafe import escape
from ..trusted import verdict_cache
from .policy import ServeSettings, load_config
from .queue import STATES, Queue, Submission
from .status import pages_digest

__all__ = ["LEFT", "PRUNED", "PruneReport", "Pruner", "drop_refusal_pages", "kept_pages", "prune", "unpublish"]

#: The ``published`` value of a submission whose pages were removed.
PRUNED = "pruned"
#: The ``published`` value of a submission whose pages were no longer the service's when pruning came: left in place.
LEFT = "left"
#: States whose pages are never removed.
PENDING = ("queued", "grading")


@dataclass
class PruneReport:
    """What one :func:`prune` did.

    Attributes:
        pages_removed: page files removed from the feedback directory.
        pages_left: submissions whose pages were left in place because they are no longer what the service
            published (replaced by ``release_feedback``, or removed by hand); recorded as :data:`LEFT`.
        rows_removed: queue rows deleted.
        ledger: ledger entries before and after, or ``None`` when a batch held the lock (not compacted).
        cache_removed: verdict cache files removed.
    """

    pages_removed: int = 0
    pages_left: int = 0
    rows_removed: int = 0
    ledger: tuple[int, int] | None = None
    cache_removed: int = 0

    def line(self) -> str:
        ledger = "ledger busy" if self.ledger is None else f"ledger {self.ledger[0]} -> {self.ledger[1]} entries"
        return (f"pruned   {self.pages_removed} pages, {self.rows_removed} queue rows, {ledger}, "
                f"{self.cache_removed} verdict cache files")


def kept_pages(rows: Iterable[Submission], keep_runs: int) -> set[int]:
    """Ids of the submissions whose pages stay (the rule of the module): per student, the ``keep_runs`` latest
    by arrival (ties: the higher id is the later), the latest ``done`` without an error, and every pending one."""
    by_student: dict[str, list[Submission]] = {}
    for sub in rows:
        by_student.setdefault(sub.student, []).append(sub)
    keep: set[int] = set()
    for subs in by_student.values():
        subs.sort(key=lambda s: (s.arrived, s.id), reverse=True)
        keep.update(s.id for s in subs[:max(0, keep_runs)])
        graded = [s for s in subs if s.state == "done" and s.reason is None]
        if graded:
            keep.add(graded[0].id)
        keep.update(s.id for s in subs if s.state in PENDING)
    return keep


def prune(settings: ServeSettings, queue: Queue, publisher: Feedback, now: float, *,
          compact: Callable[[], tuple[int, int] | None] | None = None) -> PruneReport:
    """Apply the rule of the module once (see there); returns what it did.

    ``compact`` compacts the practice ledger when given (the service's open grading session holds the batch
    lock for its life, so it compacts under that lock, :meth:`..batch.session.GradingSession.compact_ledger`);
    without it the ledger is compacted under the batch lock taken here (:func:`compact_ledger`).

    Raises:
        OSError: the feedback directory cannot be opened safely (as :class:`..exchange.api.Publisher`).
    """
    policy, report = settings.policy, PruneReport()
    rows = queue.in_state(*STATES)
    keep = kept_pages(rows, policy.keep_runs)
    for sub in rows:
        if sub.id in keep:
            continue
        removed = unpublish(queue, publisher, sub)
        if removed is None:
            report.pages_left += 1
        else:
            report.pages_removed += removed
    try:
        present = set(os.listdir(settings.inbound))
    except FileNotFoundError:
        present = set()
    horizon = now - policy.window_minutes * 60
    gone = [sub.id for sub in queue.in_state(*STATES)
            if sub.state not in PENDING and sub.published in (None, PRUNED, LEFT) and sub.arrived <= horizon
            and sub.folder not in present]
    report.rows_removed = queue.forget(gone)
    report.ledger = compact() if compact is not None else compact_ledger(settings.practice)
    report.cache_removed = _prune_cache(settings.practice)
    return report


def unpublish(queue: Queue, publisher: Feedback, sub: Submission) -> int | None:
    """Remove ``sub``'s published pages while they are exactly what the service published (then it is marked
    :data:`PRUNED`); returns how many files went, or ``None`` when they were no longer the service's (marked
    :data:`LEFT`, left in place). A submission without pages (or already pruned or left) is not touched: 0."""
    if sub.secret is None or sub.published in (None, PRUNED, LEFT):
        return 0
    pages: dict[str, str] = {}
    for nb in sub.notebooks:
        page = publisher.read(sub.secret, nb.removesuffix(".ipynb"))
        if page is None:
            break
        pages[nb] = page
    if len(pages) != len(sub.notebooks) or pages_digest(pages) != sub.published:
        queue.mark_published(sub.id, LEFT)
        return None
    removed = sum(publisher.remove(sub.secret, nb.removesuffix(".ipynb")) for nb in sub.notebooks)
    queue.mark_published(sub.id, PRUNED)
    return removed


def drop_refusal_pages(queue: Queue, publisher: Feedback, student: str, *, keep: int) -> int:
    """Unpublish the pages of ``student``'s refused submissions but the ``keep`` newest (by :func:`unpublish`'s
    rule); returns how many files went. The scanner calls it after each refusal it publishes, so a student's
    refusals hold at most ``keep`` pages per notebook whatever they write into the inbound folder."""
    removed = 0
    for sub in queue.refused_with_pages(student, newest_kept=keep, gone=(PRUNED, LEFT)):
        removed += unpublish(queue, publisher, sub) or 0
    return removed


def compact_ledger(practice: Path) -> tuple[int, int] | None:
    """Compact the practice course's batch ledger under the batch's lock; ``None`` when a batch holds it."""
    state = practice / BATCH_STATE_DIR
    if not (state / "ledger.jsonl").exists():
        return (0, 0)
    try:
        lock = BatchLock(state / "lock")
    except BatchError:
        return None
    try:
        return Ledger(state / "ledger.jsonl").compact()
    finally:
        lock.release()


def _prune_cache(practice: Path) -> int:
    """The verdict cache's own size rule, with the practice course's ``c.VerdictCache`` (and the environment)."""
    cache = verdict_cache.VerdictCache(config=load_config(practice))
    directory = cache.location()
    if directory is None or not directory.is_dir():
        return 0
    return len(verdict_cache.prune(directory, cache.max_bytes))


class Pruner:
    """Runs :func:`prune` after every ``prune_every`` finished submissions (see the module).

    ``say`` gets the one line of each run (the service's log); a failed run is said, not raised: pruning
    must never stop grading, and the next run tries again."""

    def __init__(self, settings: ServeSettings, queue: Queue, publisher: Feedback, *,
                 clock: Callable[[], float], say: Callable[[str], None]) -> None:
        self.settings, self.queue, self.publisher = settings, queue, publisher
        self.clock, self.say = clock, say
        self.count = 0

    def finished(self, compact: Callable[[], tuple[int, int] | None] | None = None) -> PruneReport | None:
        """Count one finished submission; prune when the count reaches ``prune_every`` (``compact``: as
        :func:`prune`'s). Returns the run's report, or ``None`` when it did not run (or failed)."""
        every = self.settings.policy.prune_every
        if every <= 0:
            return None
        self.count += 1
        if self.count < every:
            return None
        self.count = 0
        try:
            report = prune(self.settings, self.queue, self.publisher, self.clock(), compact=compact)
        except (OSError, ValueError) as exc:
            self.say(f"error    pruning old practice runs failed: {type(exc).__name__}: {escape(str(exc), 500)}")
            return None
        self.say(report.line())
        return report
