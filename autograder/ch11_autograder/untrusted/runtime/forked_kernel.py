"""A notebook runner's kernel forked from the runner instead of launched. UNTRUSTED.

Under the submission's zygote (``zygote.py``, which sets ``CH11_FORK_KERNEL=1``) the
runner (``execute_notebook.py``, which loads this file by path from its own directory) is
itself a fork of an interpreter that has imported the kernel's libraries, still free of
threads, event loops and zmq contexts. :func:`fork_kernel` forks the kernel from it: the
child becomes ``ipykernel_launcher -f <connection file>`` with the environment, argument
list, ``sys.path`` and matplotlib backend a fresh kernel gets, and nbclient talks to it
through a kernel manager whose provisioner holds its pid (:class:`ForkedKernel`: the
``Popen`` calls jupyter_client's local provisioner makes).

Standard library only at import, and nothing of the package, like the rest of ``runtime/``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ForkedKernel", "fork_kernel"]


class ForkedKernel:
    """The Popen calls jupyter_client's local provisioner makes, for a kernel this process forked."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -signal.SIGKILL
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["ipykernel"], timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def fork_kernel(kernel_name: str, extra_arguments: list[str], at_start: Any, manager_class: type,
                restore: Callable[[Any], None]) -> Any:
    """Fork a kernel from this process and return a started kernel manager for it.

    The child is what ``python -m ipykernel_launcher -f <file> <extra_arguments>`` started by
    jupyter_client would be: its own session (interrupts go to its process group), stdin
    and stdout on /dev/null (as ``execute(stdout=DEVNULL)`` gives a launched kernel),
    ``JPY_PARENT_PID`` set, ``sys.path`` without the runner's directory, and matplotlib's
    backend left to ipykernel (the zygote imported matplotlib under ``MPLBACKEND=Agg``).
    It starts with ``at_start`` (``restore`` is ``fresh.restore`` and ``at_start`` what
    ``fresh.capture`` recorded at the runner's start: signal dispositions, mask, umask, numpy's
    seeding) and with no descriptor but 0, 1 and 2, as ``Popen(close_fds=True)`` starts one.
    Unlike a launched kernel, its working directory is the run's own one inside the zygote's.
    """
    import uuid

    import matplotlib
    from jupyter_client.connect import write_connection_file
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    # Where and how jupyter_client's KernelManager writes it for a kernel it launches.
    connection_file, _ = write_connection_file(None, ip="127.0.0.1", key=str(uuid.uuid4()).encode(),
                                               kernel_name=kernel_name)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            # A launched kernel is a fork and exec of this process: no parent-death signal.
            restore(dataclasses.replace(at_start, deathsig=0))
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.closerange(3, 1 << 16)  # this runner's descriptors (/dev/null included) are not the kernel's
            os.environ["JPY_PARENT_PID"] = str(parent)
            backend = os.environ.get("MPLBACKEND") or "module://matplotlib_inline.backend_inline"
            os.environ["MPLBACKEND"] = backend
            matplotlib.rcParams["backend"] = backend  # what a fresh import reads from MPLBACKEND
            import importlib.util

            spec = importlib.util.find_spec("ipykernel_launcher")
            sys.argv = [str(spec.origin if spec else "ipykernel_launcher"), "-f", connection_file, *extra_arguments]
            del sys.path[0]  # the runner's directory; ipykernel_launcher drops its own first entry too
            from ipykernel import kernelapp

            kernelapp.launch_new_instance()
        except SystemExit as exc:
            os._exit(exc.code if isinstance(exc.code, int) else 0)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    km = manager_class(kernel_name=kernel_name, connection_file=connection_file)
    km.load_connection_file(connection_file)

    class Forked(LocalProvisioner):
        def kill_now(self) -> None:
            if self.process is not None:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                self.process.wait()

    provisioner = Forked(kernel_id=km.kernel_id or "forked", kernel_spec=km.kernel_spec, parent=km)
    provisioner.process = ForkedKernel(pid)  # type: ignore[assignment]  # the Popen calls it makes
    provisioner.pid = pid
    provisioner.pgid = pid
    provisioner.connection_info = km.get_connection_info()
    km.provisioner = provisioner
    return km
