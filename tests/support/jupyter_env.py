"""The Jupyter configuration the tests and their subprocesses see: none, unless a test plants its own.

A hub machine has ``/etc/jupyter/nbgrader_config.py`` (an exchange root, a course id), users have
``~/.jupyter``, shells have ``JUPYTER_*`` variables. nbgrader, jupyter_server and the service's
:func:`ch11_autograder.serve.policy.load_config` read all of them, so without care a test's
outcome depends on the machine. :func:`isolate` (called by ``tests/conftest.py`` before any test
is collected) removes every ``JUPYTER_*`` variable of this process and sets ``JUPYTER_NO_CONFIG``:
jupyter_core then searches one empty directory for config, never ``/etc/jupyter``,
``/usr/local/etc/jupyter``, ``<prefix>/etc/jupyter`` or ``~/.jupyter``. Subprocesses inherit it.

A test that means to read config it planted uses :func:`planted` (or deletes ``JUPYTER_NO_CONFIG``
itself), e.g. a Jupyter server, which finds nbgrader's server extension only through the config path.

``JUPYTER_NO_CONFIG`` makes each Jupyter process create an empty ``jupyter-clean-cfg-*`` folder in
the temporary directory and leave it; :func:`sweep` removes the empty ones made during the session.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = ["KEEP_VARIABLE", "isolate", "planted", "sweep"]

#: Set (to anything) to keep this machine's Jupyter config and variables: how ``tests/test_hermetic.py``
#: shows that a planted config would change the outcome of the tests without :func:`isolate`.
KEEP_VARIABLE = "CH11_TESTS_KEEP_JUPYTER_CONFIG"
#: The prefix of the empty folders jupyter_core makes under ``JUPYTER_NO_CONFIG``.
CLEAN_PREFIX = "jupyter-clean-cfg-"


def isolate(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Drop every ``JUPYTER_*`` variable of ``environ`` and set ``JUPYTER_NO_CONFIG=1`` (unless
    :data:`KEEP_VARIABLE` is set); whether it did."""
    if environ.get(KEEP_VARIABLE):
        return False
    for name in [name for name in environ if name.startswith("JUPYTER_")]:
        del environ[name]
    environ["JUPYTER_NO_CONFIG"] = "1"
    return True


def planted(env: Mapping[str, str], config_dir: Path) -> dict[str, str]:
    """``env`` for a process that reads the config planted in ``config_dir`` (first in the search path;
    ``/etc/jupyter`` and the interpreter's ``etc/jupyter`` follow, as jupyter_core orders them)."""
    out = {name: value for name, value in env.items() if name != "JUPYTER_NO_CONFIG"}
    out["JUPYTER_CONFIG_DIR"] = str(config_dir)
    return out


def sweep(since: float) -> int:
    """Remove the empty ``jupyter-clean-cfg-*`` folders of this user changed at or after ``since`` (seconds since
    the epoch); returns how many. A folder holding anything, or another user's, stays."""
    removed = 0
    root = Path(tempfile.gettempdir())
    for path in root.glob(CLEAN_PREFIX + "*"):
        try:
            info = path.lstat()
            if info.st_uid != os.geteuid() or info.st_mtime < since:
                continue
            path.rmdir()  # only an empty folder goes
        except OSError:
            continue
        removed += 1
    return removed
