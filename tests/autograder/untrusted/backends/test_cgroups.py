"""Cgroup discovery from sample /proc text, the per-run cgroup's files, and sweeping stale runs.

The parsing and path mapping are fed with the text of real hosts' ``/proc/self/mountinfo``
and ``/proc/self/cgroup`` (a cgroup v2 host, a hybrid v1 host, a container); the
per-run cgroup and the sweep work on plain directories, which behave like cgroup
directories for what is checked here. The last test uses this machine's real cgroups.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ch11_autograder.untrusted.backends.cgroups import (
    CgroupSupport,
    MountEntry,
    RunCgroup,
    discover_cgroups,
    parse_mountinfo,
    parse_proc_cgroup,
    path_under_mount,
    sweep_stale_cgroups,
    v1_candidates,
    v2_candidates,
)
from ch11_autograder.untrusted.launch import Limits

UNIFIED_MOUNTINFO = """\
22 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
27 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
"""
UNIFIED_CGROUP = "0::/user.slice/user-1000.slice/session-2.scope\n"

HYBRID_MOUNTINFO = """\
25 21 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
30 25 0:28 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,pids
31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
32 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu,cpuacct
"""
HYBRID_CGROUP = """\
12:pids:/user.slice/user-1000.slice/session-2.scope
11:memory:/user.slice/user-1000.slice/session-2.scope
4:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/user-1000.slice/session-2.scope
0::/user.slice/user-1000.slice/session-2.scope
"""

# Inside a container the cgroup filesystem shows only the container's own subtree.
CONTAINER_MOUNTINFO = """\
700 690 0:30 /docker/abc123 /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,pids
701 690 0:31 /docker/abc123 /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,memory
"""
CONTAINER_CGROUP = "12:pids:/docker/abc123\n11:memory:/docker/abc123/inner\n"


def test_mountinfo_lines_become_entries_with_the_super_options():
    mounts = parse_mountinfo(HYBRID_MOUNTINFO)
    assert [m.point for m in mounts] == ["/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd",
                                         "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu,cpuacct"]
    assert mounts[3] == MountEntry("/", "/sys/fs/cgroup/pids", "cgroup", frozenset({"rw", "pids"}))
    assert mounts[1].fstype == "cgroup2" and mounts[5].options == {"rw", "cpu", "cpuacct"}


def test_mountinfo_decodes_spaces_and_skips_malformed_lines():
    text = ("40 25 0:40 /sub /mnt/my\\040cgroups rw shared:1 - cgroup2 cgroup2 rw\n"
            "garbage without separator\n"
            "41 25 0:41 / /short - cgroup2\n")
    assert parse_mountinfo(text) == [MountEntry("/sub", "/mnt/my cgroups", "cgroup2", frozenset({"rw"}))]


def test_proc_cgroup_maps_each_controller_and_the_unified_hierarchy():
    own = parse_proc_cgroup(HYBRID_CGROUP)
    assert own == {
        "pids": "/user.slice/user-1000.slice/session-2.scope",
        "memory": "/user.slice/user-1000.slice/session-2.scope",
        "cpu": "/user.slice",
        "cpuacct": "/user.slice",
        "name=systemd": "/user.slice/user-1000.slice/session-2.scope",
        "": "/user.slice/user-1000.slice/session-2.scope",
    }
    assert parse_proc_cgroup(UNIFIED_CGROUP) == {"": "/user.slice/user-1000.slice/session-2.scope"}


def test_path_under_mount_respects_the_mount_root_and_component_boundaries():
    assert path_under_mount("/", "/sys/fs/cgroup", "/a/b") == Path("/sys/fs/cgroup/a/b")
    assert path_under_mount("/", "/sys/fs/cgroup", "/") == Path("/sys/fs/cgroup")
    assert path_under_mount("/docker/abc", "/sys/fs/cgroup", "/docker/abc") == Path("/sys/fs/cgroup")
    assert path_under_mount("/docker/abc", "/sys/fs/cgroup", "/docker/abc/x") == Path("/sys/fs/cgroup/x")
    # A sibling whose name merely starts the same is not below the mount root, nor is anything outside it.
    assert path_under_mount("/docker/abc", "/sys/fs/cgroup", "/docker/abcdef") is None
    assert path_under_mount("/docker/abc", "/sys/fs/cgroup", "/user.slice") is None


def test_v2_candidate_is_own_cgroup_in_the_unified_mount():
    mounts = parse_mountinfo(UNIFIED_MOUNTINFO)
    (found,) = v2_candidates(mounts, parse_proc_cgroup(UNIFIED_CGROUP))
    assert found == (mounts[1], Path("/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"))
    # A hybrid host's unified mount counts too; a pure v1 process has no v2 candidate at all.
    hybrid = v2_candidates(parse_mountinfo(HYBRID_MOUNTINFO), parse_proc_cgroup(HYBRID_CGROUP))
    assert [p for _, p in hybrid] == [Path("/sys/fs/cgroup/unified/user.slice/user-1000.slice/session-2.scope")]
    assert v2_candidates(mounts, {"pids": "/x"}) == []


def test_v1_candidates_are_per_controller_hierarchy():
    mounts, own = parse_mountinfo(HYBRID_MOUNTINFO), parse_proc_cgroup(HYBRID_CGROUP)
    scope = "user.slice/user-1000.slice/session-2.scope"
    assert v1_candidates(mounts, own, "pids") == [Path("/sys/fs/cgroup/pids") / scope]
    assert v1_candidates(mounts, own, "memory") == [Path("/sys/fs/cgroup/memory") / scope]
    assert v1_candidates(mounts, own, "cpu") == [Path("/sys/fs/cgroup/cpu,cpuacct/user.slice")]
    assert v1_candidates(parse_mountinfo(UNIFIED_MOUNTINFO), parse_proc_cgroup(UNIFIED_CGROUP), "pids") == []


def test_v1_candidates_inside_a_container_start_at_the_mount():
    mounts, own = parse_mountinfo(CONTAINER_MOUNTINFO), parse_proc_cgroup(CONTAINER_CGROUP)
    assert v1_candidates(mounts, own, "pids") == [Path("/sys/fs/cgroup/pids")]
    assert v1_candidates(mounts, own, "memory") == [Path("/sys/fs/cgroup/memory/inner")]


def test_run_cgroup_v2_writes_limits_into_one_directory_and_reads_its_counters(tmp_path):
    limits = Limits(max_processes=16, memory_bytes=256 * 1024**2)
    run = RunCgroup(CgroupSupport(2, tmp_path, tmp_path, "test"), limits)
    try:
        (only,) = set(run.dirs.values())
        assert only.parent == tmp_path and only.name.startswith(f"ch11-sandbox-{os.getpid()}-")
        assert (only / "pids.max").read_text() == "16"
        assert (only / "memory.max").read_text() == str(256 * 1024**2)
        assert (only / "memory.swap.max").read_text() == "0"
        assert run.procs_files() == [only / "cgroup.procs"]
        (only / "cgroup.procs").write_text("")
        assert run.pids() == set()
        (only / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n")
        (only / "memory.peak").write_text("268435456\n")
        (only / "pids.events").write_text("max 5\n")
        (only / "pids.peak").write_text("16\n")
        assert run.events() == {"oom_kill": 1, "memory_peak_bytes": 268435456, "pids_max_hits": 5, "pids_peak": 16}
    finally:
        for f in only.iterdir():
            f.unlink()
        assert run.remove()
    assert list(tmp_path.iterdir()) == []


def test_run_cgroup_v1_has_a_directory_per_hierarchy(tmp_path):
    (tmp_path / "pids").mkdir()
    (tmp_path / "memory").mkdir()
    run = RunCgroup(CgroupSupport(1, tmp_path / "pids", tmp_path / "memory", "test"), Limits(memory_bytes=1000))
    mem, pids = run.dirs["memory"], run.dirs["pids"]
    assert mem.parent == tmp_path / "memory" and pids.parent == tmp_path / "pids" and mem.name == pids.name
    assert (mem / "memory.limit_in_bytes").read_text() == "1000"
    assert (mem / "memory.memsw.limit_in_bytes").read_text() == "1000"
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (mem / "memory.failcnt").write_text("9\n")
    assert run.events() == {"oom_kill": 3, "memory_failcnt": 9, "pids_max_hits": 0}


def test_sweep_removes_only_run_cgroups_of_dead_creators(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"ch11-sandbox-{dead.pid}-0"
    live = tmp_path / f"ch11-sandbox-{os.getpid()}-3"
    other = tmp_path / f"something-{dead.pid}-0"
    for d in (stale, live, other):
        d.mkdir()
    assert sweep_stale_cgroups(CgroupSupport(1, tmp_path, None, "test")) == [stale]
    assert not stale.exists() and live.exists() and other.exists()


def test_cgroups_left_by_a_dead_grader_are_swept():
    support = discover_cgroups()
    parent = support.pids_parent or support.memory_parent
    if parent is None:
        pytest.skip(f"no cgroups here: {support.note}")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = parent / f"ch11-sandbox-{dead.pid}-0"
    live = parent / f"ch11-sandbox-{os.getpid()}-999999"
    stale.mkdir()
    live.mkdir()
    try:
        removed = sweep_stale_cgroups(support)
        assert stale in removed and not stale.exists()
        assert live.exists()  # a running grader's cgroups are not touched
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()
