"""A submission's runs forked from its zygote: what one run leaves is invisible to the next.

Real sandboxes (bubblewrap), real kernels (``execute_notebook.py``) and real verdict workers.
Each probe reports what a fresh interpreter in a fresh sandbox would not show; a control
runs the planting and the probe in one kernel, where the probe must see every planted thing.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import nbformat
import pytest
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.capped_run import RunResult, run_limited
from ch11_autograder.untrusted.choose import forking_launcher
from ch11_autograder.untrusted.forkserver import ForkServerLauncher
from ch11_autograder.untrusted.launch import Limits, SandboxUnavailable
from support.process_state import PROBE as PROCESS_PROBE
from support.process_state import differences

LIMITS = Limits(cpu_seconds=60, wall_seconds=90, memory_bytes=2 * 1024**3)

#: Plants every kind of state a notebook could leave: names, patched modules, random
#: states, environment, files in the sandbox's private directories, matplotlib settings,
#: and processes that left the session.
PLANT = r"""
import os, random, subprocess, sys
import numpy as np
import matplotlib
planted_name = 1
np.sum = lambda *a, **k: 42
np.planted = True
random.seed(1234)
np.random.seed(1234)
os.environ["PLANTED"] = "1"
for path in ("/tmp/planted", os.path.expanduser("~/planted"), "/dev/shm/planted", "../planted"):
    try:
        open(path, "w").write("x")
    except OSError:
        pass
sys.modules["planted_module"] = sys
matplotlib.rcParams["lines.linewidth"] = 9.0
subprocess.Popen(["sleep", "600"], start_new_session=True)
read_end, write_end = os.pipe2(os.O_CLOEXEC)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "601"])
    os._exit(0)
os.close(write_end)
os.read(read_end, 1)  # end of file once the grandchild has exec'd sleep: the probe can see it
print("planted")
"""

#: Reports, as JSON, everything of PLANT it can see (an empty list or False: nothing).
PROBE = r"""
import json, os, random, sys
import numpy as np
import matplotlib

def leaks():
    sleepers = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and int(pid) != os.getpid() and b"sleep" in open(f"/proc/{pid}/cmdline", "rb").read():
                sleepers.append(pid)
        except OSError:
            pass
    found = {
        "name": "planted_name" in globals(),
        "numpy_patched": int(np.sum([1, 2])) != 3 or hasattr(np, "planted"),
        "random_state": random.Random(1234).random() == random.random(),
        "numpy_random_state": np.random.RandomState(1234).rand() == np.random.rand(),
        "environment": "PLANTED" in os.environ,
        "files": [p for p in ("/tmp/planted", os.path.expanduser("~/planted"), "/dev/shm/planted", "../planted")
                  if os.path.exists(p)],
        "module": "planted_module" in sys.modules,
        "matplotlib": matplotlib.rcParams["lines.linewidth"] == 9.0,
        "processes": sleepers,
    }
    return json.dumps(found)
