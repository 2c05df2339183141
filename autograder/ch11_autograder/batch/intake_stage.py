"""Staging: each student's notebooks chosen, checked and written under ``staging/<student>/``, or the
reason that student cannot be graded (the rules: ``batch/intake.py``)."""

from __future__ import annotations

import re
import shutil
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..paths import ASSIGNMENT
from .intake_checks import check_notebook, inputs_sha256, sanitize_student_id
from .intake_entries import SECRET_FILE, TIMESTAMP_FILE, Budget, Entry, _TooBig
from .intake_records import IntakeLimits, StudentSubmission
from .intake_student_zip import unpack_nested

__all__ = [
    "stage",
]

_SECRET = re.compile(r"[0-9a-fA-F]{16,}")
_COPY_SUFFIX = re.compile(r"^(?P<stem>.+?)(?:-\d{1,3}| \(\d{1,3}\))$")


def _canonical_notebook(filename: str, notebooks: set[str]) -> str | None:
    if filename in notebooks:
        return filename
    if filename.endswith(".ipynb"):
        match = _COPY_SUFFIX.match(filename[: -len(".ipynb")])
        if match and match["stem"] + ".ipynb" in notebooks:
            return match["stem"] + ".ipynb"
    return None


def stage(
    entries: Iterable[Entry],
    staging: Path,
    notebooks: Sequence[str],
    limits: IntakeLimits,
    notes: list[str],
    members: int = 0,
) -> list[StudentSubmission]:
    """Stage each student's notebooks; ``members`` is the outer archive's member count (0 for a folder)."""
    wanted = set(notebooks)
    by_raw: dict[str, list[Entry]] = {}
    for entry in entries:
        by_raw.setdefault(entry.raw_student, []).append(entry)

    # Sanitized ids; collisions (case-insensitive) are errors for every student involved.
    ids: dict[str, list[str]] = {}
    for raw in sorted(by_raw):
        ids.setdefault(sanitize_student_id(raw).lower(), []).append(raw)

    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    budget = Budget(members=members)
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
        group, sub.error = unpack_nested(group, limits, budget, sub.notes)
        if sub.error:
            continue
        chosen: dict[str, Entry] = {}
        timestamp_entry: Entry | None = None
        secret_entry: Entry | None = None
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


def _timestamp(entry: Entry, limits: IntakeLimits, notes: list[str]) -> str | None:
    from nbgrader.utils import parse_utc

    try:
        assert entry.read is not None
        text = entry.read(limits.max_timestamp_bytes).decode("utf-8").strip()
        parse_utc(text)
    except Exception as exc:  # too big, not text, not a date: nbgrader would refuse the submission
        notes.append(f"{entry.shown}: ignored (not an nbgrader timestamp: {type(exc).__name__})")
        return None
    return text or None


def _secret(entry: Entry, limits: IntakeLimits, notes: list[str]) -> str | None:
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


