"""The exchange as the grading side sees it: the one module ``serve/`` and ``doctor/`` import of it.

The folder exchange's rules (:mod:`ch11_autograder.exchange`): whose a submission folder is
(:func:`refusal`), when owners cannot tell students apart (:func:`identity_problem`), when the
exchange's root or course folder can be taken over (:func:`exchange_problems`, with the instructor
from :class:`ExchangeSafety`). Importing this imports no nbgrader; ``OwnerCheckedCollect`` is
nbgrader's to load (``c.ExchangeFactory.collect`` in ``nbgrader_config.py``).
"""

from __future__ import annotations

from .folder.identity import identity_problem
from .folder.owners import SEVERAL_MACHINES, owner_of, refusal
from .folder.safety import UNSAFE_EXCHANGE, ExchangeSafety, exchange_problems, instructor_uid

__all__ = [
    "SEVERAL_MACHINES",
    "UNSAFE_EXCHANGE",
    "ExchangeSafety",
    "exchange_problems",
    "identity_problem",
    "instructor_uid",
    "owner_of",
    "refusal",
]
