"""Publishing pages where ``nbgrader fetch_feedback`` finds them, and nowhere else.

nbgrader 0.9.6's ``release_feedback`` files the feedback of notebook ``<id>.ipynb`` of a
submission as ``<exchange>/<course>/feedback/<hash>.html``, ``<hash>`` being nbgrader's own
:func:`nbgrader.utils.notebook_hash` of the submission's secret and the notebook id; the
student's ``fetch_feedback`` computes the same name from the copy of the submission in their
cache. :class:`Publisher` writes there, as ``release_feedback`` does (a temporary file, then a
rename), with these guarantees against hostile input:

* the file name is always 32 hex digits plus ``.html`` (never a name a student chose);
* the feedback directory is opened once with ``O_NOFOLLOW`` and every write is relative to
  that descriptor: a symbolic link in its place, or under it, is never followed (the rename
  replaces a link at the target name instead of writing through it);
* the temporary file is created with ``O_EXCL | O_NOFOLLOW``.

Publishing the same page again writes the same bytes to the same name: idempotent.
:meth:`Publisher.read` and :meth:`Publisher.remove` (the pruning of old practice runs,
:mod:`.prune`) go through the same descriptor and names: a page is read without following a
link, and removing unlinks the name itself (a link there is removed, never its target).
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

from nbgrader.utils import notebook_hash

__all__ = ["FEEDBACK_MODE", "PAGE_MODE", "Publisher", "feedback_name"]

#: nbgrader's mode of the feedback directory (release_feedback): everyone may pass, only the owner lists.
FEEDBACK_MODE = 0o711
#: A page is readable by whoever knows its name (as nbgrader's released feedback).
PAGE_MODE = 0o644
_NAME = re.compile(r"[0-9a-f]{32}\.html")


def feedback_name(secret: str, notebook_id: str) -> str:
    """``<hash>.html``: the name ``release_feedback`` gives, and ``fetch_feedback`` looks for."""
    name = f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"
    if not _NAME.fullmatch(name):
        raise ValueError("nbgrader's notebook_hash gave an unexpected name")
    return name


class Publisher:
    """Writes pages into one feedback directory (created with nbgrader's mode when absent).

    Raises:
        FileNotFoundError: the directory's parent, the course's folder in the exchange, does not exist yet (the
            instructor's first ``release_assignment`` makes it); the message says so.
    """

    def __init__(self, feedback_dir: Path) -> None:
        self.feedback_dir = feedback_dir
        if not os.path.lexists(feedback_dir):
            if not os.path.lexists(feedback_dir.parent):
                # Not errno's bare "No such file or directory": a service started before Week 1's release (a hub
                # starts its services at once) must say what is missing and what makes it.
                raise FileNotFoundError(
                    f"{feedback_dir.parent}: the course has no folder in the exchange yet; the instructor's first "
                    "nbgrader release_assignment makes it (docs/course.md, \"Week 1\"), and the service serves "
                    "from its next start")
            os.mkdir(feedback_dir, FEEDBACK_MODE)
            os.chmod(feedback_dir, FEEDBACK_MODE)  # past the umask, as nbgrader's ensure_directory

    def _open_dir(self) -> int:
        fd = os.open(self.feedback_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() and info.st_uid != 0:
            os.close(fd)
            raise PermissionError(f"{self.feedback_dir} is owned by uid {info.st_uid}, not by this service's user")
        if stat.S_IMODE(info.st_mode) & 0o022:
            os.close(fd)
            raise PermissionError(f"{self.feedback_dir} is writable by others: anyone could plant files there")
        return fd

    def publish(self, secret: str, notebook_id: str, page: str) -> Path:
        """Write ``page`` as the feedback of ``notebook_id`` of the submission with ``secret``; returns its path."""
        name = feedback_name(secret, notebook_id)
        data = page.encode("utf-8")
        fd = self._open_dir()
        try:
            temp = f".{name}.{secrets.token_hex(8)}.tmp"
            out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PAGE_MODE, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view):]
                os.fchmod(out, PAGE_MODE)
                os.fsync(out)
            finally:
                os.close(out)
            try:
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                os.unlink(temp, dir_fd=fd)
                raise
            os.fsync(fd)
        finally:
            os.close(fd)
        return self.feedback_dir / name

    def read(self, secret: str, notebook_id: str, limit: int = 64 * 1024**2) -> str | None:
        """The page published as ``notebook_id``'s feedback of the submission with ``secret`` (UTF-8, at most
        ``limit`` bytes), or ``None``: no such regular file, or larger."""
        fd = self._open_dir()
        try:
            try:
                page = os.open(feedback_name(secret, notebook_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                               dir_fd=fd)
            except OSError:
                return None
            try:
                info = os.fstat(page)
                if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                    return None
                chunks = []
                while chunk := os.read(page, 1 << 20):
                    chunks.append(chunk)
                return b"".join(chunks).decode("utf-8", "replace")
            finally:
                os.close(page)
        finally:
            os.close(fd)

    def remove(self, secret: str, notebook_id: str) -> bool:
        """Remove the page of ``notebook_id`` of the submission with ``secret``; whether there was one."""
        fd = self._open_dir()
        try:
            try:
                os.unlink(feedback_name(secret, notebook_id), dir_fd=fd)
            except FileNotFoundError:
                return False
            return True
        finally:
            os.close(fd)
