"""Each student's score on one assignment, as nbgrader's own export computes it.

nbgrader's ``nbgrader export`` writes ``score = max(0, raw score - late penalty)``, where
the raw score is the sum of every grade (the manual score where one is entered, else the
autograded one, plus extra credit) and the penalty is what ``AssignLatePenalties``
recorded at autograde time. :func:`read_scores` computes the same from the gradebook,
and keeps what an instructor must know before uploading: cells still waiting for a
manual grade, and the penalty.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from ..course_layout import GRADEBOOK

__all__ = ["StudentScore", "read_scores"]


@dataclass(frozen=True)
class StudentScore:
    """One gradebook student's result on the assignment.

    Attributes:
        student: nbgrader student id (the hub login).
        submitted: whether the gradebook has a submission; when False the scores are None.
        score: points after the late penalty, ``max(0, raw_score - late_penalty)`` as nbgrader's export.
        raw_score: points before the late penalty.
        late_penalty: points taken off for lateness (0.0 when on time).
        max_score: the assignment's points (the same for every student).
        needs_manual_grade: cells of the submission still waiting for a grader (scored 0 until graded).
    """

    student: str
    submitted: bool
    score: float | None
    raw_score: float | None
    late_penalty: float | None
    max_score: float
    needs_manual_grade: int = 0


def read_scores(course: Path, assignment: str) -> dict[str, StudentScore]:
    """Student id -> :class:`StudentScore` for every student of the course's gradebook.

    Raises:
        FileNotFoundError: ``course`` has no ``gradebook.db``.
        KeyError: the gradebook does not know ``assignment`` (message names the ones it knows).
    """
    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    db = course / GRADEBOOK
    if not db.is_file():
        raise FileNotFoundError(f"{course}: no gradebook.db (is this the instructor's nbgrader course directory?)")
    out: dict[str, StudentScore] = {}
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{db}") as gb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's column properties; the values are right
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            known = ", ".join(sorted(a.name for a in gb.assignments)) or "none"
            raise KeyError(f"{db}: no assignment {assignment!r} (the gradebook has: {known})") from None
        max_score = float(found.max_score)
        for student in gb.students:
            try:
                sub = gb.find_submission(assignment, student.id)
            except MissingEntry:
                out[student.id] = StudentScore(student.id, False, None, None, None, max_score)
                continue
            raw = float(sub.score)
            penalty = float(sub.late_submission_penalty or 0.0)
            pending = sum(1 for nb in sub.notebooks for grade in nb.grades if grade.needs_manual_grade)
            out[student.id] = StudentScore(student.id, True, max(0.0, raw - penalty), raw, penalty, max_score,
                                           pending)
    return out
