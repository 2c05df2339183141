"""When folder owners cannot tell students apart, and the exchange must stop trusting folder names.

The owner check (:mod:`.owners`) proves a name only where each student's unix user has a uid of
its own, on this machine and on the filesystem of the exchange. On a hub that runs every user as
one uid (Zero to JupyterHub's ``singleuser.uid``), with accounts that share a uid, or on a
filesystem that squashes owners (NFS ``all_squash``, ``root_squash`` for a grader running as
root), a folder's owner says nothing about who wrote it. :func:`identity_problem` detects the two
cases a student cannot stage: a file this process makes in ``inbound`` not owned by this
process's uid (owners are squashed), and different students named by folders in ``inbound``
whose accounts share one uid. Then collect collects nothing and fails, and the grade-on-submit
service refuses to start (and grades nothing while the problem lasts), each naming the cause.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable

from .owners import SEVERAL_MACHINES, uid_of

__all__ = ["identity_problem"]


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
        uid = uid_of(name)
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
