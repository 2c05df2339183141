"""The service's memory: every submission folder seen, its state, and what was published for it.

One SQLite database (``<practice>/.ch11-serve/queue.db``, WAL journal, every change one
transaction), so a service killed at any moment restarts knowing what is pending and what
is done. States of a submission:

* ``queued``: waiting for a grading slot;
* ``grading``: handed to the grader (back to ``queued`` at restart: grading is at least once);
* ``done``: graded and its feedback published, or not graded (``reason`` says why); ``spent`` says whether it
  used up an attempt: not when the grading failed for the grader's own reasons (the grader could not start, the
  grading started and ended without grades: sandbox, nbgrader or worker lost), so that a student never pays for
  the grader's failures;
* ``refused``: never graded (``reason`` says why: not the student's folder, attempts used up, ...);
* ``superseded``: a newer submission of the same student replaced it while it was queued.

Fairness (:meth:`Queue.order`): at most one queued submission per student (a newer one
supersedes it), one claimed per student at a time (:meth:`Queue.claim`, which also skips the
students the caller names busy), and students take turns: the student whose last grading
started longest ago (or never) goes first, ties by arrival. :meth:`Queue.admit` applies the attempts budget.
Each connection is short-lived, so threads share the queue safely.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STATES", "Queue", "Submission"]

STATES = ("queued", "grading", "done", "refused", "superseded")
#: States that count against a student's attempts budget (a refused submission does not; a ``done`` one only when
#: ``spent``).
COUNTED = ("queued", "grading", "done", "superseded")
#: Expected seconds per grading before the service has graded anything.
DEFAULT_GRADE_SECONDS = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    folder TEXT NOT NULL UNIQUE,
    student TEXT NOT NULL,
    stamp TEXT NOT NULL,
    secret TEXT,
    notebooks TEXT NOT NULL,
    arrived REAL NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    started REAL,
    finished REAL,
    score REAL,
    max_score REAL,
    published TEXT,
    gradings INTEGER NOT NULL DEFAULT 0,
    spent INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS by_student ON submissions (student, arrived);
CREATE INDEX IF NOT EXISTS by_state ON submissions (state);
CREATE TABLE IF NOT EXISTS turns (student TEXT PRIMARY KEY, last_start REAL NOT NULL);
"""


@dataclass(frozen=True)
class Submission:
    """One row of the queue (see the module for ``state``)."""

    id: int
    folder: str
    student: str
    stamp: str
    secret: str | None
    notebooks: tuple[str, ...]
    arrived: float
    state: str
    reason: str | None
    started: float | None
    finished: float | None
    score: float | None
    max_score: float | None
    published: str | None
    gradings: int
    spent: bool = True


_COLUMNS = ", ".join(Submission.__dataclass_fields__)


def _row(values: tuple) -> Submission:
    fields = list(values)
    fields[5] = tuple(json.loads(fields[5]))
    fields[-1] = bool(fields[-1])
    return Submission(*fields)


