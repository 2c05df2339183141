"""Batch grading at class scale: ``grade_class`` and its records (docs/batch.md).

    from ch11_autograder.batch import BatchOptions, grade_class
    report = grade_class(Path("downloads/submissions.zip"), Path("course"), BatchOptions(workers=4))

Modules: :mod:`.orchestrate` (``grade_class``: the batch), :mod:`.intake`
(folders and LMS zips, hostile-input-safe; its pieces are the ``intake_*`` modules), :mod:`.cellcheck` (tampered cell
metadata), :mod:`.course` (creating the course, the assignment, the template
gradebook), :mod:`.guards` (the checks before grading), :mod:`.isolated` (one
isolated ``nbgrader autograde`` and its processes), :mod:`.nbgrader_log` (the
telling line of a failed run), :mod:`.merge` (into the instructor's gradebook,
idempotent), :mod:`.ledger` (resume after a kill), :mod:`.records` (what
happened to each submission), :mod:`.report` (progress, CSV, summary),
:mod:`.docker` (the whole batch inside the grading image), :mod:`.plan` (a batch's
options and plan), :mod:`.runners` (where submissions are graded: the local pool),
:mod:`.cluster` and :mod:`.jobs` (grading on the workers of a Dask cluster), :mod:`.session`
(the batch kept open, grading submissions one at a time: ``ch11-grade serve``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .course import STATE_DIR, init_course
    from .intake import read_source
    from .intake_checks import sanitize_student_id
    from .intake_records import Intake, IntakeError, IntakeLimits, StudentSubmission
    from .merge import gradebook_snapshot
    from .orchestrate import grade_class
    from .plan import BatchOptions
    from .records import BatchError, BatchReport, ProgressEvent, SubmissionRecord

# The names below are imported on first use: importing one light module of this package
# (``.nbgrader_fork``, to start a fork server before the command's own imports) must not pay for
# nbgrader and SQLAlchemy, which ``.course`` and ``.orchestrate`` import.
_HOMES = {
    "STATE_DIR": "course", "init_course": "course",
    "Intake": "intake_records", "IntakeError": "intake_records", "IntakeLimits": "intake_records",
    "StudentSubmission": "intake_records", "read_source": "intake", "sanitize_student_id": "intake_checks",
    "gradebook_snapshot": "merge",
    "grade_class": "orchestrate",
    "BatchOptions": "plan",
    "BatchError": "records", "BatchReport": "records", "ProgressEvent": "records", "SubmissionRecord": "records",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "STATE_DIR",
    "BatchError",
    "BatchOptions",
    "BatchReport",
    "Intake",
    "IntakeError",
    "IntakeLimits",
    "ProgressEvent",
    "StudentSubmission",
    "SubmissionRecord",
    "grade_class",
    "gradebook_snapshot",
    "init_course",
    "read_source",
    "sanitize_student_id",
]
