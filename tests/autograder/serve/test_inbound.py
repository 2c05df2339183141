"""Submission folders read as hostile input: the owner check, links, foreign files, caps."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import pytest
from ch11_autograder.serve.inbound import parse_folder, read_folder, ready

ME = getpass.getuser()
NOTEBOOKS = {"ex4_audit.ipynb", "ex1_fanout.ipynb"}


def folder(inbound: Path, student: str = ME, files: dict[str, bytes] | None = None) -> Path:
    path = inbound / f"{student}+ch11+2026-12-02 10:00:00.000000 UTC+abc"
    path.mkdir(parents=True)
    for name, data in (files or {"ex4_audit.ipynb": b"{}", "timestamp.txt": b"2026-12-02 10:00:00.000000 UTC",
                                 "submission_secret.txt": b"ab" * 64}).items():
        (path / name).write_bytes(data)
    return path


def read(path: Path):
    parsed = parse_folder(path.name, "ch11")
    assert parsed is not None
    return read_folder(path.parent, parsed, NOTEBOOKS)


def test_parse_folder_names() -> None:
    parsed = parse_folder("ann+ch11+2026-12-02 10:00:00 UTC+abc", "ch11")
    assert parsed is not None and (parsed.student, parsed.timestamp) == ("ann", "2026-12-02 10:00:00 UTC")
    assert parse_folder("ann+ch12+t+abc", "ch11") is None
    assert parse_folder("ann+ch11+t", "ch11") is None
    assert parse_folder("a+b+ch11+t+abc", "ch11") is None


def test_own_folder_is_read(tmp_path: Path) -> None:
    snap = read(folder(tmp_path, files={"ex4_audit.ipynb": b'{"cells": []}', "notes.txt": b"x",
                                        "timestamp.txt": b" 2026-12-02 10:00:00 UTC\n",
                                        "submission_secret.txt": b"ab" * 64}))
    assert snap.refused is None
    assert snap.notebooks == {"ex4_audit.ipynb": b'{"cells": []}'}
    assert (snap.timestamp, snap.secret) == ("2026-12-02 10:00:00 UTC", "ab" * 64)
    assert any("notes.txt" in note for note in snap.notes)
    assert snap.others == []


def test_a_folder_of_other_notebooks_is_refused_naming_them(tmp_path: Path) -> None:
    snap = read(folder(tmp_path, files={"ex4_audit (1).ipynb": b"{}", "submission_secret.txt": b"ab" * 64}))
    assert snap.refused is not None and "no notebook of the assignment" in snap.refused
    assert snap.others == ["ex4_audit (1).ipynb"]


def test_folder_named_for_someone_else_is_refused(tmp_path: Path) -> None:
    snap = read(folder(tmp_path, student="classmate"))
    assert snap.refused is not None and "claims to be classmate's submission" in snap.refused
    assert snap.notebooks == {}


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_folder_owned_by_another_user_is_refused_and_foreign_files_skipped(tmp_path: Path) -> None:
    path = folder(tmp_path)
    os.chown(path, 65534, 65534)
    snap = read(path)
    assert snap.refused is not None and f"owned by {ME}" not in snap.refused
    os.chown(path, 0, 0)
    os.chown(path / "ex4_audit.ipynb", 65534, 65534)  # a file planted by another user in a 0777 folder
    snap = read(path)
    assert "ex4_audit.ipynb" not in snap.notebooks
    assert any("owned by another user" in note for note in snap.notes)


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    secret_file = tmp_path / "instructor-secret.ipynb"
    secret_file.write_text('{"secret": 1}')
    inbound = tmp_path / "inbound"
    path = folder(inbound, files={"timestamp.txt": b"t", "submission_secret.txt": b"ab" * 64})
    (path / "ex4_audit.ipynb").symlink_to(secret_file)
    snap = read(path)
    assert snap.notebooks == {} and snap.refused is not None and "no notebook" in snap.refused
    assert any("symbolic link" in note for note in snap.notes)
    # A whole folder that is a link to a directory the student does not own.
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "ex4_audit.ipynb").write_text("{}")
    link = inbound / f"{ME}+ch11+2026-12-02 11:00:00 UTC+def"
    link.symlink_to(real)
    snap = read(link)
    assert snap.refused is not None and snap.notebooks == {}


def test_oversized_and_special_files_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ch11_autograder.serve import inbound

    monkeypatch.setattr(inbound, "MAX_NOTEBOOK_BYTES", 10)
    path = folder(tmp_path, files={"ex4_audit.ipynb": b"{" + b" " * 20 + b"}", "submission_secret.txt": b"zz"})
    os.mkfifo(path / "ex1_fanout.ipynb")
    snap = read(path)
    assert snap.notebooks == {} and snap.secret is None
    assert any("larger than 10 bytes" in n for n in snap.notes)
    assert any("not a regular file" in n for n in snap.notes)


def test_ready_waits_for_submits_last_step(tmp_path: Path) -> None:
    path = folder(tmp_path)
    path.chmod(0o755)
    info = path.stat()
    assert not ready(tmp_path, path.name, info.st_ctime + 1)
    assert ready(tmp_path, path.name, info.st_ctime + 60)
    path.chmod(0o777)  # nbgrader submit's last step
    assert ready(tmp_path, path.name, info.st_ctime)
