"""The hub config of docs/course.md as the hub tier reads it (no hub: these run in every tier).

The hub tier (``test_hub.py``, ``test_hub_faults.py``) runs the page's graders' group block and
its ``/etc/profile.d`` block, and writes the page's hub block and services block into its
``jupyterhub_config.py``, with the page's placeholders (``<instructor>``, ``<student1>``,
``<graders>`` ...), paths and ports replaced. These tests check, without root, that the page
still has exactly one of each block, that every placeholder the tier replaces is still on the
page and none is left unfilled (a page that changes one fails here, not silently in the hub),
and that the result is the page's design: the grading service without a url (nothing the hub
waits for at its start), in the instructor's home, holding a refusal for 60 s; each server's
PATH and the login shells' PATH with the grading environment first for the graders only; the
formgrader as a grader's named server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from support import hub as hub_support
from support import hub_exchange
from support.course_users import User
from support.hub import HubPlaces

INSTRUCTOR = User("c11hitest", Path("/tmp/hub-page/home/c11hitest"), 12345, 12345)
GRADERS = "c11hitestg"


def places(tmp_path: Path) -> HubPlaces:
    return HubPlaces(port=18000, student_venv=Path("/venvs/student"), grader_venv=Path("/venvs/grader"),
                     ch11_grade=Path("/tier/bin/ch11-grade"), instructor=INSTRUCTOR, students=("c11hlab", "c11hterm"),
                     graders=GRADERS, profile=tmp_path / "profile.d" / "ch11.sh")


class Config:
    """Just enough of traitlets' config object for the page's blocks: attribute chains that hold values."""

    def __init__(self) -> None:
        self.__dict__["_values"] = {}

    def __getattr__(self, name: str):
        return self._values.setdefault(name, Config())

    def __setattr__(self, name: str, value) -> None:
        self._values[name] = value


@pytest.fixture
def graders_group(monkeypatch):
    """``grp`` as the page's config imports it, with the graders' group holding the instructor only."""
    fake = types.ModuleType("grp")
    fake.getgrnam = lambda name: types.SimpleNamespace(gr_mem=[INSTRUCTOR.name] if name == GRADERS else [])
    monkeypatch.setitem(sys.modules, "grp", fake)


def run_config(text: str) -> Config:
    config = Config()
    exec(compile(text, "jupyterhub_config.py", "exec"), {"get_config": lambda: config, "c": config})
    return config


def spawner(user: str, name: str = "") -> types.SimpleNamespace:
    return types.SimpleNamespace(user=types.SimpleNamespace(name=user), name=name, cmd=["student-server"],
                                 default_url="/lab", http_timeout=30, start_timeout=60, environment={})


def test_the_page_config_is_the_hub_and_its_grading_service(tmp_path, graders_group):
    config = run_config(hub_support.page_config(places(tmp_path)))
    [serve] = config.JupyterHub.services
    assert serve["name"] == "ch11-serve" and "url" not in serve, "the hub would wait for it at its start"
    assert serve["command"] == ["/tier/bin/ch11-grade", "serve", "--course", f"{INSTRUCTOR.home}/course",
                                "--hold-refusal", "60"]
    assert serve["user"] == INSTRUCTOR.name and serve["cwd"] == str(INSTRUCTOR.home), "cwd outside the course"
    assert config.Spawner.cmd == ["/venvs/student/bin/jupyterhub-singleuser"]
    assert config.JupyterHub.bind_url == "http://127.0.0.1:18000"
    assert config.Authenticator.allowed_users == {INSTRUCTOR.name, "c11hlab", "c11hterm"}
    assert config.JupyterHub.allow_named_servers is True


def test_each_server_s_path_puts_the_grading_environment_first_for_graders_only(tmp_path, graders_group):
    config = run_config(hub_support.page_config(places(tmp_path)))
    path = config.Spawner.environment["PATH"]
    assert path(spawner(INSTRUCTOR.name)).split(":")[:3] == ["/tier/bin", "/venvs/grader/bin", "/venvs/student/bin"]
    assert path(spawner("c11hlab")).split(":")[0] == "/venvs/student/bin"
    assert "/venvs/grader/bin" not in path(spawner("c11hlab"))


def test_the_formgrader_is_a_grader_s_named_server_in_the_course(tmp_path, graders_group):
    config = run_config(hub_support.page_config(places(tmp_path)))
    hook = config.Spawner.pre_spawn_hook
    default, student, formgrader = spawner(INSTRUCTOR.name), spawner("c11hlab", "formgrader"), \
        spawner(INSTRUCTOR.name, "formgrader")
    for each in (default, student, formgrader):
        hook(each)
    assert default.cmd == student.cmd == ["student-server"], "only a grader's formgrader server changes"
    assert formgrader.cmd[:2] == ["/bin/sh", "-c"] and formgrader.cmd[3] == "/venvs/grader/bin/jupyterhub-singleuser"
    assert 'cd "$HOME/course"' in formgrader.cmd[2] and '"$HOME/formgrader.log"' in formgrader.cmd[2]
    assert formgrader.default_url == "/formgrader" and formgrader.http_timeout >= 120


def test_the_tier_gives_the_package_copy_to_the_service_and_the_graders_servers_only(tmp_path, graders_group):
    text = hub_support.page_config(places(tmp_path)) + hub_support.tier_settings(
        Path("/state"), 18081, 18001, Path("/lib"), GRADERS)
    config = run_config(text)
    assert [s["environment"] for s in config.JupyterHub.services] == [{"PYTHONPATH": "/lib"}]
    grader, student = spawner(INSTRUCTOR.name), spawner("c11hlab")
    config.Spawner.pre_spawn_hook(grader)
    config.Spawner.pre_spawn_hook(student)
    assert grader.environment["PYTHONPATH"] == "/lib" and "PYTHONPATH" not in student.environment
    formgrader = spawner(INSTRUCTOR.name, "formgrader")
    config.Spawner.pre_spawn_hook(formgrader)
    assert formgrader.http_timeout == hub_support.FORMGRADER_TIMEOUT
    assert config.JupyterHub.hub_ip == "127.0.0.1" and config.JupyterHub.db_url == "sqlite:////state/jupyterhub.sqlite"


@pytest.mark.parametrize(("groups", "first"), [(f"users {GRADERS}", "/tier/bin"), ("users", "/venvs/student/bin"),
                                                (f"{GRADERS}x", "/venvs/student/bin")])
def test_the_login_shells_profile_chooses_by_group(tmp_path, groups, first):
    texts = hub_support.page_texts(places(tmp_path))
    (tmp_path / "profile.d").mkdir()
    subprocess.run(["bash", "-e", "-c", texts[hub_support.PROFILE_BLOCK_MARK]], check=True, timeout=60)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text(f"#!/bin/sh\necho '{groups}'\n")
    (fake / "id").chmod(0o755)
    shown = subprocess.run(["sh", "-c", f'PATH="{fake}:/usr/bin:/bin"; . "$1"; echo "$PATH"', "sh",
                            str(tmp_path / "profile.d" / "ch11.sh")], capture_output=True, text=True, check=True)
    assert shown.stdout.split(":")[0] == first, shown.stdout


@pytest.mark.parametrize("changed", ["/opt/ch11/grader/bin/ch11-grade", "<graders>", "<student2>",
                                     "/etc/profile.d/ch11.sh"])
def test_a_page_that_drifts_from_the_tier_fails_here(tmp_path, changed):
    page = tmp_path / "course.md"
    page.write_text(hub_support.COURSE_PAGE.read_text().replace(changed, "/somewhere/else"))
    with pytest.raises(AssertionError, match=r"no longer hold |has 0 blocks with"):
        hub_support.page_config(places(tmp_path), page)


def test_a_placeholder_the_tier_does_not_fill_is_refused(tmp_path):
    page = tmp_path / "course.md"
    page.write_text(hub_support.COURSE_PAGE.read_text().replace('"user": "<instructor>"', '"user": "<teacher>"'))
    with pytest.raises(AssertionError, match=r"does not fill: \['<teacher>'\]"):
        hub_support.page_config(places(tmp_path), page)


def test_two_service_blocks_are_refused(tmp_path):
    page = tmp_path / "course.md"
    text = hub_support.COURSE_PAGE.read_text()
    page.write_text(text + "\n```python\nc.JupyterHub.services = []\n```\n")
    with pytest.raises(AssertionError, match="2 blocks"):
        hub_support.page_config(places(tmp_path), page)


# --------------------------------------------------------------------------- the shared-uid hub of the hub exchange


def shared_places(tmp_path: Path) -> hub_exchange.SharedUidPlaces:
    return hub_exchange.SharedUidPlaces("c11zshared", tmp_path / "users", Path("/venvs/student"), Path("/venvs/grader"),
                                        tmp_path / "plugin", tmp_path / "lib", tmp_path / "etc-jupyter",
                                        tmp_path / "storage")


@pytest.fixture
def jupyterhub_spawner(monkeypatch) -> list[str]:
    """``jupyterhub.spawner`` as the shared-uid config imports it; the names ``set_user_setuid`` was given."""
    became: list[str] = []
    fake = types.ModuleType("jupyterhub.spawner")
    fake.SimpleLocalProcessSpawner = type("SimpleLocalProcessSpawner", (), {"home_dir": "/users/ada"})
    fake.set_user_setuid = lambda name, chdir=True: became.append(name) or (lambda: None)
    monkeypatch.setitem(sys.modules, "jupyterhub", types.ModuleType("jupyterhub"))
    monkeypatch.setitem(sys.modules, "jupyterhub.spawner", fake)
    return became


def test_the_shared_uid_hub_runs_the_page_s_exchange_block_and_every_server_as_one_user(tmp_path, jupyterhub_spawner):
    places = shared_places(tmp_path)
    ports = {"public": 18100, "hub": 18101, "proxy_api": 18102, "service": 18103}
    config = run_config(hub_exchange.shared_uid_config(tmp_path, ports, places, "admin-token", "pw"))
    [admin, service] = config.JupyterHub.services
    assert admin["name"] == "test-admin"
    assert service["name"] == "nbgrader-exchange" and service["url"] == "http://127.0.0.1:18103"
    assert service["command"] == ["/venvs/grader/bin/python", "-m", "ch11_autograder.exchange.hub.service",
                                  "--storage", str(places.storage), "--upload-cap", "52428800"]
    assert service["environment"] == {"PYTHONPATH": str(places.package)}
    assert config.JupyterHub.extra_user_scopes == [hub_exchange.ACCESS_SCOPE]
    assert config.Spawner.environment == {
        "PYTHONPATH": str(places.plugin), "JUPYTER_CONFIG_PATH": str(places.jupyter_config),
        "CH11_EXCHANGE_URL": "http://127.0.0.1:18100/services/nbgrader-exchange/"}
    assert config.SimpleLocalProcessSpawner.home_dir_template == f"{places.homes}/{{username}}"
    config.JupyterHub.spawner_class().make_preexec_fn("ada")
    assert jupyterhub_spawner == ["c11zshared"], "a server started as another user than the shared one"


def test_a_page_whose_exchange_block_drifts_fails_here(tmp_path):
    page = tmp_path / "course.md"
    page.write_text(hub_support.COURSE_PAGE.read_text().replace("/var/lib/nbgrader-exchange", "/srv/exchange"))
    with pytest.raises(AssertionError, match="no longer holds '/var/lib/nbgrader-exchange'"):
        hub_exchange.page_exchange_blocks(tmp_path / "s", Path("/py"), 1, 2, page)


def test_the_plugin_s_three_paths_import_without_the_grading_package(tmp_path):
    """docs/course.md, "Zero to JupyterHub": the students' image holds the plug-in's paths, not the package."""
    import ch11_autograder

    package = Path(ch11_autograder.__file__).parent.parent
    copy = hub_exchange.plugin_copy(package, tmp_path / "plugin")
    done = subprocess.run([sys.executable, "-c", "import json, sys, ch11_autograder.exchange.hub.plugin as p; "
                           "print(p.__file__); print(json.dumps([m for m in sys.modules if m.startswith('ch11_')]))"],
                          env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    where, modules = done.stdout.splitlines()
    assert where.startswith(str(copy)), where
    assert all(m.startswith("ch11_autograder.exchange") or m == "ch11_autograder" for m in json.loads(modules)), modules
