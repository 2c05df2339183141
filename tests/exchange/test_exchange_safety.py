"""The rename attack on the exchange, staged by a real student: refused by the kernel on the page's root, done
on a 0777 one and then refused by ``collect`` and ``ch11-grade serve``, each with the line naming the fix.

The instructor is this process (root, as the tier's collect in tests/exchange/test_identity.py); the
student is a unix user made with ``useradd`` who runs Debian's ``/usr/bin/python3`` (the project's
interpreter lives under ``/root``). The student renames ``<exchange>/<course>`` away and makes their own
course folder with an ``outbound`` and an ``inbound``, as a hijacker would (docs/course.md, "What the
exchange does not protect").
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.doctor.exchange import check_exchange
from ch11_autograder.doctor.resolve import resolve
from ch11_autograder.exchange.api import UNSAFE_EXCHANGE, exchange_problems
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import IdentityRefused, Service
from support import course_users, exchange_course
from support.course_users import SYSTEM_PYTHON, User

pytestmark = [pytest.mark.slow, pytest.mark.exchange]

COURSE_ID = "c1"

#: What the student runs: rename the course folder away, make their own; prints the errno's name when refused.
HIJACK = """import errno, os, sys
course = sys.argv[1]
try:
    os.rename(course, course + "-old")
except OSError as exc:
    print(errno.errorcode[exc.errno])
    sys.exit(1)
os.makedirs(os.path.join(course, "outbound", "ch11"))
os.mkdir(os.path.join(course, "inbound"))
print("renamed")
"""


@pytest.fixture(scope="module")
def student() -> Iterator[User]:
    course_users.require_root()
    homes = Path(tempfile.mkdtemp(prefix="ch11-rename-homes-", dir="/tmp"))
    homes.chmod(0o755)
    user = course_users.make_user("c11r", homes)
    try:
        yield user
    finally:
        course_users.remove_user(user)
        shutil.rmtree(homes, ignore_errors=True)


@pytest.fixture
def root() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="ch11-rename-", dir="/tmp"))
    where.chmod(0o755)  # the student reaches the exchange below it
    yield where
    shutil.rmtree(where, ignore_errors=True)


def _released(root: Path, mode: int) -> tuple[Path, Path]:
    """The course and an exchange of root ``mode`` with the course's folder, as the instructor's release leaves it."""
    course = root / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = root / "exchange"
    (exchange / COURSE_ID / "inbound").mkdir(parents=True)
    (exchange / COURSE_ID / "inbound").chmod(0o2733)
    (exchange / COURSE_ID / "outbound").mkdir()
    exchange.chmod(mode)
    return course, exchange


def _service(course: Path, exchange: Path) -> Service:
    return Service(ServeSettings(course, exchange, COURSE_ID, ServePolicy(workers=1), course / "practice"),
                   out=io.StringIO())


def _hijack(student: User, exchange: Path):
    return course_users.run_as(student, [SYSTEM_PYTHON, "-c", HIJACK, str(exchange / COURSE_ID)],
                               cwd=exchange.parent, timeout=60)


def test_the_sticky_root_refuses_the_rename(student: User, root: Path) -> None:
    course, exchange = _released(root, 0o1777)
    done = _hijack(student, exchange)
    assert (done.returncode, done.stdout.strip()) == (1, "EPERM"), done.stdout + done.stderr
    assert (exchange / COURSE_ID).stat().st_uid == os.geteuid() and not (exchange / f"{COURSE_ID}-old").exists()
    assert exchange_problems(exchange, COURSE_ID) == []
    service = _service(course, exchange)
    assert service.start() == []  # the service starts on the page's exchange
    service.queue.close()


def test_on_a_0777_root_the_rename_works_and_collect_and_serve_refuse(student: User, root: Path) -> None:
    course, exchange = _released(root, 0o1777)
    running = _service(course, exchange)
    running.start()
    exchange.chmod(0o777)  # the page's old step 7
    done = _hijack(student, exchange)
    assert (done.returncode, done.stdout.strip()) == (0, "renamed"), done.stdout + done.stderr
    assert (exchange / COURSE_ID).stat().st_uid == student.uid

    # A service already running takes nothing from the student's folder, and says why.
    assert running.scan() == 0
    log = running.out.getvalue()  # type: ignore[attr-defined]
    assert "refused  every submission: the exchange root" in log and f"owned by {student.name}" in log, log
    running.queue.close()

    # A service starting refuses, naming both problems and the page section that fixes them.
    service = _service(course, exchange)
    with pytest.raises(IdentityRefused) as refused:
        service.start()
    line = str(refused.value)
    assert f"the exchange root {exchange} is writable by every user without the sticky bit (mode 0777)" in line
    assert f"the course folder {exchange / COURSE_ID} in the exchange is owned by {student.name}" in line
    assert f"chmod 1777 {exchange}" in line and UNSAFE_EXCHANGE in line and "\n" not in line
    assert "refused  to start" in service.out.getvalue()  # type: ignore[attr-defined]

    # collect collects nothing and fails, with the same line.
    collected = exchange_course.collect_here(course, exchange, COURSE_ID)
    assert collected.returncode != 0, collected.stdout + collected.stderr
    assert f"Not collecting anything: the exchange root {exchange} is writable by every user" in collected.stderr
    assert f"owned by {student.name}" in collected.stderr and UNSAFE_EXCHANGE in collected.stderr
    assert not (course / "submitted").exists()

    # ch11-grade doctor's exchange check says the same, one line each.
    found = [p.line() for p in check_exchange(resolve(course, exchange=exchange, course_id=COURSE_ID))]
    assert found == line.split("; and "), found
