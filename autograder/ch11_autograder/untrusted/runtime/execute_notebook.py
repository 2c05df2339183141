"""Execute one notebook with a Jupyter kernel, inside the sandbox. UNTRUSTED.

Started by a launcher as ``execute_notebook.py job.json`` with the working
directory set to a scratch directory holding the notebook and its support
files. ``job.json``::

    {"version": 1, "input": "submission.ipynb", "output": "executed.ipynb",
     "kernel_name": "python3", "timeout": 30, "startup_timeout": 60,
     "interrupt_grace": 5}

The notebook runs in order with nbclient (errors allowed, a cell that exceeds
``timeout`` seconds is interrupted and gets a ``CellTimeoutError`` output, as
with nbgrader's Execute). After such an interrupt the kernel must answer a
``kernel_info_request`` within ``interrupt_grace`` seconds; a kernel that does
not (student code can leave it alive but deaf, e.g. by writing garbage into its
sockets) ends the run with ``KernelUnresponsive`` instead of making every later
cell wait its full timeout. Every message to the kernel is sent with the same
time limit, so a broken connection cannot block the runner either. The
kernel's own stdout goes to ``/dev/null`` (cell output reaches the notebook
through its messages), so nothing the kernel writes there can crowd out the
status line. After every cell the notebook so far is written to
``output`` (atomically), so a run cut short by the wall-time limit still
leaves the outputs of the cells that finished. The kernel gets the user's
default matplotlib backend (inline figures), not the Agg the launcher sets.

With ``CH11_RUN_PHASES=1`` in its environment (a benchmark's switch, removed before the
kernel starts), the runner also writes one line ``ch11-phases {...}`` to stderr: when its
phases began and ended (``time.monotonic()``, the clock every process on the host shares),
each cell's span, and the CPU seconds of the runner and of the kernel; nothing else changes.

On exit one JSON line goes to stdout (after a newline of its own):
``{"status": "ok"}`` or ``{"status": "kernel_died" | "error",
"last_finished_cell": index or null, "message": ...}``; ``message`` starts with
the exception's class name (``KernelUnresponsive: ...``, ``KernelFrozen: ...``).
Everything this script writes is untrusted data for the grader, which
validates and sanitizes it.

Under the submission's zygote (``zygote.py``, which sets ``CH11_FORK_KERNEL=1``) the
kernel is not a new interpreter: this process, still free of threads, event loops and
zmq contexts, forks it (``forked_kernel.py``, loaded by path like ``fresh.py``), and the
child becomes ``ipykernel_launcher -f <connection file>`` with the environment, argument
list, ``sys.path`` and matplotlib backend a fresh kernel gets. nbclient then talks to it
through a kernel manager that holds its pid.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

JOB_MAX_BYTES = 1 << 20
NOTEBOOK_MAX_BYTES = 64 * 1024 * 1024
#: A cell's outputs above this size (as JSON) are replaced by a note saying so.
CELL_OUTPUT_MAX_BYTES = 2 * 1024 * 1024
#: After this many cell timeouts in a row the kernel is taken as frozen and execution stops
#: (an interrupt that does not clear leaves every later cell waiting its full timeout).
MAX_CONSECUTIVE_TIMEOUTS = 2


#: Set to "1" by the zygote: fork the kernel from this process instead of starting an interpreter.
FORK_KERNEL_ENV = "CH11_FORK_KERNEL"
#: Seconds a kernel has to answer after a timed-out cell's interrupt (job key ``interrupt_grace``).
DEFAULT_INTERRUPT_GRACE = 5.0
#: Set to "1" by a benchmark (bench/notebook_run_phases.py): report the run's phases on stderr.
PHASES_ENV = "CH11_RUN_PHASES"


class _Phases:
    """The runner's phase timestamps for a benchmark; every method does nothing unless enabled.

    Times are ``time.monotonic()`` seconds (CLOCK_MONOTONIC: comparable with the grader's
    clock, the sandbox has no time namespace). ``cells`` holds one record per executed
    cell: ``sent`` and ``done`` as the runner saw them, ``kernel`` the seconds between the
    kernel's start of the request and its reply (ipykernel's ``started`` and the reply's
    ``date``: the cell's own execution, figures rendered), ``write`` the seconds of the
    notebook write after it.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.marks: dict[str, float] = {}
        self.cells: list[dict[str, Any]] = []

    def mark(self, name: str) -> None:
        if self.enabled:
            self.marks[name] = time.monotonic()

    def cell_sent(self, index: int) -> None:
        if self.enabled:
            self.cells.append({"index": index, "sent": time.monotonic()})

    def cell_done(self, reply: Any) -> None:
        if self.enabled and self.cells:
            record = self.cells[-1]
            record["done"] = time.monotonic()
            with contextlib.suppress(Exception):
                started = datetime.datetime.fromisoformat(str(reply["metadata"]["started"]))
                replied = reply["header"]["date"]
                if not isinstance(replied, datetime.datetime):
                    replied = datetime.datetime.fromisoformat(str(replied))
                record["kernel"] = (replied - started).total_seconds()

    def cell_written(self, seconds: float) -> None:
        if self.enabled and self.cells:
            self.cells[-1]["write"] = seconds

    def report(self, kernel_pid: int | None) -> None:
        if not self.enabled:
            return
        import resource

        usage = resource.getrusage(resource.RUSAGE_SELF)
        kernel_cpu = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{kernel_pid}/stat").read_text().rsplit(")", 1)[1].split()
            kernel_cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        line = {"marks": self.marks, "cells": self.cells, "runner_cpu": usage.ru_utime + usage.ru_stime,
                "kernel_cpu": kernel_cpu}
        sys.stderr.write("\nch11-phases " + json.dumps(line) + "\n")
        sys.stderr.flush()


