"""Grading on submit from the hub exchange: submissions copied from the service, feedback posted back to it.

:class:`HubCopy` stands behind both sides of :mod:`..api` for a grader (``ch11-grade serve``) that calls
the service (:mod:`.service`) with an instructor's hub token. It keeps one private folder, made 0700::

    inbound/<student>+<assignment>+<timestamp>+<key>/   each submission, as nbgrader's inbound folder holds it
    secrets/<sha256 of the secret>                      the folder name of the submission with that secret
    pages/<folder name>/<notebook id in hex>.html       the pages published for it
    pending/<folder name>                               its pages are not yet all at the service
    cursor                                              the service's listing cursor (``api/.../submissions``)
    tmp/                                                downloads being unpacked; emptied at each start

**Submissions in** (:meth:`HubCopy.bring`): the service lists what was kept since the cursor; each
submission not here yet is downloaded (the service's ``view`` of that one key, unpacked under the
archive rules), its secret indexed, and renamed into ``inbound/`` whole; the cursor is written after
them. Killed at any moment, the next call lists from the old cursor again and skips the folders already
here: nothing is lost and nothing copied twice. Who submitted is the hub's name for the token that
uploaded it (the service's storage keeps it; nobody else writes here), so no owner is checked.

**Feedback out** (:meth:`HubCopy.publish_pages`): the pages are written here first, the submission
marked pending, then all its pages are posted to the service as the feedback for that submission
(``api/courses/<course>/feedback/...`` with its timestamp and secret, replacing the ones before), which
hands them to the student's ``nbgrader fetch_feedback`` named as nbgrader names them. A service that
cannot be reached leaves the mark: :meth:`HubCopy.flush` (each scan) posts them again, so a service
killed or restarting loses no page. :meth:`HubCopy.read` asks the service for what the student gets,
so the pruning of old practice pages (``serve/prune.py``) leaves alone a submission whose feedback the
instructor's ``release_feedback`` replaced, as it does in the folder exchange.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import Unreachable
from .client import ServiceClient, ServiceError, quoted
from .names import BadName, checked
from .storage import KEY_PATTERN, fsync_path, fsync_tree

__all__ = ["HubCopy"]

#: Seconds one call to the service may take before the step counts as unreachable (tried again later).
TIMEOUT = 60
#: The most submissions of one student copied by one :meth:`HubCopy.bring`.
PER_STUDENT = 10
#: The HTTP statuses that mean the service is not there now (the hub's proxy answers 503 for a stopped service).
_AWAY = {None, 502, 503, 504}
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} UTC")
log = logging.getLogger(__name__)


def _write(path: Path, data: bytes) -> None:
    """``data`` as ``path``, whole or not at all (a temporary file beside it, renamed)."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.rename(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_path(path.parent)


