"""The hub exchange service: nbgrader's exchange kept by one JupyterHub service, the caller named by the hub.

Run by the hub (``c.JupyterHub.services``; docs/course.md, "Exchange through the hub")::

    python -m ch11_autograder.exchange.hub.service --storage /var/lib/nbgrader-exchange

It listens where the hub's ``JUPYTERHUB_SERVICE_URL`` says (its port, and its host unless ``--ip`` names
another address), under ``JUPYTERHUB_SERVICE_PREFIX``, and asks the hub at ``JUPYTERHUB_API_URL`` with
its ``JUPYTERHUB_API_TOKEN`` (all four set by the hub for a service it runs; a missing one stops it
with a line naming it). Every request carries the caller's
hub token; :func:`.identity.caller_for` turns it into a name and groups, and :mod:`.access` decides.
The API (under the prefix), each answer JSON ``{"error": "..."}`` on a refusal:

``GET  api/courses``
    the caller's name, their courses and role in each, and the upload cap.
``GET  api/courses/<course>/view?parts=outbound,feedback,inbound[&assignment=][&student=][&key=]``
    a ``.tar.gz`` laid out as nbgrader's folder exchange is under its root: ``<course>/outbound/<a>/``
    (every member of the course), ``<course>/feedback/<hash>.html`` named as nbgrader 0.9.3+ names
    it from the submission's ``submission_secret.txt`` (a student gets their own submissions'
    only, an instructor the course's), ``<course>/inbound/<student>+<a>+<timestamp>+<key>/`` (instructors
    only). A student naming another ``student`` is refused. ``key`` keeps the one submission of that key
    (as the listing below names it).
``GET  api/courses/<course>/submissions?after=<cursor>[&limit=]``  (instructors)
    the submissions kept since ``cursor`` (empty: from the first), oldest first, at most ``limit`` (default
    and cap :data:`LIST_LIMIT`): ``{"submissions": [{"student", "assignment", "timestamp", "key"}],
    "cursor", "more"}``. Asked again with the ``cursor`` answered, it lists each submission kept since, so a
    grader polling it misses none: the cursor never passes a submission still being written (it stops at
    the earliest key of an upload in flight), and a key is taken when its upload has arrived, so one kept
    later has a key at or after the cursor (the service's clock must not step back). A submission may be
    listed twice (several kept in one microsecond, cut by ``limit``): the caller skips the keys it has.
    One folder listing per student.
``POST api/courses/<course>/released/<assignment>[?force=1]``  (instructors; body: the files, ``.tar.gz``)
    releases it; an assignment released already is refused (409) unless ``force``.
``POST api/courses/<course>/submissions/<assignment>``  (students; body: the files, ``.tar.gz``)
    keeps it as the caller's submission (the name is the token's: no request names a student),
    with ``timestamp.txt`` and ``submission_secret.txt`` written here; answers ``{"student",
    "timestamp", "secret"}`` for the submitter's cache.
``POST api/courses/<course>/feedback/<assignment>/<student>?timestamp=...``  (instructors; body: the
    ``<notebook>.html`` files, ``.tar.gz``; header ``X-Submission-Secret``)
    the feedback for the submission of that time, whose secret must be the one given.

Uploads are refused without a ``Content-Length`` (411) and over the cap (413, on ``Content-Length``, both before a
byte is read) and on any
rule of :mod:`.archive` (400); ids break no rule of :mod:`.names` (400). Everything is kept by
:class:`.storage.Storage`. The blocking work (unpacking, packing, renaming into place) runs in a
thread pool, so one large upload does not hold the others' requests. Every request is logged on
stderr, one line each (tornado's access log: status, method, path, time taken).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
import tempfile
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar, cast

from tornado.httpserver import HTTPServer
from tornado.log import enable_pretty_logging
from tornado.web import Application, RequestHandler, stream_request_body

from .access import Caller, Refused, course_of, courses_of, instructor_of, member_of, student_of
from .archive import BadArchive, Limits, unpack
from .identity import Hub, caller_for, token_of
from .names import BadName, checked
from .packing import packed
from .storage import KEY_PATTERN, Storage, StorageError, Submission, submission_key

__all__ = ["main", "make_app"]

T = TypeVar("T")
_CHUNK = 1 << 16
#: The most submissions one listing answers (the caller asks again with the cursor for the rest).
LIST_LIMIT = 200


def _feedback_name(secret: str, notebook_id: str) -> str:
    """The file name nbgrader 0.9.3+ gives a notebook's feedback in the exchange (``utils.notebook_hash``)."""
    from nbgrader.utils import notebook_hash  # the service's environment has nbgrader; nothing else here needs it

    return f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"


