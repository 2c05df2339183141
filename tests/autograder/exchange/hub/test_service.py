"""The hub exchange service on a real JupyterHub: who may do what, and every hostile input refused.

One hub for the module (``support.hub_exchange``): users, groups and tokens made through the hub's
REST API; the service run by the hub; every call through the hub's proxy with a token the hub
issued. Each refusal is checked for its status and its words, and, for the uploads, that nothing
was written: the storage's tree is unchanged and so is the folder holding it.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import tarfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import hub_exchange
from support.hub_exchange import ExchangeHub

from .conftest import NOTEBOOK, member, tar_gz, tree

pytestmark = [pytest.mark.slow, pytest.mark.hub]

COURSE, OTHER = "ch11", "ch12"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExchangeHub]:
    hub_exchange.require_exchange_hub()
    with hub_exchange.exchange_hub(tmp_path_factory.mktemp("exchange-hub")) as running:
        running.user("alice", f"nbgrader-{COURSE}")
        running.user("bob", f"nbgrader-{COURSE}")
        running.user("prof", f"formgrade-{COURSE}")
        running.user("other", f"formgrade-{OTHER}", f"nbgrader-{OTHER}")
        yield running


@pytest.fixture(scope="module")
def tokens(hub: ExchangeHub) -> dict[str, str]:
    return {name: hub.token(name) for name in ("alice", "bob", "prof", "other")}


def call(hub: ExchangeHub, method: str, path: str, token: str | None, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """``method`` on the service's ``api/<path>`` through the hub's proxy: (status, JSON or bytes)."""
    where = urllib.parse.urlsplit(hub.service_url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"token {token}"
    connection.request(method, f"{where.path}api/{path}", body=body, headers=sent)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.getheader("Content-Type", "").startswith("application/json"):
        return response.status, json.loads(data)
    return response.status, data


def open_upload(hub: ExchangeHub, token: str, header: str, value: str) -> http.client.HTTPConnection:
    """A submission of ``ps1`` begun by hand: the request line, the token and one length header (``header``:
    ``value``) sent, the headers not ended, so that a test sends the body as it chooses."""
    where = urllib.parse.urlsplit(hub.service_url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
    connection.putrequest("POST", f"{where.path}api/courses/{COURSE}/submissions/ps1")
    connection.putheader("Authorization", f"token {token}")
    connection.putheader(header, value)
    return connection


def names_in(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(tar.getnames())


def release(hub: ExchangeHub, tokens: dict[str, str], assignment: str) -> None:
    status, answer = call(hub, "POST", f"courses/{COURSE}/released/{assignment}?force=1", tokens["prof"],
                          tar_gz(member("problem1.ipynb", NOTEBOOK)))
    assert status == 200, answer


def test_a_student_submits_as_themselves_and_sees_only_their_own(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    release(hub, tokens, "ps1")
    # A student parameter is no part of the API: the name is the token's.
    status, answer = call(hub, "POST", f"courses/{COURSE}/submissions/ps1?student=bob", tokens["alice"],
                          tar_gz(member("problem1.ipynb", NOTEBOOK)))
    assert status == 200, answer
    assert answer["student"] == "alice" and answer["timestamp"].endswith(" UTC") and len(answer["secret"]) == 128
    assert (hub.storage / "courses" / COURSE / "submissions" / "alice" / "ps1").is_dir()
    assert not (hub.storage / "courses" / COURSE / "submissions" / "bob").exists()

    status, answer2 = call(hub, "POST", f"courses/{COURSE}/feedback/ps1/alice?timestamp="
                           + urllib.parse.quote(answer["timestamp"]), tokens["prof"],
                           tar_gz(member("problem1.html", b"<p>alice's feedback</p>")),
                           {"X-Submission-Secret": answer["secret"]})
    assert status == 200, answer2

    status, data = call(hub, "GET", f"courses/{COURSE}/view?parts=feedback", tokens["alice"])
    assert status == 200 and len([n for n in names_in(data) if n.endswith(".html")]) == 1
    status, data = call(hub, "GET", f"courses/{COURSE}/view?parts=feedback,outbound", tokens["bob"])
    assert status == 200
    assert [n for n in names_in(data) if n.endswith(".html")] == []
    assert f"{COURSE}/outbound/ps1/problem1.ipynb" in names_in(data)

    status, answer = call(hub, "GET", f"courses/{COURSE}/view?parts=feedback&student=alice", tokens["bob"])
    assert status == 403 and answer["error"] == "bob may see only their own work, not 'alice''s"
    status, answer = call(hub, "GET", f"courses/{COURSE}/view?parts=inbound", tokens["bob"])
    assert status == 403 and "only its instructors see its submissions" in answer["error"]
    status, data = call(hub, "GET", f"courses/{COURSE}/view?parts=inbound", tokens["prof"])
    assert status == 200 and any(n.startswith(f"{COURSE}/inbound/alice+ps1+") for n in names_in(data))


def test_a_student_cannot_release_or_give_feedback(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    status, answer = call(hub, "POST", f"courses/{COURSE}/released/ps1?force=1", tokens["bob"],
                          tar_gz(member("problem1.ipynb", NOTEBOOK)))
    assert status == 403 and answer["error"] == "bob is not an instructor of the course 'ch11' (the hub group " \
                                                "'formgrade-ch11')"
    status, answer = call(hub, "POST", f"courses/{COURSE}/feedback/ps1/alice?timestamp=x", tokens["bob"],
                          tar_gz(member("problem1.html")))
    assert status == 403 and "is not an instructor" in answer["error"]


def test_an_instructor_of_another_course_sees_nothing_of_this_one(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    release(hub, tokens, "ps1")
    for parts in ("outbound", "inbound", "feedback"):
        status, answer = call(hub, "GET", f"courses/{COURSE}/view?parts={parts}", tokens["other"])
        assert status == 403, (parts, answer)
        assert answer["error"].startswith("other is neither a student nor an instructor of the course 'ch11'")
    status, answer = call(hub, "POST", f"courses/{COURSE}/submissions/ps1", tokens["other"],
                          tar_gz(member("problem1.ipynb", NOTEBOOK)))
    assert status == 403 and answer["error"].startswith("other is not a student of the course 'ch11'")
    status, answer = call(hub, "GET", "courses", tokens["other"])
    assert answer["courses"] == {OTHER: "instructor"}


def test_refused_tokens(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    status, answer = call(hub, "GET", "courses", None)
    assert status == 401 and "no hub API token" in answer["error"]
    unknown = "expired, revoked or unknown"
    status, answer = call(hub, "GET", "courses", "0" * 32)
    assert status == 403 and unknown in answer["error"]

    short = hub.token("alice", expires_in=1)
    time.sleep(3)
    status, answer = call(hub, "GET", "courses", short)
    assert status == 403 and unknown in answer["error"], answer

    revoked = hub.token("bob")
    assert call(hub, "GET", "courses", revoked)[0] == 200
    hub.revoke("bob", revoked)
    status, answer = call(hub, "GET", "courses", revoked)
    assert status == 403 and unknown in answer["error"], answer
    tokens["bob"] = hub.token("bob")  # revoke removed bob's other tokens too

    status, answer = call(hub, "GET", "courses", hub.admin_token)
    assert status == 403 and answer["error"] == ("this token belongs to the service 'test-admin', not to a hub "
                                                 "user: only users use the exchange")

    narrow = hub.token("alice", scopes=["read:users:name!user"])
    status, answer = call(hub, "GET", "courses", narrow)
    assert status == 403 and "lacks the scope 'access:services!service=nbgrader-exchange'" in answer["error"]


def _outside(hub: ExchangeHub) -> dict[str, Any]:
    """The storage's tree and the listing of the folder holding it (where an escape would land)."""
    return {"storage": tree(hub.storage), "beside": sorted(p.name for p in hub.storage.parent.iterdir()),
            "root": sorted(p.name for p in Path("/").iterdir())}


