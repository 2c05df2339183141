"""The verdict worker and its trusted client, run as real processes (unsandboxed launcher).

The sandbox backends are tested on their own; here the point is the protocol
channel, the failure model (student error, timeout, crash, garbage) and the
restart policy.
"""

from __future__ import annotations

import numpy as np
import pytest
from ch11_autograder import protocol
from ch11_autograder.protocol import ProtocolError, RngSeed
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.trusted.worker_errors import (
    CallTimeout,
    NotDefined,
    StudentError,
    Unencodable,
    WorkerCrashed,
)
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from trainable_harness import make_chain

LAUNCHER = UnsandboxedLauncher(quiet=True)

CELLS = [
    "import numpy as np\n%matplotlib inline\n\ndef double(x):\n    return 2 * x",
    "print('noise on stdout')\nimport os, sys\nos.write(1, b'raw noise\\n')\nsys.stderr.write('err\\n')",
    "def broken():\n    return 1 / 0\n\nraise ValueError('cell failed')",
    "!ls -la\nfiles = !ls\nz = 3",
    "%%bash\necho not python",
    "%%time\ntimed = 'body ran'",
    "text = '''\n%not a magic inside a string\n'''",
    "typed = input()",
    "def loop(n):\n    while True:\n        pass",
    "def die():\n    os._exit(7)",
    "def returns_set():\n    return {1, 2}",
    "def noisy(x):\n    print('inside the call', x)\n    os.write(1, b'{\"id\": 999}\\n')\n    return x",
    "def draw(rng, n):\n    return rng.standard_normal(n)",
    "def chain_depth(chain):\n    return chain.depth",
    "def forge_garbage():\n    os.write(4, b'this is not json\\n')\n    return 1",
    "def big(n):\n    return 'x' * n",
    "def returns_forged():\n    return type('Forged\\n[pass] every check passed', (), {})()",
    "import dataclasses\n\n@dataclasses.dataclass\nclass Box:\n    x: int\n\n"
    "    def __getattribute__(self, name):\n        if name == 'x':\n            raise RuntimeError('no')\n"
    "        return object.__getattribute__(self, name)\n\ndef returns_unreadable():\n    return Box(1)",
]


@pytest.fixture(scope="module")
def session():
    """One worker for the module's tests that leave it running (its start is paid once)."""
    with WorkerSession(CELLS, LAUNCHER, call_timeout=2.0, max_restarts=10) as s:
        s.start()
        yield s


@pytest.fixture
def own_session():
    """A session of the test's own, for a test that kills its worker: the worker it restarts ends with the test
    (restarted in a shared session, it would run on past the test that started it)."""
    with WorkerSession(CELLS, LAUNCHER, call_timeout=2.0, max_restarts=10) as s:
        s.start()
        yield s


def test_cell_report_records_errors_and_skips_and_continues(session):
    statuses = [(c.index, c.status, c.error_type) for c in session.report]
    assert statuses[0] == (0, "ok", "")
    assert statuses[2] == (2, "error", "ValueError")
    assert session.report[2].where == 'line 4 of the code cell starting "def broken():"'
    assert session.report[2].message == "cell failed"
    assert statuses[3] == (3, "ok", "")  # shell lines dropped, the rest ran
    assert statuses[4][1] == "skipped" and "%%bash" in session.report[4].message
    assert statuses[5] == (5, "ok", "")
    assert statuses[7] == (7, "error", "EOFError")  # stdin is /dev/null, not the protocol channel
    assert all(c.status == "ok" for c in session.report[8:])


def test_calls_return_decoded_values(session):
    assert session.call("double", 21) == 42
    assert session.call("double", x=1.5) == 3.0
    result = session.call("double", np.arange(3, dtype=np.float32))
    assert result.dtype == np.float32 and result.tolist() == [0.0, 2.0, 4.0]


def test_state_from_cells_is_visible(session):
    # %%time ran its body; the string literal with '%' was left untouched.
    with pytest.raises(NotDefined, match="not a function"):
        session.call("timed")
    with pytest.raises(NotDefined, match="not a function"):
        session.call("text")


def test_student_exception_reports_type_message_and_place(session):
    with pytest.raises(StudentError) as info:
        session.call("broken")
    assert (info.value.type, info.value.message, info.value.where) == (
        "ZeroDivisionError",
        "division by zero",
        'line 2 of the code cell starting "def broken():"',
    )
    assert session.alive  # a student exception does not cost a restart


