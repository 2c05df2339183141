"""The checks a batch makes before grading: private paths, the course lock (no grading here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.batch.guards import BatchLock, check_private, check_sandbox, reachable_by_others
from ch11_autograder.batch.records import BatchError


def test_reachable_by_others_follows_the_directory_modes():
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp())  # under the system temp dir, whose parents others may search
    try:
        top.chmod(0o755)
        inner = top / "a" / "b"
        inner.mkdir(parents=True)
        (inner / "gradebook.db").write_text("x")
        for path in (top / "a", inner):
            path.chmod(0o755)
        (inner / "gradebook.db").chmod(0o644)
        assert all(p.stat().st_mode & 0o001 for p in top.parents), "premise: an open temp dir"
        assert reachable_by_others(inner / "gradebook.db") and reachable_by_others(inner)
        (top / "a").chmod(0o700)  # what the --docker mode does to /grading
        assert not reachable_by_others(inner / "gradebook.db") and not reachable_by_others(inner)
        (top / "a").chmod(0o755)
        (inner / "gradebook.db").chmod(0o600)
        assert not reachable_by_others(inner / "gradebook.db")
    finally:
        shutil.rmtree(top)


def test_a_second_lock_on_the_course_is_refused_and_names_the_holder(tmp_path):
    first = BatchLock(tmp_path / "lock")
    try:
        with pytest.raises(BatchError, match=r"another batch is grading this course \(pid \d+\)"):
            BatchLock(tmp_path / "lock")
    finally:
        first.release()
    BatchLock(tmp_path / "lock").release()  # released: the next batch may start


def test_only_the_container_user_backend_needs_private_paths():
    import shutil
    import tempfile

    open_dir = Path(tempfile.mkdtemp())  # under the system temp dir, whose parents others may search
    try:
        open_dir.chmod(0o755)
        assert reachable_by_others(open_dir), "premise: an open temp dir"
        check_private("bwrap", [open_dir])
        check_private("container-user", [open_dir / "absent"])  # nothing there to reach
        with pytest.raises(BatchError, match="reachable by the unprivileged users that run student code"):
            check_private("container-user", [open_dir])
        open_dir.chmod(0o700)
        check_private("container-user", [open_dir])
    finally:
        shutil.rmtree(open_dir)


def test_the_container_user_backend_has_eight_slots():
    with pytest.raises(BatchError, match="8 slots"):
        check_sandbox("container-user", 9)
