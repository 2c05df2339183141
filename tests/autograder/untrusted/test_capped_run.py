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
