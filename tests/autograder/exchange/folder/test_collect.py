"""OwnerCheckedCollect through the real ``nbgrader collect``: a forged folder refused, the owner's own collected,
nothing collected from a 0777 exchange root.

Run as root: folders are given to system users (``daemon`` plays the student, ``bin`` the classmate
whose name is forged). Real unix users and the whole course loop are the exchange tier's
(tests/exchange/test_course_loop.py, test_exchange_safety.py).
"""

from __future__ import annotations

import os
import pwd
import secrets
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.exchange.folder.safety import UNSAFE_EXCHANGE
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from support.exchange_course import collect_here

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to other users needs root")]

COURSE_ID = "c1"


def _drop(inbound: Path, owner: str, claimed: str, second: int) -> str:
    """A submission folder named for ``claimed``, owned by ``owner``, as ``nbgrader submit`` leaves it."""
    stamp = f"2026-12-02 10:00:{second:02d}.000000 UTC"
    folder = inbound / f"{claimed}+ch11+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / "ex4_audit.ipynb").write_text((SOURCE_DIR / "ex4_audit.ipynb").read_text())
    (folder / "timestamp.txt").write_text(stamp)
    user = pwd.getpwnam(owner)
    for path in (folder, *folder.iterdir()):
        os.chown(path, user.pw_uid, user.pw_gid)
    folder.chmod(0o777)
    return folder.name


def test_collect_takes_the_owner_s_folder_and_refuses_the_forgery(tmp_path: Path) -> None:
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    inbound = exchange / COURSE_ID / "inbound"
    inbound.mkdir(parents=True)
    exchange.chmod(0o1777)
    _drop(inbound, "daemon", "daemon", 1)
    forged = _drop(inbound, "daemon", "bin", 2)

    done = collect_here(course, exchange, COURSE_ID)
    assert done.returncode == 0, done.stderr
    assert f"Refusing {forged}: it claims to be bin's submission but is owned by daemon" in done.stderr
    assert "Not collecting bin: no submission folder in the exchange is owned by bin" in done.stderr
    assert sorted(os.listdir(course / "submitted")) == ["daemon"]

    exchange.chmod(0o777)
    done = collect_here(course, exchange, COURSE_ID)
    assert done.returncode != 0
    assert f"Not collecting anything: the exchange root {exchange} is writable by every user without the sticky " \
           f"bit (mode 0777)" in done.stderr and UNSAFE_EXCHANGE in done.stderr
