"""What intake gives the batch grader: one :class:`StudentSubmission` per student of an :class:`Intake`,
read under :class:`IntakeLimits`, or an :class:`IntakeError` refusing the whole source (``batch/intake.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Intake",
    "IntakeError",
    "IntakeLimits",
    "StudentSubmission",
]

class IntakeError(ValueError):
    """The whole source is refused (unreadable, not a zip or folder, too many members)."""


@dataclass(frozen=True)
class IntakeLimits:
    """Caps on what intake reads from a source.

    Attributes:
        max_members: archive members (files and folders) before the archive is refused.
        max_notebook_bytes: bytes of one notebook (nbgrader's own ``max_file_size``
            in this course is 10,000 KB); a larger one makes its student an error.
        max_total_bytes: bytes read from the whole source; students whose files
            would exceed it are errors.
        max_timestamp_bytes: bytes of a ``timestamp.txt``; a larger one is ignored.
        max_secret_bytes: bytes of a ``submission_secret.txt`` (nbgrader's is 128 hex digits);
            a larger one is ignored.
        max_nested_archive_bytes: bytes of one student's own zip inside the source (read
            into memory to be unpacked); a larger one makes its student an error.
    """

    max_members: int = 20_000
    max_notebook_bytes: int = 10_000 * 1024
    max_total_bytes: int = 512 * 1024**2
    max_timestamp_bytes: int = 256
    max_secret_bytes: int = 1024
    max_nested_archive_bytes: int = 64 * 1024**2


@dataclass
class StudentSubmission:
    """One student's staged submission.

    Attributes:
        student: the sanitized nbgrader student id.
        origin: where it came from (folder name, or Canvas name and user id).
        files: notebook file name -> staged path (only notebooks of the assignment).
        timestamp: nbgrader submission timestamp text, or ``None``.
        secret: the submission's ``submission_secret.txt`` text, or ``None``; it goes into
            the course beside the notebooks, for ``release_feedback``.
        sha256: digest over the staged inputs (see :func:`inputs_sha256`).
        notes: things a TA should know that do not stop grading.
        error: why this student cannot be graded (names the file and the cause), or ``None``.
        late: Canvas marked the submission late (its file names carry ``LATE``).
    """

    student: str
    origin: str
    files: dict[str, Path] = field(default_factory=dict)
    timestamp: str | None = None
    secret: str | None = None
    sha256: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    late: bool = False


@dataclass
class Intake:
    """What :func:`read_source` found.

    Attributes:
        kind: ``"folder"``, ``"nbgrader-zip"`` or ``"canvas-zip"``.
        submissions: one per student id, sorted by id.
        notes: entries ignored outside any student, and other source-wide remarks.
    """

    kind: str
    submissions: list[StudentSubmission]
    notes: list[str] = field(default_factory=list)


