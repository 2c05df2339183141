"""No Jupyter config of the machine reaches the suite's assertions (``support/jupyter_env.py``).

A hub machine's admin writes ``/etc/jupyter/nbgrader_config.py`` (docs/course.md), users have
``~/.jupyter/nbgrader_config.py``, shells set ``JUPYTER_*`` variables. Here all three are planted,
each naming an exchange and a course id, and tests that read nbgrader's config (the service's
settings, in process) or run nbgrader (``fetch_feedback``, which also looks for the student's cache
in ``JUPYTER_DATA_DIR``) run in a pytest subprocess: they pass. The same run with the isolation
turned off fails: the planted config does reach them, so the passing run shows the isolation at work.

The system-wide file is planted only as root, only when there is none (an existing one is never
touched), and removed in a ``finally``; it carries :data:`MARK`, and a file with that mark left
by a killed run is removed at the next one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import jupyter_env
from support.paths import REPO_ROOT

pytestmark = pytest.mark.slow

SYSTEM_CONFIG = Path("/etc/jupyter/nbgrader_config.py")
MARK = "# planted by tests/test_hermetic.py for the length of one test; remove it if you find it\n"
PLANTED = MARK + ('c = get_config()\nc.Exchange.root = "/nonexistent/planted-exchange"\n'
                  'c.CourseDirectory.course_id = "planted-course"\n')
#: Tests whose outcome a leaking config changes (shown by the run without isolation).
SELECTION = ["tests/autograder/serve/test_policy.py", "tests/autograder/exchange/folder/test_feedback.py"]


@contextmanager
def system_config() -> Iterator[bool]:
    """``/etc/jupyter/nbgrader_config.py`` planted for the block (as root, when absent); whether it was."""
    if SYSTEM_CONFIG.is_file() and SYSTEM_CONFIG.read_text(errors="replace").startswith(MARK):
        SYSTEM_CONFIG.unlink()  # left by a run that was killed
    if os.geteuid() != 0 or SYSTEM_CONFIG.exists():
        yield False
        return
    made_dir = not SYSTEM_CONFIG.parent.exists()
    SYSTEM_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    try:
        SYSTEM_CONFIG.write_text(PLANTED)
        yield True
    finally:
        SYSTEM_CONFIG.unlink(missing_ok=True)
        if made_dir:
            SYSTEM_CONFIG.parent.rmdir()


def _pytest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           *SELECTION], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_planted_system_user_and_environment_config_change_no_outcome(tmp_path: Path) -> None:
    moved = [path for path in SELECTION if not (REPO_ROOT / path).is_file()]
    assert not moved, f"SELECTION names test files that are not there (moved or renamed?): {moved}"
    home, planted = tmp_path / "home", tmp_path / "planted"
    for folder in (home / ".jupyter", planted):
        folder.mkdir(parents=True)
        (folder / "nbgrader_config.py").write_text(PLANTED)
    machine = {**{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_")}, "HOME": str(home),
               "JUPYTER_CONFIG_DIR": str(planted), "JUPYTER_CONFIG_PATH": str(planted),
               "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with system_config() as system:
        isolated = _pytest(machine)
        exposed = _pytest({**machine, jupyter_env.KEEP_VARIABLE: "1"})
    if os.geteuid() == 0:
        assert system or SYSTEM_CONFIG.exists(), "as root, a system-wide config is always in place for the runs"
    assert not SYSTEM_CONFIG.is_file() or not SYSTEM_CONFIG.read_text(errors="replace").startswith(MARK)
    assert isolated.returncode == 0, isolated.stdout[-3000:] + isolated.stderr[-2000:]
    assert exposed.returncode != 0, "without the isolation the planted config should have changed an outcome"
    assert "test_no_course_id_is_refused" in exposed.stdout, exposed.stdout[-3000:]
    assert "test_real_fetch_feedback" in exposed.stdout, exposed.stdout[-3000:]


def test_isolation_drops_every_jupyter_variable() -> None:
    environ = {"JUPYTER_CONFIG_DIR": "/x", "JUPYTER_CONFIG_PATH": "/y", "JUPYTER_DATA_DIR": "/z", "PATH": "/bin"}
    assert jupyter_env.isolate(environ)
    assert environ == {"PATH": "/bin", "JUPYTER_NO_CONFIG": "1"}
    kept = {jupyter_env.KEEP_VARIABLE: "1", "JUPYTER_CONFIG_DIR": "/x"}
    assert not jupyter_env.isolate(kept)
    assert kept["JUPYTER_CONFIG_DIR"] == "/x"
