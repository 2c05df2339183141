"""The bwrap command line and the sandbox environment for one run, from a mount plan.

Pure functions: :func:`bwrap_argv` orders bwrap's options (namespaces, the plan's
mounts, the per-run tmpfs mounts, the scratch copy and its writeback binds, the
environment) and ends with ``-- <python> -s <runtime>/<script> <args>``;
:func:`sandbox_env` is the environment every run starts with; :func:`data_blobs` the
contents of the generated files whose fds :func:`bwrap_argv` names. Opening those fds
and starting bwrap is ``backends.bwrap``'s part.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..launch import Limits
from .bwrap_plan import HOME, RUNTIME_MOUNT, SANDBOX_GID, SANDBOX_UID, SCRATCH_MOUNT, VENV_MOUNT, MountPlan

__all__ = ["MPLCONFIGDIR", "bwrap_argv", "data_blobs", "sandbox_env"]

#: matplotlib's configuration and cache directory in every run (in the run's private ``/tmp``).
MPLCONFIGDIR = "/tmp/matplotlib"


def data_blobs(plan: MountPlan) -> list[bytes]:
    """Contents of the generated files (passwd, group, hosts), in the order :func:`bwrap_argv` uses their fds."""
    return [mt.src.encode() for mt in plan.mounts if mt.kind == "data"]


def sandbox_env(plan: MountPlan) -> dict[str, str]:
    """The environment of every sandboxed script (a run's own entries are added on top)."""
    env = {
        "PATH": f"{VENV_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": MPLCONFIGDIR,
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
    if plan.pythonpath:
        env["PYTHONPATH"] = ":".join(plan.pythonpath)
    return env


def bwrap_argv(
    plan: MountPlan,
    script: str,
    args: Sequence[str],
    *,
    runtime_dir: Path,
    scratch: Path,
    tmp_bytes: int,
    env: Mapping[str, str] | None = None,
    data_fds: Sequence[int] | None = None,
    scratch_bytes: int = Limits.scratch_bytes,
    seed: Sequence[tuple[str, int | None]] = (),
    writeback: Sequence[str] = (),
    tmp_files: Sequence[tuple[str, int]] = (),
) -> list[str]:
    """The bwrap argument list (without the bwrap executable) for one run.

    ``runtime_dir`` is mounted read-only at the runtime mount point. ``data_fds`` are
    the fds holding :func:`data_blobs` (``None``: the placeholder ``<fd>``, for
    display). ``tmp_bytes`` sizes ``/tmp`` (``/dev/shm`` gets a quarter, at least
    1 MiB); ``scratch_bytes`` the scratch tmpfs. ``seed`` lists what the scratch tmpfs
    starts with: ``(relative path, fd of its content)`` for a file, ``(relative path,
    None)`` for a directory, parents first. ``writeback`` files of ``scratch`` are bound
    over their copies. ``tmp_files`` are files the private ``/tmp`` starts with: ``(absolute
    path below /tmp, fd of its content)``, each a copy of its own that the run may change;
    missing parent directories are made. ``env`` entries override :func:`sandbox_env`.
    """
    argv = [
        "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns",
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "ch11-sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--clearenv",
        "--ro-bind", str(runtime_dir), RUNTIME_MOUNT,
    ]  # fmt: skip
    fds = iter(data_fds) if data_fds is not None else None
    for mount in plan.mounts:
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
        "--size", str(max(tmp_bytes // 4, 1024**2)), "--tmpfs", "/dev/shm",
        "--size", str(tmp_bytes), "--tmpfs", "/tmp",
        "--dir", HOME,
    ]  # fmt: skip
    for path, file_fd in tmp_files:
        parent = posixpath.dirname(path)
        if not path.startswith("/tmp/") or posixpath.normpath(path) != path:
            raise ValueError(f"{path!r} is not a normalised path below /tmp")
        if parent != "/tmp":
            argv += ["--dir", parent]
        argv += ["--file", str(file_fd), path]
    argv += [
        "--size", str(scratch_bytes), "--tmpfs", SCRATCH_MOUNT,
    ]  # fmt: skip
    for rel, content_fd in seed:
        if content_fd is None:
            argv += ["--dir", posixpath.join(SCRATCH_MOUNT, rel)]
        else:
            argv += ["--file", str(content_fd), posixpath.join(SCRATCH_MOUNT, rel)]
    for rel in writeback:
        argv += ["--bind", str(scratch / rel), posixpath.join(SCRATCH_MOUNT, rel)]
    argv += [
        "--chdir", SCRATCH_MOUNT,
        "--remount-ro", "/dev",
        "--remount-ro", "/",
    ]  # fmt: skip
    for key, value in {**sandbox_env(plan), **(env or {})}.items():
        argv += ["--setenv", key, value]
    argv += ["--", plan.python, "-s", f"{RUNTIME_MOUNT}/{script}", *args]
    return argv