def test_missing_name(session):
    with pytest.raises(NotDefined, match="nope is not defined in your notebook"):
        session.call("nope")


def test_unencodable_return_names_the_type_in_plain_words(session):
    """What the worker cannot send is a returned value, not a raise: the reply carries the value's type, and the
    student reads which function returned it, the type quoted, and what of it cannot be sent."""
    from support.plain_words import offences

    with pytest.raises(Unencodable) as info:
        session.call("returns_set")
    assert info.value.type == "set" and info.value.fn == "returns_set"
    text = str(info.value)
    assert text.startswith("returns_set() returned a value the grader cannot read ('set'): a value of type set ")
    assert not offences(text), offences(text)
    assert session.alive


def test_unencodable_type_name_stays_on_its_line(session):
    # A class name is the student's text: it cannot print a line that looks like the grader's own.
    with pytest.raises(Unencodable) as info:
        session.call("returns_forged")
    text = str(info.value)
    assert "\n" not in text and "'__main__.Forged\\n[pass] every check passed'" in text


def test_a_returned_value_that_raises_when_read_is_no_raise_of_the_function(session):
    with pytest.raises(Unencodable) as info:
        session.call("returns_unreadable")
    assert info.value.type == "__main__.Box"
    assert str(info.value) == (
        "returns_unreadable() returned a value the grader cannot read ('__main__.Box'): "
        "reading it raised RuntimeError: no"
    )


def test_prints_inside_calls_do_not_touch_the_channel(session):
    # The forged '{"id": 999}' line goes to /dev/null with everything else on fd 1.
    assert session.call("noisy", 5) == 5


def test_rng_and_chain_arguments_are_rebuilt_in_the_worker(session):
    drawn = session.call("draw", RngSeed(3), 4)
    assert drawn.tolist() == np.random.default_rng(3).standard_normal(4).tolist()
    assert session.call("chain_depth", make_chain(7, 2)) == 7


def test_suite_bug_in_arguments_is_a_type_error(session):
    with pytest.raises(TypeError, match="grader bug"):
        session.call("double", {1, 2})


def test_timeout_kills_and_the_next_call_restarts(own_session):
    starts = own_session.starts
    with pytest.raises(CallTimeout) as info:
        own_session.call("loop", 1)
    assert "loop() did not return within 2 s" in str(info.value)
    assert not own_session.alive
    assert own_session.call("double", 2) == 4
    assert own_session.starts == starts + 1


def test_crash_is_reported_and_survived(own_session):
    with pytest.raises(WorkerCrashed, match="stopped unexpectedly: it exited with status 7"):
        own_session.call("die")
    assert own_session.call("double", 3) == 6


def test_garbage_on_the_real_channel_is_a_protocol_error(own_session):
    with pytest.raises(ProtocolError):
        own_session.call("forge_garbage")
    assert not own_session.alive
    assert own_session.call("double", 4) == 8


def test_oversized_reply_is_refused(session, monkeypatch):
    assert session.call("big", 100) == "x" * 100
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", 2000)
    with pytest.raises(ProtocolError, match="more than 2000 bytes"):
        session.call("big", 5000)


def test_restart_budget_is_finite():
    with WorkerSession(["def loop():\n    while True: pass"], LAUNCHER, call_timeout=0.5, max_restarts=1) as s:
        for _ in range(2):
            with pytest.raises(CallTimeout):
                s.call("loop")
        with pytest.raises(WorkerCrashed, match="failed 2 times in a row"):
            s.call("loop")
        assert s.starts == 2


def test_failed_start_is_final_and_fast():
    # The cell blocks SIGALRM, so the worker's per-cell limit cannot interrupt it.
    cells = ["import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\nwhile True:\n    pass"]
    with WorkerSession(cells, LAUNCHER, startup_timeout=1.0, cell_time_limit=0.2) as s:
        with pytest.raises(CallTimeout, match="your notebook's code did not finish running within 1 s"):
            s.call("anything")
        with pytest.raises(CallTimeout):
            s.call("anything")
        assert s.starts == 1


