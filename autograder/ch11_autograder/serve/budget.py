"""What a student's pages say about their attempts: how many are left in the window, and the due date.

The attempts budget (``ServePolicy.attempts`` per ``window_minutes``) counts the submissions the
queue marks as spending one (:mod:`.queue`: queued, being graded, graded, replaced, or failed for
the submission's own sake; a grading that failed for the grader's reasons spends none). The due
date is the student's own: the assignment's in the instructor's gradebook (``nbgrader db
assignment add ch11 --duedate=...``) plus their extension (``ch11-grade extend``), read by
:mod:`.deadline`.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass

__all__ = ["Budget", "budget_note"]


@dataclass(frozen=True)
class Budget:
    """A student's attempts at one moment.

    Attributes:
        left: attempts left in the window ending now (never below 0).
        attempts: the budget (``ServePolicy.attempts``).
        window_minutes: the window's length.
        at: the moment counted (seconds since the epoch).
        due: the student's due date (``YYYY-MM-DD HH:MM UTC``), or ``None`` when the gradebook has none.
        extended: ``due`` includes an extension given to this student.
    """

    left: int
    attempts: int
    window_minutes: float
    at: float
    due: str | None = None
    extended: bool = False


def budget_note(budget: Budget | None) -> str:
    """The HTML paragraph of a page that states ``budget`` ("" without one)."""
    if budget is None:
        return ""
    at = time.strftime("%H:%M UTC", time.gmtime(budget.at))
    text = (f"Attempts left at {at}: {budget.left} of {budget.attempts} in any {budget.window_minutes:g} minutes "
            "(a grading that fails for the grader's own reasons does not use one up).")
    if budget.due is not None:
        text += f" Due date: {budget.due}{' (your extension included)' if budget.extended else ''}."
    return f"<p class=\"note\">{html.escape(text)}</p>"