class _Base(RequestHandler):
    """Refusals as JSON; the caller from the hub."""

    store: Storage
    hub: Hub
    limits: Limits
    caller: Caller
    writing: list[str]

    def initialize(self, store: Storage, hub: Hub, limits: Limits, writing: list[str]) -> None:
        self.store, self.hub, self.limits, self.writing = store, hub, limits, writing

    async def prepare(self) -> None:
        try:
            self.caller = await caller_for(self.hub, token_of(self.request.headers.get("Authorization")))
        except Refused as refused:
            self._refuse(refused)

    def _refuse(self, refused: Refused) -> None:
        self.set_status(refused.status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": refused.message}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": self._reason}))

    async def blocking(self, work: Callable[[], T]) -> T:
        """``work()`` in the thread pool, with the module's failures made refusals."""
        try:
            return await asyncio.get_running_loop().run_in_executor(None, work)
        except BadName as err:
            raise Refused(400, str(err)) from None
        except BadArchive as err:
            raise Refused(400, f"the upload is refused: {err}") from None

    def arg(self, name: str) -> str:
        return self.get_query_argument(name, "") or ""


class _Courses(_Base):
    async def get(self) -> None:
        self.finish({"user": self.caller.name, "courses": courses_of(self.caller),
                     "upload_cap_bytes": self.limits.total_bytes})


class _View(_Base):
    async def get(self, course: str) -> None:
        try:
            course = course_of(course)
            role = member_of(self.caller, course)
            parts = [p for p in self.arg("parts").split(",") if p] or ["outbound"]
            unknown = sorted(set(parts) - {"outbound", "feedback", "inbound"})
            if unknown:
                raise Refused(400, f"unknown parts {unknown}: ask for outbound, feedback or inbound")
            assignment = self.arg("assignment")
            if assignment:
                assignment = checked("assignment id", assignment)
            student = self.arg("student")
            if student:
                student = checked("student name", student)
            key = self.arg("key")
            if key and not KEY_PATTERN.fullmatch(key):
                raise Refused(400, f"the submission key {key!r} is not of the form YYYYmmddTHHMMSS.ffffffZ")
            if role == "student":
                if "inbound" in parts:
                    raise Refused(403, f"{self.caller.name} is a student of {course!r}: only its instructors see "
                                       f"its submissions")
                if student and student != self.caller.name:
                    raise Refused(403, f"{self.caller.name} may see only their own work, not {student!r}'s")
                student = self.caller.name
            body = await self.blocking(lambda: self._pack(course, parts, assignment, student, key))
        except (Refused, BadName) as err:
            self._refuse(err if isinstance(err, Refused) else Refused(400, str(err)))
            return
        self.set_header("Content-Type", "application/gzip")
        with body:
            while chunk := body.read(_CHUNK):
                self.write(chunk)
                await self.flush()
        self.finish()

    def _submissions(self, course: str, assignment: str, student: str, key: str = "") -> list[Submission]:
        found = []
        for who in [student] if student else self.store.students(course):
            for what in [assignment] if assignment else self.store.assignments_of(course, who):
                found += [s for s in self.store.submissions(course, who, what) if not key or s.key == key]
        return found

    def _pack(self, course: str, parts: list[str], assignment: str, student: str, key: str = "") -> IO[bytes]:
        entries: list[tuple[str, Path | None]] = [(course, None)]
        if "outbound" in parts:
            entries.append((f"{course}/outbound", None))
            entries += [(f"{course}/outbound/{r.assignment}", r.path) for r in self.store.released(course)
                        if not assignment or r.assignment == assignment]
        submissions = (self._submissions(course, assignment, student, key) if {"feedback", "inbound"} & set(parts)
                       else [])
        if "inbound" in parts:
            entries.append((f"{course}/inbound", None))
            # nbgrader's own folder name, the storage key where its random string goes (unique per submission).
            entries += [(f"{course}/inbound/{s.student}+{s.assignment}+{s.timestamp}+{s.key}", s.path)
                        for s in submissions]
        if "feedback" in parts:
            entries.append((f"{course}/feedback", None))
            for sub in submissions:
                feedback = self.store.feedback(sub)
                if feedback is None:
                    continue
                secret = (sub.path / "submission_secret.txt").read_text("utf-8")
                for html in sorted(feedback.path.glob("*.html")):
                    entries.append((f"{course}/feedback/{_feedback_name(secret, html.stem)}", html))
        return packed(entries)


