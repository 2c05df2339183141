"""The bubblewrap sandbox, tested with the real bwrap and real attacks (no mocks).

Every script here is a throwaway runtime script written into a temporary
runtime directory that the launcher mounts instead of the package's own.
Where a check could pass vacuously (a path that does not exist on the host
either, a listener nobody could reach anyway), a control run on the host shows
that the same check fails there.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from ch11_autograder.untrusted.backends.bwrap import BwrapLauncher
from ch11_autograder.untrusted.backends.bwrap_plan import PROTOCOL_MOUNT, RUNTIME_MOUNT, SANDBOX_UID
from ch11_autograder.untrusted.backends.cgroups import discover_cgroups
from ch11_autograder.untrusted.capped_run import RunResult, read_untrusted_file, run_limited
from ch11_autograder.untrusted.font_list import save_font_list
from ch11_autograder.untrusted.launch import Limits, SandboxUnavailable
from support.paths import REPO_ROOT

FAST = Limits(
    cpu_seconds=20,
    wall_seconds=30.0,
    memory_bytes=1024**3,
    max_processes=64,
    max_file_bytes=16 * 1024**2,
    max_output_bytes=1024**2,
)


@pytest.fixture(scope="module")
def runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runtime")


@pytest.fixture(scope="module")
def launcher(runtime_dir: Path) -> BwrapLauncher:
    try:
        sandbox = BwrapLauncher(runtime_dir=runtime_dir)
        sandbox.check()
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    return sandbox


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


def write_script(runtime_dir: Path, code: str) -> str:
    name = f"s_{uuid.uuid4().hex[:12]}.py"
    (runtime_dir / name).write_text(textwrap.dedent(code))
    return name


def run(
    launcher: BwrapLauncher,
    runtime_dir: Path,
    scratch: Path,
    code: str,
    *args: str,
    limits: Limits = FAST,
    input_bytes: bytes | None = None,
    writeback: tuple[str, ...] = (),
) -> RunResult:
    return run_limited(launcher, write_script(runtime_dir, code), list(args), scratch, limits, input_bytes,
                       writeback=writeback)


def json_out(result: RunResult) -> dict:
    assert result.returncode == 0, (result.returncode, result.stderr.decode(errors="replace"))
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


def host_processes_with(token: str) -> list[int]:
    """Host pids whose command line contains ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def wait_until_gone(token: str, seconds: float = 3.0) -> list[int]:
    end = time.monotonic() + seconds
    while (left := host_processes_with(token)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


# --------------------------------------------------------------------------- isolation


def test_network_is_unreachable_even_loopback_of_the_host(launcher, runtime_dir, scratch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    code = """
        import json, socket, sys
        out = {}
        for host in ("127.0.0.1", "10.0.2.2", "1.1.1.1"):
            s = socket.socket()
            s.settimeout(3)
            try:
                s.connect((host, int(sys.argv[1])))
                out[host] = "connected"
            except OSError as exc:
                out[host] = exc.__class__.__name__
            s.close()
        out["interfaces"] = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
        print(json.dumps(out))
    """
    try:
        name = write_script(runtime_dir, code)
        inside = json_out(run_limited(launcher, name, [str(port)], scratch, FAST))
        # Control: the very same script on the host reaches the listener.
        host = subprocess.run([sys.executable, str(runtime_dir / name), str(port)],
                              capture_output=True, text=True, timeout=30, check=True)
    finally:
        listener.close()
    assert json.loads(host.stdout)["127.0.0.1"] == "connected"
    assert inside["127.0.0.1"] == "ConnectionRefusedError"
    assert inside["10.0.2.2"] != "connected" and inside["1.1.1.1"] != "connected"
    assert inside["interfaces"] == ["lo"]


def test_repository_course_and_sibling_submissions_do_not_exist_inside(launcher, runtime_dir, tmp_path, scratch):
    sibling = tmp_path / "other-submission"
    sibling.mkdir()
    (sibling / "answers.ipynb").write_text("{}")
    probes = {
        "repo": str(REPO_ROOT),
        "repo_main_dir": "/work/main",
        "solutions": str(REPO_ROOT / "solutions"),
        "autograder": str(REPO_ROOT / "autograder"),
        "sibling_abs": str(sibling / "answers.ipynb"),
        "sibling_rel": "../other-submission/answers.ipynb",
        "scratch_host_path": str(scratch),
        "pytest_tmp": str(tmp_path),
    }
    code = """
        import json, os, sys
        probes = json.loads(sys.argv[1])
        out = {k: os.path.exists(v) for k, v in probes.items()}
        out["root_listing"] = sorted(os.listdir("/root"))
        out["top_listing"] = sorted(os.listdir("/"))
        print(json.dumps(out))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code, json.dumps(probes)))
    # Control: every probed path exists on the host, relative ones from scratch.
    assert all((scratch / p).exists() if not os.path.isabs(p) else Path(p).exists() for p in probes.values())
    leaked = [k for k in probes if inside[k]]
    assert leaked == []
    assert inside["root_listing"] == [".pyenv"] or not str(Path(sys.base_prefix).resolve()).startswith("/root")
    assert "work" not in inside["top_listing"] and "home" not in inside["top_listing"]


def test_only_scratch_and_private_tmp_are_writable(launcher, runtime_dir, scratch):
    marker = f"ch11-write-{uuid.uuid4().hex[:8]}"
    targets = ["/", "/etc", "/usr", "/opt/ch11", RUNTIME_MOUNT, "/opt/ch11/venv", sys.base_prefix,
               "/root", "/dev", "/proc", "/tmp", "/dev/shm", "/scratch"]
    code = """
        import json, os, sys
        marker, targets = sys.argv[1], json.loads(sys.argv[2])
        out = {}
        for t in targets:
            try:
                with open(os.path.join(t, marker), "w") as fh:
                    fh.write("x")
                out[t] = "written"
            except OSError as exc:
                out[t] = exc.strerror
        print(json.dumps(out))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code, marker, json.dumps(targets)))
    assert {t for t, v in inside.items() if v == "written"} == {"/tmp", "/dev/shm", "/scratch"}
    assert not (scratch / marker).exists()  # scratch inside is a private copy
    assert not Path("/tmp", marker).exists()  # /tmp is private to the sandbox


