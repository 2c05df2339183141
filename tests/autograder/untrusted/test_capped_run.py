"""Reading back what a run left in its scratch directory (run_limited itself is exercised under
bwrap in backends/test_bwrap.py, where its limits matter)."""

from __future__ import annotations

import os

import pytest
from ch11_autograder.untrusted.capped_run import read_untrusted_file


def test_reading_results_does_not_follow_planted_links(tmp_path):
    # Under bwrap nothing planted in scratch reaches the host (only writeback files do), but
    # under the backends that run in the caller's directory (container-user, none) it does:
    # the reader must hold on its own. The links are planted here as such a run would.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    secret = tmp_path / "gradebook.db"
    secret.write_text("scores")
    os.symlink(secret, scratch / "executed.ipynb")
    (scratch / "real").mkdir()
    os.symlink("real", scratch / "dir")
    (scratch / "real" / "out.txt").write_text("fine")
    os.mkfifo(scratch / "pipe")
    assert read_untrusted_file(scratch, "real/out.txt", 100) == b"fine"  # control
    for planted in ("executed.ipynb", "dir/out.txt", "pipe"):
        with pytest.raises(OSError):
            read_untrusted_file(scratch, planted, 100)
    with pytest.raises(ValueError):
        read_untrusted_file(scratch, "../gradebook.db", 100)
    with pytest.raises(ValueError):
        read_untrusted_file(scratch, "real/out.txt", 3)


def test_a_deadline_lowered_while_the_run_goes_on_stops_it_as_its_own_limit_would(tmp_path):
    import json
    import threading
    import time

    import nbformat
    from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
    from ch11_autograder.untrusted.capped_run import Deadline, run_limited
    from ch11_autograder.untrusted.launch import Limits

    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(120)")]),
                   str(tmp_path / "submission.ipynb"))
    (tmp_path / "job.json").write_text(json.dumps({
        "version": 1, "input": "submission.ipynb", "output": "executed.ipynb", "kernel_name": "python3",
        "timeout": 120, "startup_timeout": 60, "interrupt_grace": 5.0}))
    deadline = Deadline()
    timer = threading.Timer(1.0, deadline.limit_to, args=(4.0,))
    timer.start()
    began = time.monotonic()
    result = run_limited(UnsandboxedLauncher(), "execute_notebook.py", ["job.json"], tmp_path,
                         Limits(cpu_seconds=120, wall_seconds=100.0, memory_bytes=2 * 1024**3), deadline=deadline)
    took = time.monotonic() - began
    timer.cancel()
    assert result.timed_out and result.killed_reason == "wall_time", result
    assert deadline.fired_limit == 4.0
    assert 4.0 <= took < 4.0 + 2 * Deadline.POLL_SECONDS + 5.0, took  # the kill's grace at most
    deadline.limit_to(30.0)  # a deadline is only ever lowered
    assert deadline.limit == 4.0