def _link(name: str, kind: bytes, target: str) -> tuple[tarfile.TarInfo, None]:
    info, _ = member(name, None, kind, target)
    return info, None


HOSTILE_UPLOADS = {
    "dotdot": (tar_gz(member("../../escaped.ipynb", NOTEBOOK)), "has a '..' in its path"),
    "absolute": (tar_gz(member("/tmp/escaped.ipynb", NOTEBOOK)), "has an absolute path"),
    "symlink": (tar_gz(_link("problem1.ipynb", tarfile.SYMTYPE, "/etc/passwd")), "is a symbolic link"),
    "hardlink": (tar_gz(_link("problem1.ipynb", tarfile.LNKTYPE, "/etc/passwd")), "is a hard link"),
    "not-json": (tar_gz(member("problem1.ipynb", b"{not json")), "the notebook 'problem1.ipynb' is not JSON"),
    "not-a-tar": (b"PK\x03\x04 a zip", "is not a gzip-compressed tar archive"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_UPLOADS))
def test_a_hostile_upload_is_refused_and_nothing_is_written(hub: ExchangeHub, tokens: dict[str, str],
                                                            case: str) -> None:
    release(hub, tokens, "ps1")
    body, words = HOSTILE_UPLOADS[case]
    before = _outside(hub)
    status, answer = call(hub, "POST", f"courses/{COURSE}/submissions/ps1", tokens["bob"], body)
    assert status == 400 and answer["error"].startswith("the upload is refused: ") and words in answer["error"]
    assert _outside(hub) == before


