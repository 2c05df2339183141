"""The verdict worker: runs a submission's code cells, then answers calls. UNTRUSTED.

Started by a launcher (see ``untrusted/launch.py``) as ``worker.py cells.json``
with the working directory set to a scratch directory. This script sees only
the runtime directory, the wire-format package ``protocol/`` (loaded from
``../../protocol/`` relative to this file) and the Python environment (numpy,
trainable_harness); nothing else of ch11_autograder.

1. Keeps private copies of the original stdin/stdout/stderr descriptors and
   points descriptors 0, 1 and 2 at /dev/null, so that nothing student code
   reads or prints can touch the protocol channel by accident.
2. Reads ``cells.json``: ``{"version": 1, "cells": [source, ...],
   "cell_time_limit": seconds}``, and executes the cells in order in one
   namespace (``__name__ == "__main__"``, the scratch directory first on
   ``sys.path``, matplotlib's Agg backend). A cell that does not compile as
   Python has its IPython magic and shell lines replaced by ``pass`` (and
   ``x = !cmd`` by ``x = None``); a cell that starts with a cell magic is
   skipped, except ``%%time``, ``%%timeit`` and ``%%capture``, whose bodies
   run. An exception, including the per-cell time limit, is recorded and
   execution continues with the next cell.
3. Serves newline-delimited requests (``protocol/``) until stdin closes:
   ``hello`` returns the per-cell report; ``defaults`` the default values a
   function declares (read from its signature, nothing is called); ``keep`` stores a decoded value
   under a name, outside the student's namespace, so that several calls can
   be given the same object; ``call`` looks the name up among the namespace's
   top-level names, calls it (kept objects substituted) and returns the
   encoded result, or an error that says what went wrong in the student's
   terms. A watched call also returns the arguments as the call left them and
   the warnings it emitted. ``calls`` makes several calls in order, writing each
   reply as soon as its call returns (so the grader times each call from the
   reply before it and knows which call was running when one hangs or kills
   the process), and ends early with a ``not_run`` reply when its budget is
   spent or, under ``stop_on_error``, after a call that failed.

Exit status: 0 at end of input; 2 when the protocol module or cells.json
cannot be loaded (diagnostics on the original stderr).
"""

from __future__ import annotations

import builtins
import importlib.util
import inspect
import io
import json
import os
import re
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

CELLS_FILE_MAX_BYTES = 64 * 1024 * 1024
_PYTHON_BODY_CELL_MAGICS = ("time", "timeit", "capture")
_ASSIGN_FROM_MAGIC = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*=\s*[!%]")


