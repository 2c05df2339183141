"""Publishing: pages land where the real ``nbgrader fetch_feedback`` finds them, and nowhere else."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ch11_autograder.exchange.api import Publisher, feedback_name

STAMP = "2026-12-02 10:00:00.000000 UTC"
SECRET = "0123456789abcdef" * 8


def fetch_feedback(home: Path, exchange: Path, secret: str = SECRET) -> Path:
    """The student's side: a cached submission as ``nbgrader submit`` leaves it, then ``nbgrader fetch_feedback``."""
    cache = home / ".local/share/jupyter/nbgrader_cache/ch11-course" / f"{getpass.getuser()}+ch11+{STAMP}"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "ex4_audit.ipynb").write_text("{}")
    (cache / "timestamp.txt").write_text(STAMP)
    (cache / "submission_secret.txt").write_text(secret)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_CONFIG_PATH": str(home / ".jupyter")}
    done = subprocess.run([sys.executable, "-m", "nbgrader", "fetch_feedback", "ch11", "--course", "ch11-course",
                           f"--Exchange.root={exchange}"], cwd=home, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return home / "ch11" / "feedback" / STAMP / "ex4_audit.html"


def test_real_fetch_feedback_finds_the_page_and_a_new_page_replaces_it(tmp_path: Path) -> None:
    exchange = tmp_path / "exchange"
    (exchange / "ch11-course").mkdir(parents=True)
    publisher = Publisher(exchange / "ch11-course" / "feedback")
    assert (publisher.feedback_dir.stat().st_mode & 0o777) == 0o711
    publisher.publish(SECRET, "ex4_audit", "<p>queued</p>")
    fetched = fetch_feedback(tmp_path / "home", exchange)
    assert fetched.read_text() == "<p>queued</p>"
    path = publisher.publish(SECRET, "ex4_audit", "<p>feedback</p>")
    assert path.name == feedback_name(SECRET, "ex4_audit")
    assert fetch_feedback(tmp_path / "home", exchange).read_text() == "<p>feedback</p>"
    assert sorted(p.name for p in publisher.feedback_dir.iterdir()) == [path.name], "no temporary file left"


def test_a_symlink_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    feedback = tmp_path / "feedback"
    publisher = Publisher(feedback)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (feedback / feedback_name(SECRET, "ex4_audit")).symlink_to(victim)
    path = publisher.publish(SECRET, "ex4_audit", "page")
    assert not path.is_symlink() and path.read_text() == "page"
    assert victim.read_text() == "untouched"


def test_unsafe_feedback_directories_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(OSError):
        Publisher(tmp_path / "link").publish(SECRET, "ex4_audit", "page")
    assert list(real.iterdir()) == []
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with pytest.raises(PermissionError, match="writable by others"):
        Publisher(open_dir).publish(SECRET, "ex4_audit", "page")
    assert list(open_dir.iterdir()) == []


def test_read_and_remove_go_through_the_same_names_and_follow_no_link(tmp_path: Path) -> None:
    feedback = tmp_path / "feedback"
    publisher = Publisher(feedback)
    publisher.publish(SECRET, "ex4_audit", "page é")
    assert publisher.read(SECRET, "ex4_audit") == "page é"
    assert publisher.read(SECRET, "ex5_replay") is None
    assert publisher.remove(SECRET, "ex4_audit") and not publisher.remove(SECRET, "ex4_audit")
    assert list(feedback.iterdir()) == []
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (feedback / feedback_name(SECRET, "ex4_audit")).symlink_to(victim)
    assert publisher.read(SECRET, "ex4_audit") is None
    assert publisher.remove(SECRET, "ex4_audit")  # the link itself
    assert victim.read_text() == "untouched" and list(feedback.iterdir()) == []


def test_a_course_without_its_exchange_folder_is_refused_in_words(tmp_path: Path) -> None:
    """Before the instructor's first release the course has no folder in the exchange: the service says so and
    what makes it, rather than errno's bare line, and makes nothing."""
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    with pytest.raises(FileNotFoundError, match=r"ch11-course: the course has no folder in the exchange yet; the "
                                                r"instructor's first nbgrader release_assignment makes it"):
        Publisher(exchange / "ch11-course" / "feedback")
    assert list(exchange.iterdir()) == []