def test_an_upload_over_the_cap_is_refused_before_it_is_read(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    release(hub, tokens, "ps1")
    before = _outside(hub)
    # Only the headers and a little of the claimed body are sent: the refusal comes on the header.
    connection = open_upload(hub, tokens["bob"], "Content-Length", str(hub_exchange.UPLOAD_CAP + 1))
    connection.endheaders(b"x" * 1024)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 413
    assert answer["error"] == (f"the upload of {hub_exchange.UPLOAD_CAP + 1} bytes is over the exchange's cap of "
                               f"{hub_exchange.UPLOAD_CAP} bytes")
    big = tar_gz(member("problem1.ipynb", NOTEBOOK), member("big.bin", b"\0" * (hub_exchange.UPLOAD_CAP + 10)))
    status, answer = call(hub, "POST", f"courses/{COURSE}/submissions/ps1", tokens["bob"], big)
    assert status == 400 and f"is larger than {hub_exchange.UPLOAD_CAP} bytes" in answer["error"]
    assert _outside(hub) == before


def test_an_upload_without_its_length_is_refused_before_it_is_read(hub: ExchangeHub, tokens: dict[str, str]) -> None:
    """A chunked body says no length: refused in words on the headers (cut off at the cap instead, the client would
    see only a reset connection)."""
    release(hub, tokens, "ps1")
    before = _outside(hub)
    connection = open_upload(hub, tokens["bob"], "Transfer-Encoding", "chunked")
    connection.endheaders(b"10000\r\n" + os.urandom(65536) + b"\r\n")
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 411
    assert answer["error"] == (f"the upload does not say its length (Content-Length): send it with its length; the "
                               f"exchange's cap is {hub_exchange.UPLOAD_CAP} bytes")
    assert _outside(hub) == before


@pytest.mark.parametrize(("path", "words"), [
    (f"courses/{COURSE}/submissions/..", "the assignment id '..' is refused: it starts with a dot"),
    (f"courses/{COURSE}/submissions/%2E%2E", "the assignment id '..' is refused: it starts with a dot"),
    (f"courses/{COURSE}/submissions/ps1%2F..%2F..%2Fx", "the assignment id 'ps1/../../x' is refused: it contains '..'"),
    ("courses/%2E%2E/submissions/ps1", "the course id '..' is refused: it starts with a dot"),
    ("courses/ch11%2F..%2Fch12/submissions/ps1", "the course id 'ch11/../ch12' is refused: it contains '..'"),
    ("courses/a%2Fb/submissions/ps1", "the course id 'a/b' is refused: it contains '/'"),
])
def test_an_id_with_a_slash_or_dotdot_is_refused(hub: ExchangeHub, tokens: dict[str, str], path: str,
                                                 words: str) -> None:
    release(hub, tokens, "ps1")
    before = _outside(hub)
    status, answer = call(hub, "POST", path, tokens["alice"], tar_gz(member("problem1.ipynb", NOTEBOOK)))
    assert status in (400, 404), answer
    if status == 400:
        assert words in answer["error"], answer
    assert _outside(hub) == before


@pytest.mark.parametrize(("method", "path", "words"), [
    ("POST", f"courses/{COURSE}/released/..", "the assignment id '..' is refused: it starts with a dot"),
    ("POST", f"courses/{COURSE}/released/ps1%2F..%2Fx", "the assignment id 'ps1/../x' is refused: it contains '..'"),
    ("POST", f"courses/{COURSE}/feedback/ps1/..?timestamp=x", "the student name '..' is refused: it starts with a dot"),
    ("POST", f"courses/{COURSE}/feedback/ps1/a%2Fb?timestamp=x", "the student name 'a/b' is refused: it contains '/'"),
    ("GET", f"courses/{COURSE}/view?parts=inbound&assignment=..%2Fps1",
     "the assignment id '../ps1' is refused: it starts with a dot"),
    ("GET", f"courses/{COURSE}/view?parts=inbound&student=alice%2F..%2Fbob",
     "the student name 'alice/../bob' is refused: it contains '..'"),
])
def test_an_instructors_id_with_a_slash_or_dotdot_is_refused(hub: ExchangeHub, tokens: dict[str, str], method: str,
                                                             path: str, words: str) -> None:
    """The ids of the instructors' calls (release, feedback, the view's query) follow the same rules."""
    release(hub, tokens, "ps1")
    before = _outside(hub)
    body = tar_gz(member("problem1.html", b"<p>feedback</p>")) if method == "POST" else None
    status, answer = call(hub, method, path, tokens["prof"], body)
    assert status == 400 and words in answer["error"], answer
    assert _outside(hub) == before


def test_the_storage_is_the_services_alone(hub: ExchangeHub) -> None:
    assert hub.storage.stat().st_mode & 0o777 == 0o700
    assert tree(hub.storage / "tmp") == {}


def _spooling_to_disk(pid: int, storage: Path) -> bool:
    """Whether process ``pid`` holds a file open under ``storage/tmp`` (an upload's body past its first MiB)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{storage / 'tmp'}/"):
            return True
    return False


def _inbound(hub: ExchangeHub, tokens: dict[str, str]) -> list[str]:
    """The submission folders of ps1 the service shows the instructor."""
    status, data = call(hub, "GET", f"courses/{COURSE}/view?parts=inbound&assignment=ps1", tokens["prof"])
    assert status == 200, data
    return [n for n in names_in(data) if n.count("/") == 2 and n.startswith(f"{COURSE}/inbound/")]


def test_a_service_killed_mid_upload_keeps_what_was_committed_and_nothing_else(
        hub: ExchangeHub, tokens: dict[str, str]) -> None:
    """SIGKILL while a submission's body is arriving; the hub restarts the service (a managed service that exits is
    started again), which serves the submissions committed before and nothing of the one cut off."""
    release(hub, tokens, "ps1")
    status, kept = call(hub, "POST", f"courses/{COURSE}/submissions/ps1", tokens["bob"],
                        tar_gz(member("problem1.ipynb", NOTEBOOK), member("kept.txt", b"committed before the kill")))
    assert status == 200, kept
    before = tree(hub.storage / "courses")
    listed = _inbound(hub, tokens)
    assert any(n.startswith(f"{COURSE}/inbound/bob+ps1+{kept['timestamp']}+") for n in listed), listed
    [pid] = hub_exchange.service_pids(hub.storage)

    # Random bytes do not compress: the body is as large as sent, over the 1 MiB the service keeps in memory.
    body = tar_gz(member("problem1.ipynb", NOTEBOOK), member("big.bin", os.urandom(1_500_000)))
    assert len(body) < hub_exchange.UPLOAD_CAP
    connection = open_upload(hub, tokens["alice"], "Content-Length", str(len(body)))
    try:
        connection.endheaders()
        sent, deadline = 0, time.monotonic() + 60
        # Slowly, in chunks, until the service has the body's spool file open under tmp/; never the whole body.
        while not _spooling_to_disk(pid, hub.storage):
            assert time.monotonic() < deadline, "the service never spooled the upload to its storage"
            if sent < len(body) - 65536:
                connection.send(body[sent:sent + 65536])
                sent += 65536
            time.sleep(0.05)
        assert sent < len(body)
        os.kill(pid, signal.SIGKILL)
    finally:
        connection.close()

    deadline = time.monotonic() + hub_exchange.hub_support.HUB_START_TIMEOUT
    while not (restarted := [p for p in hub_exchange.service_pids(hub.storage) if p != pid]):
        assert time.monotonic() < deadline, "the hub did not start the killed service again"
        time.sleep(0.5)
    hub_exchange.wait_for_service(hub)

    assert tree(hub.storage / "tmp") == {}, "staging left behind after the restart"
    assert tree(hub.storage / "courses") == before, "the storage changed: the cut-off upload left something"
    assert _inbound(hub, tokens) == listed, "the restarted service lists other submissions than before the kill"
    # Still the service's alone: the root 0700, and nothing under it open to the group or others.
    assert hub.storage.stat().st_mode & 0o777 == 0o700
    opened = [str(p) for p in hub.storage.rglob("*") if p.lstat().st_mode & 0o077]
    assert opened == [], opened
    assert restarted
