"""The notebook runner's kernel client (untrusted/runtime/execute_notebook.py).

The runner forks its kernel and connects at once, before the kernel has bound its ports;
zmq retries a refused connection after ``RECONNECT_IVL``. The runner's client retries every
``READY_RECONNECT_MS`` on every channel; jupyter_client's own keeps zmq's 100 ms (control).
"""

from __future__ import annotations

import zmq
from ch11_autograder.untrusted.runtime import execute_notebook
from jupyter_client.asynchronous import AsyncKernelClient

CHANNELS = ("shell_channel", "iopub_channel", "stdin_channel", "control_channel", "hb_channel")


def _reconnect_intervals(client: AsyncKernelClient) -> dict[str, int]:
    intervals = {}
    for name in CHANNELS:
        channel = getattr(client, name)
        socket = getattr(channel, "socket", None) or getattr(channel, "_socket", None)
        if socket is None:  # the heartbeat channel makes its socket when it starts
            socket = client.context.socket(zmq.REQ)
            intervals[name] = socket.getsockopt(zmq.RECONNECT_IVL)
            socket.close(linger=0)
        else:
            intervals[name] = socket.getsockopt(zmq.RECONNECT_IVL)
    return intervals


def test_the_runners_client_retries_a_kernel_not_listening_yet_sooner_than_zmq_would():
    manager = execute_notebook._ready_manager_class()()
    ready = manager.client_factory(ip="127.0.0.1", shell_port=1, iopub_port=2, stdin_port=3, control_port=4,
                                   hb_port=5)
    plain = AsyncKernelClient(ip="127.0.0.1", shell_port=1, iopub_port=2, stdin_port=3, control_port=4, hb_port=5)
    try:
        assert set(_reconnect_intervals(ready).values()) == {execute_notebook.READY_RECONNECT_MS}
        assert set(_reconnect_intervals(plain).values()) == {100}  # zmq's default
    finally:
        for client in (ready, plain):
            client.stop_channels()
            client.context.destroy(linger=0)
