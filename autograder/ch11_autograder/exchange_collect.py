"""``nbgrader collect`` that takes a student's submission only from that student's own unix user.

nbgrader's file exchange lets every user write into ``<exchange>/<course>/inbound``
(mode 2733), and a submission's folder name claims its student
(``<student>+<assignment>+<timestamp>+<random>``). Any student can therefore drop a
folder named for a classmate with a later timestamp; nbgrader's ``collect`` picks the
newest folder per claimed name and, with ``check_owner``, only logs a warning that the
owner differs, then collects the forgery in place of the classmate's work.

:class:`OwnerCheckedCollect` (the course config sets ``c.ExchangeFactory.collect`` to it)
refuses those folders: for each student it collects the newest folder (or the newest
before the due date, with ``--before-duedate``) among those the student's own unix user
owns, and logs every refused folder as an error naming the claimed student and the real
owner. Submissions are never dropped silently: a student whose only folders are forged
is reported and not collected. On a system without ``pwd`` (Windows, where nbgrader's
exchange does not run) nothing changes.

The owner check proves a name only where each student's unix user has a uid of its own, on
this machine and on the filesystem of the exchange. On a hub that runs every user as one uid
(Zero to JupyterHub's ``singleuser.uid``), with accounts that share a uid, or on a filesystem
that squashes owners (NFS ``all_squash``, ``root_squash`` for a grader running as root), a
folder's owner says nothing about who wrote it. :func:`identity_problem` detects the two
cases a student cannot stage: a file this process makes in ``inbound`` not owned by this
process's uid (owners are squashed), and different students named by folders in ``inbound``
whose accounts share one uid. Then collect collects nothing and fails, and the grade-on-submit
service refuses to start (and grades nothing while the problem lasts), each naming the cause.
A folder naming a student who has no account on this machine is refused on its own, with
that reason (its owner cannot be the student's).
"""

from __future__ import annotations

import glob
import os
import secrets
from collections.abc import Iterable
from typing import Any

from nbgrader.exchange.default.collect import ExchangeCollect

__all__ = ["SEVERAL_MACHINES", "OwnerCheckedCollect", "identity_problem", "owner_of", "refusal"]

#: Where the course's instructions say what works on a hub of several machines.
SEVERAL_MACHINES = 'docs/course.md, "Several machines"'


def owner_of(path: str) -> str | None:
    """The unix user name owning ``path``, or ``None`` when it has none (or ``pwd`` is unavailable)."""
    try:
        import pwd

        return pwd.getpwuid(os.lstat(path).st_uid).pw_name
    except (ImportError, KeyError, OSError):
        return None


def refusal(inbound_path: str, filename: str, student: str) -> str | None:
    """Why the submission folder ``filename`` in ``inbound_path`` is not ``student``'s, or ``None`` when it is.

    The one ownership rule of the exchange: a folder counts as a student's submission only
    when that student's unix user owns it (``lstat``: a symbolic link is judged as itself).
    :class:`OwnerCheckedCollect` and the grade-on-submit service both apply it.
    """
    owner = owner_of(os.path.join(inbound_path, filename))
    if owner == student:
        return None
    if _uid_of(student) is None:
        return (f"Refusing {filename}: it claims to be {student}'s submission but {student} has no unix account on "
                f"this machine, so no owner can prove it ({SEVERAL_MACHINES})")
    return f"Refusing {filename}: it claims to be {student}'s submission but is owned by {owner or 'an unknown user'}"


def _uid_of(name: str) -> int | None:
    try:
        import pwd

        return pwd.getpwnam(name).pw_uid
    except (ImportError, KeyError, OSError):
        return None


def identity_problem(inbound_path: str, names: Iterable[str] | None = None, *, probe: bool = True) -> str | None:
    """Why folder owners in ``inbound_path`` cannot tell students apart (see the module), or ``None``.

    ``names``: the students the folders name (default: read from ``inbound_path``'s folder names). The
    squash probe (a file made and removed in ``inbound_path``) runs when ``probe`` is set and this process can
    write there.
    """
    try:
        import pwd  # noqa: F401 - without it, owners are not checked at all (see the module)
    except ImportError:
        return None
    made_by = _owner_of_a_new_file(inbound_path) if probe else None
    if made_by is not None and made_by != os.geteuid():
        return (f"the filesystem of {inbound_path} does not keep file owners (a file made there by uid "
                f"{os.geteuid()} is owned by uid {made_by}): a folder's owner cannot tell students apart, so "
                f"no submission is taken ({SEVERAL_MACHINES})")
    if names is None:
        try:
            names = [entry.split("+", 1)[0] for entry in os.listdir(inbound_path) if entry.count("+") == 3]
        except OSError:
            return None
    by_uid: dict[int, set[str]] = {}
    for name in set(names):
        uid = _uid_of(name)
        if uid is not None:
            by_uid.setdefault(uid, set()).add(name)
    for uid, sharing in sorted(by_uid.items()):
        if len(sharing) > 1:
            shown = ", ".join(sorted(sharing)[:5]) + (", ..." if len(sharing) > 5 else "")
            return (f"the students {shown} have one unix uid ({uid}) here: a folder's owner cannot tell them apart, "
                    f"so no submission is taken ({SEVERAL_MACHINES})")
    return None


def _owner_of_a_new_file(folder: str) -> int | None:
    """The uid owning a file this process makes in ``folder`` (removed at once), or ``None`` when it cannot."""
    probe = os.path.join(folder, f".ch11-owner-probe-{secrets.token_hex(8)}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        return os.fstat(fd).st_uid
    finally:
        os.close(fd)
        os.unlink(probe)


class OwnerCheckedCollect(ExchangeCollect):
    """nbgrader's collect, with submission folders not owned by the student they name refused (see the module)."""

    #: nbgrader's records: {"username", "filename", "timestamp"}, one per student to collect.
    src_records: list[dict[str, Any]]

    def init_src(self) -> None:
        super().init_src()
        if not self.check_owner:
            return
        problem = identity_problem(self.inbound_path, [record["username"] for record in self.src_records])
        if problem is not None:
            self.src_records = []
            self.fail(f"Not collecting anything: {problem}")
        kept: list[dict[str, Any]] = []
        for chosen in self.src_records:
            student = chosen["username"]
            pattern = os.path.join(self.inbound_path, f"{glob.escape(student)}+{self.coursedir.assignment_id}+*")
            records = [self._path_to_record(path) for path in glob.glob(pattern)]
            own = []
            for record in records:
                refused = refusal(self.inbound_path, record["filename"], student)
                if refused is None:
                    own.append(record)
                else:
                    self.log.error("%s", refused)
            if not own:
                self.log.error("Not collecting %s: no submission folder in the exchange is owned by %s",
                               student, student)
                continue
            own = self._sort_by_timestamp(own)
            if self.duedate is not None and self.before_duedate:
                on_time = [r for r in own if r["timestamp"] <= self.duedate]
                own = on_time or own
            kept.append(own[0])
        self.src_records = kept
