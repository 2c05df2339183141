"""nbgrader 0.9.6's own exchange tests run against the hub exchange plug-in: a pytest plug-in (``-p``).

Usage (root, the hub tier's proxy, ``$USER`` set, which one of nbgrader's tests reads; the test
selection and its outcome: docs/course.md, "Exchange through the hub")::

    USER=root PATH=$PWD/.venv/bin:$PATH .venv/bin/python -m pytest -p support.nbgrader_hub_suite \\
        -o addopts="" --pyargs nbgrader.tests.apps.test_nbgrader_collect ... -k "<the tests>"

For the session it starts a hub with the exchange service (:mod:`support.hub_exchange`), makes the
hub user nbgrader's tests run as (this process's unix user name, nbgrader's ``get_username``) a
student and instructor of the courses the tests use (:data:`COURSES`), and selects the plug-in for
every action through a config folder on ``JUPYTER_CONFIG_PATH`` (the tests' own config files are
left alone; ``JUPYTER_NO_CONFIG``, which this repository's conftest sets, is lifted for the
session). Before each test the service's storage is emptied (the service reads its folder tree
on every request), as each of nbgrader's tests starts with a new exchange folder.
"""

from __future__ import annotations

import getpass
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import hub_exchange

COURSES = ("abc101", "abc102", "xyz200")
PLUGIN = {"release_assignment": "HubReleaseAssignment", "fetch_assignment": "HubFetchAssignment",
          "submit": "HubSubmit", "list": "HubList", "collect": "HubCollect",
          "release_feedback": "HubReleaseFeedback", "fetch_feedback": "HubFetchFeedback"}


@pytest.fixture(scope="session", autouse=True)
def _hub_exchange_for_nbgrader() -> Iterator[hub_exchange.ExchangeHub]:
    hub_exchange.require_exchange_hub()
    root = Path(tempfile.mkdtemp(prefix="nbgrader-hub-suite-"))
    try:
        with hub_exchange.exchange_hub(root) as hub:
            name = getpass.getuser()
            hub.user(name, *(f"{kind}-{course}" for course in COURSES for kind in ("nbgrader", "formgrade")))
            config = root / "config"
            config.mkdir()
            lines = [f"c.ExchangeFactory.{action} = 'ch11_autograder.exchange.hub.plugin.{cls}'"
                     for action, cls in PLUGIN.items()]
            (config / "nbgrader_config.py").write_text("\n".join(lines) + "\n")
            saved = {k: os.environ.get(k) for k in ("JUPYTER_CONFIG_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_NO_CONFIG",
                                                    "CH11_EXCHANGE_URL", "JUPYTERHUB_API_TOKEN")}
            # The suite's conftest sets JUPYTER_NO_CONFIG (support/jupyter_env.py), which would hide this folder too.
            os.environ.pop("JUPYTER_NO_CONFIG", None)
            os.environ["JUPYTER_CONFIG_PATH"] = os.environ["JUPYTER_CONFIG_DIR"] = str(config)
            os.environ["CH11_EXCHANGE_URL"] = hub.service_url
            os.environ["JUPYTERHUB_API_TOKEN"] = hub.token(name)
            try:
                yield hub
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _empty_exchange(_hub_exchange_for_nbgrader: hub_exchange.ExchangeHub) -> None:
    courses = _hub_exchange_for_nbgrader.storage / "courses"
    for entry in courses.iterdir():
        shutil.rmtree(entry)
