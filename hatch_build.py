"""The wheel's course files, for a non-editable install only.

A non-editable install (docs/course.md's instructor's environment) runs from no checkout, so the
wheel carries the course config and the source notebooks under ``ch11_autograder/course/``, where
``ch11_autograder.paths`` finds them. An editable install reads them from the checkout; writing
them into ``site-packages/ch11_autograder/`` there as well would leave a folder of the package's
name beside the editable path: the source notebooks (solutions and hidden tests) under a name the
sandbox hides by finding the package, which finds the checkout's copy first.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

COURSE_FILES = {
    "nbgrader_config.py": "ch11_autograder/course/nbgrader_config.py",
    "source/ch11": "ch11_autograder/course/source/ch11",
}


class CourseFilesHook(BuildHookInterface):
    """Adds :data:`COURSE_FILES` to a standard wheel; an editable one gets none."""

    PLUGIN_NAME = "course-files"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"].update(COURSE_FILES)
