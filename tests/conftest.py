"""Test-suite tiers, and the grading image built while other tests run.

``make test`` (what CI runs) runs every tier but ``slurm``, ``dask``, ``page`` and ``readers``;
``make test-fast`` leaves out the heavy ones:

* ``docker``: tests that build the grading image and grade inside it;
* ``hostile_batch``: the hostile corpus graded as one batch per backend (the
  Docker one also checks that the demo class grades identically in the image),
  and the sample graded without the defences;
* ``class_batch``: the batch grader's end-to-end runs over the demo class (against
  ``make demo``, SIGKILL and resume, regrading, the CLI);
* ``exchange``: the course loop through nbgrader's file exchange with real unix users
  (``tests/exchange/``: release, fetch, submit, collect, autograde and the batch,
  feedback back, the LMS export). It creates users, so it needs root: without root it
  is skipped, except under CI (``$CI`` set), where it fails, as the Docker tier does.
* ``hub``: the course on a real JupyterHub (``tests/hub/``): JupyterHub from PyPI
  (``requirements/hub.txt``) with Debian's configurable-http-proxy, PAM logins of real unix
  users, the local-process spawner, the config blocks read from docs/course.md; one
  student in Chromium (the browser tier's) through JupyterLab's Assignments tab, one through
  a JupyterLab terminal, the instructor's terminal and formgrader server, the hub stopped with
  SIGINT mid-grading and started again; and the course faults that must not stop the hub
  (``test_hub_faults.py``: a slow grading environment, a missing course, a course config that
  cannot load, a refusing service), each with a student logging in during it. It needs
  root, chromium and the proxy (``make hub`` installs the proxy, ``make browser`` chromium):
  without them it is skipped, except under CI, where it fails. ``make test-fast`` leaves it out.
* ``page``: docs/course.md's install steps ("The hub", steps 1-4), the blocks the page marks
  ``<!-- page-run: ... -->``, run as written by ``support/page_runner.py`` in fresh containers of
  Debian 12 and Debian 13 built from the debootstrap base (``support/debian_machine.py``), then the
  behaviour fixtures under each one's Python (``tests/page/``). It needs root and a Docker engine:
  without them it is skipped, except under CI, where it fails. Opt-in: ``make test-page`` (about
  50 minutes per Debian version on a loaded 2-core machine, past CI's time); ``make test`` and
  ``make test-fast`` leave it out. The runner's own tests (``tests/page/test_page_runner.py``, a
  toy page in local bash) carry no mark and run in every tier.
* ``readers``: the readers' corpus (``tests/readers/``) graded whole, twenty wrong answers through
  ``ch11-grade batch``. Opt-in: ``make test-readers``; ``make test`` grades its gate instead, the first
  answer of each exercise (the same tests, a quarter of the grading), and ``make test-fast`` neither.
* ``dask``: grading on a real ``dask scheduler`` and two ``dask worker`` processes on
  127.0.0.1 (``tests/autograder/batch/test_cluster.py``: the demo class equal to local
  workers', a worker SIGKILLed mid-batch, a killed coordinator resumed, hostile cases, a
  submission that kills its worker). Opt-in: ``make test-dask``; ``make test`` and
  ``make test-fast`` leave it out (CI's time).
* ``slurm``: the demo class graded through ``ch11-grade batch --cluster slurm`` on a one-node
  Slurm cluster that the test starts (``tests/slurm/``, ``support/slurm_cluster.py``). Opt-in:
  ``make test-slurm`` installs Debian's slurm-wlm and munge (root) and runs this tier alone;
  ``make test`` and ``make test-fast`` leave it out. Without Slurm or root it skips, except
  under CI, where it fails.

No test leaves a process running: after every test and its teardown, the processes it started
(children of the test process: Dask workers and schedulers, fork servers, zygotes, verdict workers,
kernels, pools, a hub, its proxy and services; orphans whose working directory or command line lies
in the session's temporary folder) must have ended; one still ending is waited for, up to 30 s
(``support/process_leaks.py`` says why that bound). One still running then is killed and fails
the test at teardown, naming the test and each process (``tests/test_process_leaks.py`` shows it).
A module's or the session's fixtures are not a test's: their processes are theirs to end, so a pool
that several tests share is such a fixture, all its processes started when it is set up.
``CH11_PROCESS_LEAKS=report`` lists them instead, at the end of the session and in
``build/process-leaks.txt``, and leaves them running (a whole run's leftovers at once).
Processes the session's own background work starts (the image build, the batch's font list) are
not a test's, nor is multiprocessing's resource tracker, started with the session: it lives as
long as the interpreter that first uses a spawned process (``report/similarity.py``'s pool, the
behaviour tests' pool), which is the session here.

A further tier, ``browser`` (``tests/browser/``), drives Debian's Chromium through nbgrader's
formgrader on a real Jupyter server; it grades into a copy of the batch-graded demo class,
so it is ``class_batch`` too and ``make test-fast`` leaves it out with that tier. Without
chromium it skips (``make browser`` installs it as root), and fails under CI.

Each test declares its tier where it is written: a module-level ``pytestmark``
(``test_docker_grading.py``, ``test_batch.py``, ``test_course_loop.py``) or a mark on
the test (``test_gradescope.py``, ``test_hostile.py``, ``test_unchanged.py``), so renaming
or moving a test keeps its tier. ``tests/test_suite_layout.py`` fails if a test that
grades in the image or batch-grades the demo class lacks its mark, or if a
conftest assigns tiers by name again.

When tests that need the grading image are selected and a Docker engine answers,
the image (and the debootstrap base it needs) starts building in a background
thread as soon as collection ends: a few minutes of mostly downloading and
unpacking, which then overlap the tests that run before the first Docker test.
The page tier's Debian 13 base starts the same way in a thread of its own when ``page``
tests are selected (bookworm's is the grading image's).
The image fixtures wait for that build (``batch_support`` serializes on one lock)
and, if it failed, build again in the foreground, where the error surfaces.

No Jupyter config of the machine reaches a test: before anything is collected, every
``JUPYTER_*`` variable is dropped and ``JUPYTER_NO_CONFIG`` set, for this process and every
subprocess (``support/jupyter_env.py``; ``tests/test_hermetic.py`` plants a system-wide, a user
and a ``JUPYTER_*`` config and shows the outcomes do not change).
"""

