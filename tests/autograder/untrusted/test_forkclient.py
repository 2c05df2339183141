"""The grader's end of a fork server's socket (untrusted/forkclient.py), against a scripted server.

The server here is a thread on the other end of the client's real socket pair, speaking
``runtime/frames.py`` as the zygote and the nbgrader fork server do; each test scripts what
it answers. Both real servers are exercised through this client by test_forkserver.py and
batch/test_nbgrader_fork.py.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from ch11_autograder.untrusted.forkclient import ForkClient, exit_status
from ch11_autograder.untrusted.runtime import frames


class Gone(RuntimeError):
    pass


@dataclass
class Run:
    run_id: int
    status: int | None = None
    done: threading.Event = field(default_factory=threading.Event)


def finish(run: Run, status: int) -> None:
    run.status = status
    run.done.set()


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request as a server reads it: the header and the descriptors sent with it."""
    raw_len, fds, _, _ = socket.recv_fds(sock, frames.LENGTH_BYTES, 3)
    if not raw_len:
        raise EOFError
    return frames.read_header(sock, raw_len), list(fds)


def serve(client: ForkClient, script: Callable[[socket.socket], None]) -> threading.Thread:
    """Run ``script`` on the server's end in a thread, then close that end (the server ends)."""
    theirs = client.theirs

    def run() -> None:
        try:
            script(theirs)
        except EOFError:  # the client closed its end
            pass
        finally:
            theirs.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    client.start_reading("test-fork-client")
    return thread


@pytest.fixture
def client():
    client: ForkClient[Run] = ForkClient("the test server", Gone, finish)
    yield client
    client.close()


def test_ready_then_a_run_that_starts_and_exits(client, tmp_path):
    log = tmp_path / "log.txt"
    requests = []
    ended = threading.Event()

    def script(sock: socket.socket) -> None:
        sock.sendall(frames.pack({"op": "ready"}))
        request, fds = receive(sock)
        requests.append(request)
        os.write(fds[0], b"written by the server")  # the descriptor arrived
        os.close(fds[0])
        assert frames.read_exact(sock, 5) == b"bytes"
        sock.sendall(frames.pack({"op": "started", "id": request["id"], "pid": 4242}))
        sock.sendall(frames.pack({"op": "exited", "id": request["id"], "status": 3}))
        ended.wait(10)

    serve(client, script)
    assert client.wait_ready(10) == {"op": "ready"}
    with log.open("wb") as handle:
        run, answer = client.request({"op": "run", "argv": ["x"]}, Run, fds=[handle.fileno()], payloads=[b"bytes"])
    assert answer == {"op": "started", "id": run.run_id, "pid": 4242}
    assert requests == [{"op": "run", "argv": ["x"], "id": 1}]
    assert run.done.wait(10) and run.status == 3
    assert client.runs == {} and client.replies == {}
    assert log.read_bytes() == b"written by the server"
    ended.set()


def test_a_failed_answer_raises_and_leaves_nothing_in_flight(client):
    def script(sock: socket.socket) -> None:
        sock.sendall(frames.pack({"op": "ready"}))
        request, _ = receive(sock)
        sock.sendall(frames.pack({"op": "failed", "id": request["id"], "message": "fork: no memory"}))
        receive(sock)  # wait for the end of the connection

    serve(client, script)
    assert client.wait_ready(10)["op"] == "ready"
    with pytest.raises(Gone, match="could not start it: fork: no memory"):
        client.request({"op": "run"}, Run)
    assert client.runs == {} and client.replies == {}
    assert not client.dead


def test_when_the_server_ends_runs_in_flight_are_killed_and_requests_refused(client):
    def script(sock: socket.socket) -> None:
        sock.sendall(frames.pack({"op": "ready"}))
        request, _ = receive(sock)
        sock.sendall(frames.pack({"op": "started", "id": request["id"]}))

    thread = serve(client, script)
    client.wait_ready(10)
    run, _ = client.request({"op": "run"}, Run)
    thread.join(10)
    assert run.done.wait(10) and run.status == -signal.SIGKILL
    assert client.reader is not None
    client.reader.join(10)
    assert client.dead
    with pytest.raises(Gone, match="has ended"):
        client.request({"op": "run"}, Run)


