"""Batch grading at class scale: ``grade_class`` and its records (docs/batch.md).

    from ch11_autograder.batch import grade_class
    report = grade_class(Path("downloads/submissions.zip"), Path("course"), workers=4)

Modules: :mod:`.intake` (folders and LMS zips, hostile-input-safe),
:mod:`.runner` (isolated per-submission ``nbgrader autograde``, the batch),
:mod:`.merge` (into the instructor's gradebook, idempotent), :mod:`.ledger`
(resume after a kill), :mod:`.report` (progress, CSV, summary).
"""

from .intake import Intake, IntakeError, IntakeLimits, StudentSubmission, read_source, sanitize_student_id
from .merge import gradebook_snapshot
from .runner import (
    STATE_DIR,
    BatchError,
    BatchReport,
    ProgressEvent,
    SubmissionRecord,
    grade_class,
    init_course,
)

__all__ = [
    "STATE_DIR",
    "BatchError",
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
