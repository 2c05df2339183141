"""What a student's pages say about their attempts: how many are left in the window, and the due date.

The attempts budget (``ServePolicy.attempts`` per ``window_minutes``) counts the submissions the
queue marks as spending one (:mod:`.queue`: queued, being graded, graded, replaced, or failed for
the submission's own sake; a grading that failed for the grader's reasons spends none). The due
date is the assignment's in the instructor's gradebook (``nbgrader db assignment add ch11
--duedate=...``), read without writing (SQLite read-only); a per-student extension is not shown.
"""

from __future__ import annotations

import html
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["Budget", "budget_note", "due_date"]


@dataclass(frozen=True)
class Budget:
    """A student's attempts at one moment.

    Attributes:
        left: attempts left in the window ending now (never below 0).
        attempts: the budget (``ServePolicy.attempts``).
        window_minutes: the window's length.
        at: the moment counted (seconds since the epoch).
        due: the assignment's due date (``YYYY-MM-DD HH:MM UTC``), or ``None`` when the gradebook has none.
    """

    left: int
    attempts: int
    window_minutes: float
    at: float
    due: str | None = None


def due_date(gradebook: Path, assignment: str) -> str | None:
    """The due date of ``assignment`` in nbgrader's ``gradebook`` (``YYYY-MM-DD HH:MM UTC``), or ``None`` when there
    is no gradebook, no such assignment or no due date. nbgrader stores it as naive UTC."""
    if not gradebook.is_file():
        return None
    try:
        db = sqlite3.connect(f"{gradebook.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            row = db.execute("SELECT duedate FROM assignment WHERE name = ?", (assignment,)).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    if row is None or not row[0]:
        return None
    try:
        moment = datetime.fromisoformat(str(row[0]))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def budget_note(budget: Budget | None) -> str:
    """The HTML paragraph of a page that states ``budget`` ("" without one)."""
    if budget is None:
        return ""
    at = time.strftime("%H:%M UTC", time.gmtime(budget.at))
    text = (f"Attempts left at {at}: {budget.left} of {budget.attempts} in any {budget.window_minutes:g} minutes "
            "(a grading that fails for the grader's own reasons does not use one up).")
    if budget.due is not None:
        text += f" Due date: {budget.due}."
    return f"<p class=\"note\">{html.escape(text)}</p>"
