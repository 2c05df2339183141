"""A student's own zip inside the source, unpacked one level deep under the source's rules and caps
(``batch/intake.py``, "A student's own zip")."""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from .intake_entries import SECRET_FILE, TIMESTAMP_FILE, Budget, Entry, _TooBig, member_reader, skipped_member
from .intake_records import IntakeLimits

__all__ = [
    "unpack_nested",
]

_CENTRAL_HEADER = b"PK\x01\x02"


def _nested_entries(
    outer: Entry, limits: IntakeLimits, budget: Budget, notes: list[str]
) -> tuple[list[Entry], str | None]:
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
        if skipped_member(info, shown, notes):
            continue
        filename = PurePosixPath(info.filename.replace("\\", "/")).name
        if filename.lower().endswith(".zip"):
            notes.append(f"{shown}: ignored (a zip inside the student's zip; only one level is unpacked)")
            continue
        if filename in (TIMESTAMP_FILE, SECRET_FILE):
            what = "submission time" if filename == TIMESTAMP_FILE else "submission key"
            notes.append(f"{shown}: ignored (a file inside the student's own zip is not an nbgrader {what})")
            continue
        entries.append(Entry(outer.raw_student, outer.origin, filename, shown, info.file_size,
                              read=member_reader(archive, info), late=outer.late))
    return entries, None


def unpack_nested(
    group: list[Entry], limits: IntakeLimits, budget: Budget, notes: list[str]
) -> tuple[list[Entry], str | None]:
    """``group`` with each of the student's own zips replaced by the files inside it; an error or ``None``."""
    out: list[Entry] = []
    for entry in sorted(group, key=lambda e: e.shown):
        if entry.read is None or entry.problem or not entry.filename.lower().endswith(".zip"):
            out.append(entry)
            continue
        inner, error = _nested_entries(entry, limits, budget, notes)
        if error:
            return out, error
        out += inner
    return out, None