def _index(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class HubCopy:
    """``course`` at the hub exchange service ``url``, called with ``token`` (an instructor's), copied into the
    private folder ``root`` (see the module)."""

    #: Folders are renamed into ``inbound/`` whole.
    whole = True

    def __init__(self, url: str, token: str, course: str, root: Path, *, poll_seconds: float = 2.0) -> None:
        self.client = ServiceClient(url, token, timeout=TIMEOUT)
        self.url = url
        self.course = checked("course id", course)
        self.root = root
        self.poll_seconds: float | None = poll_seconds
        #: Held while a submission's pages are written here or sent (the grading thread publishes, the scanner
        #: flushes): a send reads the pages as they are when it starts, and one that started on older pages must
        #: not land after one of newer pages.
        self._sending = threading.Lock()
        for part in ("", "inbound", "secrets", "pages", "pending"):
            os.makedirs(root / part, mode=0o700, exist_ok=True)
        os.chmod(root, 0o700)
        shutil.rmtree(root / "tmp", ignore_errors=True)
        os.mkdir(root / "tmp", 0o700)

    @property
    def inbound(self) -> Path:
        return self.root / "inbound"

    def where(self) -> str:
        return f"the hub exchange service {self.url} (course {self.course})"

    # ------------------------------------------------------------------ submissions in

    def problem(self, names: Sequence[str] | None = None) -> str | None:
        """Nothing: the hub named each sender, and only this grader writes here."""
        return None

    def refusal(self, name: str, student: str) -> str | None:
        """Nothing: a folder here was copied from the service, which names it for the hub user who submitted it."""
        return None

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except ServiceError as err:
            raise Unreachable(str(err)) from None

    def bring(self) -> int:
        """Copy the submissions kept at the service since the cursor (see the module); how many were new here.

        At most :data:`PER_STUDENT` of one student's are copied per call, the students in turn: a flood from one
        does not hold back a classmate's submission (the rest come at the next calls; the cursor stays at the
        first not copied, and what is here already is skipped)."""
        cursor_file = self.root / "cursor"
        cursor = cursor_file.read_text("ascii").strip() if cursor_file.is_file() else ""
        listed: list[Mapping[str, Any]] = []
        end = cursor
        while True:
            answer = self._call(self.client.submissions_since, self.course, end)
            listed += answer["submissions"]
            end = str(answer["cursor"])
            if not KEY_PATTERN.fullmatch(end):
                raise Unreachable(f"the exchange service answered a cursor that is not a key: {end!r}")
            if not answer["more"]:
                break
        new = [entry for entry in listed if not os.path.lexists(self.inbound / self._name(entry))]
        taken: dict[str, int] = {}
        left: list[str] = []
        brought = 0
        for entry in new:  # oldest first, each student's in order
            student = str(entry["student"])
            if taken.get(student, 0) >= PER_STUDENT:
                left.append(str(entry["key"]))
                continue
            taken[student] = taken.get(student, 0) + 1
            brought += self._copy(entry)
        _write(cursor_file, (min(left) if left else end).encode("ascii"))
        return brought

    @staticmethod
    def _name(entry: Mapping[str, Any]) -> str:
        """The folder name of a listed submission, nbgrader's ``<student>+<assignment>+<timestamp>+<key>``, each part
        checked (one path component, nbgrader's forms)."""
        student, assignment = str(entry["student"]), str(entry["assignment"])
        timestamp, key = str(entry["timestamp"]), str(entry["key"])
        try:
            checked("student name", student)
            checked("assignment id", assignment)
        except BadName as err:
            raise Unreachable(f"the exchange service listed a submission this grader refuses: {err}") from None
        if not KEY_PATTERN.fullmatch(key) or not _TIMESTAMP.fullmatch(timestamp):
            raise Unreachable(f"the exchange service listed a submission with the key {key!r} and the timestamp "
                              f"{timestamp!r}, not of nbgrader's form")
        return f"{student}+{assignment}+{timestamp}+{key}"

    def _copy(self, entry: Mapping[str, Any]) -> int:
        """One listed submission copied into ``inbound/`` (1), or 0: here already."""
        student, assignment, key = str(entry["student"]), str(entry["assignment"]), str(entry["key"])
        name = self._name(entry)
        if os.path.lexists(self.inbound / name):
            return 0
        staging = Path(tempfile.mkdtemp(prefix="copy-", dir=self.root / "tmp"))
        try:
            self._call(self.client.view, self.course, ["inbound"], staging, assignment=assignment, student=student,
                       key=key)
            got = staging / self.course / "inbound" / name
            secret_file = got / "submission_secret.txt"
            if got.is_symlink() or not got.is_dir() or not secret_file.is_file():
                raise Unreachable(f"the exchange service sent no submission {name!r} (or one without its "
                                  f"submission_secret.txt)")
            secret = secret_file.read_text("ascii").strip()
            # Indexed before the folder is in place: a folder in inbound/ always has its secret's index.
            _write(self.root / "secrets" / _index(secret), name.encode("utf-8"))
            fsync_tree(got)
            os.rename(got, self.inbound / name)
            fsync_path(self.inbound)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return 1

    # ------------------------------------------------------------------ feedback out

    def _folder_of(self, secret: str) -> str:
        """The folder name of the submission with ``secret``.

        Raises:
            ValueError: no submission copied here has it."""
        index = self.root / "secrets" / _index(secret)
        try:
            name = index.read_text("utf-8")
        except FileNotFoundError:
            raise ValueError("no submission copied from the hub exchange has this secret") from None
        if not os.path.isdir(self.inbound / name):
            raise ValueError(f"the submission {name!r} is not in {self.inbound}")
        return name

    def _page(self, name: str, notebook_id: str) -> Path:
        """Where the page of ``notebook_id`` of the submission ``name`` is kept here: the id in hex, so that no
        notebook name a student chose is ever a path here (the service is sent ``<notebook id>.html``)."""
        return self.root / "pages" / name / f"{notebook_id.encode('utf-8', 'surrogateescape').hex()}.html"

    def publish(self, secret: str, notebook_id: str, page: str) -> Path:
        """:meth:`publish_pages` of one page; the path of its copy here."""
        self.publish_pages(secret, {notebook_id: page})
        return self._page(self._folder_of(secret), notebook_id)

    def publish_pages(self, secret: str, pages: Mapping[str, str]) -> None:
        """Write ``pages`` (notebook id -> page) of the submission with ``secret`` here, then post all of its pages
        to the service (see the module; an unreachable service leaves them marked pending, never raises)."""
        name = self._folder_of(secret)
        with self._sending:
            os.makedirs(self.root / "pages" / name, mode=0o700, exist_ok=True)
            for notebook_id, page in sorted(pages.items()):
                _write(self._page(name, notebook_id), page.encode("utf-8"))
            self._send_later(name)

    def read(self, secret: str, notebook_id: str) -> str | None:
        """The page the service gives the student for ``notebook_id`` of the submission with ``secret`` (asked of the
        service: the instructor's ``release_feedback`` may have replaced what was posted from here), or ``None``:
        none, or the service cannot be reached now."""
        from nbgrader.utils import notebook_hash  # here: importing the exchange's interface imports no nbgrader

        try:
            student, assignment, _timestamp, key = self._folder_of(secret).split("+")
            wanted = f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"
            with tempfile.TemporaryDirectory(prefix="read-", dir=self.root / "tmp") as into:
                self._call(self.client.view, self.course, ["feedback"], Path(into), assignment=assignment,
                           student=student, key=key)
                return (Path(into) / self.course / "feedback" / wanted).read_text("utf-8")
        except (ValueError, FileNotFoundError, Unreachable):
            return None

    def remove(self, secret: str, notebook_id: str) -> bool:
        """Remove the page here and post the submission's pages left (maybe none) to the service."""
        try:
            name = self._folder_of(secret)
        except ValueError:
            return False
        with self._sending:
            try:
                self._page(name, notebook_id).unlink()
            except FileNotFoundError:
                return False
            self._send_later(name)
        return True

    def _send_later(self, name: str) -> None:
        """Mark ``name``'s pages pending, then try to send them now (an unreachable service: at the next flush)."""
        _write(self.root / "pending" / name, b"")
        try:
            self._send(name)
        except Unreachable:
            pass

    def _send(self, name: str) -> None:
        """Post every page kept for the submission ``name`` to the service, then clear its pending mark.

        Raises:
            Unreachable: the service could not be reached (the mark stays).
        """
        student, assignment, timestamp, _key = name.split("+")
        secret = (self.inbound / name / "submission_secret.txt").read_text("ascii").strip()
        folder = self.root / "pages" / name
        files = sorted(folder.glob("*.html")) if folder.is_dir() else []
        try:
            entries = [(bytes.fromhex(page.stem).decode("utf-8", "surrogateescape") + ".html", page) for page in files]
            self.client.upload("courses/" + quoted(self.course, "feedback", assignment, student), entries,
                               {"timestamp": timestamp}, {"X-Submission-Secret": secret})
        except ServiceError as err:
            if err.status in _AWAY:
                raise Unreachable(str(err)) from None
            # Refused for good (the submission or its secret unknown there, a notebook name it refuses): the pages
            # stay here, and sending them again would be refused again.
            log.warning("the hub exchange service refused the pages of %r: %s", name, err)
        except (ValueError, UnicodeError) as err:  # a notebook name no archive can carry
            log.warning("the pages of %r cannot be sent: %s", name, err)
        (self.root / "pending" / name).unlink(missing_ok=True)

    def flush(self) -> int:
        """Post the pages of every submission marked pending; how many went.

        Raises:
            Unreachable: the service still cannot be reached (the rest stay marked)."""
        sent = 0
        for marker in sorted((self.root / "pending").iterdir()):
            if marker.name.startswith("."):
                continue
            with self._sending:
                if not os.path.lexists(marker):  # sent meanwhile by a publish
                    continue
                self._send(marker.name)
            sent += 1
        return sent
