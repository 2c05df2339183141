"""Fixtures shared by the tests of the autograder's modules."""

from support.toy_notebook import toy_suite  # noqa: F401  (a fixture: the toy suite registered for one test)