class KernelFrozen(RuntimeError):
    """Cells keep timing out: the kernel no longer answers."""


class KernelUnresponsive(RuntimeError):
    """A timed-out cell's interrupt went unanswered: the kernel is alive but no longer responds."""


def _limit_sends(client: Any, seconds: float) -> None:
    """Make every send on the kernel client's sockets fail after ``seconds`` instead of blocking.

    A zmq socket whose connection student code broke (garbage written into the kernel's
    sockets) blocks a plain send for ever; with a send timeout it raises ``zmq.Again``.
    """
    import zmq

    kc = client.kc
    for name in ("shell_channel", "control_channel", "stdin_channel"):
        channel = getattr(kc, name, None)
        socket = getattr(channel, "socket", None)
        if socket is not None:
            socket.setsockopt(zmq.SNDTIMEO, max(1, int(seconds * 1000)))
            socket.setsockopt(zmq.LINGER, 0)


async def _next_message(channel: Any, msg_type: str | None, parent_id: str | None, seconds: float) -> Any:
    """The first message of ``msg_type`` (None: any) on ``channel`` within ``seconds``, else None.

    With ``parent_id``, only a message answering that request counts. Messages that do not
    count are dropped.
    """
    until = time.monotonic() + seconds
    while (left := until - time.monotonic()) > 0:
        try:
            msg = await channel.get_msg(timeout=left)
        except (TimeoutError, queue.Empty):
            return None
        if msg_type is not None and msg.get("msg_type") != msg_type:
            continue
        if parent_id is not None and (msg.get("parent_header") or {}).get("msg_id") != parent_id:
            continue
        return msg
    return None


async def _answers(client: Any, seconds: float) -> bool:
    """True when the kernel answers a ``kernel_info_request`` on its shell channel within ``seconds``.

    ipykernel handles shell requests one at a time, so the answer also proves that the
    interrupted cell has ended. Replies to earlier requests met on the way are dropped
    (nbclient matches replies by message id and ignores them too).
    """
    import zmq

    kc = client.kc
    try:
        msg_id = kc.kernel_info()
    except zmq.ZMQError:  # zmq.Again: the send timed out
        return False
    return await _next_message(kc.shell_channel, "kernel_info_reply", msg_id, seconds) is not None


def _cap_outputs(cell: Any) -> None:
    size = len(json.dumps(cell.get("outputs", []), default=str))
    if size > CELL_OUTPUT_MAX_BYTES:
        import nbformat

        note = (
            f"[the grader dropped this cell's output: {size} bytes, over the "
            f"{CELL_OUTPUT_MAX_BYTES} byte limit]\n"
        )
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=note)]

ERROR_ON_TIMEOUT = {
    "ename": "CellTimeoutError",
    "evalue": "",
    "traceback": ["CellTimeoutError: No reply from kernel before timeout"],
}


def _write_atomically(nb: Any, path: Path) -> bool:
    """Write ``nb`` to ``path`` via a temporary file; False when the write failed (disk or file-size limit).

    A sandbox with its own scratch filesystem hands ``path`` over as a file bound to
    the grader's copy, which cannot be replaced by a rename: it is then rewritten in
    place (a run killed mid-write leaves an unreadable file, which the grader reports).
    """
    import nbformat

    data = nbformat.writes(nb).encode("utf-8")
    tmp = path.with_name(path.name + ".partial")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError:
        # Keep running: the status line still reaches the grader, and the last good file stays.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    try:
        with open(path, "r+b") as handle:
            handle.write(data)
            handle.truncate()
    except OSError:
        return False
    return True