def test_scratch_is_a_capped_copy_and_only_writeback_files_come_back(launcher, runtime_dir, scratch):
    (scratch / "sub").mkdir()
    (scratch / "sub" / "given.txt").write_text("from the grader")
    (scratch / "out.json").write_text("stale")
    (scratch / "link").symlink_to("/etc/hostname")
    limits = Limits(cpu_seconds=20, wall_seconds=60, memory_bytes=FAST.memory_bytes, max_processes=16,
                    max_file_bytes=8 * 1024**2, scratch_bytes=32 * 1024**2)
    code = """
        import json, os
        out = {"given": open("sub/given.txt").read(), "link": os.path.lexists("link")}
        with open("sub/given.txt", "w") as fh:
            fh.write("changed inside")
        total, error = 0, None
        try:
            for n in range(64):  # 64 files under the 8 MiB file limit: 448 MiB if nothing stopped them
                with open(f"fill{n}.bin", "wb") as fh:
                    for _ in range(7):
                        fh.write(b"z" * 2**20)
                        fh.flush()
                        total += 2**20
        except OSError as exc:
            error = exc.errno
        out.update(total=total, error=error)
        for n in range(64):
            if os.path.exists(f"fill{n}.bin"):
                os.unlink(f"fill{n}.bin")
        with open("out.json", "w") as fh:
            json.dump({"result": 42}, fh)
        print(json.dumps(out))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code, limits=limits, writeback=("out.json",)))
    assert inside["given"] == "from the grader" and inside["link"] is False
    assert inside["error"] == 28 and inside["total"] <= limits.scratch_bytes  # ENOSPC at the cap
    assert json.loads((scratch / "out.json").read_text()) == {"result": 42}
    assert (scratch / "sub" / "given.txt").read_text() == "from the grader"
    assert sorted(p.name for p in scratch.iterdir()) == ["link", "out.json", "sub"]


def test_writeback_paths_must_be_plain_relative_paths(launcher, runtime_dir, scratch):
    name = write_script(runtime_dir, "print(1)\n")
    for bad in ("/etc/passwd", "../x", "", "a/../../b"):
        with pytest.raises(ValueError, match="writeback path"):
            launcher.spawn(name, [], scratch=scratch, limits=FAST, writeback=[bad])


def test_reference_library_and_engine_are_not_importable(launcher, runtime_dir, scratch):
    code = """
        import importlib, json
        out = {}
        for name in ("ch11_solutions", "ch11_autograder", "numpy", "trainable_harness", "nbclient", "ipykernel"):
            try:
                importlib.import_module(name)
                out[name] = "imported"
            except ImportError as exc:
                out[name] = str(exc)
        print(json.dumps(out))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code))
    # Control: both are importable in the grader's own environment.
    assert importlib.util.find_spec("ch11_solutions") is not None
    assert importlib.util.find_spec("ch11_autograder") is not None
    assert inside["ch11_solutions"].startswith("No module named")
    assert inside["ch11_autograder"].startswith("No module named")
    assert {inside[k] for k in ("numpy", "trainable_harness", "nbclient", "ipykernel")} == {"imported"}


