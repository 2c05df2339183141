"""The checks a batch makes before grading: private paths (no grading here)."""

from __future__ import annotations

from pathlib import Path

from ch11_autograder.batch.guards import reachable_by_others


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
