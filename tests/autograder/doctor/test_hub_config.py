"""The hub config check on the page's blocks: commands, users, folders and the course that exist, and each one
missing; a service with a url; the formgrader server's command."""

from __future__ import annotations

from pathlib import Path

from ch11_autograder.doctor.hub_config import check_hub_config
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV, page_hub_config

HUB = '(docs/course.md, "The hub", step "The hub\'s config")'


def lines(good: dict[str, Path], config: Path) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config)
    return [problem.line() for problem in check_hub_config(deployment)]


def test_the_page_s_hub_config(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python)
    assert lines(good, config) == []
    deployment = resolve(good["course"], course_id=COURSE_ID, hub_config=config)
    assert deployment.students_env == GRADER_ENV  # the spawner's environment
    assert deployment.formgrader_timeout() == ("root's formgrader server", 120.0)


def test_what_is_missing(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=tmp_path / "no-singleuser", command=python,
                             user="no-such-user-ch11", cwd=tmp_path / "renamed-home",
                             formgrader=tmp_path / "no-grader-singleuser")
    got = lines(good, config)
    assert got == [f"the hub's c.Spawner.cmd {tmp_path / 'no-singleuser'} is not an executable file {HUB}",
                   f"the hub service ch11-serve's user 'no-such-user-ch11' has no unix account here {HUB}",
                   f"the hub service ch11-serve's folder {tmp_path / 'renamed-home'} does not exist {HUB}",
                   f"root's formgrader server's command {tmp_path / 'no-grader-singleuser'} is not an executable file "
                   f"{HUB}"], got


def test_a_service_that_grades_another_course_or_can_stop_the_hub(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, tmp_path / "other-course", spawner=python, command=python, cwd=tmp_path,
                             extra=f'c.JupyterHub.services.append({{"name": "fg", "url": "http://127.0.0.1:9", '
                                   f'"command": [{str(python)!r}], "timeout": 120}})\n')
    assert lines(good, config) == [
        f"the hub service ch11-serve grades {tmp_path / 'other-course'} (its --course), not the course folder "
        f"{good['course']} {HUB}",
        "the hub service fg has a url: the hub exits at its start when it does not answer in time, so a course fault "
        f"would stop the hub for everyone; make it a grader's named server {HUB}"]


def test_a_hook_that_fails(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = page_hub_config(tmp_path, good["course"], spawner=python, command=python,
                             extra="def broken(spawner):\n    return spawner.no_such_setting\n\n\n"
                                   "c.Spawner.pre_spawn_hook = broken\n")
    [line] = lines(good, config)
    assert line.startswith("the hub config's c.Spawner.pre_spawn_hook fails for root's server 'formgrader': "
                           "AttributeError"), line


def test_a_config_that_does_not_load(good, tmp_path: Path) -> None:
    config = tmp_path / "jupyterhub_config.py"
    config.write_text("c = get_config()\nc.JupyterHub.services = [\n")
    [line] = lines(good, config)
    assert line.startswith(f"the hub config {config} does not load (SyntaxError")
    [line] = lines(good, tmp_path / "absent.py")
    assert line == f"the hub config {tmp_path / 'absent.py'} does not exist {HUB}"
