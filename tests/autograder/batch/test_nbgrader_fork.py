"""nbgrader runs forked from one pre-imported process per slot (``batch/nbgrader_fork.py``).

Real nbgrader: each run is ``nbgrader db student list`` in a course whose
``nbgrader_config.py`` (which nbgrader executes on every start) reports what the run sees
and plants state for the next run to find. A control loads that config twice in one
process, where the probe must see the plant.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ch11_autograder.batch.course import course_step
from ch11_autograder.batch.nbgrader_fork import (
    ForkedNbgrader,
    ForkServerGone,
    NbgraderForkServer,
    SlotServers,
    start_nbgrader,
)
from ch11_autograder.nbgrader_cli import nbgrader_env
from support.process_state import PROBE, differences, fresh_python_state

pytestmark = pytest.mark.slow

#: Runs whenever nbgrader (or the server's preload) loads the course config (nbgrader loads
#: it more than once per start). It reports only when $PROBE_OUT is set, which the server's
#: own environment never has; ``seen`` lists the $PLANT of every earlier load in this process.
PROBE_CONFIG = r'''
import json, os, sys, tempfile, time
import nbgrader

out = os.environ.get("PROBE_OUT")
if out:
    seen = list(getattr(nbgrader, "_planted", []))
    nbgrader._planted = [*seen, os.environ.get("PLANT", "")]
    os.environ["PLANTED_ENV"] = "1"
    with open(out, "w") as handle:
        json.dump({"cwd": os.getcwd(), "x": os.environ.get("X"), "argv": sys.argv[1:],
                   "tmp": tempfile.gettempdir(), "pid": os.getpid(), "pgid": os.getpgid(0),
                   "sid_is_own": os.getsid(0) == os.getpid(), "seen": seen}, handle)
    if os.environ.get("SLEEP"):
        time.sleep(float(os.environ["SLEEP"]))
state_out = os.environ.get("STATE_OUT")
if state_out:
    with open(state_out, "w") as handle:
        json.dump(process_state(), handle)
c = get_config()
'''

#: With $STATE_OUT set the config also writes the process's state there (``support/process_state.py``).
STATE_PROBE = PROBE

ARGS = ("db", "student", "list")


def _course(root: Path, name: str) -> Path:
    course = root / name
    course.mkdir()
    (course / "nbgrader_config.py").write_text(STATE_PROBE + PROBE_CONFIG)
    return course


def _run(server: NbgraderForkServer, course: Path, **env: str) -> tuple[int, dict, str]:
    log = course / "log.txt"
    with log.open("wb") as handle:
        run = server.spawn(ARGS, cwd=course, env=nbgrader_env({"PROBE_OUT": str(course / "probe.json"), **env}),
                           log_fd=handle.fileno())
    code = run.wait(timeout=60)
    return code, json.loads((course / "probe.json").read_text()), log.read_text()


def _start_slow_run(server: NbgraderForkServer, course: Path) -> ForkedNbgrader:
    """A forked run that sleeps for two minutes once nbgrader has loaded the config (it has written its probe)."""
    with (course / "log.txt").open("wb") as handle:
        run = server.spawn(ARGS, cwd=course, env=nbgrader_env({"PROBE_OUT": str(course / "probe.json"),
                                                              "SLEEP": "120"}), log_fd=handle.fileno())
    deadline = time.monotonic() + 60
    while not (course / "probe.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return run


@pytest.fixture
def server(tmp_path):
    server = NbgraderForkServer(_course(tmp_path, "server") / "nbgrader_config.py")
    yield server
    server.close()


def test_a_forked_run_has_its_own_directory_environment_argv_tmp_and_group(server, tmp_path):
    course = _course(tmp_path, "one")
    (tmp_path / "tmp-one").mkdir()
    code, probe, log = _run(server, course, X="first", TMPDIR=str(tmp_path / "tmp-one"))
    assert code == 0, log
    assert probe["cwd"] == str(course)
    assert probe["x"] == "first"
    assert probe["argv"] == list(ARGS)
    assert probe["tmp"] == str(tmp_path / "tmp-one")
    assert probe["pgid"] == probe["pid"] != server.proc.pid
    assert "student" in log.lower()  # nbgrader's own output reached the log


def test_a_forked_run_starts_with_the_process_state_of_a_fresh_nbgrader(server, tmp_path):
    """Signal by signal, and mask, umask, timers, descriptors, limits: as ``nbgrader`` started afresh.

    The fresh one is the process the batch starts when no server serves (``start_nbgrader``).
    SIGPIPE above all: a fresh interpreter ignores it, so nbgrader writing to the pipe of a
    runner a submission killed gets BrokenPipeError instead of dying (exit -13).
    """
    forked = _course(tmp_path, "forked")
    code, _, log = _run(server, forked, STATE_OUT=str(forked / "state.json"))
    assert code == 0, log
    fresh = _course(tmp_path, "fresh")
    env = nbgrader_env({"PROBE_OUT": str(fresh / "probe.json"), "STATE_OUT": str(fresh / "state.json")})
    with (fresh / "log.txt").open("wb") as handle:
        proc = start_nbgrader(ARGS, fresh, env, handle, None)
    assert proc.wait(timeout=60) == 0, (fresh / "log.txt").read_text()
    state = json.loads((forked / "state.json").read_text())
    assert state["pipe_write"] == "BrokenPipeError"
    assert differences(state, json.loads((fresh / "state.json").read_text())) == []
    # And as any freshly started Python, but for what nbgrader's start adds (its descriptors and
    # threads), the parent-death signal the batch sets on every nbgrader, and ``-P`` (sys.flags).
    ignore = ("fds", "threads", "status", "deathsig", "flags")
    assert differences(state, fresh_python_state(), ignore=ignore) == []


def test_nothing_one_run_plants_reaches_the_next(server, tmp_path):
    code, probe, log = _run(server, _course(tmp_path, "first"), PLANT="first")
    assert code == 0, log
    assert set(probe["seen"]) <= {"first"}
    code, probe, log = _run(server, _course(tmp_path, "second"), PLANT="second")
    assert code == 0, log
    assert "first" not in probe["seen"]


def test_control_one_process_loading_the_config_twice_sees_the_plant(tmp_path):
    course = _course(tmp_path, "control")
    script = ("from traitlets.config.loader import PyFileConfigLoader\n"
              "for _ in range(2):\n"
              "    PyFileConfigLoader('nbgrader_config.py', path='.').load_config()\n")
    env = nbgrader_env({"PROBE_OUT": str(course / "probe.json"), "PLANT": "yes"})
    subprocess.run([sys.executable, "-c", script], cwd=course, env=env, check=True, timeout=60)
    assert json.loads((course / "probe.json").read_text())["seen"] == ["yes"]


#: Reports, in a run, what the server's preload left loaded: the suite modules the config names,
#: nbformat's compiled validators and SQLAlchemy's configured mappers.
PRELOAD_PROBE = r'''
c = get_config()
c.TrustedVerdicts.suite_modules = ["ch11_autograder.exercises.ex3.suite", SUITE_PATH]
preloaded_out = os.environ.get("PRELOADED_OUT")
if preloaded_out:
    import nbformat.validator
    from sqlalchemy.orm import mapperlib
    with open(preloaded_out, "w") as handle:
        json.dump({"suite": "ch11_autograder.exercises.ex3.suite" in sys.modules,
                   "path_suites": sorted(n for n in sys.modules if n.startswith("_ch11_suite_")),
                   "validators": len(nbformat.validator.validators),
                   "mappers_pending": any(r._new_mappers for r in mapperlib._all_registries())}, handle)
'''


def _preload_course(root: Path, name: str) -> Path:
    course = _course(root, name)
    suite_path = root / "own_suite.py"
    suite_path.write_text("raise RuntimeError('a suite named by path is loaded by the engine, not preloaded')\n")
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + f"SUITE_PATH = {str(suite_path)!r}\n" + PRELOAD_PROBE)
    return course


def test_a_forked_run_finds_the_suites_the_config_names_and_the_first_use_caches_filled(tmp_path):
    server = NbgraderForkServer(_preload_course(tmp_path, "server") / "nbgrader_config.py")
    try:
        forked = _preload_course(tmp_path, "forked")
        code, _, log = _run(server, forked, PRELOADED_OUT=str(forked / "preloaded.json"))
        assert code == 0, log
    finally:
        server.close()
    preloaded = json.loads((forked / "preloaded.json").read_text())
    assert preloaded == {"suite": True, "path_suites": [], "validators": 2, "mappers_pending": False}
    # Control: nbgrader started afresh on the same course has imported none of it at that point.
    fresh = _preload_course(tmp_path, "fresh")
    env = nbgrader_env({"PROBE_OUT": str(fresh / "probe.json"), "PRELOADED_OUT": str(fresh / "preloaded.json")})
    with (fresh / "log.txt").open("wb") as handle:
        assert start_nbgrader(ARGS, fresh, env, handle, None).wait(timeout=60) == 0
    assert json.loads((fresh / "preloaded.json").read_text())["suite"] is False


def test_a_config_that_only_extends_the_suite_modules_still_gets_a_server(tmp_path):
    course = _course(tmp_path, "extends")
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + 'c.TrustedVerdicts.suite_modules.append("no.such.module")\n')
    server = NbgraderForkServer(config)  # no ForkServerGone: nothing to import ahead
    try:
        code, _, log = _run(server, _course(tmp_path, "one"))
        assert code == 0, log
    finally:
        server.close()


def test_a_killed_run_leaves_the_server_serving(server, tmp_path):
    course = _course(tmp_path, "slow")
    run = _start_slow_run(server, course)
    os.killpg(run.pid, signal.SIGKILL)  # what the batch does at a submission's time limit
    assert run.wait(timeout=20) == -signal.SIGKILL
    after = _course(tmp_path, "after")
    code, probe, log = _run(server, after)
    assert code == 0, log
    assert probe["cwd"] == str(after)


def test_runs_in_flight_die_with_the_server(tmp_path):
    server = NbgraderForkServer(_course(tmp_path, "server") / "nbgrader_config.py")
    course = _course(tmp_path, "slow")
    run = _start_slow_run(server, course)
    server.close()
    assert run.wait(timeout=20) == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(run.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the forked nbgrader {run.pid} outlived its server")
    with pytest.raises(ForkServerGone):
        server.spawn(ARGS, cwd=course, env=nbgrader_env(), log_fd=1)


def test_a_config_that_fails_to_load_refuses_with_its_error(tmp_path):
    course = tmp_path / "broken"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("raise RuntimeError('config says no')\n")
    with pytest.raises(ForkServerGone, match="config says no"):
        NbgraderForkServer(course / "nbgrader_config.py")


def test_a_server_started_without_waiting_serves_its_first_run_once_ready(tmp_path):
    course = _course(tmp_path, "server")
    go = tmp_path / "go"
    # The server's own load of the config (no $PROBE_OUT) cannot finish before `go` exists.
    gate = f"import os, time\nwhile not os.environ.get('PROBE_OUT') and not os.path.exists({str(go)!r}):\n" \
           "    time.sleep(0.05)\n"
    (course / "nbgrader_config.py").write_text(gate + (course / "nbgrader_config.py").read_text())
    server = NbgraderForkServer(course / "nbgrader_config.py", wait=False)  # returns while it is held
    try:
        go.touch()
        code, probe, log = _run(server, _course(tmp_path, "one"))  # waits for the server's ready first
        assert code == 0, log
        assert probe["argv"] == list(ARGS) and probe["pgid"] == probe["pid"]
    finally:
        server.close()


def test_a_server_started_without_waiting_that_refuses_says_so_at_its_first_run(tmp_path):
    course = tmp_path / "broken"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("raise RuntimeError('config says no')\n")
    server = NbgraderForkServer(course / "nbgrader_config.py", wait=False)
    try:
        with pytest.raises(ForkServerGone, match="config says no"):
            _run(server, _course(tmp_path, "one"))
    finally:
        server.close()


def test_a_course_step_forked_from_a_server_is_the_step_run_afresh(tmp_path):
    forked, fresh = _course(tmp_path, "forked"), _course(tmp_path, "fresh")
    server = NbgraderForkServer(forked / "nbgrader_config.py", wait=False)
    try:
        assert course_step(forked, forked / "step.log", *ARGS, forks=server) == []
    finally:
        server.close()
    assert course_step(fresh, fresh / "step.log", *ARGS) == []
    # Both ran nbgrader's `db student list` on their own course; the fork wrote the same log as the process.
    assert (forked / "step.log").read_text().replace(str(forked), "C") == \
        (fresh / "step.log").read_text().replace(str(fresh), "C")
    assert "fork server is gone" not in (forked / "step.log").read_text()
    gone = NbgraderForkServer(fresh / "nbgrader_config.py")
    gone.close()
    assert course_step(fresh, fresh / "again.log", *ARGS, forks=gone) == []
    assert "fork server is gone" in (fresh / "again.log").read_text()


def test_without_a_serving_server_nbgrader_starts_as_a_process(tmp_path):
    server = NbgraderForkServer(_course(tmp_path, "server") / "nbgrader_config.py")
    server.close()
    course = _course(tmp_path, "fallback")
    env = nbgrader_env({"PROBE_OUT": str(course / "probe.json")})
    with (course / "log.txt").open("wb") as handle:
        proc = start_nbgrader(ARGS, course, env, handle, server)
    assert isinstance(proc, subprocess.Popen)
    assert proc.wait(timeout=60) == 0
    assert "fork server is gone" in (course / "log.txt").read_text()
    assert json.loads((course / "probe.json").read_text())["sid_is_own"]


def test_slot_servers_start_one_server_per_slot_and_replace_one_that_ended(tmp_path):
    servers = SlotServers(_course(tmp_path, "server") / "nbgrader_config.py")
    try:
        first = servers.for_slot(0)
        assert first is not None and first.alive
        assert servers.for_slot(0) is first  # reused while it serves
        first.close()  # a server that died between two submissions
        second = servers.for_slot(0)
        assert second is not None and second is not first and second.alive
        code, _, log = _run(second, _course(tmp_path, "after"))
        assert code == 0, log
    finally:
        servers.close()
    assert not second.alive


def test_slot_servers_hand_out_none_when_disabled_or_when_the_server_cannot_start(tmp_path):
    assert SlotServers(_course(tmp_path, "off") / "nbgrader_config.py", enabled=False).for_slot(0) is None
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "nbgrader_config.py").write_text("raise RuntimeError('config says no')\n")
    servers = SlotServers(broken / "nbgrader_config.py")
    assert servers.for_slot(0) is None
    (broken / "nbgrader_config.py").write_text(PROBE_CONFIG)
    assert servers.for_slot(0) is None  # one failed start is enough: no retry per submission


def test_two_threads_asking_for_one_slot_at_once_get_one_server(tmp_path):
    """The pool warming slot 0 while its first submission starts on another thread: one server, not two."""
    servers = SlotServers(_course(tmp_path, "race") / "nbgrader_config.py")
    barrier = threading.Barrier(2)
    got: list[object] = []

    def ask() -> None:
        barrier.wait()
        got.append(servers.for_slot(0))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(got) == 2 and got[0] is not None and got[0] is got[1]
        assert servers.started == 1
    finally:
        servers.close()


@pytest.mark.parametrize("how", ["close_starting", "final close"])
def test_a_server_still_importing_is_ended_at_once_and_a_final_close_starts_none_after(tmp_path, how):
    """A slot warming (its server's config takes a minute to load) when the pool stops: the server ends at once and
    the thread waiting for it gets ``None`` within seconds, not at the end of the imports. After a final close no
    slot gets a server any more (a thread about to start a submission must not start one after the last close)."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "nbgrader_config.py").write_text("import time\ntime.sleep(60)\n")
    servers = SlotServers(slow / "nbgrader_config.py")
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(servers.for_slot(0)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not servers._starting and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers._starting, "the slot's server never started"
    (starting,) = servers._starting
    ended = time.monotonic()
    if how == "close_starting":
        servers.close_starting()
    else:
        servers.close(final=True)
    thread.join(timeout=10)
    assert not thread.is_alive() and got == [None], "the warming thread still waits for the imports"
    assert time.monotonic() - ended < 10 and starting.proc.poll() is not None
    if how == "final close":
        (slow / "nbgrader_config.py").write_text(PROBE_CONFIG)
        assert servers.for_slot(1) is None and servers.started == 0


def test_an_adopted_server_serves_its_slot_and_a_slot_that_has_one_keeps_it(tmp_path):
    course = _course(tmp_path, "adopt")
    servers = SlotServers(course / "nbgrader_config.py")
    early = NbgraderForkServer(course / "nbgrader_config.py", wait=False)
    late = NbgraderForkServer(course / "nbgrader_config.py", wait=False)
    try:
        servers.adopt(0, early)
        assert servers.for_slot(0) is early and servers.started == 1
        servers.adopt(0, late)  # slot 0 has one: the newcomer is closed, the first kept
        assert servers.for_slot(0) is early and not late.alive
        code, _, log = _run(early, _course(tmp_path, "adopted-run"))
        assert code == 0, log
    finally:
        servers.close()
        late.close()
    assert not early.alive
