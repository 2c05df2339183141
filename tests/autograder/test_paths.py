"""``ch11_autograder.paths`` in a non-editable install: the course defaults come from the wheel.

docs/course.md's instructor's environment installs the package with ``pip install ... .`` (not
editable), so ``REPO_ROOT`` is no checkout there. ``ch11-grade batch`` given an empty ``--course``
still makes the course from the course config and source notebooks, which the wheel carries.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.paths import COURSE_CONFIG, REPO_ROOT, SOURCE_DIR

pytestmark = pytest.mark.slow

_PROBE = """
import json, sys
from pathlib import Path
import ch11_autograder
from ch11_autograder import paths
from ch11_autograder.batch import init_course
course = Path(sys.argv[1])
created = init_course(course)
print(json.dumps({"package": ch11_autograder.__file__, "config": str(paths.COURSE_CONFIG),
                  "source": str(paths.SOURCE_DIR), "created": created}))
"""


def _installed_venv(tmp: Path) -> Path:
    """A venv holding this package installed from its wheel (not editable); the rest from the test's own site."""
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(wheels),
                    str(REPO_ROOT)], check=True, capture_output=True)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    (wheel,) = wheels.glob("ch11_grading-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies from this interpreter's site-packages, after the venv's own (whose copy of the
    # package wins): a .pth line adds a path but runs no .pth file there, so the editable install stays out.
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_a_non_editable_install_makes_a_course_from_the_files_its_wheel_carries(tmp_path):
    python = _installed_venv(tmp_path)
    course = tmp_path / "course"
    done = subprocess.run([str(python), "-c", _PROBE, str(course)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    package = Path(seen["package"]).parent
    assert package.is_relative_to(tmp_path / "venv"), seen
    assert Path(seen["config"]).is_relative_to(package) and Path(seen["source"]).is_relative_to(package), seen
    assert seen["created"] is True
    assert (course / "nbgrader_config.py").read_bytes() == COURSE_CONFIG.read_bytes()
    made = {p.name: p.read_bytes() for p in (course / "source" / "ch11").iterdir()}
    assert made == {p.name: p.read_bytes() for p in SOURCE_DIR.iterdir()}
    assert len(made) == 5


def test_a_checkout_uses_its_own_course_files():
    assert COURSE_CONFIG == REPO_ROOT / "nbgrader_config.py"
    assert SOURCE_DIR == REPO_ROOT / "source" / "ch11"
