"""``nbgrader collect`` that takes a student's submission only from that student's own unix user.

nbgrader's file exchange lets every user write into ``<exchange>/<course>/inbound``
(mode 0733), and a submission's folder name claims its student
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
"""

from __future__ import annotations

import glob
import os
from typing import Any

from nbgrader.exchange.default.collect import ExchangeCollect

__all__ = ["OwnerCheckedCollect", "owner_of", "refusal"]


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
    return f"Refusing {filename}: it claims to be {student}'s submission but is owned by {owner or 'an unknown user'}"


class OwnerCheckedCollect(ExchangeCollect):
    """nbgrader's collect, with submission folders not owned by the student they name refused (see the module)."""

    #: nbgrader's records: {"username", "filename", "timestamp"}, one per student to collect.
    src_records: list[dict[str, Any]]

    def init_src(self) -> None:
        super().init_src()
        if not self.check_owner:
            return
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