def test_a_request_waiting_when_the_server_ends_is_refused(client):
    def script(sock: socket.socket) -> None:
        receive(sock)  # never answers, never says ready

    serve(client, script)
    with pytest.raises(Gone, match="could not start it: the test server ended"):
        client.request({"op": "run"}, Run)
    assert client.wait_ready(10) == {"op": "refused", "message": "the test server ended"}


def test_a_message_outside_the_protocol_ends_the_connection(client):
    stop = threading.Event()

    def script(sock: socket.socket) -> None:
        request, _ = receive(sock)
        sock.sendall(frames.pack({"op": "started", "id": request["id"]}))
        sock.sendall(frames.pack({"op": "exited!", "id": request["id"], "status": 0}))
        stop.wait(10)  # the server stays: the client is the one that stops listening

    serve(client, script)
    run, _ = client.request({"op": "run"}, Run)
    assert run.done.wait(10) and run.status == -signal.SIGKILL
    assert client.dead
    stop.set()


def test_an_exited_handler_reads_what_follows_the_message():
    payloads: list[bytes] = []
    client: ForkClient[Run] = ForkClient("the test server", Gone, finish, exited=lambda m: on_exited(m))

    def on_exited(message: dict[str, Any]) -> None:
        payloads.append(frames.read_exact(client.sock, int(message["size"])))
        run = client.take(int(message["id"]))
        assert run is not None
        finish(run, exit_status(message))

    def script(sock: socket.socket) -> None:
        request, _ = receive(sock)
        sock.sendall(frames.pack({"op": "started", "id": request["id"]}))
        sock.sendall(frames.pack({"op": "exited", "id": request["id"], "status": 0, "size": 3}, b"abc"))
        sock.sendall(frames.pack({"op": "ready"}))  # read as a frame: the payload was consumed
        receive(sock)

    try:
        serve(client, script)
        run, _ = client.request({"op": "run"}, Run)
        assert run.done.wait(10) and run.status == 0
        assert client.wait_ready(10) == {"op": "ready"}
        assert payloads == [b"abc"]
    finally:
        client.close()


@pytest.mark.parametrize(("status", "expected"), [(0, 0), (2, 2), (-13, -13), (None, -9), ("1", -9), (True, -9)])
def test_exit_status_is_the_number_sent_or_killed(status, expected):
    assert exit_status({"op": "exited", "status": status}) == expected


def test_closing_the_client_ends_its_reader_and_the_server_s_wait_at_once(client):
    """The reader thread blocks in ``recv`` on the grader's end while the server is silent (a fork
    server waiting for its next request). Closing the client must end both: the reader reads end of file
    (its runs in flight finished as killed) and the server's next read gets end of file, not a wait for
    as long as the grader's process lives (a plain close of a socket another thread reads leaves both
    waiting)."""
    server_saw_eof = threading.Event()

    def script(sock: socket.socket) -> None:
        sock.sendall(frames.pack({"op": "ready"}))
        request, _ = receive(sock)
        sock.sendall(frames.pack({"op": "started", "id": request["id"]}))
        if sock.recv(1) == b"":  # the next request never comes: only the client's end of the connection
            server_saw_eof.set()

    thread = serve(client, script)
    assert client.wait_ready(10) == {"op": "ready"}
    run, _ = client.request({"op": "run"}, Run)
    assert client.reader is not None and client.reader.is_alive()
    client.close()
    client.reader.join(5)
    assert not client.reader.is_alive(), "the reader still waits on the closed socket"
    assert server_saw_eof.wait(5), "the server still waits for a request"
    assert run.done.wait(5) and run.status == -signal.SIGKILL
    thread.join(5)