def load_protocol() -> Any:
    """Import the package ``../../protocol/`` under a private name; its modules import each other relatively."""
    package = Path(__file__).resolve().parent.parent.parent / "protocol"
    spec = importlib.util.spec_from_file_location(
        "_ch11_wire_protocol", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the protocol package from {package}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class CellTimeLimit(BaseException):
    """Raised inside a cell that runs longer than the per-cell time limit."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CellTimeLimit()


def strip_magics(source: str) -> tuple[str | None, str]:
    """The Python to run for one cell, or ``None`` to skip it, and a note.

    Valid Python is returned unchanged (so text inside string literals is
    never touched). Otherwise IPython line magics, shell escapes and help
    lines become ``pass`` and ``x = !cmd`` / ``x = %magic`` become ``x = None``.
    """
    lines = source.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%"):
        magic = first[2:].split(None, 1)[0] if len(first) > 2 else ""
        if magic not in _PYTHON_BODY_CELL_MAGICS:
            return None, f"cell magic %%{magic} is not run by the grader"
        index = next(i for i, line in enumerate(lines) if line.strip())
        lines[index] = ""  # keep line numbers as the student sees them
        source = "\n".join(lines)
    try:
        compile(source, "<check>", "exec")
        return source, ""
    except SyntaxError:
        pass
    except ValueError:  # null bytes
        return source, ""
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        assign = _ASSIGN_FROM_MAGIC.match(stripped)
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
            out.append(f"{indent}pass")
        elif assign:
            out.append(f"{indent}{assign.group(1)} = None")
        else:
            out.append(line)
    return "\n".join(out), ""


def _where(tb: TracebackType | None) -> str:
    """``cell N, line M`` of the innermost frame in student code, or ``""``."""
    found = ""
    for frame, lineno in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if filename.startswith("<cell ") and filename.endswith(">"):
            found = f"{filename[1:-1]}, line {lineno}"
    return found


def _describe(exc: BaseException) -> tuple[str, str]:
    """Exception type name and message, without ever raising."""
    try:
        type_name = type(exc).__name__
    except Exception:  # student-defined classes can do anything
        type_name = "Exception"
    try:
        message = str(exc)
    except BaseException:
        message = "<the exception message could not be printed>"
    return str(type_name), message


def _type_name(protocol: Any, value: Any) -> str:
    """The qualified type name of a returned value, without ever raising (its class may be the student's)."""
    try:
        return str(protocol.describe_type(value))
    except BaseException:
        return "?"


class Worker:
    """One student namespace plus the request loop that serves it."""

    def __init__(self, protocol: Any, reader: BinaryIO, writer: BinaryIO) -> None:
        self.protocol = protocol
        self.reader = reader
        self.writer = writer
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.outcomes: list[Any] = []
        #: Objects the grader asked to keep (``keep`` requests), by name; never in the namespace.
        self.kept: dict[str, Any] = {}

    def run_cells(self, cells: list[str], time_limit: float) -> None:
        """Execute every cell, recording one outcome each."""
        CellOutcome = self.protocol.CellOutcome
        signal.signal(signal.SIGALRM, _on_alarm)
        for index, raw in enumerate(cells):
            source, note = strip_magics(raw)
            if source is None:
                self.outcomes.append(CellOutcome(index, "skipped", "", note, ""))
                continue
            try:
                code = compile(source, f"<cell {index}>", "exec")
                if time_limit > 0:
                    signal.setitimer(signal.ITIMER_REAL, time_limit)
                try:
                    exec(code, self.namespace)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except CellTimeLimit:
                self.outcomes.append(
                    CellOutcome(index, "error", "TimeLimit", f"the cell ran longer than {time_limit:g} s", "")
                )
            except BaseException as exc:  # any student failure is data
                type_name, message = _describe(exc)
                where = (
                    f"cell {index}, line {exc.lineno}" if isinstance(exc, SyntaxError) else _where(exc.__traceback__)
                )
                self.outcomes.append(CellOutcome(index, "error", type_name, message, where))
            else:
                self.outcomes.append(CellOutcome(index, "ok", "", "", ""))

    def send(self, data: bytes) -> None:
        self.writer.write(data)
        self.writer.flush()

    def serve(self) -> None:
        """Answer requests until end of input."""
        proto = self.protocol
        while True:
            line = self.reader.readline(proto.MAX_MESSAGE_BYTES + 1)
            if not line:
                return
            try:
                request = proto.parse_request(proto.loads_message(line))
            except proto.ProtocolError as exc:
                self.send(proto.make_error(0, "bad_request", "ProtocolError", str(exc)))
                continue
            if isinstance(request, proto.HelloRequest):
                self.send(proto.make_hello_reply(request.id, self.outcomes))
                continue
            if isinstance(request, proto.DefaultsRequest):
                self.send(self.defaults(request))
                continue
            if isinstance(request, proto.KeepRequest):
                self.kept[request.name] = request.value
                self.send(proto.make_ok(request.id, None))
                continue
            if isinstance(request, proto.CallsRequest):
                self.answer_calls(request)
                continue
            self.send(self.answer(request)[0])

    def answer_calls(self, batch: Any) -> None:
        """Make the calls of one batch in order, sending each reply as soon as its call returns.

        Each reply is flushed on its own: the grader starts a call's time limit when the
        reply before it arrives, and a call that hangs or ends the process must find the
        replies of the calls before it already sent.
        """
        proto = self.protocol
        started = time.monotonic()
        budget = None if batch.budget_ms is None else batch.budget_ms / 1000
        calls = batch.calls
        for index, call in enumerate(calls):
            if budget is not None and time.monotonic() - started >= budget:
                self.send(proto.make_error(call.id, "not_run", "NotRun", "the time budget was spent"))
                return
            reply, ok = self.answer(call)
            self.send(reply)
            if not ok and batch.stop_on_error and index + 1 < len(calls):
                self.send(proto.make_error(calls[index + 1].id, "not_run", "NotRun", "an earlier call failed"))
                return

    def _function(self, request: Any) -> tuple[Any, bytes | None]:
        """The student's top-level function ``request.fn``, or the error reply saying why there is none."""
        proto = self.protocol
        fn_name = request.fn
        if fn_name not in self.namespace:
            return None, proto.make_error(
                request.id, "not_defined", "NameError", f"{fn_name} is not defined in your notebook"
            )
        fn = self.namespace[fn_name]
        if not callable(fn):
            return None, proto.make_error(
                request.id,
                "not_callable",
                "TypeError",
                f"{fn_name} is not a function (it is a value of type {proto.describe_type(fn)})",
            )
        return fn, None

    def defaults(self, request: Any) -> bytes:
        """The framed reply to a defaults request: each parameter's declared default, in order."""
        fn, error = self._function(request)
        if error is not None:
            return error
        try:
            parameters = inspect.signature(fn).parameters.values()
            found = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
            return self.protocol.make_defaults_reply(request.id, found)
        except BaseException as exc:  # a builtin without a signature, or student code run by reading it
            type_name, message = _describe(exc)
            return self.protocol.make_error(request.id, "exception", type_name, message)

    def _substitute(self, value: Any) -> Any:
        if isinstance(value, self.protocol.Kept):
            if value.name not in self.kept:
                raise KeyError(value.name)
            return self.kept[value.name]
        return value

    def answer(self, request: Any) -> tuple[bytes, bool]:
        """The framed reply to one call request, and whether it is a success."""
        proto = self.protocol
        fn, error = self._function(request)
        if error is not None:
            return error, False
        try:
            args = [self._substitute(a) for a in request.args]
            kwargs = {k: self._substitute(v) for k, v in request.kwargs.items()}
        except KeyError as exc:
            return proto.make_error(
                request.id, "bad_request", "KeyError", f"nothing is kept under {exc.args[0]!r}"
            ), False
        emitted: list[str] = []
        try:
            if request.watch:
                # Every warning is recorded, not printed once per place: a contract may promise none.
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = fn(*args, **kwargs)
                emitted = [f"{w.category.__name__}: {w.message}" for w in caught]
            else:
                result = fn(*args, **kwargs)
        except BaseException as exc:  # includes SystemExit from student code
            type_name, message = _describe(exc)
            return proto.make_error(request.id, "exception", type_name, message, _where(exc.__traceback__)), False
        try:
            if request.watch:
                return proto.make_ok(request.id, result, args=args, kwargs=kwargs, warnings=emitted), True
            return proto.make_ok(request.id, result), True
        except proto.ProtocolError as exc:
            # The reply names the returned value's type and what could not be sent; the grader words it.
            where = "" if exc.path == "value" else f" (at {exc.path} of the returned value)"
            return proto.make_error(request.id, "unencodable", _type_name(proto, result), exc.problem + where), False
        except BaseException as exc:  # e.g. a dataclass property that raises
            type_name, message = _describe(exc)
            return proto.make_error(
                request.id, "unencodable", _type_name(proto, result), f"reading it raised {type_name}: {message}"
            ), False


def main(argv: list[str]) -> int:
    # Private channels first: student code gets /dev/null for 0, 1 and 2.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    diag_fd = os.dup(2)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    diag = os.fdopen(diag_fd, "w", buffering=1, encoding="utf-8", errors="replace")
    reader = io.BufferedReader(io.FileIO(proto_in, "rb"), buffer_size=1 << 16)
    writer = io.BufferedWriter(io.FileIO(proto_out, "wb"), buffer_size=1 << 16)
    try:
        protocol = load_protocol()
        cells_path = Path(argv[0] if argv else "cells.json")
        raw = cells_path.read_bytes()
        if len(raw) > CELLS_FILE_MAX_BYTES:
            raise ValueError(f"{cells_path} is larger than {CELLS_FILE_MAX_BYTES} bytes")
        spec = json.loads(raw)
        cells = spec["cells"]
        if spec.get("version") != 1 or not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise ValueError(f"{cells_path} is not a version-1 cells file")
        time_limit = float(spec.get("cell_time_limit", 0))
    except Exception:
        traceback.print_exc(file=diag)
        return 2
    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, os.getcwd())
    worker = Worker(protocol, reader, writer)
    worker.run_cells(cells, time_limit)
    try:
        worker.serve()
    except BrokenPipeError:
        return 0
    except BaseException:  # last words for the grader's log
        traceback.print_exc(file=diag)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
