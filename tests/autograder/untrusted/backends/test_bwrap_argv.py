"""The bwrap command line and environment built from a hand-made mount plan (no sandbox runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.untrusted.backends.bwrap_argv import MPLCONFIGDIR, bwrap_argv, data_blobs, sandbox_env
from ch11_autograder.untrusted.backends.bwrap_plan import (
    HOME,
    LIB_MOUNT,
    RUNTIME_MOUNT,
    SANDBOX_GID,
    SANDBOX_UID,
    SCRATCH_MOUNT,
    Mount,
    MountPlan,
)

MiB = 1024**2
PYTHON = "/opt/ch11/venv/bin/python3.11"


@pytest.fixture
def plan() -> MountPlan:
    return MountPlan(
        mounts=[
            Mount("ro-bind", "/usr", "/usr"),
            Mount("symlink", "usr/lib", "/lib"),
            Mount("data", "root:x:0:0\n", "/etc/passwd"),
            Mount("data", "root:x:0:\n", "/etc/group"),
            Mount("tmpfs", "", "/opt/ch11/venv/lib/site-packages"),
            Mount("ro-bind", "/venv/lib/site-packages/numpy", "/opt/ch11/venv/lib/site-packages/numpy"),
            Mount("remount-ro", "", "/opt/ch11/venv/lib/site-packages"),
        ],
        python=PYTHON,
        pythonpath=[LIB_MOUNT],
    )


def build(plan: MountPlan, **kw) -> list[str]:
    defaults = dict(runtime_dir=Path("/host/runtime"), scratch=Path("/host/scratch"), tmp_bytes=256 * MiB)
    return bwrap_argv(plan, "worker.py", ["cells.json", "--flag"], **{**defaults, **kw})


def index_of(argv: list[str], *seq: str) -> int:
    """Position of the option sequence ``seq`` in ``argv`` (fails the test when absent)."""
    for i in range(len(argv) - len(seq) + 1):
        if argv[i:i + len(seq)] == list(seq):
            return i
    pytest.fail(f"{seq} not in {argv}")


def setenv(argv: list[str]) -> dict[str, str]:
    return {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}


def test_command_runs_the_script_from_the_runtime_mount_after_the_options(plan):
    argv = build(plan)
    split = argv.index("--")
    assert argv[split:] == ["--", PYTHON, "-s", f"{RUNTIME_MOUNT}/worker.py", "cells.json", "--flag"]
    assert argv.count("--") == 1
    index_of(argv, "--ro-bind", "/host/runtime", RUNTIME_MOUNT)


def test_namespaces_identity_and_capabilities(plan):
    argv = build(plan)
    index_of(argv, "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns")
    for option in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                   "--new-session", "--clearenv"):
        assert option in argv
    index_of(argv, "--cap-drop", "ALL")
    index_of(argv, "--hostname", "ch11-sandbox")
    assert argv.index("--clearenv") < argv.index("--setenv")


def test_plan_mounts_in_order_with_data_fds_or_placeholders(plan):
    argv = build(plan, data_fds=[11, 12])
    positions = [
        index_of(argv, "--ro-bind", "/usr", "/usr"),
        index_of(argv, "--symlink", "usr/lib", "/lib"),
        index_of(argv, "--perms", "0444", "--ro-bind-data", "11", "/etc/passwd"),
        index_of(argv, "--perms", "0444", "--ro-bind-data", "12", "/etc/group"),
        index_of(argv, "--tmpfs", "/opt/ch11/venv/lib/site-packages"),
        index_of(argv, "--ro-bind", "/venv/lib/site-packages/numpy", "/opt/ch11/venv/lib/site-packages/numpy"),
        index_of(argv, "--remount-ro", "/opt/ch11/venv/lib/site-packages"),
    ]
    assert positions == sorted(positions)
    shown = build(plan)
    assert shown.count("<fd>") == 2 and "11" not in shown


def test_data_blobs_are_the_data_mounts_in_argv_order(plan):
    assert data_blobs(plan) == [b"root:x:0:0\n", b"root:x:0:\n"]


def test_private_tmp_shm_and_scratch_have_their_sizes(plan):
    argv = build(plan, scratch_bytes=32 * MiB)
    index_of(argv, "--size", str(64 * MiB), "--tmpfs", "/dev/shm")  # a quarter of /tmp
    index_of(argv, "--size", str(256 * MiB), "--tmpfs", "/tmp")
    index_of(argv, "--size", str(32 * MiB), "--tmpfs", SCRATCH_MOUNT)
    index_of(argv, "--dir", HOME)
    small = build(plan, tmp_bytes=2 * MiB)
    index_of(small, "--size", str(MiB), "--tmpfs", "/dev/shm")  # never below 1 MiB
    index_of(argv, "--proc", "/proc")
    index_of(argv, "--dev", "/dev")


def test_scratch_copy_then_writeback_binds_then_everything_read_only(plan):
    seed = [("sub", None), ("sub/given.txt", 7), ("job.json", 8)]
    argv = build(plan, seed=seed, writeback=["out.json"])
    tmpfs = index_of(argv, "--tmpfs", SCRATCH_MOUNT)
    steps = [
        index_of(argv, "--dir", f"{SCRATCH_MOUNT}/sub"),
        index_of(argv, "--file", "7", f"{SCRATCH_MOUNT}/sub/given.txt"),
        index_of(argv, "--file", "8", f"{SCRATCH_MOUNT}/job.json"),
        index_of(argv, "--bind", "/host/scratch/out.json", f"{SCRATCH_MOUNT}/out.json"),
        index_of(argv, "--chdir", SCRATCH_MOUNT),
        index_of(argv, "--remount-ro", "/dev"),
        index_of(argv, "--remount-ro", "/"),
    ]
    assert tmpfs < steps[0] and steps == sorted(steps)
    # No mount of the plan or the run comes after the root is made read-only.
    assert not {"--bind", "--ro-bind", "--tmpfs", "--file", "--dir"} & set(argv[steps[-1]:argv.index("--")])


def test_files_a_run_finds_in_its_private_tmp_come_after_the_tmpfs(plan):
    argv = build(plan, tmp_files=[(f"{MPLCONFIGDIR}/fontlist-v3.11.0.json", 9)])
    tmpfs = index_of(argv, "--tmpfs", "/tmp")
    made = index_of(argv, "--dir", MPLCONFIGDIR)
    copied = index_of(argv, "--file", "9", f"{MPLCONFIGDIR}/fontlist-v3.11.0.json")
    assert tmpfs < made < copied < index_of(argv, "--remount-ro", "/")
    assert setenv(argv)["MPLCONFIGDIR"] == MPLCONFIGDIR
    for outside in ("/scratch/x.json", "/tmp/../etc/x.json", "tmp/x.json"):
        with pytest.raises(ValueError, match="below /tmp"):
            build(plan, tmp_files=[(outside, 9)])


def test_environment_is_fixed_and_a_run_may_add_to_it(plan):
    env = setenv(build(plan, env={"MPLBACKEND": "module://x", "CH11_JOB": "1"}))
    assert env["HOME"] == HOME and env["TMPDIR"] == "/tmp" and env["PYTHONHASHSEED"] == "0"
    assert env["PYTHONPATH"] == LIB_MOUNT and env["PATH"].startswith("/opt/ch11/venv/bin:")
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert env["MPLBACKEND"] == "module://x" and env["CH11_JOB"] == "1"
    assert setenv(build(plan)) == sandbox_env(plan)


def test_no_pythonpath_without_extra_packages(plan):
    plan.pythonpath = []
    assert "PYTHONPATH" not in sandbox_env(plan)
    assert sandbox_env(plan)["MPLBACKEND"] == "Agg"