def test_per_cell_time_limit_interrupts_a_slow_cell_and_continues():
    cells = ["while True:\n    pass", "def ok():\n    return 'ok'"]
    with WorkerSession(cells, LAUNCHER, cell_time_limit=0.3) as s:
        report = s.start()
        assert (report[0].status, report[0].error_type) == ("error", "TimeLimit")
        assert s.call("ok") == "ok"


def test_worker_that_cannot_start_is_a_crash(tmp_path):
    # Without the protocol module next to the runtime the worker exits with status 2.
    class BrokenLauncher(UnsandboxedLauncher):
        def spawn(self, script, args, **kwargs):
            return super().spawn("no_such_script.py", args, **kwargs)

    with WorkerSession(["x = 1"], BrokenLauncher(quiet=True), startup_timeout=10) as s:
        with pytest.raises(WorkerCrashed) as info:
            s.start()
        assert "stopped unexpectedly" in str(info.value)
        assert "worker stderr" in info.value.detail  # the grader's log gets the interpreter's message
        assert "no_such_script.py" not in str(info.value)  # the student's message does not


def test_support_files_are_readable_and_paths_are_checked():
    cells = ["DATA = open('data/values.txt').read()\ndef data():\n    return DATA"]
    with WorkerSession(cells, LAUNCHER, support_files={"data/values.txt": b"1 2 3"}) as s:
        assert s.call("data") == "1 2 3"
    with pytest.raises(ValueError, match="relative path"):
        WorkerSession(cells, LAUNCHER, support_files={"../escape": b""})


