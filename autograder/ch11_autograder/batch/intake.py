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
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..course_layout import SUBMITTED
from ..paths import ASSIGNMENT

__all__ = [
    "Intake",
    "IntakeError",
    "IntakeLimits",
    "StudentSubmission",
    "check_notebook",
    "inputs_sha256",
    "read_source",
    "sanitize_student_id",
]

TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"
_SECRET = re.compile(r"[0-9a-fA-F]{16,}")
MAX_ID_CHARS = 64
_ID_BAD = re.compile(r"[^A-Za-z0-9_.-]+")
_CANVAS = re.compile(
    r"^(?P<name>[^_/]+)_(?:(?P<late>late)_)?(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.IGNORECASE
)
_COPY_SUFFIX = re.compile(r"^(?P<stem>.+?)(?:-\d{1,3}| \(\d{1,3}\))$")


class IntakeError(ValueError):
    """The whole source is refused (unreadable, not a zip or folder, too many members)."""


@dataclass(frozen=True)
class IntakeLimits:
    """Caps on what intake reads from a source.

    Attributes:
        max_members: archive members (files and folders) before the archive is refused.
        max_notebook_bytes: bytes of one notebook (nbgrader's own ``max_file_size``
            in this course is 10,000 KB); a larger one makes its student an error.
        max_total_bytes: bytes read from the whole source; students whose files
            would exceed it are errors.
        max_timestamp_bytes: bytes of a ``timestamp.txt``; a larger one is ignored.
        max_secret_bytes: bytes of a ``submission_secret.txt`` (nbgrader's is 128 hex digits);
            a larger one is ignored.
        max_nested_archive_bytes: bytes of one student's own zip inside the source (read
            into memory to be unpacked); a larger one makes its student an error.
    """

    max_members: int = 20_000
    max_notebook_bytes: int = 10_000 * 1024
    max_total_bytes: int = 512 * 1024**2
    max_timestamp_bytes: int = 256
    max_secret_bytes: int = 1024
    max_nested_archive_bytes: int = 64 * 1024**2


@dataclass
class StudentSubmission:
    """One student's staged submission.

    Attributes:
        student: the sanitized nbgrader student id.
        origin: where it came from (folder name, or Canvas name and user id).
        files: notebook file name -> staged path (only notebooks of the assignment).
        timestamp: nbgrader submission timestamp text, or ``None``.
        secret: the submission's ``submission_secret.txt`` text, or ``None``; it goes into
            the course beside the notebooks, for ``release_feedback``.
        sha256: digest over the staged inputs (see :func:`inputs_sha256`).
        notes: things a TA should know that do not stop grading.
        error: why this student cannot be graded (names the file and the cause), or ``None``.
        late: Canvas marked the submission late (its file names carry ``LATE``).
    """

    student: str
    origin: str
    files: dict[str, Path] = field(default_factory=dict)
    timestamp: str | None = None
    secret: str | None = None
    sha256: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    late: bool = False


@dataclass
class Intake:
    """What :func:`read_source` found.

    Attributes:
        kind: ``"folder"``, ``"nbgrader-zip"`` or ``"canvas-zip"``.
        submissions: one per student id, sorted by id.
        notes: entries ignored outside any student, and other source-wide remarks.
    """

    kind: str
    submissions: list[StudentSubmission]
    notes: list[str] = field(default_factory=list)


def sanitize_student_id(raw: str) -> str:
    """An nbgrader-safe id for ``raw`` (see the module docstring); never empty."""
    cleaned = _ID_BAD.sub("_", raw.strip())
    cleaned = cleaned.lstrip(".-_")[:MAX_ID_CHARS].rstrip(".-_")
    return cleaned or "student"


