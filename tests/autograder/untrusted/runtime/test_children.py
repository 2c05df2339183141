"""A fork server's loop (untrusted/runtime/children.py): woken when a child ends, each reaped once with its status.

Runs in a fresh interpreter (``python -c``): the wake-up descriptor and SIGCHLD handler are
process-wide, and pytest's own process must keep its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

SERVER = r'''
import json, os, selectors, signal, time
from ch11_autograder.untrusted.runtime import children

selector = selectors.DefaultSelector()
wake = children.wake_on_child_exit(selector)
assert list(children.ended()) == []  # no child yet: nothing, and no waiting
first = os.fork()
if first == 0:
    os._exit(3)
woken = [key.fileobj for key, _ in selector.select(timeout=10)]
os.read(wake, 4096)
second = os.fork()
if second == 0:
    time.sleep(60)
    os._exit(0)
os.kill(second, signal.SIGKILL)
reaped = []
deadline = time.monotonic() + 10
while len(reaped) < 2 and time.monotonic() < deadline:
    selector.select(timeout=1)
    reaped += children.ended()
print(json.dumps({"woken": woken == [wake], "reaped": sorted(reaped), "first": first, "second": second,
                  "again": list(children.ended())}))
'''


def test_the_loop_wakes_when_a_child_ends_and_each_child_is_reaped_once_with_its_status():
    done = subprocess.run([sys.executable, "-c", SERVER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["woken"]
    assert out["reaped"] == sorted([[out["first"], 3], [out["second"], -9]])
    assert out["again"] == []


LOOP = r'''
import json, os, socket
from ch11_autograder.untrusted.runtime import children

ours, theirs = socket.socketpair()
events = []

def on_request():
    data = ours.recv(1)
    if not data:
        events.append("end")
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(int(data))
    events.append(["started", int(data)])
    return True

def on_exit(pid, code):
    events.append(["exited", code])
    if code == 3:
        theirs.sendall(b"4")  # a request after the first child's end
    elif code == 4:
        theirs.close()  # the peer goes: the loop must end at its next request

theirs.sendall(b"3")
stray = os.fork()  # a child no request started: handed back all the same
if stray == 0:
    os._exit(7)
children.serve(ours, on_request, on_exit)
print(json.dumps(events))
'''


def test_the_loop_answers_each_request_hands_back_each_ended_child_and_ends_with_the_socket():
    done = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    events = json.loads(done.stdout)
    assert events[0] == ["started", 3] and events[-1] == "end"
    assert sorted(map(tuple, events[1:-1])) == [("exited", 3), ("exited", 4), ("exited", 7), ("started", 4)]
    assert events.index(["exited", 3]) < events.index(["started", 4]) < events.index(["exited", 4])
