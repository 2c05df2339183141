"""The hub config of docs/course.md as the hub tier reads it (no hub: these run in every tier).

The hub tier (``test_hub.py``) writes the page's hub block and managed-service block into its
``jupyterhub_config.py`` with the page's paths, names and ports replaced. These tests check,
without root, that the page still has exactly one of each block, that every placeholder the
tier replaces is still on the page (a page that changes one fails here, not silently in the
hub), and that the result is the page's config: one ``ch11-serve`` service running the page's
command as the instructor in the course directory, and the instructor's formgrader.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import hub as hub_support
from support.course_users import User
from support.hub import HubPlaces

INSTRUCTOR = User("c11hitest", Path("/tmp/hub-page/home/c11hitest"), 12345, 12345)
PLACES = HubPlaces(port=18000, formgrader_port=18999, student_venv=Path("/venvs/student"),
                   grader_venv=Path("/venvs/grader"), ch11_grade=Path("/tier/bin/ch11-grade"), instructor=INSTRUCTOR,
                   users=("c11hitest", "c11hlab"))


class Config:
    """Just enough of traitlets' config object for the page's blocks: attribute chains that hold values."""

    def __init__(self) -> None:
        self.__dict__["_values"] = {}

    def __getattr__(self, name: str):
        return self._values.setdefault(name, Config())

    def __setattr__(self, name: str, value) -> None:
        self._values[name] = value


def run_config(text: str) -> Config:
    config = Config()
    exec(compile(text, "jupyterhub_config.py", "exec"), {"get_config": lambda: config, "c": config})
    return config


def test_the_page_config_is_the_hub_and_its_two_services():
    config = run_config(hub_support.page_config(PLACES))
    services = {s["name"]: s for s in config.JupyterHub.services}
    assert sorted(services) == ["ch11-formgrader", "ch11-serve"]
    serve = services["ch11-serve"]
    assert serve["command"] == ["/tier/bin/ch11-grade", "serve", "--course", f"{INSTRUCTOR.home}/course"]
    assert serve["user"] == INSTRUCTOR.name and serve["cwd"] == f"{INSTRUCTOR.home}/course"
    formgrader = services["ch11-formgrader"]
    assert formgrader["command"] == ["/venvs/grader/bin/jupyterhub-singleuser"]
    assert formgrader["url"] == "http://127.0.0.1:18999" and formgrader["cwd"] == f"{INSTRUCTOR.home}/course"
    assert formgrader["oauth_no_confirm"] is True and formgrader["timeout"] >= 60
    assert config.JupyterHub.load_roles == [{"name": "ch11-instructor", "users": [INSTRUCTOR.name],
                                             "scopes": ["access:services!service=ch11-formgrader"]}]
    assert config.Spawner.cmd == ["/venvs/student/bin/jupyterhub-singleuser"]
    assert config.JupyterHub.bind_url == "http://127.0.0.1:18000"
    assert config.Authenticator.allowed_users == {"c11hitest", "c11hlab"}


def test_the_tier_settings_give_each_service_the_package_copy():
    text = hub_support.page_config(PLACES) + hub_support.tier_settings(Path("/state"), 18081, 18001, Path("/lib"))
    config = run_config(text)
    assert [s["environment"] for s in config.JupyterHub.services] == [{"PYTHONPATH": "/lib"}] * 2
    assert [s.get("timeout") for s in config.JupyterHub.services] == [None, hub_support.SERVICE_START_TIMEOUT]
    assert config.JupyterHub.hub_ip == "127.0.0.1" and config.JupyterHub.db_url == "sqlite:////state/jupyterhub.sqlite"


@pytest.mark.parametrize("changed", ["/opt/ch11/grader/bin/ch11-grade", '"instructor"', "http://127.0.0.1:9999"])
def test_a_page_that_drifts_from_the_tier_fails_here(tmp_path, changed):
    page = tmp_path / "course.md"
    page.write_text(hub_support.COURSE_PAGE.read_text().replace(changed, "/somewhere/else"))
    with pytest.raises(AssertionError, match="no longer holds"):
        hub_support.page_config(PLACES, page)


def test_two_service_blocks_are_refused(tmp_path):
    page = tmp_path / "course.md"
    text = hub_support.COURSE_PAGE.read_text()
    page.write_text(text + "\n```python\nc.JupyterHub.services = []\n```\n")
    with pytest.raises(AssertionError, match="2 python blocks"):
        hub_support.page_config(PLACES, page)
