"""Several calls per message (trusted/worker_batches.py, ``WorkerSession.call_many``): each call given the
outcome it has alone (``tests/support/call_outcomes.py``), unsandboxed, under bwrap and under bwrap with the zygote.
"""

from __future__ import annotations

import time

import pytest
from ch11_autograder import protocol
from ch11_autograder.protocol import ProtocolError
from ch11_autograder.trusted.worker_batches import Call
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.trusted.worker_errors import CallTimeout, NotDefined, NotRun, StudentError
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from support import call_outcomes

LAUNCHER = UnsandboxedLauncher(quiet=True)


@pytest.fixture(params=call_outcomes.BACKENDS)
def launcher(request):
    with call_outcomes.launched(request.param) as launcher:
        yield launcher


def test_a_batch_gives_every_call_the_outcome_it_has_alone(launcher):
    with call_outcomes.session(launcher) as alone, call_outcomes.session(launcher) as together:
        expected = call_outcomes.one_by_one(alone, call_outcomes.ordinary_calls(alone.keep([], "stack")))
        got, rounds = call_outcomes.batched(together, call_outcomes.ordinary_calls(together.keep([], "stack")))
        assert [call_outcomes.describe(o) for o in got] == [call_outcomes.describe(o) for o in expected]
        assert rounds == 1 and together.starts == alone.starts == 1 and together.alive
    kinds = [call_outcomes.describe(o)[0] for o in got]
    assert kinds == ["ok", "ok", "StudentError", "NotDefined", "NotDefined", "Unencodable"] + ["ok"] * 6
    assert got[6].args == ([1, 2, 3],) and got[6].kwargs == {"item": 3}  # the mutation, seen under watch
    assert got[7].warnings == ("UserWarning: careful with 7",)
    assert (got[8].value, got[9].value, got[10].value) == (["a"], 2, ["a", "b"])  # state carried, in order


def test_a_hang_or_a_dead_worker_in_a_batch_is_that_calls_outcome_and_the_rest_go_on(launcher):
    with call_outcomes.session(launcher) as alone, call_outcomes.session(launcher) as together:
        expected = call_outcomes.one_by_one(alone, call_outcomes.fatal_calls(alone.keep([], "stack")))
        got, rounds = call_outcomes.batched(together, call_outcomes.fatal_calls(together.keep([], "stack")))
        assert [call_outcomes.describe(o) for o in got] == [call_outcomes.describe(o) for o in expected]
        assert rounds == 4 and together.starts == alone.starts == 4
        assert len(together.incidents) == len(alone.incidents) == 3
    described = [call_outcomes.describe(o) for o in got]
    assert described[9] == ("CallTimeout", str(CallTimeout("hang", call_outcomes.CALL_TIMEOUT)))
    assert (got[10].value, got[11].value) == (1, ["c"])  # a fresh worker, a fresh kept list
    assert described[12][0] == "WorkerCrashed" and "exited with status 5" in described[12][1]
    assert described[15][0] == "WorkerCrashed" and "SIGKILL" in described[15][1]
    assert got[16].value == 1 and got[17].args == (0.5,)


def test_each_call_of_a_batch_has_its_own_time_limit_and_the_calls_before_a_hang_are_answered():
    with call_outcomes.session(LAUNCHER, call_timeout=30.0) as s:
        started = time.monotonic()
        got = s.call_many([Call("bump"), Call("hang", timeout=0.3), Call("bump"), Call("bump")])
        assert time.monotonic() - started < 10  # the hang cost its own 0.3 s, not the session's 30 s
        assert got[0].value == 1
        assert isinstance(got[1], CallTimeout) and "within 0.3 s" in str(got[1])
        assert [type(o) for o in got[2:]] == [NotRun, NotRun] and got[2].reason == "stopped"
        assert not s.alive
        assert [o.value for o in s.call_many([Call("bump"), Call("bump")])] == [1, 2]
        with pytest.raises(TypeError, match="must be positive"):
            s.call_many([Call("bump", timeout=0)])
        with pytest.raises(TypeError, match="grader bug"):
            s.call_many([Call("bump"), Call("double", ({1, 2},))])
        assert s.call("bump") == 3  # nothing of the refused batches was sent


def test_stop_on_error_makes_no_call_after_the_first_error():
    with call_outcomes.session(LAUNCHER) as s:
        got = s.call_many([Call("bump"), Call("broken", (1,)), Call("bump")], stop_on_error=True)
        assert got[0].value == 1 and isinstance(got[1], StudentError)
        assert isinstance(got[2], NotRun) and got[2].reason == "stopped"
        assert s.alive and s.call("bump") == 2  # the worker did not make the third call, and is in step
        # An error as the last call of a message: the next message is not sent.
        s.call_many([Call("bump")])
        got = s.call_many([Call("missing"), Call("bump")], stop_on_error=True)
        assert isinstance(got[0], NotDefined) and isinstance(got[1], NotRun)
        assert s.call("bump") == 4


def test_a_batch_stops_at_its_deadline_on_the_callers_clock():
    with call_outcomes.session(LAUNCHER) as s:
        s.start()
        got = s.call_many([Call("nap", (0.2,)) for _ in range(20)], deadline=time.monotonic() + 0.5)
        made = [o for o in got if not isinstance(o, NotRun)]
        # Naps start at 0, 0.2 and 0.4 s at the soonest: at most 3 begin before the deadline.
        assert 1 <= len(made) <= 3 and [o.value for o in made] == list(range(1, len(made) + 1))
        assert all(o.reason == "budget" for o in got[len(made) :])
        # The worker stopped by itself: it is alive, in step, and made no call past the ones reported.
        assert s.alive and s.starts == 1 and s.call("bump") == len(made) + 1
        assert all(isinstance(o, NotRun) for o in s.call_many([Call("bump")], deadline=time.monotonic() - 1))
        assert s.call("bump") == len(made) + 2


def test_a_long_batch_is_split_into_messages_that_fit(monkeypatch):
    limit = protocol.CALLS_FRAME_BYTES + 400
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", limit)
    # The worker keeps its own limit, so it would take one oversized message: watch what is sent instead.
    sent: list[int] = []
    send = WorkerSession._send

    def watched_send(self: WorkerSession, data: bytes, fn: str, seconds: float) -> None:
        sent.append(len(data))
        send(self, data, fn, seconds)

    monkeypatch.setattr(WorkerSession, "_send", watched_send)
    with call_outcomes.session(LAUNCHER) as s:
        stack = s.keep([], "stack")
        sent.clear()
        # 30 calls of about 70 bytes do not fit one message of the lowered limit.
        got = s.call_many([Call("push", (stack, "x" * 40)) for _ in range(30)])
        assert [len(o.value) for o in got] == list(range(1, 31))
    assert len(sent) > 1 and max(sent) <= limit, sent


@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_a_worker_that_breaks_the_batch_protocol_is_killed(backend):
    cells = [
        "import os\n"
        "def forge(n):\n    os.write(4, b'{\"id\": 999, \"ok\": true, \"value\": 1}\\n')\n    return n\n"
        "def fine(n):\n    return n\n"
    ]
    with call_outcomes.launched(backend) as launcher, WorkerSession(cells, launcher, call_timeout=5.0) as s:
        got = s.call_many([Call("fine", (1,)), Call("forge", (2,)), Call("fine", (3,))])
        assert got[0].value == 1 and isinstance(got[1], ProtocolError) and isinstance(got[2], NotRun)
        assert not s.alive and s.call("fine", 4) == 4
