"""nbgrader's file exchange, where a submission folder's unix owner is who submitted it.

See :mod:`ch11_autograder.exchange` for its modules; the grading side reaches them through
:mod:`ch11_autograder.exchange.api`.
"""