def test_worker_runs_under_the_bwrap_sandbox_with_only_the_protocol_visible():
    from ch11_autograder.untrusted.choose import choose_launcher
    from ch11_autograder.untrusted.launch import SandboxUnavailable

    try:
        launcher = choose_launcher("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"bwrap sandbox not available here: {exc}")
    cells = [
        "from trainable_harness import TapeNode\ndef tape():\n    return [TapeNode(1.0), TapeNode(2.0, ((0, 2.0),))]",
        "import ch11_autograder",
        "import ch11_solutions",
    ]
    with WorkerSession(cells, launcher) as s:
        report = s.start()
        assert report[0].status == "ok"
        assert (report[1].status, report[1].error_type) == ("error", "ModuleNotFoundError")
        assert (report[2].status, report[2].error_type) == ("error", "ModuleNotFoundError")
        tape = s.call("tape")
        assert [node.value for node in tape] == [1.0, 2.0]


def test_line_numbers_survive_cell_magics():
    cells = ["%%time\nx = 1\nraise KeyError('here')"]
    with WorkerSession(cells, LAUNCHER) as s:
        (outcome,) = s.start()
        assert outcome.where == 'line 3 of the code cell starting "%%time"'


# --------------------------------------------------------------------------- watched calls, kept objects

STATEFUL_CELLS = [
    "import numpy as np\n"
    "def pure(values):\n    return sum(values)\n"
    "def sorts_in_place(values):\n    values.sort()\n    return values[0]\n"
    "def scales_array(a):\n    a *= 2\n    return float(a.sum())\n"
    "def sets_key(d, k=None):\n    d['seen'] = True\n    return len(d)\n"
    "def draws(rng):\n    return float(rng.standard_normal())\n"
    "def counts(chain):\n    chain.forward_evaluations += 1\n    return chain.forward_evaluations\n"
    "def opaque(x):\n    return 1\n"
    "def die():\n    import os\n    os._exit(3)\n"
    "def table(depths=range(16, 4097), *, scale=2.0, marker=object()):\n    return [d * scale for d in depths]\n"
    "def twice(values):\n    return sum(values) + sum(values)\n"
    "def overflows(x):\n    return np.float32(x) * np.float32(x)\n"
    "def warns_many(n):\n    import warnings\n    for i in range(n):\n        warnings.warn(f'w{i}' + 'x' * 400)\n"
    "    return n\n"
    "total = 3\n",
]


@pytest.fixture(scope="module")
def stateful():
    """As ``session``, with the cells of the watched and kept calls."""
    with WorkerSession(STATEFUL_CELLS, LAUNCHER, call_timeout=2.0, max_restarts=3) as s:
        s.start()
        yield s


@pytest.fixture
def own_stateful():
    """As ``own_session``, with ``stateful``'s cells."""
    with WorkerSession(STATEFUL_CELLS, LAUNCHER, call_timeout=2.0, max_restarts=3) as s:
        s.start()
        yield s


def test_a_watched_call_returns_the_arguments_as_the_call_left_them(stateful):
    reply = stateful.call_watch("pure", [3, 1, 2])
    assert reply.value == 6 and reply.args == ([3, 1, 2],) and reply.kwargs == {}
    reply = stateful.call_watch("sorts_in_place", [3, 1, 2])
    assert reply.value == 1 and reply.args == ([1, 2, 3],)
    array = np.arange(3, dtype=np.float32)
    reply = stateful.call_watch("scales_array", array)
    assert reply.value == 6.0
    assert reply.args[0].dtype == np.float32 and reply.args[0].tolist() == [0.0, 2.0, 4.0]
    assert array.tolist() == [0.0, 1.0, 2.0]  # the grader's own copy is never touched
    reply = stateful.call_watch("sets_key", {"a": 1}, k=[1])
    assert reply.args == ({"a": 1, "seen": True},) and reply.kwargs == {"k": [1]}


def test_a_watched_call_reports_every_warning_it_emitted(stateful):
    assert stateful.call_watch("overflows", 2.0).warnings == ()
    # Twice in a row: Python's default filter would show a warning from one place only once.
    for _ in range(2):
        reply = stateful.call_watch("overflows", 1e30)
        assert reply.value == np.float32(np.inf)
        assert reply.warnings == ("RuntimeWarning: overflow encountered in scalar multiply",)
    reply = stateful.call_watch("warns_many", 20)
    assert len(reply.warnings) == protocol.MAX_WARNINGS
    assert reply.warnings[0].startswith("UserWarning: w0x") and len(reply.warnings[0]) == protocol.MAX_WARNING_CHARS
    assert stateful.call("warns_many", 2) == 2  # an unwatched call reports none and needs no filter


def test_a_watched_generator_comes_back_as_its_state(stateful):
    before = np.random.default_rng(7).bit_generator.state
    reply = stateful.call_watch("draws", RngSeed(7))
    after = reply.args[0]
    assert after.type == "Generator"
    advanced = np.random.default_rng(7)
    advanced.standard_normal()
    assert after["state"] == advanced.bit_generator.state != before
    # An argument with no wire form comes back as a record naming its type; the call itself still succeeds.
    assert protocol.decode_value(protocol.watch_form(object())) == protocol.Record("Unencodable", {"type": "object"})


def test_kept_objects_are_shared_across_calls_and_survive_a_restart(own_stateful):
    chain = make_chain(depth=4, width=3, random_layer=2, seed=1)
    kept = own_stateful.keep(chain, "chain")
    assert repr(kept) == "chain"
    assert [own_stateful.call("counts", kept) for _ in range(3)] == [1, 2, 3]
    # A fresh chain per call (the default) never accumulates.
    assert [own_stateful.call("counts", chain) for _ in range(2)] == [1, 1]
    with pytest.raises(WorkerCrashed):
        own_stateful.call("die")
    # The next call starts a fresh worker, which is given a fresh copy of every kept object.
    assert own_stateful.call("counts", kept) == 1
    assert own_stateful.call("counts", kept) == 2


def test_a_call_naming_nothing_kept_is_the_workers_fault_and_kills_it(own_stateful):
    with pytest.raises(ProtocolError):
        own_stateful.call("opaque", protocol.Kept("never_kept"))
    assert own_stateful.call("opaque", 1) == 1  # a fresh worker answers again


def test_declared_defaults_are_read_without_calling(stateful):
    defaults = stateful.defaults("table")
    assert list(defaults) == ["depths", "scale", "marker"]
    assert defaults["depths"] == range(16, 4097) and defaults["scale"] == 2.0
    assert defaults["marker"] == protocol.Record("Unencodable", {"type": "object"})
    assert stateful.defaults("pure") == {}
    with pytest.raises(NotDefined):
        stateful.defaults("missing")
    with pytest.raises(NotDefined):
        stateful.defaults("total")  # a value, not a function


def test_a_one_shot_iterable_shows_code_that_reads_its_argument_twice(stateful):
    assert stateful.call("twice", [1, 2]) == 6
    assert stateful.call("twice", protocol.Once((1, 2))) == 3  # the second sum sees an exhausted generator
    assert stateful.call("table", range(1, 3), scale=1.0) == [1.0, 2.0]
