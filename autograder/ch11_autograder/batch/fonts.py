"""Matplotlib's font list, built once per grading process for every submission it grades.

Every ``nbgrader autograde`` the batch starts made its sandbox launcher build matplotlib's font
list (``untrusted/font_list.py``) before its first sandbox could start: a sandboxed
interpreter importing matplotlib, about 0.35 s of one core on the way to each submission's
first notebook run. The list depends on the sandbox only (its matplotlib and the fonts below
its ``/usr``), never on a submission. So the process that starts the graders (the batch, a
cluster worker, the service) builds it once, with the launcher its sandbox check made
(:func:`start`, from :func:`.guards.check_sandbox`), while the slots' nbgrader servers are
still starting. Each grader is told the file's path through ``$CH11_FONT_LIST``
(:func:`grader_env`) at once and loads it, checked again, when its first sandbox needs it,
waiting there for a build still under way, instead of building its own.

One build per process and backend, in a private directory removed at exit. A build that fails
writes why into the file, and each grader then builds its own, as before (a backend without a
shared font list gets no variable at all); the figures are the same either way.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ..untrusted.font_list import FONT_LIST_ENV, FontList, save_font_list

__all__ = ["grader_env", "start"]

log = logging.getLogger(__name__)


_PATHS: dict[str, Path] = {}
#: Backends whose file could not be written: their graders are given none (they would wait for it in vain).
_UNWRITTEN: set[str] = set()
_LOCK = threading.Lock()


def start(sandbox: str, launcher: object) -> None:
    """Begin building the font list of backend ``sandbox`` with ``launcher``, once per process.

    Only a launcher that shares a font list (``font_list()``, the bwrap backend's) has one to
    build; for others nothing starts. The build runs on a thread of its own and ends within
    the sandboxed run's own limits (``font_list.BUILD_LIMITS``); the file it leaves holds the
    list or why there is none.
    """
    font_list = getattr(launcher, "font_list", None)
    if not callable(font_list):
        return
    with _LOCK:
        if sandbox in _PATHS:
            return
        directory = Path(tempfile.mkdtemp(prefix="ch11-font-list-"))
        atexit.register(shutil.rmtree, directory, True)
        path = _PATHS[sandbox] = directory / "font-list.json"
    threading.Thread(target=_build, args=(sandbox, path, font_list), name="ch11-font-list", daemon=True).start()


def _build(sandbox: str, path: Path, font_list: Callable[[], FontList | None]) -> None:
    fonts, error = None, "the sandboxed build failed (this process's log says why)"
    try:
        fonts = font_list()
    except Exception as exc:  # the graders build their own: slower, never different
        error = f"{type(exc).__name__}: {exc}"
    try:
        save_font_list(fonts, path, error=error)
    except OSError as exc:
        _UNWRITTEN.add(sandbox)
        log.warning("no font list shared by this process's graders: %s", exc)


def grader_env(sandbox: str) -> dict[str, str]:
    """``{"CH11_FONT_LIST": path}`` for a grader of backend ``sandbox``.

    ``{}`` when no build was started, or its file could not be written.

    Does not wait: the grader waits for the file when its first sandbox needs it.
    """
    path = _PATHS.get(sandbox)
    return {FONT_LIST_ENV: str(path)} if path is not None and sandbox not in _UNWRITTEN else {}
