"""``nbgrader collect`` that takes a student's submission only from that student's own unix user.

nbgrader's ``collect`` picks the newest folder per claimed name in ``<exchange>/<course>/inbound``
and, with ``check_owner``, only logs a warning that the owner differs, then collects a folder a
classmate forged in place of the student's work. :class:`OwnerCheckedCollect` (the course config
sets ``c.ExchangeFactory.collect`` to it) refuses those folders (:func:`.owners.refusal`): for
each student it collects the newest folder (or the newest before the due date, with
``--before-duedate``) among those the student's own unix user owns, and logs every refused
folder as an error naming the claimed student and the real owner. Submissions are never dropped
silently: a student whose only folders are forged is reported and not collected.

Before any of that it collects nothing and fails, with one line naming the cause and its fix,
when the exchange itself can be taken over (:func:`.safety.exchange_problems`: a root writable by
others without the sticky bit, a course folder not the instructor's) or when folder owners cannot
tell students apart (:func:`.identity.identity_problem`). A folder naming a student who has no
account on this machine is refused on its own, with that reason.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from nbgrader.exchange.default.collect import ExchangeCollect

from .identity import identity_problem
from .owners import refusal
from .safety import ExchangeSafety, exchange_problems, instructor_uid

__all__ = ["OwnerCheckedCollect"]


class OwnerCheckedCollect(ExchangeCollect):
    """nbgrader's collect, with an unsafe exchange refused and submission folders not owned by the student they
    name refused (see the module)."""

    #: nbgrader's records: {"username", "filename", "timestamp"}, one per student to collect.
    src_records: list[dict[str, Any]]

    def init_src(self) -> None:
        try:
            owner = instructor_uid(ExchangeSafety(parent=self).instructor)
        except ValueError as exc:
            self.fail(f"Not collecting anything: {exc}")
        unsafe = exchange_problems(self.root, self.coursedir.course_id, owner)
        if unsafe:
            self.fail(f"Not collecting anything: {unsafe[0]}" + "".join(f"; and {more}" for more in unsafe[1:]))
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
