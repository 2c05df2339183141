"""The one ownership rule of the folder exchange: a submission folder is a student's when that student's unix
user owns it.

nbgrader's file exchange lets every user write into ``<exchange>/<course>/inbound`` (mode 2733),
and a submission's folder name claims its student (``<student>+<assignment>+<timestamp>+<random>``).
Any student can therefore drop a folder named for a classmate; the folder's owner, set by the
kernel, is what tells them apart. ``collect`` (:mod:`.collect`) and the grade-on-submit service
both apply :func:`refusal`. On a system without ``pwd`` (Windows, where nbgrader's exchange does
not run) nobody is refused.
"""

from __future__ import annotations

import os

__all__ = ["SEVERAL_MACHINES", "owner_of", "refusal", "uid_of"]

#: Where the course's instructions say what works on a hub of several machines.
SEVERAL_MACHINES = 'docs/course.md, "Several machines"'


def owner_of(path: str) -> str | None:
    """The unix user name owning ``path``, or ``None`` when it has none (or ``pwd`` is unavailable)."""
    try:
        import pwd

        return pwd.getpwuid(os.lstat(path).st_uid).pw_name
    except (ImportError, KeyError, OSError):
        return None


def uid_of(name: str) -> int | None:
    """The uid of the unix user ``name``, or ``None`` when there is no such user (or ``pwd`` is unavailable)."""
    try:
        import pwd

        return pwd.getpwnam(name).pw_uid
    except (ImportError, KeyError, OSError):
        return None


def refusal(inbound_path: str, filename: str, student: str) -> str | None:
    """Why the submission folder ``filename`` in ``inbound_path`` is not ``student``'s, or ``None`` when it is.

    A folder counts as a student's submission only when that student's unix user owns it
    (``lstat``: a symbolic link is judged as itself). A student without an account here cannot
    be proved by any owner (:data:`SEVERAL_MACHINES`).
    """
    owner = owner_of(os.path.join(inbound_path, filename))
    if owner == student:
        return None
    if uid_of(student) is None:
        return (f"Refusing {filename}: it claims to be {student}'s submission but {student} has no unix account on "
                f"this machine, so no owner can prove it ({SEVERAL_MACHINES})")
    return f"Refusing {filename}: it claims to be {student}'s submission but is owned by {owner or 'an unknown user'}"
