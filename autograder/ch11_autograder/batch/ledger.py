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
A torn last line (a kill in the middle of a write) is ignored on reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_VERSION", "Ledger"]

LEDGER_VERSION = 1


@dataclass
class Ledger:
    """Append-only JSONL file of finished submissions."""

    path: Path

    def append(self, entry: dict[str, Any]) -> None:
        """Write one entry as a line and fsync the file (and, the first time, its directory)."""
        record = {"v": LEDGER_VERSION, **entry, "at": datetime.now(UTC).isoformat(timespec="seconds")}
        line = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"
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

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def entries(self) -> Iterator[dict[str, Any]]:
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
                    yield entry

    def latest(self) -> dict[str, dict[str, Any]]:
        """Student id -> that student's last entry."""
        out: dict[str, dict[str, Any]] = {}
        for entry in self.entries():
            out[entry["student"]] = entry
        return out

    def latest_graded(self) -> dict[str, dict[str, Any]]:
        """Student id -> that student's last ``graded`` entry (what the gradebook holds, unless grades
        were entered by other means since): later ``error`` entries do not hide it."""
        out: dict[str, dict[str, Any]] = {}
        for entry in self.entries():
            if entry.get("event") == "graded":
                out[entry["student"]] = entry
        return out
