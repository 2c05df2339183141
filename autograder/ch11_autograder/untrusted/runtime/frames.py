"""The zygote's framing, one implementation for both ends of its socket.

``zygote.py`` (inside the sandbox) loads this file by path from its own directory;
``ch11_autograder.untrusted.forkserver`` (the grader) imports it. It uses the standard
library only and nothing of the package, so it may be shown to untrusted code.

A frame is a 4-byte big-endian length ``N`` (``N <= HEADER_MAX_BYTES``), then ``N``
bytes of UTF-8 JSON holding one object (the header), then the raw payload bytes the
header announces by size (a run's files, in the order it lists them). File descriptors
travel with the length bytes (``SCM_RIGHTS``); this module leaves that to its callers.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

__all__ = ["HEADER_MAX_BYTES", "LENGTH_BYTES", "pack", "read_exact", "read_header"]

#: Largest header, in bytes; a longer announced length ends the connection.
HEADER_MAX_BYTES = 1 << 20
#: Bytes of the length prefix.
LENGTH_BYTES = 4


def pack(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame: the length prefix, ``header`` as JSON, then ``payload`` unchanged.

    Raises:
        ValueError: the header is not JSON-serializable or longer than :data:`HEADER_MAX_BYTES`.
    """
    try:
        raw = json.dumps(header).encode()
    except TypeError as exc:
        raise ValueError(f"the header cannot be sent: {exc}") from exc
    if len(raw) > HEADER_MAX_BYTES:
        raise ValueError(f"the header has {len(raw)} bytes; at most {HEADER_MAX_BYTES} can be sent")
    return struct.pack(">I", len(raw)) + raw + payload


def read_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock``.

    Raises:
        EOFError: the peer closed the connection first.
    """
    chunks = bytearray()
    while len(chunks) < n:
        data = sock.recv(min(n - len(chunks), 1 << 20))
        if not data:
            raise EOFError
        chunks += data
    return bytes(chunks)


def read_header(sock: socket.socket, prefix: bytes = b"") -> dict[str, Any]:
    """The next frame's header; ``prefix`` holds length bytes the caller already received.

    Raises:
        EOFError: the connection ended, or the announced length exceeds :data:`HEADER_MAX_BYTES`
            (a peer that breaks the framing is treated as gone).
        ValueError: the header is not a JSON object.
    """
    raw_len = prefix + read_exact(sock, LENGTH_BYTES - len(prefix))
    (length,) = struct.unpack(">I", raw_len)
    if length > HEADER_MAX_BYTES:
        raise EOFError
    header = json.loads(read_exact(sock, length))
    if not isinstance(header, dict):
        raise ValueError("a frame header must be a JSON object")
    return header