class Queue:
    """The durable queue at ``path`` (created with its schema when absent)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")  # persistent: kept in the database file
            db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
            columns = {row[1] for row in db.execute("PRAGMA table_info(submissions)")}
            if "spent" not in columns:  # a queue.db of an earlier version: every row counted then
                db.execute("ALTER TABLE submissions ADD COLUMN spent INTEGER NOT NULL DEFAULT 1")
        finally:
            db.close()

    def close(self) -> None:
        """Fold the write-ahead log into the database file (each change already committed; connections are
        per transaction, so nothing else stays open). Called when the service stops."""
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One immediate transaction on a fresh connection: committed on success, rolled back on error."""
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    # ------------------------------------------------------------------ reading

    def get(self, sub_id: int) -> Submission:
        with self._tx() as db:
            return _row(db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id = ?", (sub_id,)).fetchone())

    def known(self) -> set[str]:
        """The folder names already recorded (whatever their state)."""
        with self._tx() as db:
            return {name for (name,) in db.execute("SELECT folder FROM submissions")}

    def in_state(self, *states: str) -> list[Submission]:
        marks = ",".join("?" * len(states))
        with self._tx() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE state IN ({marks}) ORDER BY id", states)
            return [_row(r) for r in rows]

    def order(self) -> list[Submission]:
        """The queued submissions in grading order (round-robin between students, see the module)."""
        with self._tx() as db:
            return self._order(db)

    @staticmethod
    def _order(db: sqlite3.Connection) -> list[Submission]:
        rows = db.execute(
            f"SELECT {', '.join('s.' + c for c in Submission.__dataclass_fields__)} FROM submissions s "
            "LEFT JOIN turns t ON t.student = s.student WHERE s.state = 'queued' "
            "ORDER BY COALESCE(t.last_start, 0), s.arrived, s.id")
        return [_row(r) for r in rows]

    def used(self, student: str, now: float, window_seconds: float) -> int:
        """The attempts ``student`` has used in the window ending at ``now`` (the count :meth:`admit` applies)."""
        marks = ",".join("?" * len(COUNTED))
        with self._tx() as db:
            (used,) = db.execute(
                f"SELECT COUNT(*) FROM submissions WHERE student = ? AND state IN ({marks}) AND spent = 1 "
                "AND arrived > ? AND arrived <= ?", (student, *COUNTED, now - window_seconds, now)).fetchone()
        return int(used)

    def refused_with_pages(self, student: str, *, newest_kept: int, gone: Collection[str]) -> list[Submission]:
        """``student``'s refused submissions that have published pages (``published`` set and not one of ``gone``),
        all but the ``newest_kept`` newest (by arrival, then id)."""
        marks = ",".join("?" * len(gone)) or "''"
        with self._tx() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM submissions WHERE student = ? AND state = 'refused' AND published IS NOT "
                f"NULL AND published NOT IN ({marks}) ORDER BY arrived DESC, id DESC LIMIT -1 OFFSET ?",
                (student, *gone, newest_kept))
            return [_row(r) for r in rows]

    def mean_grade_seconds(self, last: int = 20) -> float:
        """Mean wall time of the last ``last`` gradings (:data:`DEFAULT_GRADE_SECONDS` before any)."""
        with self._tx() as db:
            rows = db.execute("SELECT finished - started FROM submissions WHERE state = 'done' AND started IS NOT "
                              "NULL AND finished IS NOT NULL ORDER BY finished DESC LIMIT ?", (last,)).fetchall()
        return sum(r[0] for r in rows) / len(rows) if rows else DEFAULT_GRADE_SECONDS

    # ------------------------------------------------------------------ changing

    def admit(self, folder: str, student: str, stamp: str, secret: str | None, notebooks: list[str], arrived: float,
              *, refused: str | None, attempts: int, window_seconds: float) -> tuple[Submission, list[Submission]]:
        """Record a newly seen submission folder, in one transaction; returns it and the submissions it superseded.

        ``refused`` (a reason) records it refused. Otherwise it is refused when its secret is one an earlier
        folder already carried (feedback is filed under the secret: a reused one would overwrite another
        submission's), or when the student's submissions counted in the window ending at ``arrived`` (see
        :data:`COUNTED`) reach ``attempts``; else it is queued and the student's queued older ones are superseded.
        """
        with self._tx() as db:
            if refused is None and secret is not None and db.execute(
                    "SELECT 1 FROM submissions WHERE secret = ?", (secret,)).fetchone():
                refused = "its submission secret was already used by another submission"
            if refused is None:
                marks = ",".join("?" * len(COUNTED))
                (used,) = db.execute(
                    f"SELECT COUNT(*) FROM submissions WHERE student = ? AND state IN ({marks}) AND spent = 1 "
                    "AND arrived > ? AND arrived <= ?", (student, *COUNTED, arrived - window_seconds, arrived),
                ).fetchone()
                if used >= attempts:
                    refused = (f"attempts used up: {used} submissions graded in the last "
                               f"{window_seconds / 60:g} minutes (at most {attempts})")
            superseded: list[Submission] = []
            if refused is None:
                superseded = [_row(r) for r in db.execute(
                    f"SELECT {_COLUMNS} FROM submissions WHERE student = ? AND state = 'queued'", (student,))]
                db.execute("UPDATE submissions SET state = 'superseded', reason = ? WHERE student = ? AND "
                           "state = 'queued'", (f"replaced by the newer submission {stamp}", student))
            db.execute("INSERT INTO submissions (folder, student, stamp, secret, notebooks, arrived, state, reason) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (folder, student, stamp, secret, json.dumps(sorted(notebooks)), arrived,
                        "refused" if refused else "queued", refused))
            (new_id,) = db.execute("SELECT last_insert_rowid()").fetchone()
            row = _row(db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id = ?", (new_id,)).fetchone())
            return row, [self._reread(db, s.id) for s in superseded]

    @staticmethod
    def _reread(db: sqlite3.Connection, sub_id: int) -> Submission:
        return _row(db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id = ?", (sub_id,)).fetchone())

    def claim(self, slots: int, now: float | None = None, *, busy: Collection[str] = ()) -> list[Submission]:
        """Move the first ``slots`` submissions of :meth:`order` to ``grading`` (one transaction) and return them:
        one per student, none of the ``busy`` students (whose earlier submission is still being graded)."""
        now = time.time() if now is None else now
        with self._tx() as db:
            taken = set(busy)
            picked: list[Submission] = []
            for sub in self._order(db):
                if len(picked) < slots and sub.student not in taken:
                    picked.append(sub)
                    taken.add(sub.student)
            for sub in picked:
                db.execute("UPDATE submissions SET state = 'grading', started = ?, gradings = gradings + 1 "
                           "WHERE id = ?", (now, sub.id))
                db.execute("INSERT INTO turns (student, last_start) VALUES (?, ?) ON CONFLICT(student) DO UPDATE "
                           "SET last_start = excluded.last_start", (sub.student, now))
            return [self._reread(db, s.id) for s in picked]

    def finish(self, sub_id: int, *, score: float | None, max_score: float | None, reason: str | None,
               now: float | None = None, spent: bool = True) -> Submission:
        """Mark a graded submission ``done`` (``reason``: why it could not be graded, shown to the student;
        ``spent=False``: it failed for the grader's own reasons and uses up no attempt)."""
        now = time.time() if now is None else now
        with self._tx() as db:
            db.execute("UPDATE submissions SET state = 'done', finished = ?, score = ?, max_score = ?, reason = ?, "
                       "spent = ? WHERE id = ?", (now, score, max_score, reason, int(spent), sub_id))
            return self._reread(db, sub_id)

    def mark_published(self, sub_id: int, digest: str) -> None:
        """Remember the digest of the pages last published for a submission (publishing again is skipped)."""
        with self._tx() as db:
            db.execute("UPDATE submissions SET published = ? WHERE id = ?", (digest, sub_id))

    def recover(self) -> list[Submission]:
        """At start: submissions left ``grading`` by a stopped service go back to ``queued``; returns them."""
        with self._tx() as db:
            rows = [_row(r) for r in db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE state = 'grading'")]
            db.execute("UPDATE submissions SET state = 'queued' WHERE state = 'grading'")
            # A newer submission admitted while this one was being graded supersedes it now.
            db.execute("UPDATE submissions SET state = 'superseded', reason = 'replaced by a newer submission' "
                       "WHERE state = 'queued' AND EXISTS (SELECT 1 FROM submissions n WHERE n.student = "
                       "submissions.student AND n.state = 'queued' AND (n.arrived, n.id) > (submissions.arrived, "
                       "submissions.id))")
            return rows

    def forget(self, sub_ids: list[int]) -> int:
        """Delete the rows of ``sub_ids`` that are not pending (``queued`` or ``grading``); returns how many went.

        Only :mod:`.prune` calls this, for rows nothing needs any more (see its rule): a row is the only memory
        that its folder was seen, so one whose folder is still in the inbound folder must stay."""
        if not sub_ids:
            return 0
        with self._tx() as db:
            removed = 0
            for start in range(0, len(sub_ids), 500):  # SQLite caps the parameters of one statement
                chunk = sub_ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                removed += db.execute(f"DELETE FROM submissions WHERE id IN ({marks}) AND state NOT IN "
                                      "('queued', 'grading')", chunk).rowcount
            return removed
