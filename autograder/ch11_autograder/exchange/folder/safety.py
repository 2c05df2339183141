"""An exchange another user can take over: its root, or the course's folder in it, replaceable by a student.

nbgrader's file exchange is ``<root>/<course id>/{outbound,inbound,feedback}``. The root must let
every user's ``nbgrader`` reach it, and the instructor's first ``release_assignment`` makes the
course folder. Two states of it let a student put their own course folder in the instructor's
place, whose ``outbound`` every classmate then fetches and whose ``inbound`` and ``feedback`` the
student can read:

* the root writable by others without the sticky bit (``chmod 0777``): any user may rename
  ``<root>/<course id>`` (they own nothing in it, but renaming an entry needs write access to the
  folder holding it, nothing more) and make their own. With the sticky bit (``chmod 1777``) the
  kernel lets only an entry's owner, the root's owner and root rename or remove it (EPERM);
* a course folder not owned by the instructor (made by a student before the first release, or
  put there after a rename), or writable by others, or a symbolic link.

:func:`exchange_problems` names each, one line apiece, ending with the page section that fixes
it (:data:`UNSAFE_EXCHANGE`); ``collect`` (:mod:`.collect`) collects nothing and fails on any, and
the grade-on-submit service refuses to start and takes nothing while one lasts. The instructor is
the user running them, or the one ``c.ExchangeSafety.instructor`` names (:class:`ExchangeSafety`).
A root or course folder that does not exist yet is no problem here (before the first release).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from traitlets import Unicode
from traitlets.config import Configurable

from .owners import uid_of

__all__ = ["UNSAFE_EXCHANGE", "ExchangeSafety", "exchange_problems", "instructor_uid"]

#: Where the course's instructions say how the exchange must be made, and what it does not protect.
UNSAFE_EXCHANGE = 'docs/course.md, "What the exchange does not protect"'


class ExchangeSafety(Configurable):
    """Who must own the course's folder in the exchange (see the module)."""

    instructor = Unicode(
        "", help="The unix user who owns the course's folder in the exchange (the one who releases); empty: the "
                 "user running collect or ch11-grade serve.",
    ).tag(config=True)


def instructor_uid(name: str = "") -> int:
    """The uid of the instructor ``name`` (empty: this process's effective uid).

    Raises:
        ValueError: ``name`` has no unix account here.
    """
    if not name:
        return os.geteuid()
    uid = uid_of(name)
    if uid is None:
        raise ValueError(f"the instructor {name!r} (c.ExchangeSafety.instructor) has no unix account on this machine")
    return uid


def _who(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def exchange_problems(root: str | os.PathLike[str], course_id: str, instructor: int | None = None) -> list[str]:
    """Each way another user can replace the exchange's root or ``course_id``'s folder in it (see the module), as
    one line naming the fix; empty when there is none. ``instructor``: the uid that must own the course folder
    (default this process's)."""
    root = Path(root)
    uid = os.geteuid() if instructor is None else instructor
    problems: list[str] = []
    try:
        top = os.stat(root)
    except OSError:
        return problems
    course = root / course_id
    mode = stat.S_IMODE(top.st_mode)
    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
        problems.append(f"the exchange root {root} is writable by every user without the sticky bit (mode "
                        f"{mode:04o}): any student can rename {course} and put their own in its place; make it "
                        f"1777 (chmod 1777 {root}; {UNSAFE_EXCHANGE})")
    if top.st_uid not in (0, uid):
        problems.append(f"the exchange root {root} is owned by {_who(top.st_uid)}, neither root nor the instructor: "
                        f"its owner can rename {course} and change the root's mode; give it to root "
                        f"(chown root: {root}; {UNSAFE_EXCHANGE})")
    try:
        folder = os.lstat(course)
    except OSError:
        return problems
    if stat.S_ISLNK(folder.st_mode) or not stat.S_ISDIR(folder.st_mode):
        problems.append(f"the course folder {course} in the exchange is not a folder (a symbolic link or a file, made "
                        f"by {_who(folder.st_uid)}): move it away and release again as the instructor "
                        f"({UNSAFE_EXCHANGE})")
    elif folder.st_uid != uid:
        problems.append(f"the course folder {course} in the exchange is owned by {_who(folder.st_uid)}, not by the "
                        f"instructor {_who(uid)}: its outbound is what students fetch and its inbound holds their "
                        f"submissions; move it away and release again as the instructor ({UNSAFE_EXCHANGE})")
    elif stat.S_IMODE(folder.st_mode) & stat.S_IWOTH:
        problems.append(f"the course folder {course} in the exchange is writable by every user (mode "
                        f"{stat.S_IMODE(folder.st_mode):04o}): any student can rename its inbound, outbound or "
                        f"feedback and put their own in its place; make it 0755 (chmod 0755 {course}; "
                        f"{UNSAFE_EXCHANGE})")
    return problems
