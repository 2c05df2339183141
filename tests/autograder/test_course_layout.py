"""The course folder names (``ch11_autograder.course_layout``) are nbgrader's, checked independently.

The expected names are written out here on purpose, and nbgrader's own defaults are read from
nbgrader: a wrong name in the module fails here even if every module of the package agrees with it.
"""

from __future__ import annotations

from pathlib import Path

from ch11_autograder import course_layout
from nbgrader.coursedir import CourseDirectory
from support.paths import COURSE_CONFIG
from traitlets.config.loader import PyFileConfigLoader


def test_the_names_are_nbgrader_s_course_directory():
    defaults = CourseDirectory()
    assert course_layout.SOURCE == defaults.source_directory == "source"
    assert course_layout.SUBMITTED == defaults.submitted_directory == "submitted"
    assert course_layout.AUTOGRADED == defaults.autograded_directory == "autograded"
    assert course_layout.FEEDBACK == defaults.feedback_directory == "feedback"
    assert defaults.db_url.endswith("/" + course_layout.GRADEBOOK) and course_layout.GRADEBOOK == "gradebook.db"
    assert course_layout.CONFIG == "nbgrader_config.py"


def test_the_course_config_sets_the_folders_the_package_reads():
    config = PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()
    assert config.CourseDirectory.source_directory == course_layout.SOURCE
    assert config.CourseDirectory.release_directory == course_layout.RELEASE == "assignments"


def test_the_exchange_folders_are_nbgrader_s():
    assert (course_layout.EXCHANGE_INBOUND, course_layout.EXCHANGE_OUTBOUND, course_layout.EXCHANGE_FEEDBACK) == (
        "inbound", "outbound", "feedback")


def test_the_helpers_build_nbgrader_s_paths():
    course = Path("/c")
    assert course_layout.assignment_source(course, "ch11") == Path("/c/source/ch11")
    assert course_layout.student_folder(course, course_layout.AUTOGRADED, "ada", "ch11") == Path(
        "/c/autograded/ada/ch11")
