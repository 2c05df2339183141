"""Grade a submission's autograded test cells with their suites, as the grader does.

One path for the nbgrader preprocessor (``TrustedVerdicts``), the tests of every suite
and the tools that grade many submissions (the behaviour fixtures, mutation testing):
run the submission's cells in the worker with the visible checks where they stand
(:func:`~.submission_cells.worker_cells`), take the cell report of that first run, then
run each cell's suite with its visible checks' outcome.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

from ..protocol import CellOutcome, ProtocolError
from .cell_suite import CellSuite
from .submission_cells import WorkerCells
from .suite import run_suite
from .verdicts import CellVerdict
from .worker_client import WorkerSession
from .worker_errors import CallTimeout, WorkerCrashed

__all__ = ["first_report", "grade_suites"]


def first_report(session: WorkerSession) -> tuple[CellOutcome, ...]:
    """Start the worker (running every cell) and return its cell report; ``()`` if it did not start.

    The cells run before the first property, so their time (a slow or looping cell) is never
    charged to one property's budget. A failed start is final for the session; the
    properties then report it in the student's terms. A restart later (after a crash in one
    property) runs the same cells again: the report of this first run is the one that
    stands, as the student's notebook ran them.
    """
    with contextlib.suppress(CallTimeout, WorkerCrashed, ProtocolError):
        session.start()
    return tuple(session.report)


def grade_suites(
    cells: WorkerCells, suites: Iterable[CellSuite], session: WorkerSession, logger: logging.Logger | None = None
) -> dict[str, CellVerdict]:
    """grade_id -> verdict of each suite, on the session running ``cells``, visible checks counted."""
    report = first_report(session)
    verdicts = {}
    for suite in suites:
        visible = cells.visible_outcome(suite.grade_id, report)
        verdicts[suite.grade_id] = run_suite(suite, session, suite.points, logger, visible=visible)
    return verdicts