def test_hidden_module_inside_a_mounted_tree_is_left_out_entry_by_entry(runtime_dir, scratch):
    # matplotlib stands in for a non-editable install of a hidden package in site-packages.
    sandbox = BwrapLauncher(runtime_dir=runtime_dir, hidden_modules=("matplotlib",))
    code = """
        import json, os, sys
        site = [p for p in sys.path if p.endswith("site-packages")][0]
        out = {"listing_has_mpl": any(e == "matplotlib" or e.startswith("matplotlib-") for e in os.listdir(site)),
               "has_mpl_inline": "matplotlib_inline" in os.listdir(site),
               "has_numpy": os.path.isdir(os.path.join(site, "numpy"))}
        try:
            import matplotlib
            out["mpl"] = "imported"
        except ImportError:
            out["mpl"] = "missing"
        import numpy
        print(json.dumps(out))
    """
    inside = json_out(run(sandbox, runtime_dir, scratch, code))
    assert inside == {"listing_has_mpl": False, "has_mpl_inline": True, "has_numpy": True, "mpl": "missing"}


def test_mounts_that_would_reveal_a_forbidden_path_are_refused(runtime_dir, tmp_path):
    with pytest.raises(SandboxUnavailable, match="would reveal"):
        BwrapLauncher(runtime_dir=runtime_dir, forbidden_paths=[Path(sys.prefix) / "lib"])
    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    sandbox = BwrapLauncher(runtime_dir=runtime_dir, forbidden_paths=[course / "gradebook.db"])
    name = write_script(runtime_dir, "print('never')\n")
    with pytest.raises(SandboxUnavailable, match="overlaps"):
        sandbox.spawn(name, [], scratch=course, limits=FAST)
    # A scratch directory beside it is fine.
    result = run_limited(sandbox, name, [], course / "submitted", FAST)
    assert result.stdout == b"never\n"


def test_scratch_inside_a_mounted_tree_is_refused(launcher, runtime_dir):
    # Writable scratch inside, say, site-packages would let student code plant
    # modules that the grader itself imports.
    inner = runtime_dir / "scratch-here"
    inner.mkdir(exist_ok=True)
    name = write_script(runtime_dir, "print('never')\n")
    for bad in (inner, Path(sys.prefix), Path(sys.prefix) / "lib"):
        with pytest.raises(SandboxUnavailable, match="overlaps"):
            launcher.spawn(name, [], scratch=bad, limits=FAST)


