"""Test-suite tiers.

``make test`` (what CI runs) deselects two heavy tiers, which ``make test-full``
runs as well:

* ``docker``: tests that build the grading image and grade inside it;
* ``hostile_batch``: the hostile corpus graded as one batch per backend, and the
  sample graded without the defences (about 30 minutes on 2 cores today);
* ``class_batch``: the batch grader's end-to-end runs over the demo class (against
  ``make demo``, SIGKILL and resume, regrading, the CLI), each grading the class
  again (about 15 minutes on 2 cores today).

The tiers are assigned here, in one place, rather than scattered as marks.
"""

from __future__ import annotations

import pytest

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
