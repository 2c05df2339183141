"""The course's feedback step split by student into lanes (``batch/feedback.py``).

The patterns: every student is matched by exactly one lane, and every lane by a student, for
any ids (hypothesis). The step: real nbgrader on the toy course, three students autograded,
then ``generate_feedback`` in two lanes forked from a real fork server, against nbgrader's one
``generate_feedback --force`` run on a copy of the same course.
"""

from __future__ import annotations

import fnmatch
import shutil
import string
from pathlib import Path

import pytest
from ch11_autograder.batch.feedback import generate_feedback, graded_students, lane_patterns
from ch11_autograder.batch.nbgrader_fork import NbgraderForkServer
from hypothesis import given
from hypothesis import strategies as st
from support.paths import COURSE_CONFIG
from support.toy_course import TOY, make_course, nbgrader, submit

#: Student ids: mostly letters and digits (the splittable case), sometimes characters that mean
#: something in a glob's brackets, around a common prefix drawn separately.
IDS = st.text(alphabet=string.ascii_letters + string.digits + "_-.[]!^", max_size=6)


@given(prefix=st.text(alphabet=string.ascii_lowercase + "0", max_size=3),
       tails=st.sets(IDS, max_size=12), lanes=st.integers(0, 6))
def test_each_student_is_in_exactly_one_lane_and_no_lane_is_empty(prefix, tails, lanes):
    students = sorted(prefix + tail for tail in tails)
    patterns = lane_patterns(students, lanes)
    assert 1 <= len(patterns) <= max(1, lanes)
    for student in students:
        assert [p for p in patterns if fnmatch.fnmatchcase(student, p)] != [], (student, patterns)
        assert len([p for p in patterns if fnmatch.fnmatchcase(student, p)]) == 1, (student, patterns)
    if len(patterns) > 1:
        assert all(any(fnmatch.fnmatchcase(s, p) for s in students) for p in patterns), patterns


def test_lanes_split_the_class_about_evenly():
    assert lane_patterns(["ada", "blank", "hal", "lin"], 2) == ["[ab]*", "[!ab]*"]
    assert lane_patterns(["ada", "blank", "hal", "lin"], 1) == ["*"]
    ids = [f"s{n:03d}" for n in range(200)]  # a shared prefix: split on the character after it
    assert lane_patterns(ids, 2) == ["s[0]*", "s[!0]*"]
    assert lane_patterns(["s1", "s10", "s11"], 2) == ["*"]  # "s1" is the prefix itself: no split


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """The toy course with three students autograded (real nbgrader, no sandbox)."""
    config = (
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(COURSE_CONFIG)!r})  # noqa: F821\n"
        f"c.TrustedVerdicts.suite_modules = [{str(TOY / 'toy_suite.py')!r}]\n"
    )
    course = make_course(tmp_path_factory.mktemp("feedback") / "course", config)
    for student, code in (("amy", "def double(x):\n    return 2 * x"), ("bob", None),
                          ("cal", "def double(x):\n    return x + 2")):
        submit(course, student, code, [])
    nbgrader(course, "autograde", "toy")
    return course


@pytest.mark.slow
def test_two_lanes_write_the_pages_nbgraders_one_run_writes(graded, tmp_path):
    single, split = tmp_path / "single", tmp_path / "split"
    shutil.copytree(graded, single)
    shutil.copytree(graded, split)
    nbgrader(single, "generate_feedback", "toy", "--force")
    stale = split / "feedback" / "bob" / "toy" / "gone.html"  # what --force removes with the folder
    stale.parent.mkdir(parents=True)
    stale.write_text("a page of a notebook no longer graded")
    assert graded_students(split, "toy") == ["amy", "bob", "cal"]
    server = NbgraderForkServer(split / "nbgrader_config.py")
    try:
        assert generate_feedback(split, split / "feedback.log", "toy", forks=server, lanes=2) == []
    finally:
        server.close()
    log = (split / "feedback.log").read_text()
    assert [line for line in log.splitlines() if line.startswith("[ch11]")] == [
        "[ch11] generate_feedback --student [ab]*", "[ch11] generate_feedback --student [!ab]*"]
    assert not stale.exists()
    pages = _files(split / "feedback")
    assert sorted(pages) == ["amy/toy/toy.html", "bob/toy/toy.html", "cal/toy/toy.html"]
    assert pages == _files(single / "feedback")
    assert not list(split.glob("feedback.*.log"))  # the lanes' own logs are joined, then removed


@pytest.mark.slow
def test_a_failed_lane_is_named_and_the_other_lane_still_writes(graded, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(graded, course)
    (course / "autograded" / "cal" / "toy" / "toy.ipynb").write_text("{ not a notebook")
    server = NbgraderForkServer(course / "nbgrader_config.py")
    try:
        problems = generate_feedback(course, course / "feedback.log", "toy", forks=server, lanes=2)
    finally:
        server.close()
    assert len(problems) == 1, problems
    assert problems[0].startswith("nbgrader generate_feedback --student [!ab]* failed (exit ")
    assert problems[0].endswith(f"(log: {course / 'feedback.log'})")
    assert (course / "feedback" / "amy" / "toy" / "toy.html").is_file()


@pytest.mark.slow
def test_without_a_fork_server_or_with_a_student_the_step_is_one_command(graded, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(graded, course)
    assert generate_feedback(course, course / "all.log", "toy", lanes=2) == []
    assert "[ch11]" not in (course / "all.log").read_text()
    assert sorted(_files(course / "feedback")) == ["amy/toy/toy.html", "bob/toy/toy.html", "cal/toy/toy.html"]
    shutil.rmtree(course / "feedback")
    server = NbgraderForkServer(course / "nbgrader_config.py")
    try:
        assert generate_feedback(course, course / "one.log", "toy", student="bob", forks=server, lanes=2) == []
    finally:
        server.close()
    assert sorted(_files(course / "feedback")) == ["bob/toy/toy.html"]
