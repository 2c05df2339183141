"""The service's storage: a private root, whole entries only, and nothing half-written after a SIGKILL."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ch11_autograder.exchange.hub.archive import unpack
from ch11_autograder.exchange.hub.names import BadName
from ch11_autograder.exchange.hub.storage import Storage, StorageError, Submission

from .conftest import NOTEBOOK, member, tar_gz, tree

WHEN = dt.datetime(2026, 12, 7, 4, 30, 1, 123456, tzinfo=dt.UTC)


def _staged(store: Storage, *members: tuple) -> Path:
    return unpack(io.BytesIO(tar_gz(*members)), store.staging())


@pytest.fixture
def store(tmp_path: Path) -> Storage:
    return Storage.open(tmp_path / "store", create=True)


def test_root_is_made_private_and_a_reachable_one_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    Storage.open(root, create=True)
    assert os.stat(root).st_mode & 0o777 == 0o700
    for mode in (0o750, 0o701, 0o707):
        os.chmod(root, mode)
        with pytest.raises(StorageError, match=f"has mode {mode:04o}: others may reach it; it must be 0700"):
            Storage.open(root)
    os.chmod(root, 0o700)
    os.symlink(root, tmp_path / "link")
    with pytest.raises(StorageError, match="is not a folder \\(or is a symbolic link\\)"):
        Storage.open(tmp_path / "link")
    with pytest.raises(StorageError, match="does not exist"):
        Storage.open(tmp_path / "missing")


def test_release_submit_feedback_round_trip(store: Storage) -> None:
    released = store.release("ch11", "ps1", _staged(store, member("problem1.ipynb", NOTEBOOK)))
    assert [r.assignment for r in store.released("ch11")] == ["ps1"]
    assert (released.path / "problem1.ipynb").read_bytes() == NOTEBOOK

    sub = store.submit("ch11", "alice@example.org", "ps1", _staged(store, member("problem1.ipynb", NOTEBOOK)), WHEN)
    assert sub.key == "20261207T043001.123456Z"
    assert (sub.path / "timestamp.txt").read_text() == "2026-12-07 04:30:01.123456 UTC"
    secret = (sub.path / "submission_secret.txt").read_text()
    assert len(secret) == 128 and int(secret, 16) >= 0
    later = store.submit("ch11", "alice@example.org", "ps1", _staged(store, member("problem1.ipynb", NOTEBOOK)),
                         WHEN + dt.timedelta(minutes=1))
    assert [s.key for s in store.submissions("ch11", "alice@example.org", "ps1")] == [sub.key, later.key]
    assert store.submissions("ch11", "bob", "ps1") == []

    assert store.feedback(sub) is None
    fb = store.add_feedback(sub, _staged(store, member("problem1.html", b"<p>ok</p>")))
    assert store.feedback(sub) == fb
    assert (fb.path / "problem1.html").read_bytes() == b"<p>ok</p>"
    assert tree(store.root / "tmp") == {}


def test_every_folder_and_file_under_the_root_is_the_services_alone(store: Storage) -> None:
    """Not only the root: the folders made on the way to an entry (a course's, a student's) are 0700 too, files
    0600, whatever the umask, so a root opened by mistake later exposes nothing below it."""
    old = os.umask(0o022)
    try:
        store.release("ch11", "ps1", _staged(store, member("problem1.ipynb", NOTEBOOK)))
        sub = store.submit("ch11", "alice", "ps1", _staged(store, member("sub/problem1.ipynb", NOTEBOOK)), WHEN)
        store.add_feedback(sub, _staged(store, member("problem1.html", b"<p>ok</p>")))
    finally:
        os.umask(old)
    modes = {str(p.relative_to(store.root)): p.lstat().st_mode & 0o777 for p in store.root.rglob("*")}
    assert "courses/ch11/submissions/alice" in modes
    assert {path: mode for path, mode in modes.items() if mode != (0o700 if (store.root / path).is_dir() else 0o600)} \
        == {}


def test_an_open_makes_the_folders_a_storage_left_open_private(store: Storage) -> None:
    sub = store.submit("ch11", "alice", "ps1", _staged(store, member("problem1.ipynb", NOTEBOOK)), WHEN)
    opened = [store.root / "courses" / "ch11", sub.path.parent.parent, sub.path.parent]
    for folder in opened:
        os.chmod(folder, 0o755)
    os.chmod(sub.path / "problem1.ipynb", 0o644)  # an entry's own files are the entry's: left as they are
    Storage.open(store.root)
    assert [oct(f.stat().st_mode & 0o777) for f in opened] == [oct(0o700)] * 3
    assert (sub.path / "problem1.ipynb").stat().st_mode & 0o777 == 0o644


def test_an_entry_is_not_overwritten_unless_replaced(store: Storage) -> None:
    store.release("ch11", "ps1", _staged(store, member("a.txt", b"first")))
    with pytest.raises(StorageError, match="'courses/ch11/released/ps1' exists already"):
        store.release("ch11", "ps1", _staged(store, member("a.txt", b"second")))
    assert (store.root / "courses/ch11/released/ps1/a.txt").read_bytes() == b"first"
    store.release("ch11", "ps1", _staged(store, member("a.txt", b"third")), replace=True)
    assert (store.root / "courses/ch11/released/ps1/a.txt").read_bytes() == b"third"
    with pytest.raises(StorageError, match="exists already"):
        store.submit("ch11", "bob", "ps1", _staged(store, member("a.txt")), WHEN)
        store.submit("ch11", "bob", "ps1", _staged(store, member("a.txt")), WHEN)


def test_a_submission_may_not_bring_its_own_timestamp(store: Storage) -> None:
    with pytest.raises(StorageError, match=re.escape("holds its own timestamp.txt")):
        store.submit("ch11", "bob", "ps1", _staged(store, member("timestamp.txt", b"1999")), WHEN)
    assert store.submissions("ch11", "bob", "ps1") == []


@pytest.mark.parametrize(("course", "student", "assignment", "field"), [
    ("..", "bob", "ps1", "course id"),
    ("ch11", "../alice", "ps1", "student name"),
    ("ch11", "bob", "ps1/../../../escape", "assignment id"),
    ("ch11", "bob", "/tmp/escape", "assignment id"),
    ("ch11", "bob\x00", "ps1", "student name"),
])
def test_bad_names_are_refused_and_nothing_is_written_outside_storage(
        tmp_path: Path, store: Storage, course: str, student: str, assignment: str, field: str) -> None:
    staged = _staged(store, member("a.txt", b"owned"))
    before = tree(tmp_path)
    with pytest.raises(BadName, match=f"^the {field} "):
        store.submit(course, student, assignment, staged, WHEN)
    with pytest.raises(BadName, match=f"^the {field} "):
        store.submissions(course, student, assignment)
    assert tree(tmp_path) == before
    assert tree(store.root / "courses") == {}


def test_feedback_needs_a_kept_submission_and_a_well_formed_key(store: Storage) -> None:
    ghost = Submission("ch11", "bob", "ps1", "20261207T043001.123456Z", "", Path("/nowhere"))
    missing = "no submission 'courses/ch11/submissions/bob/ps1/20261207T043001.123456Z'"
    with pytest.raises(StorageError, match=re.escape(missing)):
        store.add_feedback(ghost, _staged(store, member("f.html")))
    forged = Submission("ch11", "bob", "ps1", "../../alice/ps1/x", "", Path("/nowhere"))
    with pytest.raises(StorageError, match=re.escape("the submission key '../../alice/ps1/x' is not of the form")):
        store.feedback(forged)


def test_staging_from_elsewhere_is_refused(tmp_path: Path, store: Storage) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(StorageError, match="is not a staging folder of this storage"):
        store.submit("ch11", "bob", "ps1", elsewhere, WHEN)
    assert tree(elsewhere) == {}


_UPLOADER = """
import datetime as dt, sys
from pathlib import Path
from ch11_autograder.exchange.hub.archive import unpack
from ch11_autograder.exchange.hub.storage import Storage
store = Storage.open(Path(sys.argv[1]))
staged = unpack(sys.stdin.buffer, store.staging())
store.submit("ch11", "bob", "ps1", staged, dt.datetime.now(dt.timezone.utc))
"""


def test_a_kill_mid_upload_leaves_no_entry_and_the_next_open_clears_its_staging(tmp_path: Path) -> None:
    root = tmp_path / "store"
    Storage.open(root, create=True)
    # Random bytes do not compress: the first file reaches the disk while the rest is still unsent.
    upload = tar_gz(member("first.txt", os.urandom(300_000)), member("second.txt", os.urandom(300_000)))
    child = subprocess.Popen([sys.executable, "-c", _UPLOADER, str(root)], stdin=subprocess.PIPE)
    assert child.stdin is not None
    try:
        child.stdin.write(upload[: len(upload) // 2])
        child.stdin.flush()
        deadline = time.monotonic() + 30
        while not any(p.name == "first.txt" for p in (root / "tmp").rglob("*")):
            assert time.monotonic() < deadline, "the uploader never started writing"
            assert child.poll() is None, "the uploader ended before it was killed"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdin.close()
    assert any((root / "tmp").iterdir()), "the killed uploader left no staging behind to clear"

    store = Storage.open(root)
    assert tree(root / "tmp") == {}
    assert tree(root / "courses") == {}
    assert store.submissions("ch11", "bob", "ps1") == []