def test_unprivileged_inside_without_capabilities_or_nested_namespaces(launcher, runtime_dir, scratch):
    code = """
        import ctypes, json, os
        libc = ctypes.CDLL(None, use_errno=True)
        CLONE_NEWUSER = 0x10000000
        rc = libc.unshare(CLONE_NEWUSER)
        status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
        print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
                          "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
                          "unshare_user": rc, "errno": ctypes.get_errno(),
                          "pid1": open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
                          "hostname": os.uname().nodename}))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code))
    assert (inside["uid"], inside["gid"], inside["euid"]) == (SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    assert int(inside["cap_eff"], 16) == 0 and int(inside["cap_bnd"], 16) == 0
    assert inside["unshare_user"] == -1 and inside["errno"] != 0
    assert str(scratch) not in inside["pid1"] and "--bind" not in inside["pid1"]
    assert inside["hostname"] == "ch11-sandbox"


def test_protocol_files_appear_at_runtime_parent_parent(runtime_dir, tmp_path, scratch):
    assert PROTOCOL_MOUNT == os.path.normpath(f"{RUNTIME_MOUNT}/../../protocol")
    fake = tmp_path / "__init__.py"
    fake.write_text("WIRE = 'v1'\n")
    sandbox = BwrapLauncher(runtime_dir=runtime_dir, extra_files={fake: f"{PROTOCOL_MOUNT}/__init__.py"})
    code = """
        import json, os
        from pathlib import Path
        p = Path(__file__).resolve().parent.parent.parent / "protocol" / "__init__.py"
        writable = True
        try:
            open(p, "a").close()
        except OSError:
            writable = False
        print(json.dumps({"text": p.read_text(), "writable": writable}))
    """
    inside = json_out(run(sandbox, runtime_dir, scratch, code))
    assert inside == {"text": "WIRE = 'v1'\n", "writable": False}


# --------------------------------------------------------------------------- limits


def test_busy_loop_is_stopped_by_the_cpu_limit(launcher, runtime_dir, scratch):
    limits = Limits(cpu_seconds=1, wall_seconds=20, memory_bytes=FAST.memory_bytes, max_processes=16)
    result = run(launcher, runtime_dir, scratch, "while True:\n    pass\n", limits=limits)
    assert result.killed_reason == "cpu_time" and not result.timed_out
    assert result.elapsed_seconds < 10


def test_sleeping_script_is_stopped_by_the_wall_limit(launcher, runtime_dir, scratch):
    limits = Limits(cpu_seconds=20, wall_seconds=1.5, memory_bytes=FAST.memory_bytes, max_processes=16)
    result = run(launcher, runtime_dir, scratch, "import time\nprint('start', flush=True)\ntime.sleep(600)\n",
                 limits=limits)
    assert result.timed_out and result.killed_reason == "wall_time"
    assert result.stdout == b"start\n"
    assert 1.5 <= result.elapsed_seconds < 8


_SPAWNER = """
    import os, subprocess, sys, time
    token = sys.argv[1]
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)", token]
    kids = [subprocess.Popen(sleeper) for _ in range(2)]
    # a grandchild through a child shell, and a double-forked daemon in its own session
    subprocess.Popen(["/bin/sh", "-c", " ".join(sleeper[:2]) + " 'import time; time.sleep(600)' " + token + "; :"])
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, sleeper)
        os._exit(0)
    with open("ready", "w") as fh:
        fh.write("ready")
    time.sleep(600)
