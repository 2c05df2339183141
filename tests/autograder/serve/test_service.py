"""The service's scanning and status publishing on a real inbound folder, without grading.

Run as root, folders are given to system users (``daemon``, ``bin``, ``sys``), who play the
students: a flood from one of them, a classmate each, and a forgery. Grading itself is
exercised by the exchange tier (tests/exchange/test_serve_loop.py) and the batch's tests.
"""

from __future__ import annotations

import io
import os
import pwd
import secrets
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.publish import feedback_name
from ch11_autograder.serve.service import Service

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to other users needs root")

FLOODER, CLASSMATES = "daemon", ("bin", "sys")


def drop(inbound: Path, owner: str, n: int, claimed: str | None = None) -> tuple[str, str]:
    """A submission folder as ``nbgrader submit`` leaves it, owned by ``owner`` (named for ``claimed``)."""
    stamp = f"2026-12-02 10:00:{n:02d}.000000 UTC"
    folder = inbound / f"{claimed or owner}+ch11+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    secret = secrets.token_hex(64)
    (folder / "ex4_audit.ipynb").write_text('{"nbformat": 4, "cells": []}')
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secret)
    entry = pwd.getpwnam(owner)
    for path in (folder, *folder.iterdir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o777)
    return folder.name, secret


@pytest.fixture
def service(tmp_path: Path) -> Service:
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    (exchange / "c1" / "inbound").mkdir(parents=True)
    settings = ServeSettings(course, exchange, "c1", ServePolicy(attempts=6, workers=1), course / "practice")
    return Service(settings, out=io.StringIO())


def page(service: Service, secret: str) -> str:
    return (service.settings.feedback / feedback_name(secret, "ex4_audit")).read_text()


def test_flood_classmates_and_forgery(service: Service) -> None:
    inbound = service.settings.inbound
    flood = [drop(inbound, FLOODER, n) for n in range(10)]
    mates = [drop(inbound, name, 20 + i) for i, name in enumerate(CLASSMATES)]
    forged = drop(inbound, FLOODER, 30, claimed=CLASSMATES[0])
    hostile = drop(inbound, FLOODER, 31)
    os.rename(inbound / hostile[0], inbound / hostile[0].replace("+ch11+", "\n\x1b[2J+ch11+"))

    assert service.scan() == 8  # 6 of the flood (5 replaced at once), 2 classmates

    states = {row.folder: row.state for row in service.queue.in_state(*("queued", "refused", "superseded"))}
    assert [states[name] for name, _ in flood] == ["superseded"] * 5 + ["queued"] + ["refused"] * 4
    assert [states[name] for name, _ in mates] == ["queued", "queued"]
    assert states[forged[0]] == "refused"
    # Pages: the flooder's refusals and replacements, each classmate's position; nothing for the forgery.
    assert "Replaced" in page(service, flood[0][1])
    assert "attempts used up: 6" in page(service, flood[9][1])
    positions = [page(service, secret) for secret in (flood[5][1], mates[0][1], mates[1][1])]
    assert ["position 1" in p for p in positions] == [True, False, False]
    assert "position 2" in positions[1] and "position 3" in positions[2]
    assert not (service.settings.feedback / feedback_name(forged[1], "ex4_audit")).exists()
    # The flooder's turn comes; its next submission is past the budget; the classmates are next.
    assert [s.student for s in service.queue.claim(1)] == [FLOODER]
    _, late_secret = drop(inbound, FLOODER, 40)
    assert service.scan() == 0
    assert "attempts used up" in page(service, late_secret)
    assert [s.student for s in service.queue.order()] == list(CLASSMATES)
    log = service.out.getvalue()  # type: ignore[attr-defined]
    assert "\x1b" not in log and "\\n\\x1b[2J" in log  # the hostile name, escaped on one line
    assert "claims to be bin's submission" in log


def test_publishing_is_idempotent(service: Service) -> None:
    _, secret = drop(service.settings.inbound, FLOODER, 1)
    service.scan()
    path = service.settings.feedback / feedback_name(secret, "ex4_audit")
    first = path.stat().st_ino
    service.scan()
    service.refresh_queued()
    assert path.stat().st_ino == first, "an unchanged page is not written again"
    assert "position 1" in path.read_text()


def test_a_folder_of_the_wrong_notebooks_gets_its_refusal(service: Service) -> None:
    """fetch_feedback looks for the feedback of the notebooks the student submitted: the refusal is there."""
    name, secret = drop(service.settings.inbound, FLOODER, 1)
    folder = service.settings.inbound / name
    os.rename(folder / "ex4_audit.ipynb", folder / "ex4_audit <b>copy.ipynb")
    assert service.scan() == 0
    refusal = (service.settings.feedback / feedback_name(secret, "ex4_audit <b>copy")).read_text()
    assert "Not graded" in refusal and "no notebook of the assignment" in refusal
    assert "&lt;b&gt;copy" in refusal and "<b>copy" not in refusal
