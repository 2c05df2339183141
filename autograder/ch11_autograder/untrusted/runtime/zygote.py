"""One submission's runtime: imports the libraries once, then forks every run from that state. UNTRUSTED.

Started by a launcher (``untrusted/forkserver.py``) as ``zygote.py`` with its stdin a
unix stream socket to the grader, inside the submission's sandbox. It imports what every
runtime script needs (numpy, matplotlib, nbformat, nbclient, jupyter_client, ipykernel;
numpy and matplotlib only when ``zygote.json`` says it forks verdict workers alone)
and never runs student code itself; each run it is asked for is a fork of that state, so a
notebook's runner, its kernel (forked by the runner, see ``execute_notebook.py``) and a
verdict worker start without the ~1 CPU-s of imports each, and nothing one run defines
reaches the next: a fork sees only what the zygote holds.

Wire format on the socket, both ways: ``frames.py`` (a 4-byte big-endian length, a JSON
header of that length, then the raw bytes the header announces). Requests:

* ``{"op": "spawn", "id": N, "script": name, "args": [...], "env": {...},
  "cpu_seconds": s, "max_file_bytes": b, "files": [[relpath, size], ...],
  "writeback": [relpath, ...]}`` with the files' bytes after it, and 3 descriptors
  (the run's stdin, stdout, stderr) passed with ``SCM_RIGHTS`` on the header.
  Answer: ``{"op": "started", "id": N}`` or ``{"op": "failed", "id": N, "message": ...}``.
* ``{"op": "kill", "id": N}``: SIGKILL the run's process group.

When a run ends: ``{"op": "exited", "id": N, "status": code or -signal,
"writeback": [[relpath, size or null], ...]}`` and the writeback files' bytes (``null``:
missing, not a regular file, or over ``max_file_bytes``). Then every process the run left
behind is killed (the zygote is their subreaper), its directory is removed, and the
``wipe`` directories named in ``zygote.json`` are put back as they were after the imports.

Each run: its own directory ``runs/<N>`` (cwd) holding the files sent, a new session,
RLIMIT_CPU/FSIZE/CORE of its own (a fork's CPU time starts at zero), the environment of
the zygote plus the request's, OOM score 1000 (the memory limit is the submission's, and a
run, not the zygote, should be the one the kernel kills), the signal dispositions, signal
mask, umask and numpy generator seeding of a freshly started interpreter (``fresh.py``),
and the script run as ``__main__``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import json
import os
import resource
import runpy
import shutil
import signal
import socket
import stat
import sys
import threading
from pathlib import Path
from typing import Any

FORK_KERNEL_ENV = "CH11_FORK_KERNEL"
RUNS = Path("runs")
_PR_SET_CHILD_SUBREAPER = 36
#: Modules every run imports; loaded once here. Order matters only for cost.
#: Not matplotlib_inline.backend_inline: importing it inside a kernel is what hooks figures
#: into IPython's display, so the kernel must be the one to import it.
PRELOAD = (
    "numpy",
    "matplotlib",
    "matplotlib.pyplot",
    "nbformat",
    "nbclient",
    "jupyter_client",
    "jupyter_client.asynchronous",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.kernelspec",
    "psutil",
    "zmq",
)
#: What a zygote that forks only verdict workers (``zygote.json``: ``"runs": "workers"``) loads:
#: what the student's cells import (``worker.py`` itself needs the standard library only). Notebook
#: runners and kernels need the rest; a runner forked from such a zygote still works, importing it.
WORKER_PRELOAD = ("numpy", "matplotlib", "matplotlib.pyplot")


def _load(name: str) -> Any:
    """Import ``name``.py from this script's directory under a private name (modules the grader's side shares)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_ch11_zygote_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


frames = _load("frames")
fresh = _load("fresh")
children = _load("children")
#: This interpreter's state at its start (nothing above changes it): what every run starts with.
AT_START = fresh.capture()


