"""exchange_problems on real folders: the root's mode and owner, the course folder's owner, kind and mode.

Owners other than this process's are real system users (``daemon``), given with ``chown``: root only.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from ch11_autograder.exchange.folder.safety import UNSAFE_EXCHANGE, exchange_problems, instructor_uid

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to other users needs root")
DAEMON = pwd.getpwnam("daemon")


def exchange(tmp_path: Path, root_mode: int = 0o1777, course_mode: int = 0o755) -> Path:
    """An exchange as docs/course.md makes it (root 1777), with the course folder made by this process."""
    root = tmp_path / "exchange"
    (root / "c1").mkdir(parents=True)
    root.chmod(root_mode)
    (root / "c1").chmod(course_mode)
    return root


def test_the_page_s_exchange_has_no_problem(tmp_path: Path) -> None:
    assert exchange_problems(exchange(tmp_path), "c1") == []


def test_a_root_writable_by_all_without_the_sticky_bit(tmp_path: Path) -> None:
    root = exchange(tmp_path, 0o777)
    [line] = exchange_problems(root, "c1")
    assert f"the exchange root {root} is writable by every user without the sticky bit (mode 0777)" in line
    assert f"chmod 1777 {root}" in line and line.endswith(f"{UNSAFE_EXCHANGE})")
    assert exchange_problems(exchange(tmp_path / "private", 0o755), "c1") == []  # not writable by others: no rename


def test_before_the_first_release_nothing_is_checked_but_the_root(tmp_path: Path) -> None:
    assert exchange_problems(tmp_path / "none", "c1") == []
    root = exchange(tmp_path, 0o777)
    os.rmdir(root / "c1")
    assert len(exchange_problems(root, "c1")) == 1


@needs_root
def test_a_course_folder_owned_by_another_user(tmp_path: Path) -> None:
    root = exchange(tmp_path)
    os.chown(root / "c1", DAEMON.pw_uid, DAEMON.pw_gid)
    [line] = exchange_problems(root, "c1")
    assert f"the course folder {root / 'c1'} in the exchange is owned by daemon (uid {DAEMON.pw_uid})" in line
    assert "not by the instructor root (uid 0)" in line and line.endswith(f"{UNSAFE_EXCHANGE})")
    # The configured instructor owns it: no problem; this process's own folder is then the foreign one.
    assert exchange_problems(root, "c1", DAEMON.pw_uid) == []
    assert exchange_problems(exchange(tmp_path / "other"), "c1", DAEMON.pw_uid) != []


@needs_root
def test_a_root_owned_by_a_user(tmp_path: Path) -> None:
    root = exchange(tmp_path)
    os.chown(root, DAEMON.pw_uid, DAEMON.pw_gid)
    [line] = exchange_problems(root, "c1")
    assert f"the exchange root {root} is owned by daemon (uid {DAEMON.pw_uid}), neither root nor the instructor" in line


def test_a_course_folder_that_is_a_link_or_writable_by_all(tmp_path: Path) -> None:
    root = exchange(tmp_path)
    (root / "elsewhere").mkdir()
    (root / "c2").symlink_to(root / "elsewhere")
    [line] = exchange_problems(root, "c2")
    assert f"the course folder {root / 'c2'} in the exchange is not a folder" in line
    (root / "c1").chmod(0o777)
    [line] = exchange_problems(root, "c1")
    assert "is writable by every user (mode 0777)" in line and f"chmod 0755 {root / 'c1'}" in line


def test_both_problems_are_named(tmp_path: Path) -> None:
    root = exchange(tmp_path, 0o777, 0o777)
    assert len(exchange_problems(root, "c1")) == 2


def test_the_instructor(tmp_path: Path) -> None:
    assert instructor_uid("") == os.geteuid()
    assert instructor_uid("daemon") == DAEMON.pw_uid
    with pytest.raises(ValueError, match=r"'no-such-user-ch11' .* has no unix account"):
        instructor_uid("no-such-user-ch11")
