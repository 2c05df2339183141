"""identity_problem: students named by folders whose accounts share a uid, and the squash probe.

Real accounts with one uid are the exchange tier's (tests/exchange/test_identity.py, useradd
--non-unique); here the account lookup is given two names of one uid.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ch11_autograder.exchange.folder import identity
from ch11_autograder.exchange.folder.identity import identity_problem


def test_students_of_their_own_uids_are_told_apart(tmp_path: Path) -> None:
    for name in ("root+ch11+t+r", "daemon+ch11+t+r", "not-a-submission"):
        (tmp_path / name).mkdir()
    assert identity_problem(str(tmp_path)) is None
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".ch11-owner-probe")]  # the probe is removed


def test_students_sharing_a_uid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = {"alice": 1000, "bob": 1000, "carol": 1001}
    monkeypatch.setattr(identity, "uid_of", shared.get)
    for name in ("alice+ch11+t+r", "bob+ch11+t+r"):
        (tmp_path / name).mkdir()
    problem = identity_problem(str(tmp_path))
    assert problem is not None and problem.startswith("the students alice, bob have one unix uid (1000) here")
    assert identity_problem(str(tmp_path), ["alice", "carol"]) is None