from __future__ import annotations

import contextlib
import multiprocessing.resource_tracker
import os
import threading
import time
from pathlib import Path

import pytest
from support import batch_support, jupyter_env, process_leaks

_SESSION_START = time.time()
jupyter_env.isolate()
process_leaks.watch_background_work()


#: ``fail`` (the default): a process left running is killed and fails its test at teardown. ``report``: it is
#: listed at the end of the session and in ``build/process-leaks.txt`` and left alone, the test's outcome
#: unchanged.
LEAKS_ENV = "CH11_PROCESS_LEAKS"
_LEAK_REPORTS: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    mode = os.environ.get(LEAKS_ENV, "fail")
    if mode not in ("fail", "report"):
        raise pytest.UsageError(f"${LEAKS_ENV} is {mode!r}: 'fail' (the default) or 'report'")


def pytest_sessionstart(session: pytest.Session) -> None:
    # The session's, not the first test's that spawns a process: it outlives every pool (see the module).
    multiprocessing.resource_tracker.ensure_running()


def pytest_unconfigure(config: pytest.Config) -> None:
    jupyter_env.sweep(_SESSION_START)


_SNAPSHOT = pytest.StashKey[process_leaks.Snapshot]()


@pytest.fixture(autouse=True)
def _no_process_left(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The processes running before this test's own fixtures start (the module's and session's, set up first,
    are not this test's); :func:`pytest_runtest_teardown` compares after the test."""
    request.node.stash[_SNAPSHOT] = process_leaks.snapshot(tmp_path_factory.getbasetemp())
    yield


class ProcessLeft(Exception):
    """A test left a process running (support/process_leaks.py)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    # After every teardown of the test, a module's last test's module fixtures included.
    try:
        return (yield)
    finally:
        before = item.stash.get(_SNAPSHOT, None)
        failing = os.environ.get(LEAKS_ENV, "fail") == "fail"
        left = process_leaks.left_running(before, kill=failing) if before is not None else []
        if left:
            text = process_leaks.report(item.nodeid, left, killed=failing)
            if failing:
                raise ProcessLeft(text)
            _LEAK_REPORTS.append(text)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _LEAK_REPORTS:
        return
    terminalreporter.section(f"processes left running ({len(_LEAK_REPORTS)} tests; {LEAKS_ENV}=report)")
    for text in _LEAK_REPORTS:
        terminalreporter.write_line(text)
    out = Path(str(config.rootpath)) / "build" / "process-leaks.txt"
    with contextlib.suppress(OSError):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(_LEAK_REPORTS) + "\n")


def _needs_image(item: pytest.Item) -> bool:
    return item.get_closest_marker("docker") is not None or "docker_run" in getattr(item, "fixturenames", ()) or (
        "run" in getattr(item, "fixturenames", ()) and "docker" in item.name)


def pytest_collection_finish(session: pytest.Session) -> None:
    needs_image = any(_needs_image(item) for item in session.items)
    needs_trixie = any(item.get_closest_marker("page") is not None for item in session.items)
    if (needs_image or needs_trixie) and batch_support.docker_reason() is None:
        if needs_image:
            threading.Thread(target=_build_image_early, name="grading-image-build", daemon=True).start()
        if needs_trixie:
            threading.Thread(target=_build_trixie_early, name="trixie-base-build", daemon=True).start()


def _build_image_early() -> None:
    # Failures are left to the fixtures, which build again and report them where they belong.
    with contextlib.suppress(Exception, pytest.skip.Exception, pytest.fail.Exception):
        batch_support.grading_image()


def _build_trixie_early() -> None:
    # As above: the page tier's test builds again, in the foreground, if this failed.
    with contextlib.suppress(Exception, pytest.skip.Exception, pytest.fail.Exception):
        batch_support.base_image("trixie")
