"""Submissions in through the folder exchange: nbgrader's ``<exchange>/<course>/inbound``, where owners name senders.

:class:`FolderSubmissions` is the folder exchange behind :class:`..api.Submissions`: the submission
folders are nbgrader's own inbound folder, written by each student's ``nbgrader submit``; a folder is
a student's only when that student's unix user owns it (:func:`.owners.refusal`); nothing may be
taken while another user can take over the exchange's root or the course's folder
(:func:`.safety.exchange_problems`) or while folder owners cannot tell students apart
(:func:`.identity.identity_problem`). Nothing is copied: the grading side reads the folders where
they are, as hostile input, and a folder may still be being written (``whole`` is false).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...course_layout import EXCHANGE_INBOUND
from .identity import identity_problem
from .owners import refusal
from .safety import exchange_problems

__all__ = ["FolderSubmissions"]


@dataclass(frozen=True)
class FolderSubmissions:
    """The inbound folder of ``course_id`` under the exchange root ``exchange``, whose course folder ``instructor``
    (a uid) must own."""

    exchange: Path
    course_id: str
    instructor: int
    #: A folder appears while ``nbgrader submit`` writes it: the reader waits until it is complete.
    whole: bool = False
    #: File watching wakes the reader; the rescans of ``ServePolicy.rescan_seconds`` are the safety net.
    poll_seconds: float | None = None

    @property
    def inbound(self) -> Path:
        return self.exchange / self.course_id / EXCHANGE_INBOUND

    def problem(self, names: Sequence[str] | None = None) -> str | None:
        """Each way another user can take over the exchange, in one line; else why folder owners cannot tell the
        students apart (``names``: the folder names listed now, their owners compared without a probe file, which
        would wake a watcher; ``None``: at start, with the probe); else ``None``."""
        problems = exchange_problems(self.exchange, self.course_id, self.instructor)
        if problems:
            return "; and ".join(problems)
        if names is None:
            return identity_problem(str(self.inbound))
        return identity_problem(str(self.inbound), [n.split("+", 1)[0] for n in names if n.count("+") == 3],
                                probe=False)

    def refusal(self, name: str, student: str) -> str | None:
        """Why the folder ``name`` is not ``student``'s (its owner is another user), or ``None``."""
        return refusal(str(self.inbound), name, student)

    def bring(self) -> int:
        """Nothing to bring: the students' submissions are written into :attr:`inbound` directly. 0."""
        return 0

    def where(self) -> str:
        return str(self.inbound)