def _load(name: str) -> Any:
    """``name``.py from this script's directory, under the private name the zygote gives the modules it loads."""
    import importlib.util

    module_name = f"_ch11_zygote_{name}"
    if module_name in sys.modules:  # a fork of the zygote that loaded it: the module is loaded already
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, Path(__file__).resolve().parent / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    phases = _Phases(os.environ.pop(PHASES_ENV, "") == "1")
    phases.mark("start")
    # This process's state before anything changes it: what a forked kernel must start with.
    at_start = _load("fresh").capture() if os.environ.get(FORK_KERNEL_ENV) == "1" else None
    job_path = Path(argv[0] if argv else "job.json")
    raw = job_path.read_bytes()
    if len(raw) > JOB_MAX_BYTES:
        raise ValueError(f"{job_path} is too large")
    job = json.loads(raw)
    if job.get("version") != 1:
        raise ValueError(f"{job_path} is not a version-1 job")
    source = Path(job["input"])
    target = Path(job["output"])
    if source.stat().st_size > NOTEBOOK_MAX_BYTES:
        raise ValueError(f"{source} is too large")

    # The kernel inherits this environment: give it inline figures and keep its
    # runtime files in the scratch directory.
    os.environ.pop("MPLBACKEND", None)
    os.environ.setdefault("JUPYTER_RUNTIME_DIR", str(Path.cwd() / ".jupyter-runtime"))
    os.environ["NBGRADER_EXECUTION"] = "autograde"

    # jsonschema imports rfc3987_syntax, if installed, for IRI format checks no notebook schema
    # uses; building its grammar costs 1-1.5 s per run (see ch11_autograder/nbgrader_main.py).
    # (None in sys.modules is the documented "import fails" entry; typeshed allows modules only.)
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.read(source, as_version=4)
    extra_arguments = ["--HistoryManager.hist_file=:memory:"]
    kernel_name = str(job.get("kernel_name", "python3"))
    phases.mark("read")
    manager_class = _ready_manager_class()
    forked = os.environ.pop(FORK_KERNEL_ENV, "") == "1"
    km = _load("forked_kernel").fork_kernel(kernel_name, extra_arguments, at_start, manager_class,
                                            _load("fresh").restore) if forked else None
    phases.mark("kernel_forked")
    if phases.enabled:
        _mark_kernel_info_reply(phases)
    state: dict[str, Any] = {"last_finished_cell": None, "timeouts_in_a_row": 0}
    grace = float(job.get("interrupt_grace", DEFAULT_INTERRUPT_GRACE))
    client: Any = None

    def on_start(notebook: Any) -> None:
        phases.mark("ready")
        _limit_sends(client, grace)

    def on_cell_execute(cell: Any, cell_index: int) -> None:
        phases.cell_sent(cell_index)

    async def after_cell(cell: Any, cell_index: int, execute_reply: Any) -> None:
        phases.cell_done(execute_reply)
        state["last_finished_cell"] = cell_index
        content = (execute_reply or {}).get("content", {})
        timed_out = content.get("ename") == ERROR_ON_TIMEOUT["ename"]
        if timed_out:
            state["timeouts_in_a_row"] += 1
        else:
            state["timeouts_in_a_row"] = 0
        if content.get("status") == "error" and not any(
            o.get("output_type") == "error" and o.get("ename") == content.get("ename") for o in cell.outputs
        ):
            # A timeout reply has no matching error output yet (as in nbgrader's Execute).
            cell.outputs.append(
                nbformat.v4.new_output(
                    "error",
                    ename=content.get("ename", "Error"),
                    evalue=content.get("evalue", ""),
                    traceback=content.get("traceback") or ["ERROR: the cell failed"],
                )
            )
        _cap_outputs(cell)
        written = time.monotonic()
        _write_atomically(nb, target)
        phases.cell_written(time.monotonic() - written)
        if timed_out and not await _answers(client, grace):
            exc = KernelUnresponsive(
                f"a cell timed out and the kernel did not answer its interrupt within {grace:g} s; "
                "the kernel stopped responding, so the remaining cells were not run"
            )
            _abandon(client, {"status": "error", "last_finished_cell": cell_index,
                              "message": f"{type(exc).__name__}: {exc}"})
        if state["timeouts_in_a_row"] >= MAX_CONSECUTIVE_TIMEOUTS:
            raise KernelFrozen(
                f"{state['timeouts_in_a_row']} cells in a row timed out; the kernel no longer answers, "
                "so the remaining cells were not run"
            )

    client = NotebookClient(
        nb,
        kernel_manager_class=manager_class,
        timeout=int(job.get("timeout", 30)),
        startup_timeout=int(job.get("startup_timeout", 60)),
        kernel_name=kernel_name,
        km=km,
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout=ERROR_ON_TIMEOUT,
        record_timing=False,
        store_widget_state=False,
        # How a kernel's stdout is cut into stream messages depends on timing; merged,
        # the same notebook always yields the same outputs (and byte-identical feedback).
        coalesce_streams=True,
        extra_arguments=extra_arguments,
        resources={"metadata": {"path": str(Path.cwd())}},
        on_notebook_start=on_start,
        on_cell_execute=on_cell_execute,
        on_cell_executed=after_cell,
    )
    _write_atomically(nb, target)
    phases.mark("client")
    try:
        try:
            client.execute(stdout=subprocess.DEVNULL)
        finally:
            phases.mark("executed")
            if phases.enabled:
                phases.report(getattr(getattr(getattr(client, "km", None), "provisioner", None), "pid", None))
            if km is not None:  # nbclient leaves a kernel manager it was given running
                km.provisioner.kill_now()
    except DeadKernelError as exc:
        _write_atomically(nb, target)
        _status_line(
            {"status": "kernel_died", "last_finished_cell": state["last_finished_cell"], "message": str(exc)[:500]}
        )
        return 1
    except Exception as exc:
        _write_atomically(nb, target)
        _status_line(
            {
                "status": "error",
                "last_finished_cell": state["last_finished_cell"],
                "message": f"{type(exc).__name__}: {exc}"[:500],
            }
        )
        return 1
    _write_atomically(nb, target)
    _status_line({"status": "ok"})
    return 0


