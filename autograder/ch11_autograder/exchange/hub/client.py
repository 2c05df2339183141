"""The plug-in's side of the hub exchange's HTTP API (:mod:`.service`): calls with the user's hub token.

:class:`ServiceClient` sends ``Authorization: token <JUPYTERHUB_API_TOKEN>`` on every call. A refusal
becomes :class:`ServiceError` carrying the service's own sentence and status, so the commands and the
Assignments tab show it in words; a service that cannot be reached is named with its URL. Downloads
(``view``) are unpacked by :func:`.archive.unpack` under :data:`DOWNLOAD_LIMITS`, so what the
service sends is held to the same rules as what it receives (no links, no ``..``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from .archive import Limits, unpack
from .packing import packed

__all__ = ["DOWNLOAD_LIMITS", "ServiceClient", "ServiceError", "quoted"]

#: What one download may hold: a whole course's submissions, for an instructor's collect.
DOWNLOAD_LIMITS = Limits(total_bytes=4 * 1024**3, file_bytes=512 * 1024**2, files=1_000_000)
#: Seconds one call may take (a collect of a large class downloads every submission).
TIMEOUT = 600


class ServiceError(RuntimeError):
    """The exchange service refused a call, or could not be reached; the message says which, in words."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class ServiceClient:
    """The service at ``url`` (``<hub>/services/<name>/``), called with ``token``, each call at most ``timeout``
    seconds."""

    url: str
    token: str = field(repr=False)
    timeout: float = TIMEOUT

    def _request(self, method: str, path: str, query: Mapping[str, str] | None = None, body: BinaryIO | None = None,
                 headers: Mapping[str, str] | None = None) -> Any:
        address = self.url.rstrip("/") + "/api/" + path + ("?" + urllib.parse.urlencode(query) if query else "")
        sent = {"Authorization": f"token {self.token}", **(headers or {})}
        if body is not None:
            body.seek(0, 2)
            sent["Content-Length"] = str(body.tell())
            sent["Content-Type"] = "application/gzip"
            body.seek(0)
        request = urllib.request.Request(address, data=body, method=method, headers=sent)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise ServiceError(f"the exchange service refused: {_said(err)} (HTTP {err.code})", err.code) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise ServiceError(f"the exchange service at {self.url} cannot be reached ({reason})") from None

    def courses(self) -> dict[str, Any]:
        """``{"user", "courses": {course: role}, "upload_cap_bytes"}`` for the token's user."""
        with self._request("GET", "courses") as response:
            return cast(dict[str, Any], json.loads(response.read()))

    def submissions_since(self, course: str, cursor: str) -> dict[str, Any]:
        """The submissions of ``course`` kept since ``cursor`` (an instructor's call; see :mod:`.service`):
        ``{"submissions": [{"student", "assignment", "timestamp", "key"}], "cursor", "more"}``."""
        path = f"courses/{urllib.parse.quote(course, safe='')}/submissions"
        with self._request("GET", path, {"after": cursor} if cursor else None) as response:
            return cast(dict[str, Any], json.loads(response.read()))

    def view(self, course: str, parts: Iterable[str], into: Path, *, assignment: str = "", student: str = "",
             key: str = "") -> None:
        """The service's ``view`` of ``course`` (see :mod:`.service`), merged into the folder ``into``."""
        query = {"parts": ",".join(parts)}
        if assignment:
            query["assignment"] = assignment
        if student:
            query["student"] = student
        if key:
            query["key"] = key
        with tempfile.TemporaryFile() as download:
            with self._request("GET", f"courses/{urllib.parse.quote(course, safe='')}/view", query) as response:
                shutil.copyfileobj(response, download)
            download.seek(0)
            staging = Path(tempfile.mkdtemp(prefix=".view-", dir=into))
            try:
                unpack(cast(BinaryIO, download), staging / "entry", DOWNLOAD_LIMITS)
                _merge(staging / "entry", into)
            finally:
                shutil.rmtree(staging, ignore_errors=True)

    def upload(self, path: str, entries: Iterable[tuple[str, Path | None]], query: Mapping[str, str] | None = None,
               headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``entries`` packed (:func:`.packing.packed`) and POSTed to ``api/<path>``; the JSON answer."""
        with packed(entries) as body, self._request("POST", path, query, cast(BinaryIO, body), headers) as response:
            return cast(dict[str, Any], json.loads(response.read()))


def quoted(*parts: str) -> str:
    """``parts`` as one API path, each part quoted whole (a ``/`` in an id stays in that id, for the service
    to refuse by name)."""
    return "/".join(urllib.parse.quote(part, safe="") for part in parts)


def _said(err: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(err.read())["error"])
    except (ValueError, KeyError, TypeError, OSError):
        return err.reason or "no reason given"


def _merge(source: Path, into: Path) -> None:
    """Move everything under ``source`` into ``into``, folder by folder (a file there already is kept)."""
    for entry in source.iterdir():
        target = into / entry.name
        if entry.is_dir() and target.is_dir():
            _merge(entry, target)
        elif not target.exists():
            entry.rename(target)
