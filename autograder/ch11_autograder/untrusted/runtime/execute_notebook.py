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

On exit one JSON line goes to stdout (after a newline of its own):
``{"status": "ok"}`` or ``{"status": "kernel_died" | "error",
"last_finished_cell": index or null, "message": ...}``; ``message`` starts with
the exception's class name (``KernelUnresponsive: ...``, ``KernelFrozen: ...``).
Everything this script writes is untrusted data for the grader, which
validates and sanitizes it.
"""

from __future__ import annotations

import contextlib
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


#: Seconds a kernel has to answer after a timed-out cell's interrupt (job key ``interrupt_grace``).
DEFAULT_INTERRUPT_GRACE = 5.0


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
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            reply = await kc.shell_channel.get_msg(timeout=left)
        except (TimeoutError, queue.Empty):
            return False
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return True
    return False


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


def main(argv: list[str]) -> int:
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
    state: dict[str, Any] = {"last_finished_cell": None, "timeouts_in_a_row": 0}
    grace = float(job.get("interrupt_grace", DEFAULT_INTERRUPT_GRACE))
    client: Any = None

    def on_start(notebook: Any) -> None:
        _limit_sends(client, grace)

    async def after_cell(cell: Any, cell_index: int, execute_reply: Any) -> None:
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
        _write_atomically(nb, target)
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
        timeout=int(job.get("timeout", 30)),
        startup_timeout=int(job.get("startup_timeout", 60)),
        kernel_name=str(job.get("kernel_name", "python3")),
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout=ERROR_ON_TIMEOUT,
        record_timing=False,
        store_widget_state=False,
        # How a kernel's stdout is cut into stream messages depends on timing; merged,
        # the same notebook always yields the same outputs (and byte-identical feedback).
        coalesce_streams=True,
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
        resources={"metadata": {"path": str(Path.cwd())}},
        on_notebook_start=on_start,
        on_cell_executed=after_cell,
    )
    _write_atomically(nb, target)
    try:
        client.execute(stdout=subprocess.DEVNULL)
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