#: Seconds to wait for a ``kernel_info_request``'s reply, and then for a message on IOPub,
#: before asking again (jupyter_client's ``wait_for_ready`` waits as long).
READY_REPLY_SECONDS = 1.0
READY_IOPUB_SECONDS = 0.2
#: Milliseconds between the kernel client's attempts to connect to a kernel not listening yet.
READY_RECONNECT_MS = 10


def _ready_manager_class() -> type:
    """jupyter_client's asynchronous kernel manager, whose clients are ready as soon as the kernel and IOPub answer.

    Their ``wait_for_ready`` is jupyter_client's without its last step. Both ask the kernel for
    ``kernel_info`` until it replies on shell (``READY_REPLY_SECONDS`` per request) and a
    message then arrives on IOPub (``READY_IOPUB_SECONDS``: the IOPub subscription is
    connected, so no output of the first cell can be lost), until ``timeout``; a kernel that
    dies first raises ``RuntimeError``. jupyter_client then reads IOPub until it has been
    quiet for 0.2 s, dropping what it reads: a fixed 0.2 s per notebook. That flush is left
    out: the messages it would drop answer the readiness requests, and nbclient drops every
    IOPub message that does not answer the cell it runs (it matches the parent's message id).
    """
    import zmq
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ReadyClient(AsyncKernelClient):
        def _context_default(self) -> Any:
            context = super()._context_default()
            # The kernel is forked a moment before this client connects, before it has bound its ports:
            # zmq retries a refused connection after RECONNECT_IVL, 100 ms by default, on every channel.
            context.setsockopt(zmq.RECONNECT_IVL, READY_RECONNECT_MS)
            return context

        async def wait_for_ready(self, timeout: float | None = None) -> None:
            limit = float("inf") if timeout is None else float(timeout)
            deadline = time.monotonic() + limit
            while True:
                self.kernel_info()
                reply = await _next_message(self.shell_channel, "kernel_info_reply", None, READY_REPLY_SECONDS)
                if reply is not None and await _next_message(self.iopub_channel, None, None,
                                                             READY_IOPUB_SECONDS) is not None:
                    self._handle_kernel_info_reply(reply)
                    return
                if not await self._async_is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {limit:g} seconds")

    class ReadyKernelManager(AsyncKernelManager):
        @default("client_factory")
        def _ready_client(self) -> type:
            return ReadyClient

    return ReadyKernelManager


def _mark_kernel_info_reply(phases: _Phases) -> None:
    """Mark when the kernel client first handles a ``kernel_info_reply`` (benchmarks only)."""
    from jupyter_client.client import KernelClient

    original = KernelClient._handle_kernel_info_reply

    def handle(self: Any, msg: dict[str, Any]) -> None:
        if "kernel_info_reply" not in phases.marks:
            phases.mark("kernel_info_reply")
        original(self, msg)

    KernelClient._handle_kernel_info_reply = handle  # type: ignore[method-assign]


def _abandon(client: Any, status: dict[str, Any]) -> None:
    """Kill the kernel, report ``status`` and end this process at once, without nbclient's clean-up.

    A kernel whose connection is broken cannot be shut down politely: the shutdown request
    and the heartbeat thread's next send block for ever on its sockets (the clean-up joins
    that thread). The notebook so far is already written; the sandbox reaps what is left.
    """
    process = getattr(getattr(getattr(client, "km", None), "provisioner", None), "process", None)
    pid = getattr(process, "pid", None)
    if isinstance(pid, int):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _status_line(status)
    os._exit(1)


def _status_line(status: dict[str, Any]) -> None:
    """The run's status as the last line of stdout, on a line of its own."""
    sys.stdout.write("\n" + json.dumps(status) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
