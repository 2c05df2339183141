"""Self-contained grading jobs (batch/jobs.py): the release digest and the worker's checks before grading.

The checks run the real :func:`grade_job` in this process; it returns before any
nbgrader starts, so these tests take milliseconds. Grading a job for real is the
Dask tier's (test_cluster.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ch11_autograder.batch import jobs
from ch11_autograder.batch.intake_checks import inputs_sha256
from ch11_autograder.batch.jobs import (
    WORKER_FORK_ENV,
    GradingJob,
    check_worker,
    grade_job,
    release_digest,
    worker_course,
)
from support import batch_support
from support.paths import ASSIGNMENT, DEMO_CLASS_DIR


@pytest.fixture
def course(tmp_path_factory, tmp_path) -> Path:
    """A course made from this checkout's config and source notebooks: the worker's own release."""
    return batch_support.new_course(tmp_path_factory.getbasetemp(), tmp_path / "course")


def _job(release: str, files: dict[str, bytes] | None = None, sha256: str | None = None) -> GradingJob:
    files = files if files is not None else {
        "ex1_fanout.ipynb": (DEMO_CLASS_DIR / "lin" / ASSIGNMENT / "ex1_fanout.ipynb").read_bytes()}
    return GradingJob("lin", sha256 if sha256 is not None else inputs_sha256(files, None), files, None, release,
                      ASSIGNMENT, "bwrap", 60.0, b"")


def test_a_course_made_from_the_checkout_has_the_worker_s_release(course):
    assert release_digest(course, ASSIGNMENT) == release_digest(worker_course(), ASSIGNMENT)


def test_the_digest_changes_with_any_source_notebook_and_the_config(course):
    before = release_digest(course, ASSIGNMENT)
    notebook = course / "source" / ASSIGNMENT / "ex3_block_length.ipynb"
    notebook.write_bytes(notebook.read_bytes().replace(b"block", b"blocK", 1))
    edited_source = release_digest(course, ASSIGNMENT)
    assert edited_source != before
    with (course / "nbgrader_config.py").open("a") as config:
        config.write("\n# a changed course\n")
    assert release_digest(course, ASSIGNMENT) not in (before, edited_source)


def test_the_digest_needs_the_assignment_s_source(course):
    shutil.rmtree(course / "source" / ASSIGNMENT)
    with pytest.raises(FileNotFoundError, match="source/ch11"):
        release_digest(course, ASSIGNMENT)


def test_a_worker_with_another_release_fails_the_job_naming_both_digests(course):
    notebook = course / "source" / ASSIGNMENT / "ex1_fanout.ipynb"
    notebook.write_bytes(notebook.read_bytes() + b"\n")
    coordinator = release_digest(course, ASSIGNMENT)
    result = grade_job(_job(coordinator))
    assert result.result is None and result.autograded == {} and result.log == ""
    assert "release and suites differ from the coordinator's" in result.error
    assert coordinator[:12] in result.error
    assert release_digest(worker_course(), ASSIGNMENT)[:12] in result.error
    assert result.error.startswith("Dask worker ") and result.error.endswith("not graded")
    assert check_worker("bwrap", coordinator, ASSIGNMENT) is not None


def test_a_worker_with_the_same_release_and_a_sandbox_is_ready(course):
    assert check_worker("bwrap", release_digest(course, ASSIGNMENT), ASSIGNMENT) is None


def test_a_worker_refuses_an_unknown_sandbox_as_local_grading_does(course):
    problem = check_worker("chroot", release_digest(course, ASSIGNMENT), ASSIGNMENT)
    assert problem is not None and problem.startswith("refuses to grade") and "chroot" in problem


def test_bytes_that_do_not_match_the_job_s_digest_are_not_graded(course):
    result = grade_job(_job(release_digest(course, ASSIGNMENT), sha256="0" * 64))
    assert result.result is None and "do not match its digest 000000000000" in result.error


def test_a_job_naming_a_path_instead_of_a_notebook_is_not_graded(course):
    files = {"../ex1_fanout.ipynb": b"{}"}
    result = grade_job(_job(release_digest(course, ASSIGNMENT), files=files))
    assert result.result is None and "not notebooks" in result.error and "../ex1_fanout.ipynb" in result.error


def test_a_worker_forks_nbgrader_unless_told_not_to(course, monkeypatch):
    monkeypatch.setattr(jobs, "_servers", {})
    monkeypatch.setenv(WORKER_FORK_ENV, "0")
    assert jobs._fork_servers(course).for_slot(0) is None  # starts nothing
    monkeypatch.setattr(jobs, "_servers", {})
    monkeypatch.delenv(WORKER_FORK_ENV)
    servers = jobs._fork_servers(course)
    assert servers.enabled and servers.config == course / "nbgrader_config.py"
    assert jobs._fork_servers(course) is servers  # one set of servers per course for the worker's life