class _Listing(_Base):
    """The submissions kept since a cursor (see the module): what a grader polls."""

    async def get(self, course: str) -> None:
        try:
            course = course_of(course)
            instructor_of(self.caller, course)
            after = self.arg("after")
            if after and not KEY_PATTERN.fullmatch(after):
                raise Refused(400, f"the cursor {after!r} is not a submission key (YYYYmmddTHHMMSS.ffffffZ)")
            limit = self.arg("limit") or str(LIST_LIMIT)
            if not limit.isdigit() or not 0 < int(limit) <= LIST_LIMIT:
                raise Refused(400, f"the limit {limit!r} is not a number from 1 to {LIST_LIMIT}")
            # Taken before the folders are listed: whatever is kept from now on has a key at or after it.
            bound = min([submission_key(dt.datetime.now(dt.UTC)), *self.writing])
            found = await self.blocking(lambda: self._since(course, after, bound))
        except Refused as refused:
            self._refuse(refused)
            return
        shown, more = found[:int(limit)], len(found) > int(limit)
        self.finish({"submissions": [{"student": s.student, "assignment": s.assignment, "timestamp": s.timestamp,
                                      "key": s.key} for s in shown],
                     "cursor": found[int(limit)].key if more else bound, "more": more})

    def _since(self, course: str, after: str, bound: str) -> list[Submission]:
        """The submissions of ``course`` with ``after <= key < bound``, by key."""
        found = []
        for student in self.store.students(course):
            for assignment in self.store.assignments_of(course, student):
                found += [s for s in self.store.submissions(course, student, assignment, since=after)
                          if s.key < bound]
        return sorted(found, key=lambda s: (s.key, s.student, s.assignment))


@stream_request_body
class _Upload(_Base):
    """A ``.tar.gz`` body spooled to a temporary file, refused over the cap before it is read."""

    body: IO[bytes]
    received: int

    async def prepare(self) -> None:
        await super().prepare()
        if self._finished:
            return
        length = self.request.headers.get("Content-Length")
        cap = self.limits.total_bytes
        if length is None:
            # A chunked body over the cap would only be cut off (tornado closes the connection, the client sees a
            # reset): with its length said first, the refusal is a 413 in words before a byte is read.
            self._refuse(Refused(411, f"the upload does not say its length (Content-Length): send it with its length; "
                                      f"the exchange's cap is {cap} bytes"))
            return
        if not length.isdigit() or int(length) > cap:
            self._refuse(Refused(413, f"the upload of {length} bytes is over the exchange's cap of {cap} bytes"))
            return
        self.request.connection.set_max_body_size(cap)  # type: ignore[union-attr]
        self.body = tempfile.SpooledTemporaryFile(max_size=1 << 20, dir=str(self.store.root / "tmp"))
        self.received = 0

    def data_received(self, chunk: bytes) -> None:
        if self._finished:
            return
        self.received += len(chunk)
        if self.received <= self.limits.total_bytes:
            self.body.write(chunk)

    async def post(self, *args: str) -> None:
        try:
            if self.received > self.limits.total_bytes:
                raise Refused(413, f"the upload is over the exchange's cap of {self.limits.total_bytes} bytes")
            self.body.seek(0)
            answer = await self.handle([urllib.parse.unquote(a) for a in args])
        except Refused as refused:
            self._refuse(refused)
            return
        except StorageError as err:
            self._refuse(Refused(409, str(err)))
            return
        finally:
            self.body.close()
        self.finish(answer)

    def keep(self, commit: Callable[[Path], T]) -> T:
        """The upload unpacked into a staging folder and ``commit(folder)``'s result; whatever is refused, nothing
        of the upload stays in the storage."""
        staged = self.store.staging()
        try:
            return commit(unpack(cast(BinaryIO, self.body), staged, self.limits))
        finally:
            self.store.discard(staged)

    async def handle(self, args: list[str]) -> dict[str, Any]:
        raise NotImplementedError


class _Release(_Upload):
    async def handle(self, args: list[str]) -> dict[str, Any]:
        course, assignment = course_of(args[0]), args[1]
        instructor_of(self.caller, course)
        force = self.arg("force") in ("1", "true", "yes")
        if not force and any(r.assignment == assignment for r in await self.blocking(
                lambda: self.store.released(course))):
            raise Refused(409, f"{assignment!r} is released to {course!r} already: add --force to replace it")
        released = await self.blocking(lambda: self.keep(
            lambda staged: self.store.release(course, assignment, staged, replace=force)))
        return {"course": released.course, "assignment": released.assignment}


class _Submit(_Upload):
    async def handle(self, args: list[str]) -> dict[str, Any]:
        course, assignment = course_of(args[0]), args[1]
        student_of(self.caller, course)
        name = self.caller.name
        if not any(r.assignment == assignment for r in await self.blocking(lambda: self.store.released(course))):
            raise Refused(404, f"{assignment!r} is not released to {course!r}: nothing to submit it to")
        # The time is taken here, on the loop, and its key counts as being written until the submission is kept or
        # refused: a listing's cursor stops before it (``_Listing``).
        when = dt.datetime.now(dt.UTC)
        self.writing.append(submission_key(when))
        try:
            sub = await self.blocking(lambda: self.keep(lambda staged: self.store.submit(
                course, name, assignment, staged, when)))
        finally:
            self.writing.remove(submission_key(when))
        secret = (sub.path / "submission_secret.txt").read_text("utf-8")
        return {"student": sub.student, "assignment": sub.assignment, "timestamp": sub.timestamp, "secret": secret}


