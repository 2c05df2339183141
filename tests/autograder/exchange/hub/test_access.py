"""Who may do what in a course: the hub groups decide, and nothing else."""

from __future__ import annotations

import pytest
from ch11_autograder.exchange.hub.access import (
    Caller,
    Refused,
    courses_of,
    instructor_of,
    member_of,
    student_of,
)


def caller(*groups: str) -> Caller:
    return Caller("ada", frozenset(groups))


def test_roles_come_from_nbgraders_group_names() -> None:
    assert member_of(caller("nbgrader-ch11"), "ch11") == "student"
    assert member_of(caller("formgrade-ch11"), "ch11") == "instructor"
    assert member_of(caller("nbgrader-ch11", "formgrade-ch11"), "ch11") == "instructor"
    student_of(caller("nbgrader-ch11"), "ch11")
    instructor_of(caller("formgrade-ch11"), "ch11")


@pytest.mark.parametrize("groups", [(), ("nbgrader-ch12",), ("formgrade-ch111",), ("ch11",), ("nbgrader-ch1",)])
def test_a_caller_outside_the_courses_groups_is_refused(groups: tuple[str, ...]) -> None:
    with pytest.raises(Refused) as refused:
        member_of(caller(*groups), "ch11")
    assert refused.value.status == 403
    assert refused.value.message == ("ada is neither a student nor an instructor of the course 'ch11' (the hub groups "
                                     "'nbgrader-ch11' and 'formgrade-ch11')")


def test_a_student_is_no_instructor_and_an_instructor_no_student() -> None:
    with pytest.raises(Refused, match="ada is not an instructor of the course 'ch11'"):
        instructor_of(caller("nbgrader-ch11"), "ch11")
    with pytest.raises(Refused, match="ada is not a student of the course 'ch11'"):
        student_of(caller("formgrade-ch11"), "ch11")


@pytest.mark.parametrize("course", ["..", "a/b", "ch11/../ch12", ".hidden", ""])
def test_a_bad_course_id_is_refused_by_name(course: str) -> None:
    with pytest.raises(Refused) as refused:
        member_of(caller("formgrade-" + course), course)
    assert refused.value.status == 400 and refused.value.message.startswith(f"the course id {course!r} is refused")


def test_courses_of_lists_each_course_once_with_the_higher_role() -> None:
    assert courses_of(caller("nbgrader-ch11", "formgrade-ch11", "nbgrader-ch12", "formgrade-..", "other")) == {
        "ch11": "instructor", "ch12": "student"}
