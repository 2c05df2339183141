"""nbgrader's course directory, named once: the folders and files nbgrader reads and writes in a course.

A course directory (the instructor's, a batch's isolated one per submission, the grade-on-submit
service's practice course, the Gradescope autograder's) holds::

    nbgrader_config.py                              CONFIG
    gradebook.db                                    GRADEBOOK
    source/<assignment>/*.ipynb                     SOURCE       (assignment_source)
    assignments/<assignment>/*.ipynb                RELEASE      (generate_assignment writes it)
    submitted/<student>/<assignment>/*.ipynb        SUBMITTED    (student_folder)
    autograded/<student>/<assignment>/*.ipynb       AUTOGRADED   (student_folder)
    feedback/<student>/<assignment>/*.html          FEEDBACK     (student_folder)

These are nbgrader's ``CourseDirectory`` folders. ``source`` and ``submitted``, ``autograded``,
``feedback`` are nbgrader's defaults; the release folder is set to ``assignments`` by the course
config (``nbgrader_config.py``, which takes both names it sets from here). A course config that
moves a folder elsewhere is not supported: the package reads and writes these names directly.

The exchange (``ch11-grade serve``, the ``collect`` of :mod:`.exchange.folder.collect`) has folders of its
own under ``<exchange>/<course id>/``: :data:`EXCHANGE_INBOUND`, :data:`EXCHANGE_OUTBOUND`,
:data:`EXCHANGE_FEEDBACK`.

This module imports nothing of the package (a contract in pyproject.toml), so any module may use it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AUTOGRADED",
    "CONFIG",
    "EXCHANGE_FEEDBACK",
    "EXCHANGE_INBOUND",
    "EXCHANGE_OUTBOUND",
    "FEEDBACK",
    "GRADEBOOK",
    "RELEASE",
    "SOURCE",
    "SUBMITTED",
    "assignment_source",
    "student_folder",
]

#: The course config nbgrader reads from the course directory.
CONFIG = "nbgrader_config.py"
#: nbgrader's gradebook (SQLite).
GRADEBOOK = "gradebook.db"
#: The instructor's source notebooks, ``source/<assignment>/``.
SOURCE = "source"
#: The released student notebooks, ``assignments/<assignment>/`` (``CourseDirectory.release_directory``).
RELEASE = "assignments"
#: Submissions as collected, ``submitted/<student>/<assignment>/``.
SUBMITTED = "submitted"
#: ``nbgrader autograde``'s output, ``autograded/<student>/<assignment>/``.
AUTOGRADED = "autograded"
#: ``nbgrader generate_feedback``'s output, ``feedback/<student>/<assignment>/*.html``.
FEEDBACK = "feedback"

#: The exchange's folders under ``<exchange>/<course id>/``: submissions in, released notebooks out,
#: feedback back to the students.
EXCHANGE_INBOUND = "inbound"
EXCHANGE_OUTBOUND = "outbound"
EXCHANGE_FEEDBACK = "feedback"


def assignment_source(course: Path, assignment: str) -> Path:
    """The assignment's source notebooks in ``course``: ``<course>/source/<assignment>``."""
    return course / SOURCE / assignment


def student_folder(course: Path, folder: str, student: str, assignment: str) -> Path:
    """A student's assignment folder in one of the course's per-student folders (:data:`SUBMITTED`,
    :data:`AUTOGRADED`, :data:`FEEDBACK`): ``<course>/<folder>/<student>/<assignment>``."""
    return course / folder / student / assignment
