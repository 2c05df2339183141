"""Intake: turn a folder or an LMS download into one staged submission per student.

Everything read here is hostile: names, sizes, link types, JSON. Nothing is
ever extracted by the names an archive gives; bytes are read (with caps) and
written under paths this module builds from a sanitized student id and a
notebook name of the assignment.

Accepted sources (``read_source``):

* **A folder in nbgrader layout**: ``<source>/<student>/ch11/<notebook>.ipynb``,
  or the same below ``<source>/submitted/`` (an nbgrader course's own
  ``submitted/`` folder works as it is). ``timestamp.txt`` beside the notebooks
  is kept when nbgrader can parse it, and ``submission_secret.txt`` (the key
  ``nbgrader submit`` writes, which ``release_feedback`` files feedback under)
  when it is a hex string of at most ``max_secret_bytes``.
* **A zip of that layout**: ``[<one top folder>/][submitted/]<student>/ch11/<notebook>.ipynb``.
* **A Canvas "Download Submissions" zip**: flat members named
  ``<name>_<userid>_<attachmentid>_<file>`` or ``<name>_LATE_<userid>_<attachmentid>_<file>``
  (``LATE`` in any case). The student id becomes ``<name>_<userid>``
  (sanitized); a file named ``<notebook>-<n>.ipynb`` or ``<notebook> (<n>).ipynb``
  (the copies Canvas and browsers make of a re-uploaded file) counts as
  ``<notebook>.ipynb``. ``LATE`` is Canvas's own verdict; the download carries no
  submission time (Canvas dates its zip entries when it builds the zip), so there is
  no timestamp for nbgrader to compute lateness from: the flag is kept
  (``StudentSubmission.late``) and shown in the CSV and the summary, and no late
  penalty follows from it.

Rules shared by every source:

* Only the assignment's notebooks (the names in the course's ``source/ch11/``)
  are taken; every other file is ignored with a note. Symbolic links, device
  files, absolute names, names with ``..`` or a drive letter, and encrypted
  archive members are ignored with a note and never followed or opened.
* Student ids are sanitized for nbgrader (and for ``--student``, which nbgrader
  treats as a glob pattern): letters, digits, ``_``, ``.`` and ``-`` only, any
  other run of characters becomes ``_``, no leading ``.``/``-``, at most 64
  characters. A changed id is noted.
* Two sources of one (case-insensitive) id, or two files for one notebook of a
  student, make that student an intake error naming both: grading either one
  could grade the wrong work.
* Caps (``IntakeLimits``): archive member count (whole source refused beyond
  it), bytes per notebook (that student's error), total bytes read (students
  after the cap get an error). Sizes are counted while decompressing; the
  archive's declared sizes are not trusted.
* **A student's own zip** (a ``.zip`` file among a student's files: a Canvas
  upload ``<name>_<userid>_<attachmentid>_<file>.zip``, or ``<student>/ch11/<file>.zip``)
  is unpacked one level deep, under the same rules: its members' names are
  checked (absolute, ``..``, drive letters ignored with a note), links, special
  files and encrypted members are ignored with a note, only the assignment's
  notebooks are taken (by file name, at any depth inside it; macOS ``__MACOSX``
  entries skipped), and every read is capped. The zip itself is read into
  memory up to ``max_nested_archive_bytes`` (more: that student's error) and
  counts toward ``max_total_bytes``; its members count toward ``max_members``
  together with the outer archive's (more: that student's error), checked
  before its directory is parsed. A zip inside it is not unpacked (noted), and
  a ``timestamp.txt`` or ``submission_secret.txt`` inside it is ignored with a
  note: a file the student wrote is not an nbgrader submission time or key. A notebook both loose and inside
  the student's zip (or in two of their zips) is the usual "two files" error.
* Each notebook must be JSON with ``"nbformat": 4`` and a ``cells`` list;
  otherwise that student is an intake error naming the file and the cause.
* A student without any notebook of the assignment is an intake error; a
  student missing some notebooks is graded (nbgrader scores missing ones 0)
  with a note per missing notebook.

The pieces: ``intake_records`` (what intake gives: ``Intake``, ``StudentSubmission``,
``IntakeLimits``, ``IntakeError``), ``intake_layouts`` (which files belong to which student, per
layout), ``intake_entries`` (a file read within a cap; archive members never considered),
``intake_student_zip`` (a student's own zip), ``intake_stage`` (choosing, checking and writing each
student's notebooks) and ``intake_checks`` (student ids, notebook format, the inputs' digest).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..paths import ASSIGNMENT
from .intake_layouts import folder_entries, zip_entries
from .intake_records import Intake, IntakeError, IntakeLimits
from .intake_stage import stage

__all__ = ["read_source"]


def read_source(
    source: Path,
    staging: Path,
    notebooks: Sequence[str],
    *,
    assignment: str = ASSIGNMENT,
    limits: IntakeLimits | None = None,
) -> Intake:
    """Read ``source`` (folder or zip) and stage each student's notebooks under ``staging/<student>/``.

    ``staging`` is emptied first. ``notebooks`` are the assignment's notebook
    file names. See the module docstring for the accepted layouts and rules.

    Raises:
        IntakeError: ``source`` is missing, neither a folder nor a zip, or over
            the member cap.
    """
    limits = limits or IntakeLimits()
    source = Path(source)
    notes: list[str] = []
    if source.is_dir():
        kind, entries = "folder", folder_entries(source, assignment, notes)
    elif source.is_file():
        try:
            with zipfile.ZipFile(source) as archive:
                kind, entries = zip_entries(archive, assignment, limits, notes)
                subs = stage(entries, staging, notebooks, limits, notes, members=len(archive.infolist()))
        except zipfile.BadZipFile as exc:
            raise IntakeError(f"{source}: not a readable zip archive ({exc})") from exc
        return Intake(kind, subs, notes)
    else:
        raise IntakeError(f"{source}: no such folder or zip file")
    return Intake(kind, stage(entries, staging, notebooks, limits, notes), notes)
