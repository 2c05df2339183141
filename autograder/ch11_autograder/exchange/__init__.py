"""The exchange: how submissions reach the grader and feedback reaches the students, and who sent what.

nbgrader's exchange is pluggable (``c.ExchangeFactory.<action>``, ``nbgrader/exchange/abc/``).
Each exchange this package ships is a subpackage here; the grading side reaches all of them
through :mod:`.api` alone (a contract in pyproject.toml), and nothing here imports grading code::

    api              the one way in for the grading side (``serve/``, ``doctor/``): the rules
                     below, re-exported
    folder/          nbgrader's file exchange, where a unix owner is an identity
      owners         a submission folder is a student's when that student's unix user owns it
                     (``refusal``, ``owner_of``)
      identity       when folder owners cannot tell students apart (shared uids, squashed
                     owners): ``identity_problem``
      safety         an exchange whose root or course folder another user can replace
                     (a root writable by others without the sticky bit, a course folder not
                     the instructor's): ``exchange_problems``, ``ExchangeSafety``
      collect        ``OwnerCheckedCollect``, the course's ``c.ExchangeFactory.collect``
                     (imports nbgrader; loaded by ``nbgrader_config.py``, not by :mod:`.api`)

A hub exchange (identity from the hub's login rather than from unix owners) sits beside
``folder/`` as ``hub/``, with its collect named the same way.
"""
