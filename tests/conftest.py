"""Test-suite tiers, and the grading image built while other tests run.

``make test`` (what CI runs) runs every tier; ``make test-fast`` leaves out three
heavy ones:

* ``docker``: tests that build the grading image and grade inside it;
* ``hostile_batch``: the hostile corpus graded as one batch per backend (the
  Docker one also checks that the demo class grades identically in the image),
  and the sample graded without the defences;
* ``class_batch``: the batch grader's end-to-end runs over the demo class (against
  ``make demo``, SIGKILL and resume, regrading, the CLI).

The tiers are assigned here, in one place, rather than scattered as marks.

When tests that need the grading image are selected and a Docker engine answers,
the image (and the debootstrap base it needs) starts building in a background
thread as soon as collection ends: a few minutes of mostly downloading and
unpacking, which then overlap the tests that run before the first Docker test.
The image fixtures wait for that build (``batch_support`` serializes on one lock)
and, if it failed, build again in the foreground, where the error surfaces.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from support import batch_support

DOCKER_TESTS = {
    "test_docker_grading.py": None,  # every test of the module
    "test_gradescope.py": {
        "test_run_autograder_in_the_grading_image",
        "test_setup_sh_installs_without_network_then_grades",
    },
}
HOSTILE_BATCH_FIXTURES = {"run", "bwrap_run", "docker_run"}
HOSTILE_BATCH_TESTS = {"test_attack_works_without_the_defence", "test_every_sampled_case_has_an_unsafe_outcome"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        name = getattr(item, "originalname", item.name)
        if module in DOCKER_TESTS and (DOCKER_TESTS[module] is None or name in DOCKER_TESTS[module]):
            item.add_marker(pytest.mark.docker)
        if module == "test_batch.py":
            item.add_marker(pytest.mark.class_batch)
        if module == "test_hostile.py" and (
            HOSTILE_BATCH_FIXTURES & set(getattr(item, "fixturenames", ())) or name in HOSTILE_BATCH_TESTS
        ):
            item.add_marker(pytest.mark.hostile_batch)


def _needs_image(item: pytest.Item) -> bool:
    return item.get_closest_marker("docker") is not None or "docker_run" in getattr(item, "fixturenames", ()) or (
        "run" in getattr(item, "fixturenames", ()) and "docker" in item.name)


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(_needs_image(item) for item in session.items) and batch_support.docker_reason() is None:
        threading.Thread(target=_build_image_early, name="grading-image-build", daemon=True).start()


def _build_image_early() -> None:
    # Failures are left to the fixtures, which build again and report them where they belong.
    with contextlib.suppress(Exception, pytest.skip.Exception, pytest.fail.Exception):
        batch_support.grading_image()