"""

NOTHING = {"name": False, "numpy_patched": False, "random_state": False, "numpy_random_state": False,
           "environment": False, "files": [], "module": False, "matplotlib": False, "processes": []}


@pytest.fixture
def forking(tmp_path: Path):
    from ch11_autograder.untrusted.choose import choose_launcher

    try:
        inner = choose_launcher("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    launcher = forking_launcher(inner, "bwrap").for_submission(("toy", "first"))
    yield launcher
    launcher.close()


def run_notebook(launcher, cells: list[str], where: Path, *, limits: Limits = LIMITS, timeout: int = 30):
    """Execute ``cells`` as a notebook through ``launcher``; the run's result and each cell's text output."""
    where.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, where / "submission.ipynb")
    job = {"version": 1, "input": "submission.ipynb", "output": "executed.ipynb", "timeout": timeout}
    (where / "job.json").write_text(json.dumps(job))
    result = run_limited(launcher, "execute_notebook.py", ["job.json"], where, limits, writeback=["executed.ipynb"])
    try:
        executed = nbformat.read(where / "executed.ipynb", as_version=4)
    except nbformat.reader.NotJSONError:  # the run died before writing it
        return result, None
    texts = ["".join(o.get("text", "") or o.get("evalue", "") for o in cell.outputs) for cell in executed.cells]
    return result, texts


def probe_in_kernel(launcher, where: Path) -> dict:
    result, texts = run_notebook(launcher, [PROBE, "print(leaks())"], where)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(texts[1])


def probe_in_worker(launcher) -> dict:
    with WorkerSession([PROBE], launcher, LIMITS, call_timeout=30) as session:
        return json.loads(session.call("leaks"))


def test_a_notebook_leaves_nothing_for_the_next_kernel_or_worker(forking: ForkServerLauncher, tmp_path: Path):
    result, texts = run_notebook(forking, [PLANT], tmp_path / "plant")
    assert result.returncode == 0 and texts == ["planted\n"], (result.stderr[-2000:], texts)
    assert probe_in_kernel(forking, tmp_path / "kernel") == NOTHING
    run_notebook(forking, [PLANT], tmp_path / "plant-again")
    assert probe_in_worker(forking) == NOTHING
    assert forking.zygote_starts == 1  # all four runs were forks of one zygote


def test_control_the_probe_sees_what_one_kernel_planted(forking: ForkServerLauncher, tmp_path: Path):
    _, texts = run_notebook(forking, [PLANT, PROBE, "print(leaks())"], tmp_path / "one")
    seen = json.loads(texts[2])
    assert {key for key, value in seen.items() if value} == set(NOTHING), seen
    assert len(seen["processes"]) == 2 and len(seen["files"]) == 4


def test_the_next_submission_gets_a_new_zygote_and_sees_nothing(forking: ForkServerLauncher, tmp_path: Path):
    run_notebook(forking, [PLANT], tmp_path / "plant")
    forking.for_submission(("toy", "second"))
    assert probe_in_kernel(forking, tmp_path / "probe") == NOTHING
    assert forking.zygote_starts == 2


def test_a_run_past_its_wall_time_is_killed_and_the_zygote_serves_the_next(forking, tmp_path: Path):
    limits = Limits(cpu_seconds=60, wall_seconds=8, memory_bytes=2 * 1024**3)
    started = time.monotonic()
    result, _ = run_notebook(forking, ["import time\ntime.sleep(600)"], tmp_path / "slow", limits=limits,
                             timeout=120)
    assert result.timed_out and result.killed_reason == "wall_time"
    assert time.monotonic() - started < 30
    assert probe_in_kernel(forking, tmp_path / "after") == NOTHING
    assert forking.zygote_starts == 1


def test_each_run_has_its_own_cpu_limit(forking, tmp_path: Path):
    limits = Limits(cpu_seconds=3, wall_seconds=60, memory_bytes=2 * 1024**3)
    spin = "def spin():\n    while True:\n        pass"
    with WorkerSession([spin], forking, limits, call_timeout=50) as session:
        with pytest.raises(Exception, match=r"CPU|cpu|signal|stopped"):
            session.call("spin")
    # The zygote's own CPU time does not count against the next run.
    assert probe_in_kernel(forking, tmp_path / "after") == NOTHING


def test_only_writeback_files_come_back(forking, tmp_path: Path):
    code = "open('executed.ipynb.extra', 'w').write('x')\nopen('../escaped', 'w').write('x')\nprint('wrote')"
    _, texts = run_notebook(forking, [code], tmp_path / "files")
    assert texts == ["wrote\n"]
    assert sorted(p.name for p in (tmp_path / "files").iterdir()) == ["executed.ipynb", "job.json",
                                                                        "submission.ipynb"]
    assert not (tmp_path / "escaped").exists()


def test_a_run_that_kills_its_zygote_ends_and_the_next_run_gets_a_new_one(forking, tmp_path: Path):
    kill = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"  # the kernel's parent is the runner
    kill_zygote = ("import os, signal\n"
                   "ppid = int(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1])\n"
                   "os.kill(ppid, signal.SIGKILL)\nimport time\ntime.sleep(60)")
    result, _ = run_notebook(forking, [kill_zygote], tmp_path / "killer")
    assert result.returncode == -signal.SIGKILL and not result.timed_out
    assert probe_in_kernel(forking, tmp_path / "after") == NOTHING
    assert forking.zygote_starts == 2
    result, _ = run_notebook(forking, [kill], tmp_path / "runner-killer")
    assert result.returncode != 0
    assert probe_in_kernel(forking, tmp_path / "after-runner") == NOTHING
    assert forking.zygote_starts == 2


def test_without_a_zygote_runs_start_through_the_backend(tmp_path: Path):
    from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher

    class NoZygote(UnsandboxedLauncher):
        def spawn(self, script, *args, **kwargs):
            if script == "zygote.py":
                raise OSError("no zygote here")
            return super().spawn(script, *args, **kwargs)

    launcher = ForkServerLauncher(NoZygote(quiet=True)).for_submission(("toy", "x"))
    result, texts = run_notebook(launcher, ["print(6 * 7)"], tmp_path / "direct")
    assert isinstance(result, RunResult) and texts == ["42\n"]
    assert launcher.zygote_starts == 0


def test_a_forked_kernel_is_what_a_launched_one_is(forking, tmp_path: Path):
    """The sys.argv, sys.path, environment, matplotlib backend and process group a launched kernel has.

    Not the working directory: a forked run's is its own directory inside the zygote's.
    """
    from ch11_autograder.untrusted.choose import choose_launcher

    code = ("import sys, os, matplotlib, numpy\n"
            "print(sys.argv[0], sys.argv[3:], sys.path, sorted(os.environ), matplotlib.get_backend(),\n"
            "      os.environ.get('JPY_PARENT_PID') == str(os.getppid()), os.getpgid(0) == os.getpid(),\n"
            "      matplotlib.rcParams == matplotlib.rcParamsDefault or dict(matplotlib.rcParams))")
    _, forked = run_notebook(forking, [code], tmp_path / "forked")
    _, launched = run_notebook(choose_launcher("bwrap"), [code], tmp_path / "launched")
    assert forked == launched
    assert "ipykernel_launcher.py ['--HistoryManager.hist_file=:memory:']" in forked[0]


#: A notebook's cells that print the kernel's process state as JSON (``support/process_state.py``).
STATE_CELLS = [PROCESS_PROBE, "import json\nprint(json.dumps(process_state()))"]
#: A verdict worker's cells with a function that returns the same.
STATE_WORKER = [PROCESS_PROBE + "\ndef state():\n    import json\n    return json.dumps(process_state())\n"]


def test_forked_kernels_and_workers_start_with_the_process_state_of_launched_ones(forking, tmp_path: Path):
    """Signal by signal, mask, umask, timers, descriptors and limits: a fork is what the backend starts.

    Kernels are forked by their runner, workers by the zygote; both must start as the
    interpreter the backend launches would (``untrusted/runtime/fresh.py``). SIGPIPE above all:
    ignored, so that a write to a closed pipe raises BrokenPipeError.
    """
    from ch11_autograder.untrusted.choose import choose_launcher

    launched = choose_launcher("bwrap")
    states = {}
    for name, launcher in (("forked", forking), ("launched", launched)):
        result, texts = run_notebook(launcher, STATE_CELLS, tmp_path / name)
        assert result.returncode == 0, result.stderr[-2000:]
        states[f"{name} kernel"] = json.loads(texts[1])
        with WorkerSession(STATE_WORKER, launcher, LIMITS, call_timeout=30) as session:
            states[f"{name} worker"] = json.loads(session.call("state"))
    assert forking.zygote_starts == 1
    for role in ("kernel", "worker"):
        assert states[f"forked {role}"]["pipe_write"] == "BrokenPipeError"
        # A kernel's descriptors beyond 0-2 and its threads are ipykernel's, opened and started by
        # racing threads (their order and, at a given moment, their number vary between two
        # launched kernels too); its stdin is /dev/null when forked, an unused pipe when launched.
        ignore = ("fds", "threads") if role == "kernel" else ()
        found = differences(states[f"forked {role}"], states[f"launched {role}"], ignore=ignore)
        assert found == [], "\n".join([role, *found])


_MODULES = """
import json, sys
def loaded():
    return json.dumps(sorted(m for m in ("nbclient", "ipykernel", "numpy", "matplotlib.pyplot") if m in sys.modules))
