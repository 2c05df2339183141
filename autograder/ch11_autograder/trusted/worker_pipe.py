"""The verdict worker's pipes: one framed message written or read within a deadline and a byte cap.

Every byte read is hostile data: a message is at most ``protocol.MAX_MESSAGE_BYTES`` and is decoded
strictly. A worker that closes its pipe is :class:`~.worker_errors.WorkerCrashed`, described for
the student by how it ended (the signal and what it usually means), with its own stderr tail kept for
the grader's log; one that does not answer in time is :class:`~.worker_errors.CallTimeout`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from typing import IO, Any

from .. import protocol
from ..protocol import ProtocolError
from ..untrusted.backend import fatal_signal
from ..untrusted.launch import Launcher
from .worker_errors import CallTimeout, WorkerCrashed

__all__ = ["DIAGNOSTIC_BYTES", "WorkerPipe"]

#: Bytes of the worker's own stderr kept for the grader's log.
DIAGNOSTIC_BYTES = 4096


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


_SIGNAL_HINTS: dict[int, str] = {
    signal.SIGXCPU: "the CPU time limit was reached",
    signal.SIGXFSZ: "a file grew beyond the size limit",
    signal.SIGSEGV: "a segmentation fault",
    signal.SIGKILL: "killed, usually for using too much memory",
}


def _exit_description(returncode: int | None, launcher: object = None) -> str:
    if returncode is None:
        return "it stopped answering"
    number = fatal_signal(launcher, returncode)  # as the launcher's backend reports a signal
    if number:
        hint = _SIGNAL_HINTS.get(number)
        return f"it was ended by {_signal_name(number)}" + (f" ({hint})" if hint else "")
    return f"it exited with status {returncode}"


class WorkerPipe:
    """The I/O half of ``WorkerSession``: its worker process's stdin, stdout and stderr file.

    A base class, not a session of its own: ``WorkerSession`` starts the process and sets the
    attributes below (``_proc`` is ``None`` while no worker runs).
    """

    launcher: Launcher
    _proc: subprocess.Popen[bytes] | None
    _stderr: IO[bytes] | None
    _buffer: bytearray

    def _diagnostics(self) -> str:
        proc = self._proc
        parts = [f"worker exit status: {proc.poll() if proc else None}"]
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.seek(0)
                tail = self._stderr.read(DIAGNOSTIC_BYTES)
                if tail:
                    parts.append("worker stderr: " + tail.decode("utf-8", "replace"))
        return "\n".join(parts)

    def _deadline_left(self, deadline: float, fn: str, seconds: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise CallTimeout(fn, seconds)
        return left

    def _send(self, data: bytes, fn: str, seconds: float) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        fd = proc.stdin.fileno()
        deadline = time.monotonic() + seconds
        view = memoryview(data)
        while view:
            left = self._deadline_left(deadline, fn, seconds)
            _, writable, _ = select.select([], [fd], [], left)
            if not writable:
                continue
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                raise WorkerCrashed(self._crash_message(), self._diagnostics()) from None
            view = view[written:]

    def _crash_message(self) -> str:
        proc = self._proc
        status = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = proc.wait(timeout=1)
        description = _exit_description(status, self.launcher)
        return f"the process running your code stopped unexpectedly: {description}"

    def _receive(self, fn: str, seconds: float) -> dict[str, Any]:
        """One framed message, read with a deadline and at most MAX_MESSAGE_BYTES."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        end = self._buffer.find(b"\n")
        while end < 0:
            if len(self._buffer) >= protocol.MAX_MESSAGE_BYTES:
                raise ProtocolError(
                    "message", f"the worker sent more than {protocol.MAX_MESSAGE_BYTES} bytes in one line"
                )
            left = self._deadline_left(deadline, fn, seconds)
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                continue
            try:
                chunk = os.read(fd, min(1 << 20, protocol.MAX_MESSAGE_BYTES - len(self._buffer)))
            except BlockingIOError:
                continue
            if not chunk:
                raise WorkerCrashed(self._crash_message(), self._diagnostics())
            found = chunk.find(b"\n")
            if found >= 0:
                end = len(self._buffer) + found
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return protocol.loads_message(line)
