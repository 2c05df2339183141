"""The course folder: it exists, the instructor owns it, and it holds the course's config and source/.

Students cannot read it (the gradebook, submissions, the report's code excerpts): the page makes it
in the instructor's private home. A folder owned by another user is one that user can change,
config included, and the config is code every grading runs.
"""

from __future__ import annotations

import os

from ..course_layout import CONFIG, SOURCE
from ..exchange.api import owner_of
from .deployment import COURSE_FOLDER, Deployment, Problem

__all__ = ["check_course_folder"]


def check_course_folder(deployment: Deployment) -> list[Problem]:
    course = deployment.course
    if not course.is_dir():
        return [Problem(f"the course folder {course} does not exist (or is not a folder)", COURSE_FOLDER)]
    problems = []
    uid = os.stat(course).st_uid
    if uid != deployment.instructor:
        problems.append(Problem(f"the course folder {course} is owned by {owner_of(str(course)) or 'uid ' + str(uid)},"
                                f" not by the instructor (uid {deployment.instructor}): that user can change its "
                                "config, which every grading runs", COURSE_FOLDER))
    for name in (CONFIG, SOURCE):
        if not (course / name).exists():
            problems.append(Problem(f"the course folder {course} has no {name}", COURSE_FOLDER))
    return problems