"""


def test_killing_the_process_group_kills_every_descendant(launcher, runtime_dir, scratch):
    token = f"ch11tok{uuid.uuid4().hex}"
    proc = launcher.spawn(write_script(runtime_dir, _SPAWNER), [token], scratch=scratch, limits=FAST,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          writeback=["ready"])
    try:
        end = time.monotonic() + 20
        while (scratch / "ready").read_text() != "ready" and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.3)
        # Control: from the host, the script and its 4 sleepers (5 with the shell) are visible.
        assert len(host_processes_with(token)) >= 5
        os.killpg(proc.pid, signal.SIGKILL)  # what launch.Launcher promises callers may do
        proc.wait(timeout=10)
        assert wait_until_gone(token) == []
    finally:
        proc.kill_tree()
        proc.wait()


def test_wall_timeout_in_run_limited_kills_the_whole_tree(launcher, runtime_dir, scratch):
    token = f"ch11tok{uuid.uuid4().hex}"
    limits = Limits(cpu_seconds=20, wall_seconds=3, memory_bytes=FAST.memory_bytes, max_processes=32)
    result = run(launcher, runtime_dir, scratch, _SPAWNER, token, limits=limits, writeback=("ready",))
    assert result.timed_out and (scratch / "ready").read_text() == "ready"
    assert wait_until_gone(token) == []


def test_memory_bomb_is_contained(launcher, runtime_dir, scratch):
    limits = Limits(cpu_seconds=20, wall_seconds=30, memory_bytes=256 * 1024**2, max_processes=16)
    code = """
        import sys
        keep = []
        try:
            for _ in range(int(sys.argv[1])):
                keep.append(b"x" * (32 << 20))
        except MemoryError:
            print("MemoryError", flush=True)
            sys.exit(3)
        print("allocated", len(keep) * 32, "MiB", flush=True)
    """
    name = write_script(runtime_dir, code)
    # Control: 64 MiB fits.
    small = run_limited(launcher, name, ["2"], scratch, limits)
    assert small.returncode == 0 and small.stdout == b"allocated 64 MiB\n"
    bomb = run_limited(launcher, name, ["64"], scratch, limits)  # 2 GiB
    assert bomb.returncode != 0 and b"allocated" not in bomb.stdout
    if launcher.enforcement.memory.startswith("cgroup"):
        assert bomb.killed_reason == "memory"
        assert bomb.limit_events["oom_kill"] >= 1
        assert bomb.limit_events["memory_peak_bytes"] <= limits.memory_bytes
    else:
        assert bomb.stdout == b"MemoryError\n"
    assert bomb.elapsed_seconds < 20


def test_fork_bomb_is_contained(launcher, runtime_dir, scratch):
    token = f"ch11tok{uuid.uuid4().hex}"
    limits = Limits(cpu_seconds=10, wall_seconds=3, memory_bytes=512 * 1024**2, max_processes=16)
    code = """
        import os, sys, time
        made = 0
        for _ in range(100):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            made += 1
        print(made, flush=True)
        while True:  # the classic bomb: every process keeps forking
            try:
                os.fork()
            except OSError:
                pass
    """
    result = run(launcher, runtime_dir, scratch, code, token, limits=limits)
    made = int(result.stdout.split()[0])
    assert made < limits.max_processes
    assert result.timed_out
    if launcher.enforcement.processes.startswith("cgroup"):
        assert result.limit_events["pids_max_hits"] > 0
        assert result.limit_events["pids_peak"] <= limits.max_processes
    assert wait_until_gone(token) == []
    # The host can still start processes.
    assert subprocess.run(["true"], timeout=10).returncode == 0


def test_huge_output_is_capped_while_drained(launcher, runtime_dir, scratch):
    code = """
        import sys
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        sys.stderr.write("e" * (3 << 20))
        print("done", file=sys.stderr)
    """
    result = run(launcher, runtime_dir, scratch, code)
    assert result.returncode == 0 and not result.timed_out
    assert len(result.stdout) == FAST.max_output_bytes and result.stdout_truncated
    assert len(result.stderr) == FAST.max_output_bytes and result.stderr_truncated
    assert set(result.stdout) == {ord("x")}


def test_file_size_limit(launcher, runtime_dir, scratch):
    limits = Limits(cpu_seconds=20, wall_seconds=30, memory_bytes=FAST.memory_bytes, max_processes=16,
                    max_file_bytes=1024**2)
    code = """
        import json, sys
        out = {}
        for name, size in (("small.bin", 512 * 1024), ("big.bin", 2 * 1024**2)):
            try:
                with open(name, "wb") as fh:
                    fh.write(b"y" * size)
                out[name] = "ok"
            except OSError as exc:
                out[name] = exc.errno
            out[name + " size"] = os.path.getsize(name)
        print(json.dumps(out))
    """
    inside = json_out(run(launcher, runtime_dir, scratch, code.replace("import json, sys", "import json, os, sys"),
                          limits=limits))
    assert inside == {"small.bin": "ok", "small.bin size": 512 * 1024,
                      "big.bin": 27, "big.bin size": limits.max_file_bytes}  # EFBIG at the limit


def test_input_and_output_flow_together_without_deadlock(launcher, runtime_dir, scratch):
    data = os.urandom(3 << 20)
    code = """
        import sys
        while chunk := sys.stdin.buffer.read(65536):
            sys.stdout.buffer.write(chunk[::-1])
    """
    limits = Limits(cpu_seconds=20, wall_seconds=30, memory_bytes=FAST.memory_bytes, max_processes=16,
                    max_output_bytes=8 * 1024**2)
    result = run(launcher, runtime_dir, scratch, code, limits=limits, input_bytes=data)
    assert result.returncode == 0 and not result.stdout_truncated
    expected = b"".join(data[i:i + 65536][::-1] for i in range(0, len(data), 65536))
    assert result.stdout == expected


def test_cgroups_of_finished_runs_are_removed(launcher, runtime_dir, scratch):
    support = discover_cgroups()
    if not (support.pids_parent or support.memory_parent):
        pytest.skip(f"no cgroups here: {support.note}")
    prefix = f"ch11-sandbox-{os.getpid()}-"

    def ours() -> set[Path]:
        return {p for parent in (support.pids_parent, support.memory_parent) if parent
                for p in parent.iterdir() if p.name.startswith(prefix)}

    before = ours()  # a zygote another test left running in this process holds its own
    run(launcher, runtime_dir, scratch, "print('x')\n")
    assert ours() - before == set()


# --------------------------------------------------------------------------- matplotlib's font list

_FONT_LIST_USE = """
    import io, json, logging, os, sys
    log = io.StringIO()
    logging.basicConfig(level=logging.DEBUG, stream=log)
    import matplotlib.font_manager
    lines = log.getvalue().splitlines()
    names = sorted(os.listdir("/tmp/matplotlib"))
    print(json.dumps({"built": any("generated new fontManager" in x for x in lines),
                      "read": any("Using fontManager instance from" in x for x in lines),
                      "names": names, "content": open("/tmp/matplotlib/" + names[0]).read() if names else ""}))
