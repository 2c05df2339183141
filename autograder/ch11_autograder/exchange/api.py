"""The exchange as the grading side sees it: the one module ``serve/`` and ``doctor/`` import of it.

Two sides, one protocol each, and an exchange of either kind behind them:

* **submissions in** (:class:`Submissions`): a folder of submission folders named as nbgrader names them
  (``<student>+<assignment>+<timestamp>+<key>``, each with the notebooks, ``timestamp.txt`` and
  ``submission_secret.txt``), which the grading side reads as hostile input; who a folder's sender is
  (:meth:`Submissions.refusal`); why nothing may be taken now (:meth:`Submissions.problem`); and the
  step that brings newly arrived submissions into the folder (:meth:`Submissions.bring`).
* **feedback out** (:class:`Feedback`): pages published per submission (by its secret, as nbgrader
  addresses feedback) and notebook, read back and removed, where the student's ``nbgrader
  fetch_feedback`` finds them.

:func:`folder_exchange` gives the folder exchange's pair (:mod:`.folder`: nbgrader's inbound folder, owners
checked; pages written into ``<exchange>/<course>/feedback``), :func:`hub_exchange` the hub exchange's
(:mod:`.hub.source`: submissions copied from the service into a private folder, the hub naming each
sender; pages posted back to the service for the student's ``fetch_feedback``).

The folder exchange's rules are also here for ``doctor/``: whose a submission folder is
(:func:`refusal`), when owners cannot tell students apart (:func:`identity_problem`), when the exchange's
root or course folder can be taken over (:func:`exchange_problems`, with the instructor from
:class:`ExchangeSafety`). Importing this imports no nbgrader; ``OwnerCheckedCollect`` is nbgrader's to load
(``c.ExchangeFactory.collect`` in ``nbgrader_config.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from .errors import Unreachable
from .folder.feedback import FEEDBACK_MODE, PAGE_MODE, Publisher, feedback_name
from .folder.identity import identity_problem
from .folder.owners import SEVERAL_MACHINES, owner_of, refusal
from .folder.safety import UNSAFE_EXCHANGE, ExchangeSafety, exchange_problems, instructor_uid
from .folder.source import FolderSubmissions
from .hub.source import HubCopy

__all__ = [
    "FEEDBACK_MODE",
    "PAGE_MODE",
    "SEVERAL_MACHINES",
    "UNSAFE_EXCHANGE",
    "ExchangeSafety",
    "Feedback",
    "FolderSubmissions",
    "Publisher",
    "Submissions",
    "Unreachable",
    "exchange_problems",
    "feedback_name",
    "folder_exchange",
    "hub_exchange",
    "identity_problem",
    "instructor_uid",
    "owner_of",
    "refusal",
]


class Submissions(Protocol):
    """Submissions in: where they are, whose they are, and when they may be taken."""

    @property
    def inbound(self) -> Path:
        """The folder of submission folders (``<student>+<assignment>+<timestamp>+<key>``)."""
        ...

    @property
    def whole(self) -> bool:
        """Whether a folder appears there whole (renamed into place); if not, the reader waits until it is."""
        ...

    @property
    def poll_seconds(self) -> float | None:
        """How often :meth:`bring` should run when nothing wakes the reader sooner (``None``: at each rescan)."""
        ...

    def problem(self, names: Sequence[str] | None = None) -> str | None:
        """Why no submission may be taken now (``names``: the folder names listed now; ``None``: at start), in one
        line, or ``None``."""
        ...

    def refusal(self, name: str, student: str) -> str | None:
        """Why the folder ``name`` is not the submission of ``student`` it claims to be, or ``None``."""
        ...

    def bring(self) -> int:
        """Copy the submissions that arrived at the exchange since the last call into :attr:`inbound`; how many.

        Each folder is renamed into place whole, and one already there is not copied again: a reader killed at any
        moment loses none and gets none twice.

        Raises:
            Unreachable: the exchange could not be asked (what was copied before stays).
        """
        ...

    def where(self) -> str:
        """Where submissions come from, for the log."""
        ...


class Feedback(Protocol):
    """Feedback out: pages by submission secret and notebook id, where the student's ``fetch_feedback`` finds them."""

    def publish(self, secret: str, notebook_id: str, page: str) -> object:
        """Publish ``page`` as the feedback of ``notebook_id`` of the submission with ``secret`` (replacing one)."""
        ...

    def publish_pages(self, secret: str, pages: Mapping[str, str]) -> None:
        """Publish each of ``pages`` (notebook id -> page) of the submission with ``secret``."""
        ...

    def read(self, secret: str, notebook_id: str) -> str | None:
        """The page published for ``notebook_id`` of the submission with ``secret``, or ``None``."""
        ...

    def remove(self, secret: str, notebook_id: str) -> bool:
        """Unpublish that page; whether there was one."""
        ...

    def flush(self) -> int:
        """Send what could not be sent yet (an exchange that was unreachable); how many submissions' pages went.

        Raises:
            Unreachable: the exchange still cannot be reached (the pages stay to be sent).
        """
        ...


def folder_exchange(exchange: Path, course_id: str, instructor: int, feedback_dir: Path) -> tuple[
        Submissions, Feedback]:
    """nbgrader's folder exchange at the root ``exchange`` for ``course_id`` (course folder owned by the uid
    ``instructor``), pages published into ``feedback_dir`` (its ``<course>/feedback``).

    Raises:
        FileNotFoundError: the course has no folder in the exchange yet (see :class:`Publisher`).
    """
    return FolderSubmissions(exchange, course_id, instructor), Publisher(feedback_dir)


def hub_exchange(url: str, token: str, course_id: str, private: Path, *, poll_seconds: float = 2.0) -> tuple[
        Submissions, Feedback]:
    """The hub exchange service at ``url`` for ``course_id``, called with ``token`` (a hub token of an instructor of
    the course, with the scope to reach the service), its submissions copied into the folder ``private`` (made
    0700; the grader's alone), the service asked for new ones every ``poll_seconds``."""
    copy = HubCopy(url, token, course_id, private, poll_seconds=poll_seconds)
    return copy, copy
