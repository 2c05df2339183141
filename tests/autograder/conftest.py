"""Fixtures shared by the tests of the autograder's modules."""

from collections.abc import Iterator

import pytest
from ch11_autograder.trusted.steps.process import grading_process
from support.toy_notebook import toy_suite  # noqa: F401  (a fixture: the toy suite registered for one test)


@pytest.fixture
def grading_process_ends() -> Iterator[None]:
    """The test stands for one ``nbgrader autograde`` process: the zygotes its steps start in this process
    (``GradingProcess``: kept across a submission's notebooks, ended at a grading process's exit) end with it."""
    yield
    grading_process().close()