def _warm_caches() -> None:
    """Fill the caches every notebook runner fills the same way, from nothing a run brings.

    nbformat's compiled notebook schema (the runner validates the notebook it reads, about
    40 ms per process) and jupyter_client's list of kernel provisioners (read from every
    installed package's entry points when the runner's kernel manager looks up its kernel
    spec, about 25 ms). Each is made once here instead of once per notebook; a run that
    needs another schema version compiles it itself, as before.
    """
    with contextlib.suppress(Exception):
        import nbformat

        nbformat.validate(nbformat.v4.new_notebook())
    with contextlib.suppress(Exception):
        from jupyter_client.provisioning.factory import KernelProvisionerFactory

        KernelProvisionerFactory.instance()


def _send(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    sock.sendall(frames.pack(header, payload))


class Zygote:
    def __init__(self, sock: socket.socket, wipe: list[str]) -> None:
        self.sock = sock
        # Only the runner is told to fork its kernel; no other run sees the variable.
        self.fork_kernels = os.environ.pop(FORK_KERNEL_ENV, "") == "1"
        self.runs: dict[int, dict[str, Any]] = {}  # pid -> request
        self.wipe = [Path(p) for p in wipe]
        self.snapshot: dict[Path, bytes | None] = {}
        self.runtime_dir = Path(__file__).resolve().parent

    # ------------------------------------------------------------------ state to restore

    def take_snapshot(self) -> None:
        """Remember the wipe directories' entries (files with their bytes) as the imports left them."""
        for root in self.wipe:
            if not root.is_dir():
                continue
            for dirpath, _dirs, filenames in os.walk(root):
                self.snapshot[Path(dirpath)] = None
                for name in filenames:
                    path = Path(dirpath) / name
                    with contextlib.suppress(OSError):
                        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 16 << 20:
                            self.snapshot[path] = path.read_bytes()

    def restore(self) -> None:
        """Remove whatever a run added under the wipe directories; rewrite what it changed."""
        for root in self.wipe:
            if not root.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(root, topdown=False):
                for name in filenames + dirnames:
                    path = Path(dirpath) / name
                    if path in self.snapshot and not path.is_symlink():
                        continue
                    with contextlib.suppress(OSError):
                        if path.is_dir() and not path.is_symlink():
                            shutil.rmtree(path, ignore_errors=True)
                        else:
                            path.unlink()
        for path, content in self.snapshot.items():
            with contextlib.suppress(OSError):
                if content is None:
                    path.mkdir(parents=True, exist_ok=True)
                elif not path.is_file() or path.is_symlink() or path.read_bytes() != content:
                    with contextlib.suppress(OSError):
                        path.unlink()
                    path.write_bytes(content)

    # ------------------------------------------------------------------ runs

    def spawn(self, request: dict[str, Any], fds: list[int], files: list[tuple[str, bytes]]) -> None:
        run_id = int(request["id"])
        workdir = RUNS / str(run_id)
        workdir.mkdir(parents=True)
        for rel, data in files:
            target = workdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        script = str(request["script"])
        path = self.runtime_dir / script
        if "/" in script or not path.is_file():
            raise ValueError(f"{script!r} is not a runtime script")
        for rel in request.get("writeback", []):
            (workdir / rel).touch()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = self._child(request, fds, workdir, path)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                import traceback

                with contextlib.suppress(BaseException):
                    traceback.print_exc()
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code & 0xFF)
        self.runs[pid] = {**request, "workdir": workdir}

    def _child(self, request: dict[str, Any], fds: list[int], workdir: Path, path: Path) -> int:
        fresh.restore(AT_START)  # signals, mask, umask, numpy's generator: as the script would start
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)  # the zygote's socket, wake-up pipe and selector are not the run's
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
        os.setsid()
        os.chdir(workdir)
        os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
        if self.fork_kernels and path.name == "execute_notebook.py":
            os.environ[FORK_KERNEL_ENV] = "1"
        cpu = int(request["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        size = int(request["max_file_bytes"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
        sys.argv = [str(path), *[str(a) for a in request.get("args", [])]]
        sys.path[0] = str(path.parent)
        runpy.run_path(str(path), run_name="__main__")
        return 0

    def kill(self, run_id: int) -> None:
        for pid, request in self.runs.items():
            if int(request["id"]) == run_id:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def reap(self, pid: int, code: int) -> None:
        """Answer for the run that ended (process ``pid``, status ``code``), after killing what it left behind."""
        request = self.runs.pop(pid, None)
        if request is None:
            return  # a stray process the zygote adopted
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        self.kill_strays()
        workdir: Path = request["workdir"]
        limit = int(request["max_file_bytes"])
        listed: list[list[Any]] = []
        payload = bytearray()
        for rel in request.get("writeback", []):
            data = _read_plain(workdir, rel, limit)
            listed.append([rel, None if data is None else len(data)])
            payload += data or b""
        shutil.rmtree(workdir, ignore_errors=True)
        if not self.runs:
            self.restore()
        _send(self.sock, {"op": "exited", "id": request["id"], "status": code, "writeback": listed},
              bytes(payload))

    def kill_strays(self) -> None:
        """SIGKILL every process of ours that no live run owns (orphans reparent to us: we are their subreaper)."""
        me = os.getpid()
        for _ in range(100):
            tree = _children_by_parent()
            live = set(self.runs)
            stray = [pid for pid in tree.get(me, []) if pid not in live]
            if not stray:
                return
            for pid in stray:
                for victim in _descendants(tree, pid):
                    with contextlib.suppress(OSError):
                        os.kill(victim, signal.SIGKILL)
            for pid in stray:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)

    def serve(self) -> None:
        """Answer requests and reap runs until the grader closes the socket (``children.serve``)."""
        children.serve(self.sock, self.answer, self.reap)

    def answer(self) -> bool:
        """Read the waiting request and act on it; ``False``: the socket has ended."""
        try:
            request, fds, files = self.receive()
        except EOFError:
            return False
        if request.get("op") == "kill":
            self.kill(int(request["id"]))
            return True
        try:
            self.spawn(request, fds, files)
            _send(self.sock, {"op": "started", "id": request["id"]})
        except Exception as exc:
            _send(self.sock, {"op": "failed", "id": request.get("id"),
                              "message": f"{type(exc).__name__}: {exc}"[:500]})
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def receive(self) -> tuple[dict[str, Any], list[int], list[tuple[str, bytes]]]:
        raw_len, fds, _, _ = socket.recv_fds(self.sock, frames.LENGTH_BYTES, 3)
        if not raw_len:
            raise EOFError
        request = frames.read_header(self.sock, raw_len)
        files = [(str(rel), frames.read_exact(self.sock, int(size))) for rel, size in request.get("files", [])]
        return request, list(fds), files


def _read_plain(workdir: Path, rel: str, limit: int) -> bytes | None:
    try:
        fd = os.open(workdir / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _children_by_parent() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _descendants(tree: dict[int, list[int]], root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def main() -> int:
    config = json.loads(Path("zygote.json").read_text(encoding="utf-8"))
    sock = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # jsonschema's optional IRI grammar costs 1-1.5 s and no notebook schema uses it
    # (execute_notebook.py blocks it the same way).
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    workers_only = config.get("runs") == "workers"
    for name in WORKER_PRELOAD if workers_only else PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    if not workers_only:  # the caches are the notebook runners'
        _warm_caches()
    if threading.active_count() != 1:  # a fork would copy locks other threads hold
        _send(sock, {"op": "refused", "message": f"{threading.active_count()} threads after the imports"})
        return 3
    # The imported modules' objects never die: out of the collector's sight, a fork's collections
    # do not walk them (a fresh interpreter's would), nor write to their pages, which then stay shared.
    gc.collect()
    gc.freeze()
    # Its own directory too: a run can write beside its directory (``../``).
    zygote = Zygote(sock, [".", *(str(p) for p in config.get("wipe", []))])
    zygote.take_snapshot()
    _send(sock, {"op": "ready", "pid": os.getpid()})
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