def check_notebook(data: bytes, name: str) -> str | None:
    """``None`` if ``data`` looks like an nbformat-4 notebook, else the cause, naming ``name``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{name}: not UTF-8 text (byte {exc.start})"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{name}: malformed JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return f"{name}: malformed JSON (nested too deeply)"
    if not isinstance(nb, dict):
        return f"{name}: not a notebook (the JSON is a {type(nb).__name__}, not an object)"
    major = nb.get("nbformat")
    if major != 4:
        shown = "missing" if major is None else repr(major)[:20]
        return f"{name}: wrong nbformat ({shown}); nbgrader grades nbformat 4 notebooks (save it with Jupyter 4+)"
    if not isinstance(nb.get("cells"), list):
        return f"{name}: not a notebook (no list of cells)"
    return None


def inputs_sha256(files: dict[str, bytes], timestamp: str | None) -> str:
    """sha256 over the sorted (name, sha256 of content) pairs and the timestamp.

    Stable across runs and sources: the same notebooks give the same digest
    whether they came from a folder or a zip.
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).hexdigest().encode() + b"\n")
    digest.update(b"timestamp\0" + (timestamp or "").encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------- entries


@dataclass
class _Entry:
    """One file attributed to a (raw) student: where it came from and how to read it."""

    raw_student: str
    origin: str
    filename: str  # as named inside the student's folder (or Canvas's <file> part)
    shown: str  # path shown in notes
    size_hint: int = 0
    read: Callable[[int], bytes] | None = None  # max_bytes -> bytes; raises _TooBig
    late: bool = False
    problem: str | None = None  # set instead of ``read``: why this entry is not used
    no_folder: bool = False  # the student has no assignment folder at all


class _TooBig(Exception):
    pass


def _read_capped(handle, max_bytes: int) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = handle.read(min(1 << 16, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise _TooBig
    return b"".join(chunks)


def _member_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[int], bytes]:
    def read(max_bytes: int) -> bytes:
        with archive.open(info) as handle:
            return _read_capped(handle, max_bytes)

    return read


def _skipped_member(info: zipfile.ZipInfo, shown: str, notes: list[str]) -> bool:
    """Whether an archive member is not a file to consider (noting why, when a TA should know)."""
    problem = _unsafe_name(info.filename)
    if problem:
        notes.append(f"{shown!r}: ignored ({problem})")
        return True
    mode = (info.external_attr >> 16) & 0xFFFF
    if info.is_dir():
        return True
    if stat.S_ISLNK(mode):
        notes.append(f"{shown}: symbolic link ignored")
        return True
    # Archivers that record no Unix file type (Windows tools, zipfile.writestr) leave S_IFMT 0: a plain file.
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        notes.append(f"{shown}: not a regular file, ignored")
        return True
    if info.flag_bits & 0x1:
        notes.append(f"{shown}: encrypted, ignored")
        return True
    parts = PurePosixPath(info.filename.replace("\\", "/")).parts
    return any(p.startswith("__MACOSX") or p == ".DS_Store" for p in parts)


def _unsafe_name(name: str) -> str | None:
    """Why an archive member name is unsafe, or ``None``."""
    if "\0" in name:
        return "NUL in name"
    posix = name.replace("\\", "/")
    if posix.startswith("/") or re.match(r"^[A-Za-z]:", posix):
        return "absolute name"
    if ".." in PurePosixPath(posix).parts:
        return "'..' in name"
    return None


def _canonical_notebook(filename: str, notebooks: set[str]) -> str | None:
    if filename in notebooks:
        return filename
    if filename.endswith(".ipynb"):
        match = _COPY_SUFFIX.match(filename[: -len(".ipynb")])
        if match and match["stem"] + ".ipynb" in notebooks:
            return match["stem"] + ".ipynb"
    return None


# --------------------------------------------------------------------------- folders


def _folder_entries(source: Path, assignment: str, notes: list[str]) -> list[_Entry]:
    submitted = source / SUBMITTED
    root = submitted if submitted.is_dir() and not submitted.is_symlink() else source
    entries: list[_Entry] = []
    for student_dir in sorted(root.iterdir()):
        rel = student_dir.relative_to(source).as_posix()
        info = student_dir.lstat()
        if stat.S_ISLNK(info.st_mode):
            notes.append(f"{rel}: symbolic link ignored")
            continue
        if not stat.S_ISDIR(info.st_mode):
            if not student_dir.name.startswith("."):
                notes.append(f"{rel}: not a student folder, ignored")
            continue
        if student_dir.name.startswith("."):
            continue
        adir = student_dir / assignment
        if adir.is_symlink() or not adir.is_dir():
            entries.append(_Entry(student_dir.name, student_dir.name, "", rel, no_folder=True))
            continue
        listing = sorted(adir.iterdir())
        if not listing:
            entries.append(_Entry(student_dir.name, student_dir.name, "", adir.relative_to(source).as_posix(),
                                  problem="empty folder"))
        for path in listing:
            shown = path.relative_to(source).as_posix()
            pinfo = path.lstat()
            if stat.S_ISLNK(pinfo.st_mode):
                entries.append(_Entry(student_dir.name, student_dir.name, "", shown, problem="symbolic link"))
                continue
            if not stat.S_ISREG(pinfo.st_mode):
                entries.append(_Entry(student_dir.name, student_dir.name, "", shown, problem="not a regular file"))
                continue

            def read(max_bytes: int, _path: Path = path) -> bytes:
                fd = os.open(_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as handle:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(f"{_path} is not a regular file")
                    return _read_capped(handle, max_bytes)

            entries.append(_Entry(student_dir.name, student_dir.name, path.name, shown, pinfo.st_size, read=read))
    return entries


# --------------------------------------------------------------------------- zips


def _zip_entries(
    archive: zipfile.ZipFile, assignment: str, limits: IntakeLimits, notes: list[str]
) -> tuple[str, list[_Entry]]:
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise IntakeError(f"the archive has {len(infos)} members, more than the cap of {limits.max_members}")
    files = []
    for info in infos:
        if _skipped_member(info, info.filename, notes):
            continue
        files.append((PurePosixPath(info.filename.replace("\\", "/")).parts, info))

    def reader(info: zipfile.ZipInfo) -> Callable[[int], bytes]:
        return _member_reader(archive, info)

    flat = [(parts, info) for parts, info in files if len(parts) == 1]
    canvas = [(info, match) for parts, info in flat if (match := _CANVAS.match(parts[0]))]
    if flat and len(flat) == len(files) and len(canvas) == len(flat):
        entries = []
        for info, match in canvas:
            raw = f"{match['name']}_{match['uid']}"
            entries.append(
                _Entry(raw, f"Canvas {match['name']} (user {match['uid']})", match["file"], info.filename,
                       info.file_size, read=reader(info), late=bool(match["late"]))
            )
        return "canvas-zip", entries

    entries = []
    for parts, info in files:
        try:
            at = max(i for i, p in enumerate(parts[:-1]) if p == assignment)
        except ValueError:
            notes.append(f"{info.filename}: not inside <student>/{assignment}/, ignored")
            continue
        prefix = parts[: at - 1]
        if at == 0 or len(prefix) > 2 or (len(prefix) == 2 and prefix[1] != SUBMITTED):
            notes.append(f"{info.filename}: not in the layout [top/][submitted/]<student>/{assignment}/, ignored")
            continue
        student = parts[at - 1]
        rest = parts[at + 1 :]
        if len(rest) != 1:
            entries.append(_Entry(student, student, "", info.filename, problem="in a subfolder"))
            continue
        entries.append(_Entry(student, student, rest[0], info.filename, info.file_size, read=reader(info)))
    return "nbgrader-zip", entries


# --------------------------------------------------------------------------- staging


@dataclass
class _Budget:
    """What the source has used of the caps so far: bytes read (decompressed) and archive members."""

    bytes_read: int = 0
    members: int = 0


_CENTRAL_HEADER = b"PK\x01\x02"


def _nested_entries(
    outer: _Entry, limits: IntakeLimits, budget: _Budget, notes: list[str]
) -> tuple[list[_Entry], str | None]:
    """The files inside a student's own zip ``outer``, as entries of the same student, and an error or ``None``.

    Errors (the student cannot be graded safely): the zip is over its byte cap, over the
    total cap, or has more members than the member cap leaves. A zip that is not
    readable is only noted (its student may have other files); see the module docstring.
    """
    assert outer.read is not None
    cap = limits.max_nested_archive_bytes
    try:
        data = outer.read(cap)
    except _TooBig:
        return [], f"{outer.shown}: larger than the {cap}-byte cap for a zip inside the source"
    except (OSError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError) as exc:
        return [], f"{outer.shown}: unreadable ({type(exc).__name__}: {str(exc)[:200]})"
    budget.bytes_read += len(data)
    if budget.bytes_read > limits.max_total_bytes:
        return [], f"{outer.shown}: the source exceeds the {limits.max_total_bytes}-byte intake cap"
    # Every member zipfile would parse starts with this signature, so counting it bounds the members before
    # the directory is parsed (a small zip can declare hundreds of thousands of entries).
    left = limits.max_members - budget.members
    if data.count(_CENTRAL_HEADER) > left:
        return [], f"{outer.shown}: more members than the {limits.max_members}-member cap of the source allows"
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as exc:
        notes.append(f"{outer.shown}: ignored (not a readable zip: {type(exc).__name__}: {str(exc)[:200]})")
        return [], None
    budget.members += len(infos)
    if len(infos) > left:
        return [], f"{outer.shown}: more members than the {limits.max_members}-member cap of the source allows"
    plural = "s" if len(infos) != 1 else ""
    notes.append(f"{outer.shown}: the student's own zip, unpacked ({len(infos)} member{plural})")
    entries = []
    for info in infos:
        shown = f"{outer.shown}!{info.filename}"
        if _skipped_member(info, shown, notes):
            continue
        filename = PurePosixPath(info.filename.replace("\\", "/")).name
        if filename.lower().endswith(".zip"):
            notes.append(f"{shown}: ignored (a zip inside the student's zip; only one level is unpacked)")
            continue
        if filename in (TIMESTAMP_FILE, SECRET_FILE):
            what = "submission time" if filename == TIMESTAMP_FILE else "submission key"
            notes.append(f"{shown}: ignored (a file inside the student's own zip is not an nbgrader {what})")
            continue
        entries.append(_Entry(outer.raw_student, outer.origin, filename, shown, info.file_size,
                              read=_member_reader(archive, info), late=outer.late))
    return entries, None


def _unpack_nested(
    group: list[_Entry], limits: IntakeLimits, budget: _Budget, notes: list[str]
) -> tuple[list[_Entry], str | None]:
    """``group`` with each of the student's own zips replaced by the files inside it; an error or ``None``."""
    out: list[_Entry] = []
    for entry in sorted(group, key=lambda e: e.shown):
        if entry.read is None or entry.problem or not entry.filename.lower().endswith(".zip"):
            out.append(entry)
            continue
        inner, error = _nested_entries(entry, limits, budget, notes)
        if error:
            return out, error
        out += inner
    return out, None


def _stage(
    entries: Iterable[_Entry],
    staging: Path,
    notebooks: Sequence[str],
    limits: IntakeLimits,
    notes: list[str],
    members: int = 0,
) -> list[StudentSubmission]:
    """Stage each student's notebooks; ``members`` is the outer archive's member count (0 for a folder)."""
    wanted = set(notebooks)
    by_raw: dict[str, list[_Entry]] = {}
    for entry in entries:
        by_raw.setdefault(entry.raw_student, []).append(entry)

    # Sanitized ids; collisions (case-insensitive) are errors for every student involved.
    ids: dict[str, list[str]] = {}
    for raw in sorted(by_raw):
        ids.setdefault(sanitize_student_id(raw).lower(), []).append(raw)

    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    budget = _Budget(members=members)
    out: list[StudentSubmission] = []
    for raw in sorted(by_raw, key=lambda r: (sanitize_student_id(r), r)):
        group = by_raw[raw]
        student = sanitize_student_id(raw)
        sub = StudentSubmission(student=student, origin=group[0].origin, late=any(e.late for e in group))
        out.append(sub)
        if student != raw:
            sub.notes.append(f"student id {raw!r} sanitized to {student!r}")
        clash = ids[student.lower()]
        if len(clash) > 1:
            others = ", ".join(repr(r) for r in clash if r != raw)
            sub.error = f"duplicate student id {student!r}: {raw!r} and {others} map to it; rename one and rerun"
            continue
        if sub.late:
            sub.notes.append("Canvas marked this submission LATE; its download has no submission time, so nbgrader "
                             "computed no lateness and applied no late penalty")
        group, sub.error = _unpack_nested(group, limits, budget, sub.notes)
        if sub.error:
            continue
        chosen: dict[str, _Entry] = {}
        timestamp_entry: _Entry | None = None
        secret_entry: _Entry | None = None
        for entry in sorted(group, key=lambda e: e.shown):
            if entry.no_folder:
                sub.error = f"{entry.shown}: no {ASSIGNMENT}/ folder (expected {entry.shown}/{ASSIGNMENT}/*.ipynb)"
                continue
            if entry.problem or entry.read is None:
                sub.notes.append(f"{entry.shown}: ignored ({entry.problem})")
                continue
            if entry.filename == TIMESTAMP_FILE:
                timestamp_entry = entry
                continue
            if entry.filename == SECRET_FILE:
                secret_entry = entry
                continue
            canonical = _canonical_notebook(entry.filename, wanted)
            if canonical is None:
                why = "not a notebook of the assignment" if entry.filename.endswith(".ipynb") else "not a notebook"
                sub.notes.append(f"{entry.shown}: ignored ({why})")
                continue
            if canonical in chosen:
                sub.error = (
                    f"two files for {canonical}: {chosen[canonical].shown} and {entry.shown}; "
                    "keep one and rerun"
                )
                break
            if canonical != entry.filename:
                sub.notes.append(f"{entry.shown}: graded as {canonical}")
            chosen[canonical] = entry
        if sub.error:
            continue
        if not chosen:
            sub.error = f"no notebooks of {ASSIGNMENT} found (expected {', '.join(sorted(wanted))})"
            sub.error += "".join(f"; {n}" for n in sub.notes if "(not a readable zip" in n)
            continue
        contents: dict[str, bytes] = {}
        for canonical, entry in sorted(chosen.items()):
            if entry.size_hint > limits.max_notebook_bytes:
                sub.error = f"{entry.shown}: {entry.size_hint} bytes, more than the {limits.max_notebook_bytes} cap"
                break
            if budget.bytes_read + min(entry.size_hint, limits.max_notebook_bytes) > limits.max_total_bytes:
                sub.error = f"{entry.shown}: the source exceeds the {limits.max_total_bytes}-byte intake cap"
                break
            assert entry.read is not None  # entries without a reader were set aside above
            try:
                data = entry.read(limits.max_notebook_bytes)
            except _TooBig:
                sub.error = f"{entry.shown}: larger than the {limits.max_notebook_bytes}-byte cap"
                break
            except (OSError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError) as exc:
                sub.error = f"{entry.shown}: unreadable ({type(exc).__name__}: {str(exc)[:200]})"
                break
            budget.bytes_read += len(data)
            if budget.bytes_read > limits.max_total_bytes:
                sub.error = f"{entry.shown}: the source exceeds the {limits.max_total_bytes}-byte intake cap"
                break
            problem = check_notebook(data, entry.shown)
            if problem:
                sub.error = problem
                break
            contents[canonical] = data
        if sub.error:
            continue
        if timestamp_entry is not None:
            sub.timestamp = _timestamp(timestamp_entry, limits, sub.notes)
        if secret_entry is not None:
            sub.secret = _secret(secret_entry, limits, sub.notes)
        for missing in sorted(wanted - set(contents)):
            sub.notes.append(f"{missing}: not submitted (nbgrader scores it 0)")
        target = staging / student
        target.mkdir()
        for canonical, data in contents.items():
            (target / canonical).write_bytes(data)
            sub.files[canonical] = target / canonical
        sub.sha256 = inputs_sha256(contents, sub.timestamp)
    return out


def _timestamp(entry: _Entry, limits: IntakeLimits, notes: list[str]) -> str | None:
    from nbgrader.utils import parse_utc

    try:
        assert entry.read is not None
        text = entry.read(limits.max_timestamp_bytes).decode("utf-8").strip()
        parse_utc(text)
    except Exception as exc:  # too big, not text, not a date: nbgrader would refuse the submission
        notes.append(f"{entry.shown}: ignored (not an nbgrader timestamp: {type(exc).__name__})")
        return None
    return text or None


def _secret(entry: _Entry, limits: IntakeLimits, notes: list[str]) -> str | None:
    try:
        assert entry.read is not None
        text = entry.read(limits.max_secret_bytes).decode("ascii")
    except Exception as exc:  # too big, not text
        notes.append(f"{entry.shown}: ignored (not an nbgrader submission secret: {type(exc).__name__})")
        return None
    if not _SECRET.fullmatch(text.strip()):
        notes.append(f"{entry.shown}: ignored (not an nbgrader submission secret: not a hex string)")
        return None
    return text.strip()


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
        kind, entries = "folder", _folder_entries(source, assignment, notes)
    elif source.is_file():
        try:
            with zipfile.ZipFile(source) as archive:
                kind, entries = _zip_entries(archive, assignment, limits, notes)
                subs = _stage(entries, staging, notebooks, limits, notes, members=len(archive.infolist()))
        except zipfile.BadZipFile as exc:
            raise IntakeError(f"{source}: not a readable zip archive ({exc})") from exc
        return Intake(kind, subs, notes)
    else:
        raise IntakeError(f"{source}: no such folder or zip file")
    return Intake(kind, _stage(entries, staging, notebooks, limits, notes), notes)
