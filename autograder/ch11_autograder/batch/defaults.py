"""The defaults of a batch's settings that ``ch11-grade batch`` also shows in its help.

:class:`.plan.BatchOptions` takes its defaults from here, and so does the command line
(``cli.py``), which must not import :mod:`.plan`: it imports nbgrader (through
:mod:`.course`), and ``ch11-grade --help`` should not pay for that. This module imports nothing.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_WORKERS"]

#: Submissions graded at the same time.
DEFAULT_WORKERS = 2
#: Wall-time limit per submission, seconds.
DEFAULT_TIMEOUT = 1800.0
