"""Per-run cgroups: where this process may create them, one run's cgroup, and sweeping stale ones.

Nothing here is specific to a backend. :func:`discover_cgroups` finds, below this
process's own cgroup (v2 unified, or v1 with one hierarchy per controller), where a
child with the pids and memory controllers can be made; :class:`RunCgroup` is the
cgroup of one run, created with its limits, joined by the child before it can fork,
and removed when the run is reaped; :func:`sweep_stale_cgroups` removes what graders
killed with SIGKILL left behind.

The parsing of ``/proc/self/mountinfo`` and ``/proc/self/cgroup`` and the mapping of a
cgroup path to a directory are pure functions of their text (:func:`parse_mountinfo`,
:func:`parse_proc_cgroup`, :func:`path_under_mount`, :func:`v2_candidates`,
:func:`v1_candidates`); only :func:`discover_cgroups` reads the files and probes.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..launch import Limits

__all__ = [
    "CgroupSupport",
    "MountEntry",
    "RunCgroup",
    "discover_cgroups",
    "parse_mountinfo",
    "parse_proc_cgroup",
    "path_under_mount",
    "sweep_stale_cgroups",
    "v1_candidates",
    "v2_candidates",
]


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


@dataclass(frozen=True)
class MountEntry:
    """One line of ``/proc/self/mountinfo``, the fields cgroup discovery needs.

    Attributes:
        root: the path inside the mounted filesystem that is mounted (field 4).
        point: where it is mounted, ``\\040`` decoded to a space (field 5).
        fstype: filesystem type after the `` - `` separator (``cgroup``, ``cgroup2``, ...).
        options: the super options (for cgroup v1: the controllers of the hierarchy).
    """

    root: str
    point: str
    fstype: str
    options: frozenset[str]


def parse_mountinfo(text: str) -> list[MountEntry]:
    """The mounts listed in ``text`` (the format of ``/proc/self/mountinfo``); malformed lines are skipped."""
    out = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        rfields = right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        out.append(MountEntry(fields[3], fields[4].replace("\\040", " "), rfields[0], frozenset(rfields[2].split(","))))
    return out


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """Controller name (or "" for the unified hierarchy) -> cgroup path, from ``/proc/self/cgroup`` text."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def path_under_mount(mount_root: str, mount_point: str, path: str) -> Path | None:
    """Where cgroup ``path`` appears under a mount of ``mount_root`` at ``mount_point``, or None if outside it."""
    if path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
        rel = os.path.relpath(path, mount_root)
        return Path(mount_point) / rel if rel != "." else Path(mount_point)
    return None


def v2_candidates(mounts: Sequence[MountEntry], own: Mapping[str, str]) -> list[tuple[MountEntry, Path]]:
    """(cgroup2 mount, this process's cgroup directory in it) for every cgroup2 mount that shows it."""
    if "" not in own:
        return []
    found = []
    for mount in mounts:
        if mount.fstype != "cgroup2":
            continue
        parent = path_under_mount(mount.root, mount.point, own[""])
        if parent is not None:
            found.append((mount, parent))
    return found


def v1_candidates(mounts: Sequence[MountEntry], own: Mapping[str, str], controller: str) -> list[Path]:
    """This process's cgroup directory in each cgroup v1 hierarchy of ``controller``, in mount order."""
    if controller not in own:
        return []
    found = []
    for mount in mounts:
        if mount.fstype != "cgroup" or controller not in mount.options:
            continue
        parent = path_under_mount(mount.root, mount.point, own[controller])
        if parent is not None:
            found.append(parent)
    return found


def _mountinfo() -> list[MountEntry]:
    with open("/proc/self/mountinfo") as fh:
        return parse_mountinfo(fh.read())


def _own_cgroups() -> dict[str, str]:
    with open("/proc/self/cgroup") as fh:
        return parse_proc_cgroup(fh.read())


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
    for mount, parent in v2_candidates(mounts, own):
        try:
            available = set((parent / "cgroup.controllers").read_text().split())
        except OSError:
            continue
        if not {"pids", "memory"} <= available:
            notes.append(f"cgroup v2 at {mount.point}: controllers pids/memory not available")
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
        for parent in v1_candidates(mounts, own, ctl):
            if _probe_child(parent, files[ctl]):
                parents[ctl] = parent
                break
        else:
            notes.append(f"cgroup v1 {ctl}: no writable hierarchy")
    if parents["pids"] or parents["memory"]:
        found = ", ".join(f"{k} below {v}" for k, v in parents.items() if v)
        return CgroupSupport(1, parents["pids"], parents["memory"], f"cgroup v1: {found}; " + "; ".join(notes))
    return CgroupSupport(0, None, None, "no usable cgroup: " + "; ".join(notes))


_run_ids = itertools.count()

#: Name of a run cgroup: creator pid, then a per-process counter.
_RUN_NAME = re.compile(r"ch11-sandbox-(\d+)-\d+")


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
            match = _RUN_NAME.fullmatch(entry.name)
            if not match or Path(f"/proc/{match.group(1)}").exists():
                continue
            with contextlib.suppress(OSError):
                entry.rmdir()
                removed.append(entry)
    return removed


class RunCgroup:
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

    def dispose(self) -> None:
        """Kill every process still in it, then remove it: the end of a run (also from a finalizer)."""
        self.kill_all()
        self.remove()
