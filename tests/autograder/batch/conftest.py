"""Fixtures of the batch tests: small hand-made sources, and the once-per-session graded courses."""

from __future__ import annotations

import json

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
