"""A fork server's children (untrusted/runtime/children.py): woken when one ends, each reaped once with its status.

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
