"""Who may do what in a course of the hub exchange: decided from the caller's hub groups alone.

nbgrader's own group names (its ``JupyterHubAuthPlugin``): the members of ``nbgrader-<course>`` are
the course's students, the members of ``formgrade-<course>`` its instructors. A caller in neither
group of a course may do nothing in it, and learns nothing of it beyond that refusal. Every rule
takes a :class:`Caller` (the name and groups the hub gave for the caller's token, never a name the
request states) and raises :class:`Refused` with the HTTP status and a sentence the plug-in shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .names import BadName, checked

__all__ = ["INSTRUCTOR_GROUP", "STUDENT_GROUP", "Caller", "Refused", "course_of", "courses_of", "instructor_of",
           "member_of", "student_of"]

#: The hub group whose members are a course's students (nbgrader's ``JupyterHubAuthPlugin``'s name).
STUDENT_GROUP = "nbgrader-{course}"
#: The hub group whose members are a course's instructors (nbgrader's ``formgrade-<course>``).
INSTRUCTOR_GROUP = "formgrade-{course}"

Role = Literal["student", "instructor"]


class Refused(Exception):
    """A request refused: ``status`` is the HTTP status, ``message`` says why in words."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"{status}: {message}")


@dataclass(frozen=True)
class Caller:
    """The hub user a request's token belongs to, as the hub named them, with their hub groups."""

    name: str
    groups: frozenset[str]


def course_of(course: str) -> str:
    """``course`` when it is an acceptable course id, else :class:`Refused` (400) naming the rule."""
    try:
        return checked("course id", course)
    except BadName as err:
        raise Refused(400, str(err)) from None


def courses_of(caller: Caller) -> dict[str, Role]:
    """The courses ``caller``'s groups name, with their role in each (instructor where both)."""
    found: dict[str, Role] = {}
    for group in sorted(caller.groups):
        for role, pattern in (("student", STUDENT_GROUP), ("instructor", INSTRUCTOR_GROUP)):
            prefix = pattern.split("{", 1)[0]
            course = group[len(prefix):]
            if group.startswith(prefix) and course:
                try:
                    checked("course id", course)
                except BadName:
                    continue
                if role == "instructor" or course not in found:
                    found[course] = role  # type: ignore[assignment]
    return found


def _in(caller: Caller, pattern: str, course: str) -> bool:
    return pattern.format(course=course_of(course)) in caller.groups


def member_of(caller: Caller, course: str) -> Role:
    """``caller``'s role in ``course`` (instructor where they are both), or :class:`Refused` (403)."""
    if _in(caller, INSTRUCTOR_GROUP, course):
        return "instructor"
    if _in(caller, STUDENT_GROUP, course):
        return "student"
    groups = f"{STUDENT_GROUP.format(course=course)!r} and {INSTRUCTOR_GROUP.format(course=course)!r}"
    raise Refused(403, f"{caller.name} is neither a student nor an instructor of the course {course!r} (the hub "
                       f"groups {groups})")


def instructor_of(caller: Caller, course: str) -> None:
    """Nothing when ``caller`` is an instructor of ``course``, else :class:`Refused` (403)."""
    if not _in(caller, INSTRUCTOR_GROUP, course):
        raise Refused(403, f"{caller.name} is not an instructor of the course {course!r} (the hub group "
                           f"{INSTRUCTOR_GROUP.format(course=course)!r})")


def student_of(caller: Caller, course: str) -> None:
    """Nothing when ``caller`` is a student of ``course``, else :class:`Refused` (403)."""
    if not _in(caller, STUDENT_GROUP, course):
        raise Refused(403, f"{caller.name} is not a student of the course {course!r} (the hub group "
                           f"{STUDENT_GROUP.format(course=course)!r})")
