"""Fixtures of the batch tests: small hand-made sources, and the once-per-session graded courses."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from support import batch_support

NOTEBOOKS = ("ex1_fanout.ipynb", "ex2_finite_difference.ipynb", "ex3_block_length.ipynb", "ex4_audit.ipynb",
             "ex5_replay.ipynb")


def tiny_notebook(marker: str = "") -> bytes:
    """A valid nbformat-4 notebook (one code cell), distinct per ``marker``."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": f"x = 1  # {marker}"}]}
    return json.dumps(nb).encode()


def zip_bytes(members: dict[str, bytes], *, modes: dict[str, int] | None = None) -> bytes:
    """A zip of ``members`` (name -> bytes), deflated; ``modes`` gives a member's Unix mode (default: a file)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (modes or {}).get(name, stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def zip_source(path: Path, members: dict[str, bytes], *, modes: dict[str, int] | None = None) -> Path:
    """``path``, written as :func:`zip_bytes` of ``members``: a zip source for intake."""
    path.write_bytes(zip_bytes(members, modes=modes))
    return path


def by_student(intake):
    """An intake's submissions by student id."""
    return {s.student: s for s in intake.submissions}


def file_tree(root: Path) -> set[str]:
    """Every path below ``root``, relative, POSIX."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture(scope="session")
def demo_graded(tmp_path_factory):
    """(course, report, events): the demo class graded by the batch with bwrap and 2 workers."""
    return batch_support.graded_demo_class(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def demo_inputs(tmp_path_factory):
    """The session's copy of the demo class, source notebooks and config (see ``batch_support.inputs``)."""
    return batch_support.inputs(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def make_demo_course(tmp_path_factory, demo_inputs):
    """The course ``make demo`` grades (plain ``nbgrader autograde`` of a class), for hal and lin."""
    import shutil
    from unittest import mock

    from ch11_autograder import demo
    from ch11_autograder.course_layout import CONFIG, assignment_source

    root = tmp_path_factory.mktemp("make-demo")
    for student in batch_support.MAKE_DEMO_STUDENTS:
        shutil.copytree(demo_inputs / "class" / student, root / "class" / student)
    course = root / "course"
    with mock.patch.object(demo, "SOURCE_DIR", assignment_source(demo_inputs, batch_support.ASSIGNMENT)), \
            mock.patch.object(demo, "COURSE_CONFIG", demo_inputs / CONFIG):
        demo.run(course=course, class_dir=root / "class")
    return course
