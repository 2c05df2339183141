"""The zygote's framing (untrusted/runtime/frames.py), over a real socket pair.

Both ends of the zygote's socket and of the nbgrader fork server's use it, so a frame
written by ``pack`` must read back whole, and a peer that breaks the framing must look
gone (``EOFError``) or malformed (``ValueError``), never hang or crash the reader.
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from ch11_autograder.untrusted.runtime import frames


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    b.settimeout(10)  # a reader that waits for bytes that never come fails with a timeout instead of hanging
    yield a, b
    a.close()
    b.close()


def test_a_frame_reads_back_as_its_header_then_its_payload(pair):
    a, b = pair
    a.sendall(frames.pack({"op": "spawn", "files": [["x.txt", 3]]}, b"abc") + frames.pack({"op": "kill", "id": 7}))
    assert frames.read_header(b) == {"op": "spawn", "files": [["x.txt", 3]]}
    assert frames.read_exact(b, 3) == b"abc"
    assert frames.read_header(b) == {"op": "kill", "id": 7}


def test_length_bytes_already_received_are_taken_as_the_prefix(pair):
    a, b = pair
    raw = frames.pack({"op": "ready"})
    a.sendall(raw)
    first = b.recv(1)  # as recv_fds hands the callers part of the length
    assert frames.read_header(b, first) == {"op": "ready"}


def test_a_large_payload_arrives_whole(pair):
    a, b = pair
    payload = bytes(range(256)) * 20_000  # 5 MB, more than one recv and more than the socket buffer
    sender = threading.Thread(target=a.sendall, args=(frames.pack({"n": len(payload)}, payload),))
    sender.start()
    assert frames.read_header(b) == {"n": len(payload)}
    assert frames.read_exact(b, len(payload)) == payload
    sender.join()


def test_a_peer_that_closes_mid_frame_is_gone(pair):
    a, b = pair
    a.sendall(frames.pack({"op": "exited"})[:-2])
    a.close()
    with pytest.raises(EOFError):
        frames.read_header(b)


def test_an_announced_length_over_the_limit_is_treated_as_a_peer_gone(pair):
    a, b = pair
    a.sendall(struct.pack(">I", frames.HEADER_MAX_BYTES + 1))
    with pytest.raises(EOFError):
        frames.read_header(b)


def test_a_header_that_is_not_an_object_is_refused(pair):
    a, b = pair
    a.sendall(struct.pack(">I", 2) + b"[]")
    with pytest.raises(ValueError, match="JSON object"):
        frames.read_header(b)


def test_pack_refuses_what_it_cannot_send():
    with pytest.raises(ValueError, match="cannot be sent"):
        frames.pack({"fd": object()})
    with pytest.raises(ValueError, match="at most"):
        frames.pack({"big": "x" * frames.HEADER_MAX_BYTES})
