"""Student identity where folder owners cannot tell students apart: collect and the service refuse, naming why.

Real unix users (``useradd``): two students made with one uid (``--non-unique``), as on a hub whose
users all run as one uid (Zero to JupyterHub's ``singleuser.uid``) with accounts for them on the
grading machine. Each writes a submission folder in their own name, as ``nbgrader submit`` does:
``nbgrader collect`` with the course config collects nothing and fails, ``ch11-grade serve``'s
service refuses to start and takes nothing, each naming the students and the uid. With one of the
two folders only (one name per uid), both go on as usual: the refusal is about the exchange, not a
name. The squashing filesystem (``all_squash``) is not staged here (it needs an NFS or FUSE mount).
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import IdentityRefused, Service
from support import course_users, exchange_course
from support.paths import ASSIGNMENT

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

COURSE_ID = "c1"


@pytest.fixture(scope="module")
def one_uid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[course_users.User, course_users.User]]:
    """Two students with one uid."""
    course_users.require_root()
    homes = tmp_path_factory.mktemp("homes")
    first = course_users.make_user("ch11id", homes)
    second = None
    try:
        second = course_users.make_user("ch11id", homes, uid=first.uid)
        yield first, second
    finally:
        for user in (second, first):
            if user is not None:
                course_users.remove_user(user)


def _submit(inbound: Path, user: course_users.User, second: int) -> str:
    """A folder in ``user``'s name, owned by ``user``'s uid, as ``nbgrader submit`` leaves it."""
    stamp = f"2026-12-02 10:00:{second:02d}.000000 UTC"
    folder = inbound / f"{user.name}+{ASSIGNMENT}+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / "ex4_audit.ipynb").write_text((SOURCE_DIR / "ex4_audit.ipynb").read_text())
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    for path in (folder, *folder.iterdir()):
        os.chown(path, user.uid, user.gid)
    folder.chmod(0o777)
    return folder.name


def _course(root: Path) -> tuple[Path, Path]:
    course = root / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    (root / "exchange" / COURSE_ID / "inbound").mkdir(parents=True)
    return course, root / "exchange"


def _service(course: Path, exchange: Path) -> Service:
    settings = ServeSettings(course, exchange, COURSE_ID, ServePolicy(workers=1), course / "practice")
    return Service(settings, out=io.StringIO())


def test_the_service_refuses_students_who_share_a_uid(one_uid, tmp_path: Path) -> None:
    first, second = one_uid
    course, exchange = _course(tmp_path)
    inbound = exchange / COURSE_ID / "inbound"
    _submit(inbound, first, 1)
    alone = _service(course, exchange)
    alone.start()
    assert alone.scan() == 1, alone.out.getvalue()  # type: ignore[attr-defined]  # one name per uid: taken
    alone.queue.close()
    pages = sorted(os.listdir(exchange / COURSE_ID / "feedback"))

    _submit(inbound, second, 2)
    service = _service(course, exchange)
    with pytest.raises(IdentityRefused, match=rf"{first.uid}"):
        service.start()
    log = service.out.getvalue()  # type: ignore[attr-defined]
    assert "refused  to start" in log and first.name in log and second.name in log, log
    # A service already running when the second folder arrives takes nothing while both are there.
    assert service.scan() == 0
    assert "refused  every submission" in service.out.getvalue()  # type: ignore[attr-defined]
    assert [s.folder for s in service.queue.in_state("queued", "refused")] == [
        s.folder for s in alone.queue.in_state("queued", "refused")]  # nothing new recorded
    assert sorted(os.listdir(exchange / COURSE_ID / "feedback")) == pages  # nothing published for it


def test_collect_collects_nothing_from_students_who_share_a_uid(one_uid, tmp_path: Path) -> None:
    first, second = one_uid
    course, exchange = _course(tmp_path)
    inbound = exchange / COURSE_ID / "inbound"
    _submit(inbound, first, 1)
    _submit(inbound, second, 2)
    done = exchange_course.collect_here(course, exchange, COURSE_ID)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Not collecting anything: the students" in done.stderr and f"({first.uid})" in done.stderr, done.stderr
    assert not (course / "submitted").exists()

    shutil.rmtree(inbound / next(n for n in os.listdir(inbound) if n.startswith(second.name)))
    done = exchange_course.collect_here(course, exchange, COURSE_ID)  # one name per uid: collected as usual
    assert done.returncode == 0, done.stderr
    assert (course / "submitted" / first.name / ASSIGNMENT / "ex4_audit.ipynb").is_file()
