"""Unpacking an upload: plain files and folders in, every hostile member refused, nothing written outside staging."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from ch11_autograder.exchange.hub.archive import BadArchive, Limits, unpack

from .conftest import NOTEBOOK, member, tar_gz, tree


def _outer(tmp_path: Path) -> tuple[Path, dict[str, bytes | str]]:
    """A folder with a file and a sibling that a path escaping the staging folder would reach."""
    (tmp_path / "victim.txt").write_bytes(b"untouched")
    (tmp_path / "sub").mkdir()
    return tmp_path / "sub" / "stage", tree(tmp_path)


def test_files_and_folders_are_unpacked(tmp_path: Path) -> None:
    data = tar_gz(member("ps1", kind=tarfile.DIRTYPE), member("ps1/problem1.ipynb", NOTEBOOK),
                  member("./ps1/data/x.csv", b"1,2\n"), member("notes.txt", b""))
    staging = unpack(io.BytesIO(data), tmp_path / "stage")
    assert tree(staging) == {"ps1": "dir", "ps1/problem1.ipynb": NOTEBOOK, "ps1/data": "dir",
                             "ps1/data/x.csv": b"1,2\n", "notes.txt": b""}


@pytest.mark.parametrize(("members", "why"), [
    ([member("../victim.txt", b"owned")], "has a '..' in its path"),
    ([member("ps1/../../victim.txt", b"owned")], "has a '..' in its path"),
    ([member("/tmp/abs.txt", b"owned")], "has an absolute path"),
    ([member("link", kind=tarfile.SYMTYPE, link="../victim.txt"), member("link", b"owned")],
     "is a symbolic link (to '../victim.txt')"),
    ([member("ok.txt"), member("hard", kind=tarfile.LNKTYPE, link="ok.txt")], "is a hard link (to 'ok.txt')"),
    ([member("dev", kind=tarfile.CHRTYPE)], "is a device"),
    ([member("blk", kind=tarfile.BLKTYPE)], "is a device"),
    ([member("fifo", kind=tarfile.FIFOTYPE)], "is a fifo"),
    ([member("p.ipynb", b"{not json")], "the notebook 'p.ipynb' is not JSON"),
    ([member("p.ipynb", b"[1, 2]")], "the notebook 'p.ipynb' is JSON but not an object"),
    ([member("a.txt"), member("a.txt")], "the member 'a.txt' is given twice"),
    ([member("a"), member("a/b.txt")], "the folder 'a' is also a file"),
    ([member(".", kind=tarfile.DIRTYPE)], "names the archive's top folder itself"),
])
def test_each_hostile_member_is_refused_and_nothing_is_left(tmp_path: Path, members: list, why: str) -> None:
    staging, before = _outer(tmp_path)
    with pytest.raises(BadArchive) as caught:
        unpack(io.BytesIO(tar_gz(member("first.txt", b"kept until refused"), *members)), staging)
    assert why in str(caught.value)
    assert tree(tmp_path) == before
    assert not (Path("/tmp") / "abs.txt").exists()


@pytest.mark.parametrize(("limits", "members", "why"), [
    (Limits(file_bytes=10), [member("big", b"x" * 11)], "the member 'big' is larger than 10 bytes"),
    (Limits(total_bytes=15), [member("a", b"x" * 8), member("b", b"x" * 8)], "more than 15 bytes"),
    (Limits(files=2), [member("a"), member("b"), member("c")], "more than 2 members"),
])
def test_caps_are_kept(tmp_path: Path, limits: Limits, members: list, why: str) -> None:
    staging, before = _outer(tmp_path)
    with pytest.raises(BadArchive) as caught:
        unpack(io.BytesIO(tar_gz(*members)), staging, limits)
    assert why in str(caught.value)
    assert tree(tmp_path) == before


@pytest.mark.parametrize(("data", "why"), [
    (b"PK\x03\x04 a zip", "not a gzip-compressed tar archive"),
    (tar_gz(member("a", os.urandom(5000)))[:2000], "damaged or cut short"),
], ids=["zip", "cut short"])
def test_an_unreadable_upload_is_refused(tmp_path: Path, data: bytes, why: str) -> None:
    staging, before = _outer(tmp_path)
    with pytest.raises(BadArchive, match=why):
        unpack(io.BytesIO(data), staging)
    assert tree(tmp_path) == before


def test_an_existing_staging_folder_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "mine").write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        unpack(io.BytesIO(tar_gz(member("a"))), tmp_path / "stage")
    assert tree(tmp_path) == {"stage": "dir", "stage/mine": b"keep"}
