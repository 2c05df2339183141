"""A deployment as docs/course.md builds it, in a temporary folder: the course, a 1777 exchange, this environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR

#: The environment running the tests: nbgrader and the grading package (the instructor's, on the page).
GRADER_ENV = Path(sys.executable).parent.parent
COURSE_ID = "c1"


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Path]:
    """The course folder (this process's user is the instructor) and the exchange with the course's folder."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    exchange = tmp_path / "exchange"
    (exchange / COURSE_ID / "outbound").mkdir(parents=True)
    exchange.chmod(0o1777)
    return {"course": course, "exchange": exchange}


def fake_env(where: Path, script: str) -> Path:
    """An environment whose ``bin/nbgrader`` is ``script``."""
    (where / "bin").mkdir(parents=True)
    nbgrader = where / "bin" / "nbgrader"
    nbgrader.write_text(script)
    nbgrader.chmod(0o755)
    return where


def page_hub_config(where: Path, course: Path, *, spawner: Path, command: Path, user: str = "root",
                    cwd: Path | None = None, graders: tuple[str, ...] = ("root",),
                    grader_bin: Path = GRADER_ENV / "bin",
                    students_bin: Path = Path("/nonexistent/students/bin"), formgrader: Path | None = None,
                    extra: str = "") -> Path:
    """The page's hub config (step 9) with this machine's paths: the spawner's command, ``c.Spawner.environment``'s
    PATH by a graders' set (the page reads a unix group), the pre-spawn hook's ``formgrader`` server, the
    ``ch11-serve`` service in ``cwd`` (default: the course's parent, as the page's home) grading ``course``."""
    path = where / "jupyterhub_config.py"
    path.write_text(f"""c = get_config()
c.Spawner.cmd = [{str(spawner)!r}]
c.Spawner.default_url = "/lab"
GRADERS = {set(graders)!r}


def is_grader(spawner):
    return spawner.user.name in GRADERS


def server_path(spawner):
    first = [{str(grader_bin)!r}] if is_grader(spawner) else []
    return ":".join([*first, {str(students_bin)!r}, "/usr/local/bin", "/usr/bin", "/bin"])


c.Spawner.environment = {{"PATH": server_path}}
FORMGRADER = 'exec >"$HOME/formgrader.log" 2>&1; cd "$HOME/course" && exec "$0" "$@"'


def formgrader_server(spawner):
    if spawner.name == "formgrader" and is_grader(spawner):
        spawner.cmd = ["/bin/sh", "-c", FORMGRADER, {str(formgrader or command)!r}]
        spawner.default_url = "/formgrader"
        spawner.http_timeout = 120


c.JupyterHub.allow_named_servers = True
c.Spawner.pre_spawn_hook = formgrader_server
c.JupyterHub.services = [
    {{"name": "ch11-serve", "command": [{str(command)!r}, "serve", "--course", {str(course)!r}, "--hold-refusal", "60"],
      "user": {user!r}, "cwd": {str(cwd or course.parent)!r}}},
]
{extra}""")
    return path