"""


def test_a_zygote_for_workers_only_loads_what_their_student_code_imports_and_keeps_them_apart(tmp_path: Path):
    from ch11_autograder.untrusted.choose import choose_launcher

    try:
        inner = choose_launcher("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    loaded = {}
    for runs in ("workers", "all"):
        launcher = forking_launcher(inner, "bwrap", runs=runs).for_submission(("toy", runs))
        try:
            with WorkerSession([_MODULES], launcher, LIMITS, call_timeout=30) as session:
                loaded[runs] = json.loads(session.call("loaded"))
            if runs == "workers":
                with WorkerSession([PLANT], launcher, LIMITS, call_timeout=60) as session:
                    pass
                assert probe_in_worker(launcher) == NOTHING
                # Any other run still works in it, importing what the zygote did not.
                result, texts = run_notebook(launcher, ["import nbformat, numpy\nprint(numpy.add(1, 2))"],
                                             tmp_path / "runner")
                assert result.returncode == 0 and texts == ["3\n"], result.stderr[-2000:]
            assert launcher.zygote_starts == 1
        finally:
            launcher.close()
    assert loaded == {"workers": ["matplotlib.pyplot", "numpy"],
                      "all": ["ipykernel", "matplotlib.pyplot", "nbclient", "numpy"]}
    with pytest.raises(ValueError, match="'all' or 'workers'"):
        forking_launcher(inner, "bwrap", runs="kernels")
