"""The bwrap sandbox's mount plan: what of the host is visible inside, and where.

:func:`make_plan` turns the host's layout (:class:`HostLayout`: system directories,
Python installations, where modules live) and the launcher's options into a
:class:`MountPlan`, independent of any one run's scratch directory and limits; it only
looks at the host, never changes it. :func:`check_reveals` and :func:`check_scratch`
refuse plans and scratch directories that would show a forbidden path. The paths
inside the sandbox are fixed here (``/scratch``, ``/opt/ch11/...``); see the
``backends.bwrap`` module docstring for the whole layout.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..launch import PROTOCOL_DIR, RUNTIME_DIR, SandboxUnavailable

__all__ = [
    "HOME",
    "LIB_MOUNT",
    "PROTOCOL_MOUNT",
    "RUNTIME_MOUNT",
    "SANDBOX_GID",
    "SANDBOX_UID",
    "SCRATCH_MOUNT",
    "VENV_MOUNT",
    "HostLayout",
    "Mount",
    "MountPlan",
    "check_reveals",
    "check_scratch",
    "make_plan",
]

SANDBOX_UID = 65534
SANDBOX_GID = 65534

SCRATCH_MOUNT = "/scratch"
OPT = "/opt/ch11"
RUNTIME_MOUNT = f"{OPT}/untrusted/runtime"  # so that runtime/../../protocol/ is /opt/ch11/protocol/
VENV_MOUNT = f"{OPT}/venv"
LIB_MOUNT = f"{OPT}/lib"
HOME = "/tmp/home"
#: Where launch.PROTOCOL_DIR appears (its ``.py`` files, each bound on its own): the same
#: position relative to the runtime directory as on the host (runtime scripts load ``../../protocol/``).
PROTOCOL_MOUNT = posixpath.normpath(f"{RUNTIME_MOUNT}/{os.path.relpath(PROTOCOL_DIR, RUNTIME_DIR)}")

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc/fonts: matplotlib runs fc-list, which prints a config error on stderr without it.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts")

_PASSWD = (
    "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:{HOME}:/usr/sbin/nologin\n"
)
_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_GID}:\n"
_HOSTS = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"


@dataclass(frozen=True)
class Mount:
    """One step of the plan, in bwrap's terms.

    Attributes:
        kind: ``ro-bind``, ``bind``, ``symlink`` (``src`` is the link target), ``tmpfs``,
            ``remount-ro`` or ``data`` (``src`` is the file's text, passed through an fd).
        src: host path, link target or data; "" where the kind takes none.
        dest: absolute path inside the sandbox.
    """

    kind: str
    src: str
    dest: str
    size: int | None = None


@dataclass
class MountPlan:
    """The mount plan of a launcher, computed once (independent of scratch and limits)."""

    mounts: list[Mount] = field(default_factory=list)
    python: str = ""
    pythonpath: list[str] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    #: host directories mounted entry by entry, with the entries left out
    covered: dict[Path, set[str]] = field(default_factory=dict)


def resolved(p: str | os.PathLike[str]) -> Path:
    return Path(p).resolve()


def inside(child: Path, parent: Path) -> bool:
    """``child`` is ``parent`` or lies below it (lexically; resolve both first)."""
    return child == parent or parent in child.parents


def module_locations(name: str) -> list[Path]:
    """Host paths of a top-level module (package dirs or the module file), without importing it.

    Every location counts, not only the one an import would take: a regular package earlier on
    ``sys.path`` shadows a folder of the same name elsewhere (an editable install's package beside
    the data files a wheel build put in ``site-packages/<name>/``), and once the first is hidden
    that folder would import as a namespace package. So each ``sys.path`` entry's ``<name>``
    folder and ``<name>.py`` file is named too.
    """
    found: list[Path] = []
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        if spec.submodule_search_locations:
            found.extend(resolved(p) for p in spec.submodule_search_locations)
        elif spec.origin and spec.origin not in ("built-in", "frozen"):
            found.append(resolved(spec.origin))
    for entry in sys.path:
        base = Path(entry or ".")
        for candidate in (base / name, base / f"{name}.py"):
            if candidate.exists():
                found.append(resolved(candidate))
    return list(dict.fromkeys(found))


def dist_names(module: str) -> set[str]:
    """Canonical names of the distributions that install top-level ``module``."""
    try:
        dists = importlib.metadata.packages_distributions().get(module, [])
    except Exception:  # metadata of some unrelated dist may be broken; hiding still covers the code
        dists = []
    return {_canonical(d) for d in dists}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@dataclass(frozen=True)
class HostLayout:
    """The facts about the host that a plan is made from; the defaults are this process's.

    Tests pass a layout of their own (a fake venv under a temporary directory).

    Attributes:
        system_dirs: directories bound read-only at their own path when they exist
            (symbolic links, as on merged-/usr systems, become the same links inside).
        etc_files: files of ``/etc`` bound when they exist.
        base_prefix, prefix, executable: ``sys.base_prefix``, ``sys.prefix``, ``sys.executable``.
        locate: host locations of a top-level module (:func:`module_locations`).
        distributions: canonical distribution names of a module (:func:`dist_names`).
    """

    system_dirs: Sequence[str] = SYSTEM_DIRS
    etc_files: Sequence[str] = ETC_FILES
    base_prefix: str = sys.base_prefix
    prefix: str = sys.prefix
    executable: str = sys.executable
    locate: Callable[[str], list[Path]] = module_locations
    distributions: Callable[[str], set[str]] = dist_names


def make_plan(
    *,
    runtime_dir: Path,
    extra_files: Mapping[Path, str],
    importable_packages: Sequence[str],
    hidden_modules: Sequence[str],
    forbidden: Sequence[Path],
    host: HostLayout | None = None,
) -> MountPlan:
    """The mounts of every run of a launcher (scratch, /tmp, /proc, /dev are added per run).

    Mounted read-only: the system directories, a few ``/etc`` files and generated
    passwd, group and hosts; the base Python installation at its host path when it is
    not inside a system directory; the virtualenv (when ``prefix`` is not the base) at
    ``/opt/ch11/venv``; each of ``extra_files`` at its sandbox path; each of
    ``importable_packages`` outside those trees at ``/opt/ch11/lib/<name>`` (then on
    ``pythonpath``). A directory of a mounted tree that holds one of ``hidden_modules``
    is rebuilt entry by entry without the module and its ``.dist-info``/``.egg-info``.
    ``runtime_dir`` is mounted per run (the probe swaps it), but counts as a source.

    Raises:
        SandboxUnavailable: an extra file is missing, or a source would reveal one of
            ``forbidden`` (see :func:`check_reveals`).
        ValueError: an extra file's sandbox path is not absolute.
    """
    host = host or HostLayout()
    plan = MountPlan()
    m = plan.mounts.append

    for d in host.system_dirs:
        if os.path.islink(d):
            m(Mount("symlink", os.readlink(d), d))
        elif os.path.isdir(d):
            m(Mount("ro-bind", d, d))
    for f in host.etc_files:
        if os.path.exists(f):
            m(Mount("ro-bind", f, f))
    m(Mount("data", _PASSWD, "/etc/passwd"))
    m(Mount("data", _GROUP, "/etc/group"))
    m(Mount("data", _HOSTS, "/etc/hosts"))

    # Python trees: (host root, sandbox root). The base installation keeps its
    # path (the venv's pyvenv.cfg and bin/python symlink name it).
    trees: list[tuple[Path, str]] = []
    base = resolved(host.base_prefix)
    if not any(inside(base, Path(d)) for d in host.system_dirs if os.path.isdir(d) and not os.path.islink(d)):
        trees.append((base, str(base)))
    prefix = Path(host.prefix).absolute()
    if prefix.resolve() != base:
        trees.append((prefix, VENV_MOUNT))
        exe = Path(host.executable).absolute()
        try:
            plan.python = f"{VENV_MOUNT}/{exe.relative_to(prefix)}"
        except ValueError:
            plan.python = str(resolved(host.executable))
    else:
        plan.python = str(resolved(host.executable))

    # Hidden modules inside a mounted tree: the directory that holds them is
    # rebuilt entry by entry without them.
    rebuild: dict[Path, set[str]] = {}
    for mod in hidden_modules:
        for loc in host.locate(mod):
            for host_root, _ in trees:
                if inside(loc, resolved(host_root)) and loc != resolved(host_root):
                    rebuild.setdefault(loc.parent, set()).add(loc.name)
                    dists = host.distributions(mod)
                    for entry in os.listdir(loc.parent):
                        if entry.endswith((".dist-info", ".egg-info")):
                            if _canonical(entry.split("-")[0]) in dists:
                                rebuild[loc.parent].add(entry)

    plan.covered = rebuild
    for host_root, dest in trees:
        m(Mount("ro-bind", str(host_root), dest))
        plan.sources.append(resolved(host_root))
        for host_dir, omit in rebuild.items():
            if not inside(host_dir, resolved(host_root)):
                continue
            sandbox_dir = dest + "/" + str(host_dir.relative_to(resolved(host_root)))
            m(Mount("tmpfs", "", sandbox_dir))
            for entry in sorted(os.listdir(host_dir)):
                if entry in omit:
                    continue
                hp = host_dir / entry
                if hp.is_symlink():
                    m(Mount("symlink", os.readlink(hp), f"{sandbox_dir}/{entry}"))
                else:
                    m(Mount("ro-bind", str(hp), f"{sandbox_dir}/{entry}"))
                    plan.sources.append(resolved(hp))
            m(Mount("remount-ro", "", sandbox_dir))

    plan.sources.append(runtime_dir)  # mounted by bwrap_argv (the probe swaps it)
    for host_file, dest in extra_files.items():
        if not host_file.is_file():
            raise SandboxUnavailable(f"extra file {host_file} does not exist")
        if not dest.startswith("/"):
            raise ValueError(f"sandbox path {dest!r} must be absolute")
        m(Mount("ro-bind", str(host_file), dest))
        plan.sources.append(host_file)

    for pkg in importable_packages:
        for loc in host.locate(pkg):
            if any(inside(loc, resolved(h)) for h, _ in trees):
                continue  # importable through the mounted trees already
            m(Mount("ro-bind", str(loc), f"{LIB_MOUNT}/{loc.name}"))
            plan.sources.append(loc)
            if LIB_MOUNT not in plan.pythonpath:
                plan.pythonpath.append(LIB_MOUNT)

    check_reveals(plan.sources, forbidden, plan.covered)
    return plan


def check_reveals(sources: Iterable[Path], forbidden: Sequence[Path],
                  covered: Mapping[Path, set[str]] | None = None) -> None:
    """Refuse when mounting any of ``sources`` would show one of ``forbidden``.

    A forbidden path inside a source is fine only when ``covered`` leaves it out
    (its directory is mounted entry by entry without the entry that holds it).

    Raises:
        SandboxUnavailable: naming the source and the forbidden path.
    """
    def left_out(bad: Path, src: Path) -> bool:
        return any(
            inside(d, src) and inside(bad, d) and bad != d and bad.relative_to(d).parts[0] in omit
            for d, omit in (covered or {}).items()
        )

    for src in sources:
        for bad in forbidden:
            if inside(bad, src) and not left_out(bad, src):
                raise SandboxUnavailable(
                    f"refusing to sandbox: mounting {src} would reveal {bad}, which must stay invisible"
                )


def check_scratch(scratch: Path, plan: MountPlan, forbidden: Sequence[Path], bwrap: Path) -> None:
    """Scratch is writable inside: it must not overlap anything mounted or forbidden.

    Inside a mounted tree (say the venv's site-packages), student code could
    plant modules the grader itself imports; around a forbidden path, it
    would see (and could change) it. ``bwrap`` (the executable) counts as mounted.

    Raises:
        SandboxUnavailable: naming the overlapping path.
    """
    for other in [*plan.sources, *forbidden, bwrap.resolve()]:
        if inside(scratch, other) or inside(other, scratch):
            raise SandboxUnavailable(
                f"refusing to sandbox: scratch directory {scratch} overlaps {other}, which would then be "
                "visible or writable inside; use a scratch directory of its own"
            )
