"""The batch ledger: one JSON line per finished submission, fsync'd, in the course directory.

The orchestrator appends an entry only *after* the submission's grades are
committed to the instructor's gradebook and its autograded notebooks are in
place. A batch killed at any moment therefore loses at most the submissions in
flight; the rerun regrades them, and because merging sets values (never adds),
a submission merged just before the kill but not yet in the ledger is merged
again to the same values.

Entry fields (version 1): ``v``, ``event`` (``"graded"`` or ``"error"``),
``student``, ``sha256`` (of the inputs), ``score``, ``max_score``,
``per_notebook``, ``error``, ``seconds``, ``at`` (UTC, ISO 8601), and in
``graded`` entries ``due``: the student's due date the grading used (the
assignment's plus any extension; ISO 8601, naive UTC as nbgrader stores it;
``null`` without a due date). Entries written before ``due`` existed lack it.
In code an entry is a :class:`LedgerEntry`; its line is exactly these keys, sorted.
A torn last line (a kill in the middle of a write) is ignored on reading.
:meth:`Ledger.compact` rewrites the file to what resuming reads (each student's last entry and
last ``graded`` entry); only a caller holding the batch's lock may call it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_VERSION", "Ledger", "LedgerEntry"]

LEDGER_VERSION = 1


@dataclass(frozen=True)
class LedgerEntry:
    """One line of the ledger: a finished submission.

    Attributes:
        event: ``"graded"`` (merged into the gradebook) or ``"error"`` (not merged).
        student: nbgrader student id.
        sha256: digest of the submission's inputs (``""`` when intake refused it).
        score, max_score: autograded points and points possible (``score`` is ``None`` for errors).
        per_notebook: notebook name -> autograded points (empty for errors).
        error: the record's error text, ``None`` when graded.
        seconds: wall time spent grading it.
        due: ``graded`` only: the due date the grading used (ISO 8601, naive UTC), ``None`` without one
            (and in entries written before the field existed). ``error`` lines carry no ``due`` key.
        at: when the entry was written (UTC, ISO 8601); set by :meth:`Ledger.append`.
    """

    event: str
    student: str
    sha256: str
    score: float | None
    max_score: float | None
    per_notebook: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    due: str | None = None
    at: str | None = None

    def to_json(self) -> str:
        """The entry's line, without its newline: the keys above and ``v``, sorted (``due`` only when graded)."""
        data: dict[str, Any] = {"v": LEDGER_VERSION, "event": self.event, "student": self.student,
                                "sha256": self.sha256, "error": self.error, "score": self.score,
                                "max_score": self.max_score, "per_notebook": self.per_notebook,
                                "seconds": self.seconds, "at": self.at}
        if self.event == "graded":
            data["due"] = self.due
        return json.dumps(data, sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        """The entry of a parsed line (``student`` a ``str``); fields a line lacks read as empty."""
        return cls(
            event=str(data.get("event") or ""),
            student=data["student"],
            sha256=str(data.get("sha256") or ""),
            score=data.get("score"),
            max_score=data.get("max_score"),
            per_notebook=dict(data.get("per_notebook") or {}),
            error=data.get("error"),
            seconds=data.get("seconds") or 0.0,
            due=data.get("due"),
            at=data.get("at"),
        )


@dataclass
class Ledger:
    """Append-only JSONL file of finished submissions."""

    path: Path

    def append(self, entry: LedgerEntry) -> LedgerEntry:
        """Write ``entry``, stamped with the time now, as a line and fsync the file (and, the first time, its
        directory); returns the entry as written."""
        entry = replace(entry, at=datetime.now(UTC).isoformat(timespec="seconds"))
        line = entry.to_json() + "\n"
        new = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # A torn line from a killed writer must not swallow this one.
            if not new and os.fstat(fd).st_size and not self._ends_with_newline():
                os.write(fd, b"\n")
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:
            dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return entry

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def entries(self) -> Iterator[LedgerEntry]:
        """Every complete, well-formed entry in file order."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break  # torn by a kill mid-write
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue
                if (isinstance(entry, dict) and entry.get("v") == LEDGER_VERSION
                        and isinstance(entry.get("student"), str)):
                    yield LedgerEntry.from_dict(entry)

    def latest(self) -> dict[str, LedgerEntry]:
        """Student id -> that student's last entry."""
        out: dict[str, LedgerEntry] = {}
        for entry in self.entries():
            out[entry.student] = entry
        return out

    def latest_graded(self) -> dict[str, LedgerEntry]:
        """Student id -> that student's last ``graded`` entry (what the gradebook holds, unless grades
        were entered by other means since): later ``error`` entries do not hide it."""
        out: dict[str, LedgerEntry] = {}
        for entry in self.entries():
            if entry.event == "graded":
                out[entry.student] = entry
        return out

    def compact(self) -> tuple[int, int]:
        """Rewrite the ledger to each student's last entry and last ``graded`` entry (all that :meth:`latest` and
        :meth:`latest_graded` read), in file order; returns the entries before and after.

        The new file is written beside the old one, fsync'd and renamed over it (a kill leaves the old ledger or
        the new one, never a mix). The caller must hold the course's batch lock: an entry appended by a batch
        between the read and the rename would be lost. Torn and malformed lines are dropped with the rest; a ledger
        with nothing to drop is left as it is.
        """
        entries = list(self.entries())
        last: dict[str, int] = {}
        last_graded: dict[str, int] = {}
        for index, entry in enumerate(entries):
            last[entry.student] = index
            if entry.event == "graded":
                last_graded[entry.student] = index
        keep = set(last.values()) | set(last_graded.values())
        if len(keep) == len(entries):
            return len(entries), len(entries)
        data = "".join(entries[i].to_json() + "\n" for i in sorted(keep)).encode("utf-8")
        temp = self.path.with_name(f".{self.path.name}.compact")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return len(entries), len(keep)