class _Feedback(_Upload):
    async def handle(self, args: list[str]) -> dict[str, Any]:
        course, assignment, student = course_of(args[0]), args[1], args[2]
        instructor_of(self.caller, course)
        timestamp = self.arg("timestamp")
        secret = self.request.headers.get("X-Submission-Secret", "")
        subs = await self.blocking(lambda: self.store.submissions(course, student, assignment))
        chosen = [s for s in subs if s.timestamp == timestamp]
        if not chosen:
            raise Refused(404, f"{student!r} has no submission of {assignment!r} in {course!r} made at {timestamp!r}")
        sub = chosen[0]
        kept = (sub.path / "submission_secret.txt").read_text("utf-8")
        if secret != kept:
            raise Refused(409, f"the feedback's submission_secret.txt is not that of {student!r}'s submission of "
                               f"{assignment!r} made at {timestamp!r}")

        def commit(staged: Path) -> Any:
            odd = [p.name for p in staged.iterdir() if p.is_dir() or p.suffix != ".html"]
            if odd:
                raise BadArchive(f"feedback holds only <notebook>.html files, not {odd[:5]}")
            return self.store.add_feedback(sub, staged, replace=True)

        await self.blocking(lambda: self.keep(commit))
        return {"course": course, "assignment": assignment, "student": student, "timestamp": timestamp}


def make_app(store: Storage, hub: Hub, prefix: str, limits: Limits | None = None) -> Application:
    """The service's routes under ``prefix`` (``/services/<name>/``)."""
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    part = r"([^/]+)"
    # The keys of the submissions being written now (``_Submit``), shared by every handler (the loop's thread only).
    settings = {"store": store, "hub": hub, "limits": limits or Limits(), "writing": []}
    return Application([
        (f"{prefix}api/courses", _Courses, settings),
        (f"{prefix}api/courses/{part}/view", _View, settings),
        (f"{prefix}api/courses/{part}/submissions", _Listing, settings),
        (f"{prefix}api/courses/{part}/released/{part}", _Release, settings),
        (f"{prefix}api/courses/{part}/submissions/{part}", _Submit, settings),
        (f"{prefix}api/courses/{part}/feedback/{part}/{part}", _Feedback, settings),
    ])


def _environment(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        sys.exit(f"nbgrader hub exchange: {name} is not set: run this as a service of the hub "
                 f"(c.JupyterHub.services), which sets it")
    return value


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted (see the module)."""
    parser = argparse.ArgumentParser(prog="python -m ch11_autograder.exchange.hub.service",
                                     description="nbgrader's exchange as a JupyterHub service")
    parser.add_argument("--storage", required=True, type=Path,
                        help="the folder only this service reads (made 0700 when missing)")
    parser.add_argument("--upload-cap", type=int, default=Limits().total_bytes,
                        help="the largest upload in bytes (default %(default)s)")
    parser.add_argument("--ip", default="",
                        help="the address to listen on (default: the host of $JUPYTERHUB_SERVICE_URL). Where that URL "
                             "names something other than this machine, as a Kubernetes Service's name does on Zero "
                             "to JupyterHub, give 0.0.0.0")
    args = parser.parse_args(argv)
    hub = Hub(_environment("JUPYTERHUB_API_URL"), _environment("JUPYTERHUB_API_TOKEN"),
              _environment("JUPYTERHUB_SERVICE_NAME"))
    where = urllib.parse.urlsplit(_environment("JUPYTERHUB_SERVICE_URL"))
    ip = args.ip or where.hostname or "127.0.0.1"
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or f"/services/{hub.service_name}/"
    try:
        store = Storage.open(args.storage, create=True)
    except StorageError as err:
        sys.exit(f"nbgrader hub exchange: {err}")
    limits = Limits(total_bytes=args.upload_cap, file_bytes=min(Limits().file_bytes, args.upload_cap))

    # One line per request on stderr (tornado's access log: status, method, path, caller's address, time), where
    # the hub's own output goes for a service it starts. No token is in a path, so none is logged.
    enable_pretty_logging()

    async def serve() -> None:
        server = HTTPServer(make_app(store, hub, prefix, limits), max_body_size=args.upload_cap)
        server.listen(where.port or 80, ip)
        print(f"nbgrader hub exchange: serving {prefix} at {ip}:{where.port or 80}, storage {store.root}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