"""


def test_runs_read_the_font_list_built_once_per_launcher_instead_of_scanning(runtime_dir, scratch):
    sharing = BwrapLauncher(runtime_dir=runtime_dir)
    first = json_out(run(sharing, runtime_dir, scratch, _FONT_LIST_USE))
    second = json_out(run(sharing, runtime_dir, scratch, _FONT_LIST_USE))
    fonts = sharing.font_list()
    assert fonts is not None and sharing.font_list_builds == 1
    for inside in (first, second):
        assert inside["read"] and not inside["built"]
        assert inside["names"] == [fonts.name] and inside["content"].encode() == fonts.content
    # Control: without the shared list every run scans the fonts and writes a list of its own.
    alone = json_out(run(BwrapLauncher(runtime_dir=runtime_dir, share_font_list=False), runtime_dir, scratch,
                         _FONT_LIST_USE))
    assert alone["built"] and not alone["read"]
    # Built inside: fonts outside mpl-data are named by paths inside the sandbox, never the host's venv.
    entries = json.loads(fonts.content)["ttflist"]
    assert entries and all(not e["fname"].startswith(sys.prefix) for e in entries)
    assert json.loads(alone["content"])["ttflist"] == entries


def test_a_launcher_given_a_saved_list_starts_its_runs_from_it_without_building(launcher, runtime_dir, scratch,
                                                                               tmp_path, caplog):
    built = launcher.font_list()
    assert built is not None
    saved = tmp_path / "font-list.json"
    save_font_list(built, saved)
    given = BwrapLauncher(runtime_dir=runtime_dir, font_list_file=saved)
    inside = json_out(run(given, runtime_dir, scratch, _FONT_LIST_USE))
    assert given.font_list_builds == 0
    assert inside["read"] and not inside["built"]
    assert inside["names"] == [built.name] and inside["content"].encode() == built.content
    # A file that does not load (here: its writer's build failed) costs only the build it saved.
    save_font_list(None, saved, error="the sandboxed build failed")
    fallback = BwrapLauncher(runtime_dir=runtime_dir, font_list_file=saved)
    with caplog.at_level(logging.WARNING):
        again = json_out(run(fallback, runtime_dir, scratch, _FONT_LIST_USE))
    assert fallback.font_list_builds == 1 and "holds no font list: the sandboxed build failed" in caplog.text
    assert again["read"] and again["content"].encode() == built.content


def test_a_font_list_one_run_plants_is_read_by_no_later_run(launcher, runtime_dir, scratch):
    plant = """
        import os
        for name in os.listdir("/tmp/matplotlib"):
            with open(os.path.join("/tmp/matplotlib", name), "w") as fh:
                fh.write('{"__class__": "FontManager", "_version": "planted"}')
        with open("/tmp/matplotlib/matplotlibrc", "w") as fh:
            fh.write("font.family: planted\\n")
        print(sorted(os.listdir("/tmp/matplotlib")))
    """
    planted = run(launcher, runtime_dir, scratch, plant)
    assert planted.returncode == 0 and b"matplotlibrc" in planted.stdout, planted.stderr
    fonts = launcher.font_list()
    assert fonts is not None
    after = json_out(run(launcher, runtime_dir, scratch, _FONT_LIST_USE))
    assert after["names"] == [fonts.name] and after["content"].encode() == fonts.content
    assert after["read"] and not after["built"]
    assert launcher.font_list_builds == 1


# --------------------------------------------------------------------------- the work it is for


def test_numpy_and_matplotlib_plot_inside(launcher, runtime_dir, scratch):
    code = """
        import numpy as np
        import matplotlib
        import matplotlib.pyplot as plt
        x = np.linspace(0, 1, 50, dtype=np.float32)
        fig, ax = plt.subplots()
        ax.plot(x, x**2)
        fig.savefig("plot.png")
        print(matplotlib.get_backend(), (x @ x).dtype)
    """
    result = run(launcher, runtime_dir, scratch, code, writeback=("plot.png",))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().lower().split() == ["agg", "float32"]
    assert result.stderr == b""  # a warning here would cost a student the cell
    assert read_untrusted_file(scratch, "plot.png", 1 << 20).startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow
def test_jupyter_kernel_and_client_both_run_inside(launcher, runtime_dir, scratch):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 21"),
        nbformat.v4.new_code_cell("import os, socket\nprint(x * 2, os.getuid(), os.path.exists('/work'))"),
    ])
    nbformat.write(nb, scratch / "submission.ipynb")
    code = """
        import sys
        import nbclient, nbformat
        nb = nbformat.read(sys.argv[1], as_version=4)
        nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
        nbformat.write(nb, sys.argv[2])
    """
    limits = Limits(cpu_seconds=60, wall_seconds=90, memory_bytes=FAST.memory_bytes, max_processes=64)
    result = run(launcher, runtime_dir, scratch, code, "submission.ipynb", "executed.ipynb", limits=limits,
                 writeback=("executed.ipynb",))
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    executed = nbformat.reads(read_untrusted_file(scratch, "executed.ipynb", 1 << 20).decode(), as_version=4)
    outputs = executed.cells[1].outputs
    assert [o.get("text") for o in outputs] == [f"42 {SANDBOX_UID} False\n"]

