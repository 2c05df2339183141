"""The Gradescope autograder: the zip builder, and what its scripts call.

``build_zip`` (``ch11-grade gradescope build --out autograder.zip``) writes::

    setup.sh            installs from the bundled wheelhouse (see the script's header)
    run_autograder      grades /autograder/submission, writes /autograder/results/results.json
    ch11/config.json    assignment, test visibility, time limit
    ch11/course/        nbgrader_config.py and source/ch11/*.ipynb of this repository
    ch11/wheelhouse/    every wheel of the grading environment, pinned by sha256

Inside Gradescope's container the layout is that of the grading image
(``autograder/Dockerfile``): a venv at ``/opt/ch11/venv``, trusted code in
``/opt/ch11/trusted`` (root only), student code run by unprivileged slot users
through the ``container-user`` backend.

``prepare`` (from setup.sh) creates the course in ``/autograder/ch11-work``
and runs ``nbgrader generate_assignment`` there once, at build time. ``run``
(from run_autograder) stages the submission's notebooks as student
``student``, grades them with :func:`ch11_autograder.batch.grade_class`
(one worker, ``container-user``) and writes results.json; whatever breaks,
a results.json is written.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
import traceback
import zipfile
from importlib import resources
from pathlib import Path

from ..course_layout import CONFIG, GRADEBOOK, SOURCE, assignment_source
from ..paths import ASSIGNMENT, COURSE_CONFIG, SOURCE_DIR
from .results import VISIBILITIES, failure_results, results_for, write_results

__all__ = ["GRADESCOPE_STUDENT", "build_zip", "prepare", "run"]

#: setup.sh and run_autograder ship inside this package (as package data, in every kind of install).
SCRIPTS = resources.files(__name__)
GRADESCOPE_STUDENT = "student"
WORK_DIR = "ch11-work"
DEFAULT_TIMEOUT = 1500.0
#: Zip entries get this timestamp, so the archive depends only on the files' bytes.
_ZIP_DATE = (2026, 1, 1, 0, 0, 0)


def _add(archive: zipfile.ZipFile, arcname: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | mode) << 16
    archive.writestr(info, data)


def build_zip(
    out: Path,
    *,
    visibility: str = "visible",
    timeout: float = DEFAULT_TIMEOUT,
    wheelhouse: Path | None = None,
) -> Path:
    """Write the autograder zip to ``out``; returns ``out``.

    ``wheelhouse``: a staged wheelhouse directory (with ``image-requirements.txt``
    and ``trusted-requirements.txt``); default: stage one as the image build
    does (``image.stage``: the hash-pinned wheels of ``requirements/image.txt``,
    the harness wheel and this project's wheel).
    """
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if not COURSE_CONFIG.is_file() or not SOURCE_DIR.is_dir():
        raise FileNotFoundError("build the Gradescope zip from a repository checkout (needs nbgrader_config.py and "
                                f"source/{ASSIGNMENT}/)")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if wheelhouse is None:
            from ..image import stage

            wheelhouse = stage(Path(tmp) / "context") / "wheelhouse"
        partial = out.with_name(f".{out.name}.partial")
        with zipfile.ZipFile(partial, "w") as archive:
            _add(archive, "setup.sh", (SCRIPTS / "setup.sh").read_bytes(), 0o755)
            _add(archive, "run_autograder", (SCRIPTS / "run_autograder").read_bytes(), 0o755)
            settings = {"assignment": ASSIGNMENT, "visibility": visibility, "timeout": timeout}
            _add(archive, "ch11/config.json", (json.dumps(settings, indent=1, sort_keys=True) + "\n").encode())
            _add(archive, f"ch11/course/{CONFIG}", COURSE_CONFIG.read_bytes())
            for notebook in sorted(SOURCE_DIR.glob("*.ipynb")):
                _add(archive, f"ch11/course/{SOURCE}/{ASSIGNMENT}/{notebook.name}", notebook.read_bytes())
            for path in sorted(wheelhouse.iterdir()):
                if path.is_file() and (path.suffix == ".whl" or path.name.endswith("requirements.txt")):
                    _add(archive, f"ch11/wheelhouse/{path.name}", path.read_bytes())
        os.replace(partial, out)
    return out


def _settings(root: Path) -> dict:
    path = root / "source" / "ch11" / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _work(root: Path) -> Path:
    work = root / WORK_DIR
    work.mkdir(mode=0o700, exist_ok=True)
    os.chmod(work, 0o700)
    return work


def prepare(root: Path) -> Path:
    """Create the course under ``root/ch11-work/course`` and generate the assignment; returns the course."""
    from ..batch.course import STATE_DIR, ensure_assignment, init_course

    bundled = root / "source" / "ch11" / "course"
    course = _work(root) / "course"
    init_course(course, config=bundled / CONFIG, source_dir=assignment_source(bundled, ASSIGNMENT))
    logs = course / STATE_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ensure_assignment(course, ASSIGNMENT, logs / "generate_assignment.log")
    return course


def _stage_submission(submission: Path, dest: Path) -> list[str]:
    """Copy the submission's notebooks (any depth, regular files only) to ``dest``; returns notes."""
    notes = []
    dest.mkdir(parents=True)
    seen: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(submission, followlinks=False):
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            shown = path.relative_to(submission).as_posix()
            if not stat.S_ISREG(path.lstat().st_mode):
                notes.append(f"{shown}: ignored (not a regular file)")
                continue
            if not filename.endswith(".ipynb"):
                notes.append(f"{shown}: ignored (not a notebook)")
                continue
            count = seen.get(filename, 0)
            seen[filename] = count + 1
            # A second file of the same name (another folder) keeps both visible to intake,
            # which reports the duplicate instead of grading either one silently.
            target = filename if count == 0 else f"{filename[: -len('.ipynb')]} ({count}).ipynb"
            shutil.copyfile(path, dest / target)
    return notes


def run(root: Path) -> int:
    """Grade ``root/submission`` and write ``root/results/results.json``; returns 0 when it was written."""
    from ..batch import BatchOptions, grade_class

    started = time.monotonic()
    results = root / "results" / "results.json"
    try:
        settings = _settings(root)
        for private in (root / "source", root / "results"):
            if private.is_dir():
                os.chmod(private, 0o700)  # Gradescope's advice: student code must not read or write these
        work = _work(root)
        course = work / "course"
        if not (course / GRADEBOOK).is_file():
            prepare(root)
        incoming = work / "in"
        if incoming.exists():
            shutil.rmtree(incoming)
        notes = _stage_submission(root / "submission", incoming / GRADESCOPE_STUDENT / ASSIGNMENT)
        options = BatchOptions(workers=1, sandbox="container-user", regrade=True, feedback=False,
                               timeout=float(settings.get("timeout", DEFAULT_TIMEOUT)))
        report = grade_class(incoming, course, options)
        record = next(r for r in report.records if r.student == GRADESCOPE_STUDENT)
        record.notes[:0] = notes
        data = results_for(course, record, assignment=ASSIGNMENT, visibility=settings.get("visibility", "visible"),
                           execution_time=time.monotonic() - started)
        for line in (f"status: {record.status}", f"error: {record.error}", f"log: {record.log}"):
            print(line)
        if record.log and Path(record.log).is_file():
            print(Path(record.log).read_text(errors="replace")[-20_000:])
    except Exception:
        traceback.print_exc()  # stdout is shown to instructors only
        data = failure_results("The autograder failed while grading this submission. Your instructor can see the "
                               "details in the autograder output.", time.monotonic() - started)
    write_results(results, data)
    return 0
