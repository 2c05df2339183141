"""One student's feedback pages rendered by two processes (``c.GenerateFeedback.exporter_class``).

nbgrader's ``generate_feedback`` renders a student's pages one after another in one process
(nbconvert's HTML pass: the Jinja template and the HTML parse and re-serialization, about
0.1-0.4 CPU-s a page), and for one student graded on submit that is the last second of the
wait, on one core. A page reads only its own autograded notebook, the gradebook's rows for it
and the configuration, so :class:`FeedbackExporter` (nbconvert's ``HTMLExporter`` for
nbgrader's feedback, everything else inherited) renders the student's last pages in a forked
copy of the process while the process renders the first ones:

* when nbgrader asks for the first page of a student's assignment, the exporter forks a
  helper that renders the last pages (about half the notebooks' bytes), each as nbgrader would
  ask for it (the converter's own ``init_single_notebook_resources``), into a private
  directory, and says on a pipe when each is done;
* nbgrader goes on asking for every page in its order. For a page the helper rendered, the
  exporter returns the helper's page only if nbgrader asked with exactly the resources the
  helper used and the notebook file has the bytes the helper read; otherwise (and when the
  helper failed, died, or said nothing) it renders the page itself, as before. So every page
  is the one this process would have rendered, and every error is raised where nbgrader
  expects it, by this process;
* nbgrader writes every page itself, in its order; the helper writes only to its directory.

Both processes are this one (the helper is a fork that runs nothing but the exporter and its
preprocessors, never a submission's code), so the rendered page crosses as a pickle of
trusted data. The split applies to a command converting one student's submission (with
``split`` ``auto``, when this process may use more than one core): a class's command is
already split by student over the cores (``batch/feedback.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import hashlib
import logging
import os
import pickle
import select
import shutil
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nbconvert.exporters import HTMLExporter
from traitlets import CaselessStrEnum

__all__ = ["HELPER_WAIT_SECONDS", "PAGE_OVERHEAD_BYTES", "FeedbackExporter", "helper_share"]


#: Seconds this process waits, in all, for the helper's pages before it renders them itself.
HELPER_WAIT_SECONDS = 120.0

#: Bytes of notebook that cost a page about as much as its fixed part (the template's pass, the parse).
PAGE_OVERHEAD_BYTES = 64 * 1024


def helper_share(sizes: Sequence[int]) -> int:
    """How many of the last notebooks the helper renders, ``sizes`` (bytes) in nbgrader's order.

    The split that makes the longer of the two shares shortest, a page costing its notebook's
    bytes plus :data:`PAGE_OVERHEAD_BYTES` (ties: the helper takes fewer). At least one and at
    most all but one, for two or more notebooks; 0 for fewer.
    """
    costs = [size + PAGE_OVERHEAD_BYTES for size in sizes]
    best, share = None, 0
    for k in range(1, len(costs)):
        longer = max(sum(costs[:-k]), sum(costs[-k:]))
        if best is None or longer < best:
            best, share = longer, k
    return share


def _written(resources: Any) -> Any:
    """``resources`` without the values that cannot cross (the template's helper functions).

    What uses a page's resources after rendering is nbgrader's writer: the output extension,
    the metadata's path, the extracted outputs and attachments, and their folders; plain data.
    """
    kept = copy.copy(resources)
    for key, value in list(resources.items()):
        try:
            pickle.dumps(value)
        except (pickle.PicklingError, AttributeError, TypeError):
            del kept[key]
    return kept


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class _Helper:
    """A forked copy of this process rendering ``notebooks`` (file names) into ``directory``."""

    def __init__(self, exporter: FeedbackExporter, converter: Any, notebooks: list[str], logger: Any) -> None:
        self.notebooks = notebooks
        self.log = logger
        self.directory = Path(tempfile.mkdtemp(prefix="ch11-pages-"))
        self.done: set[int] = set()
        self.ended = False
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: render, say so, never return into nbgrader
            code = 1
            try:
                os.close(read_end)
                logging.disable(logging.CRITICAL)  # nbgrader's log is the parent's to write
                for index, filename in enumerate(notebooks):
                    given = converter.init_single_notebook_resources(filename)
                    asked = copy.deepcopy(given)
                    digest = _digest(filename)
                    output, resources = HTMLExporter.from_filename(exporter, filename, resources=given)
                    part = self.directory / f"{index}.pickle"
                    part.write_bytes(pickle.dumps((asked, digest, output, _written(resources))))
                    os.write(write_end, f"{index}\n".encode())
                code = 0
            except BaseException:
                with contextlib.suppress(BaseException):
                    (self.directory / "error.txt").write_text(traceback.format_exc())
            finally:
                os._exit(code)
        os.close(write_end)
        self.pipe = read_end
        self._unread = b""

    def take(self, filename: str, resources: Any) -> tuple[Any, Any] | None:
        """The helper's page for ``filename`` if it rendered it from exactly ``resources``; ``None`` otherwise.

        Waits for the helper to say the page is done, at most :data:`HELPER_WAIT_SECONDS` in all
        (then the helper is ended and this process renders the rest).
        """
        index = self.notebooks.index(filename)
        deadline = time.monotonic() + HELPER_WAIT_SECONDS
        while index not in self.done and not self.ended:
            if b"\n" in self._unread:
                line, self._unread = self._unread.split(b"\n", 1)
                if line.strip().isdigit():
                    self.done.add(int(line))
                continue
            ready, _, _ = select.select([self.pipe], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.pipe, 4096) if ready else b""
            if chunk:
                self._unread += chunk
                continue
            self.ended = True
            if not ready:
                self.log.warning("feedback pages: the helper did not finish %s within %g s; this process "
                                 "renders the rest", os.path.basename(filename), HELPER_WAIT_SECONDS)
                self._kill()
                break
            try:
                why = (self.directory / "error.txt").read_text()[-2000:]
            except OSError:
                why = "no traceback"
            self.log.warning("feedback pages: the helper stopped; this process renders the rest (%s)", why)
        if index not in self.done:
            return None
        try:
            asked, digest, output, rendered = pickle.loads((self.directory / f"{index}.pickle").read_bytes())
        except (OSError, pickle.UnpicklingError, ValueError) as exc:
            self.log.warning("feedback pages: the helper's page of %s is unreadable (%s); rendering it here",
                             filename, exc)
            return None
        if asked != resources or digest != _digest(filename):
            return None
        return output, rendered

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            if os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)

    def stop(self) -> None:
        """End the helper (killed if still rendering) and remove its directory."""
        self._kill()
        with contextlib.suppress(OSError):
            os.close(self.pipe)
        shutil.rmtree(self.directory, ignore_errors=True)


_LIVE: list[_Helper] = []


@atexit.register
def _stop_all() -> None:
    while _LIVE:
        _LIVE.pop().stop()


class FeedbackExporter(HTMLExporter):
    """nbconvert's ``HTMLExporter``, with one student's last pages rendered by a forked helper (module docstring)."""

    split = CaselessStrEnum(
        ["auto", "on", "off"], "auto",
        help="Render one student's last pages in a forked helper; auto: when the command converts one "
        "student's submission of two or more notebooks and this process may use more than one core.",
    ).tag(config=True)

    def from_filename(self, filename: str, resources: dict[str, Any] | None = None,
                      **kw: Any) -> tuple[Any, dict[str, Any]]:
        converter = self.parent
        notebooks = list(getattr(converter, "notebooks", None) or [])
        if notebooks and filename == notebooks[0]:
            _stop_all()
            if self._splits(converter, notebooks):
                share = helper_share([os.path.getsize(nb) for nb in notebooks])
                with contextlib.suppress(Exception):  # a template that cannot load fails in the page's own pass
                    self.template  # noqa: B018 - compiled once, before the fork, for both processes
                try:
                    _LIVE.append(_Helper(self, converter, notebooks[len(notebooks) - share:], self.log))
                except OSError as exc:  # no fork: this process renders them all, as nbgrader does
                    self.log.warning("feedback pages are rendered in one process: %s", exc)
        helper = _LIVE[-1] if _LIVE else None
        if helper is not None and filename in helper.notebooks:
            page = helper.take(filename, resources)
            if filename == helper.notebooks[-1]:
                _stop_all()
            if page is not None:
                self.log.info("feedback pages: %s rendered by the helper process", os.path.basename(filename))
                return page
        return super().from_filename(filename, resources, **kw)

    def _splits(self, converter: Any, notebooks: list[str]) -> bool:
        if len(notebooks) < 2 or not hasattr(converter, "init_single_notebook_resources"):
            return False
        if threading.active_count() != 1:  # a fork would copy locks other threads hold
            return False
        if self.split != "auto":
            return self.split == "on"
        return len(getattr(converter, "assignments", {}) or {}) == 1 and len(os.sched_getaffinity(0)) > 1
