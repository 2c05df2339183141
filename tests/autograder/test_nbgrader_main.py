"""``ch11_autograder.nbgrader_main``: nbgrader's command line, minus one costly import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ch11_autograder.nbgrader_cli import BIN_DIR, nbgrader_argv, nbgrader_env

PROBE = (
    "import sys; from ch11_autograder.nbgrader_main import skip_costly_imports; skip_costly_imports(); "
    "import nbformat; nbformat.validate(nbformat.v4.new_notebook()); "
    "print('rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is not None)"
)


def test_nbformat_validates_without_rfc3987_syntax():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    # Control: without the skip, jsonschema does import it here (else the skip saves nothing).
    plain = PROBE.replace("skip_costly_imports(); ", "")
    out = subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_it_is_nbgrader_and_ignores_modules_planted_in_the_working_directory(tmp_path: Path):
    (tmp_path / "nbgrader.py").write_text("raise SystemExit('planted module imported')\n")
    ours = subprocess.run(nbgrader_argv("--version"), cwd=tmp_path, env=nbgrader_env(), capture_output=True,
                          text=True)
    theirs = subprocess.run([str(BIN_DIR / "nbgrader"), "--version"], cwd=tmp_path, env=nbgrader_env(),
                            capture_output=True, text=True)
    assert ours.returncode == theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert ours.stdout == theirs.stdout and "nbgrader version 0.9.6" in ours.stdout


def test_the_grader_s_own_command_does_not_import_it_either(tmp_path: Path):
    # `ch11-grade batch` imports nbgrader (and so nbformat and jsonschema) in its own process
    # before grading; a missing source is refused after those imports.
    probe = ("import sys; from ch11_autograder.cli import main; "
             f"code = main(['batch', {str(tmp_path / 'absent')!r}, '--course', {str(tmp_path / 'course')!r}]); "
             "print(code, 'nbformat' in sys.modules, sys.modules.get('rfc3987_syntax', 'absent'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "True", "None"], out.stdout + out.stderr
