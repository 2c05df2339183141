"""The hub config check on the page's blocks: commands, users and folders that exist, and each one missing."""

from __future__ import annotations

from pathlib import Path

from ch11_autograder.doctor.hub_config import check_hub_config
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, GRADER_ENV

HUB = '(docs/course.md, "The hub", step "The hub\'s config")'


def hub_config(where: Path, course: Path, *, spawner: Path, command: Path, user: str = "root",
               cwd: Path | None = None) -> Path:
    """The page's hub config, with this machine's paths."""
    path = where / "jupyterhub_config.py"
    path.write_text(f"""c = get_config()
c.Spawner.cmd = [{str(spawner)!r}]
c.JupyterHub.services = [
    {{"name": "ch11-serve", "command": [{str(command)!r}, "serve", "--course", {str(course)!r}],
      "user": {user!r}, "cwd": {str(cwd or course)!r}}},
    {{"name": "ch11-formgrader", "url": "http://127.0.0.1:9999", "command": [{str(command)!r}],
      "user": {user!r}, "cwd": {str(cwd or course)!r}, "timeout": 120}},
]
""")
    return path


def lines(good: dict[str, Path], config: Path) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, grader_env=GRADER_ENV,
                         hub_config=config)
    return [problem.line() for problem in check_hub_config(deployment)]


def test_the_page_s_hub_config(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = hub_config(tmp_path, good["course"], spawner=python, command=python)
    assert lines(good, config) == []
    deployment = resolve(good["course"], course_id=COURSE_ID, hub_config=config)
    assert deployment.students_env == GRADER_ENV  # the spawner's environment
    assert deployment.formgrader_timeout() == ("ch11-formgrader", 120.0)


def test_what_is_missing(good, tmp_path: Path) -> None:
    python = GRADER_ENV / "bin" / "python"
    config = hub_config(tmp_path, good["course"], spawner=tmp_path / "no-singleuser", command=python,
                        user="no-such-user-ch11", cwd=tmp_path / "renamed-course")
    got = lines(good, config)
    assert got[0] == f"the hub's c.Spawner.cmd {tmp_path / 'no-singleuser'} is not an executable file {HUB}"
    assert f"the hub service ch11-serve's user 'no-such-user-ch11' has no unix account here {HUB}" in got
    assert f"the hub service ch11-formgrader's folder {tmp_path / 'renamed-course'} does not exist {HUB}" in got
    assert len(got) == 5, got


def test_a_config_that_does_not_load(good, tmp_path: Path) -> None:
    config = tmp_path / "jupyterhub_config.py"
    config.write_text("c = get_config()\nc.JupyterHub.services = [\n")
    [line] = lines(good, config)
    assert line.startswith(f"the hub config {config} does not load (SyntaxError")
    [line] = lines(good, tmp_path / "absent.py")
    assert line == f"the hub config {tmp_path / 'absent.py'} does not exist {HUB}"
