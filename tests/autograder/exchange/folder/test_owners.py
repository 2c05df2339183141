"""The ownership rule on real folders: the student's own, another user's, a student without an account."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from ch11_autograder.exchange.folder.owners import SEVERAL_MACHINES, owner_of, refusal, uid_of

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to other users needs root")
ME = pwd.getpwuid(os.geteuid()).pw_name


def folder(inbound: Path, student: str) -> str:
    name = f"{student}+ch11+2026-12-02 10:00:00.000000 UTC+ab12"
    (inbound / name).mkdir(parents=True)
    return name


def test_the_student_s_own_folder(tmp_path: Path) -> None:
    name = folder(tmp_path, ME)
    assert owner_of(str(tmp_path / name)) == ME
    assert refusal(str(tmp_path), name, ME) is None


@needs_root
def test_a_folder_named_for_a_classmate(tmp_path: Path) -> None:
    name = folder(tmp_path, "daemon")  # made by root, claiming daemon
    assert refusal(str(tmp_path), name, "daemon") == (
        f"Refusing {name}: it claims to be daemon's submission but is owned by root")
    os.chown(tmp_path / name, pwd.getpwnam("daemon").pw_uid, -1)
    assert refusal(str(tmp_path), name, "daemon") is None


def test_a_link_is_judged_as_itself(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    name = f"{ME}+ch11+x+y"
    (tmp_path / name).symlink_to(tmp_path / "real")
    assert owner_of(str(tmp_path / name)) == ME  # lstat: the link's owner, who made it


def test_a_student_without_an_account(tmp_path: Path) -> None:
    name = folder(tmp_path, "nobody-here-ch11")
    assert uid_of("nobody-here-ch11") is None
    why = refusal(str(tmp_path), name, "nobody-here-ch11")
    assert why is not None and "has no unix account on this machine" in why and SEVERAL_MACHINES in why
