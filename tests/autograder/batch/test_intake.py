"""Intake of folders and LMS zips: layouts, and everything a hostile archive can try."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile

import pytest
from ch11_autograder.batch.intake import read_source
from ch11_autograder.batch.intake_checks import check_notebook
from ch11_autograder.batch.intake_records import IntakeError, IntakeLimits
from conftest import NOTEBOOKS, by_student, file_tree, tiny_notebook, zip_source
from support.paths import ASSIGNMENT, DEMO_CLASS_DIR

# --------------------------------------------------------------------------- layouts


def test_folder_in_nbgrader_layout_with_and_without_submitted(tmp_path):
    for top in ("plain", "course"):
        root = tmp_path / top / ("submitted" if top == "course" else "")
        for student in ("alice", "bob"):
            folder = root / student / "ch11"
            folder.mkdir(parents=True)
            (folder / "ex1_fanout.ipynb").write_bytes(tiny_notebook(student))
        (root / "alice" / "ch11" / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC\n")
        intake = read_source(tmp_path / top, tmp_path / f"staging-{top}", NOTEBOOKS)
        subs = by_student(intake)
        assert intake.kind == "folder" and sorted(subs) == ["alice", "bob"]
        assert subs["alice"].timestamp == "2026-11-20 12:00:00.000000 UTC" and subs["bob"].timestamp is None
        assert subs["alice"].files["ex1_fanout.ipynb"].read_bytes() == tiny_notebook("alice")
        assert subs["alice"].error is None
        # Four notebooks were not submitted: graded anyway, each noted.
        missing = [n for n in subs["alice"].notes if "not submitted" in n]
        assert len(missing) == 4 and any("ex5_replay.ipynb" in n for n in missing)


def test_canvas_zip_flat_names_late_and_resubmission_copies(tmp_path):
    archive = zip_source(tmp_path / "canvas.zip", {
        "smithjohn_12345_900001_ex1_fanout.ipynb": tiny_notebook("john1"),
        "smithjohn_12345_900002_ex2_finite_difference-1.ipynb": tiny_notebook("john2"),
        "doejane_LATE_777_900003_ex1_fanout.ipynb": tiny_notebook("jane"),
        "doejane_LATE_777_900004_notes.txt": b"hello",
    })
    intake = read_source(archive, tmp_path / "staging", NOTEBOOKS)
    subs = by_student(intake)
    assert intake.kind == "canvas-zip" and sorted(subs) == ["doejane_777", "smithjohn_12345"]
    john = subs["smithjohn_12345"]
    assert sorted(john.files) == ["ex1_fanout.ipynb", "ex2_finite_difference.ipynb"]
    assert john.files["ex2_finite_difference.ipynb"].read_bytes() == tiny_notebook("john2")
    assert any("graded as ex2_finite_difference.ipynb" in n for n in john.notes)
    jane = subs["doejane_777"]
    assert jane.late and any("late" in n for n in jane.notes)
    assert any("notes.txt: ignored (not a notebook)" in n for n in jane.notes)


def test_zip_of_the_nbgrader_layout_with_a_top_folder(tmp_path):
    archive = zip_source(tmp_path / "class.zip", {
        "export/submitted/alice/ch11/ex1_fanout.ipynb": tiny_notebook("a"),
        "export/submitted/bob/ch11/ex3_block_length.ipynb": tiny_notebook("b"),
        "export/README.txt": b"read me",
        "export/submitted/bob/ch11/sub/ex4_audit.ipynb": tiny_notebook("deep"),
    })
    intake = read_source(archive, tmp_path / "staging", NOTEBOOKS)
    subs = by_student(intake)
    assert intake.kind == "nbgrader-zip" and sorted(subs) == ["alice", "bob"]
    assert list(subs["bob"].files) == ["ex3_block_length.ipynb"]
    assert any("in a subfolder" in n for n in subs["bob"].notes)
    assert any("README.txt" in n for n in intake.notes)


def test_same_notebooks_give_the_same_digest_from_a_folder_or_a_zip(tmp_path):
    folder = tmp_path / "src" / "alice" / "ch11"
    folder.mkdir(parents=True)
    (folder / "ex1_fanout.ipynb").write_bytes(tiny_notebook("x"))
    from_folder = read_source(tmp_path / "src", tmp_path / "s1", NOTEBOOKS).submissions[0]
    archive = zip_source(tmp_path / "a.zip", {"alice/ch11/ex1_fanout.ipynb": tiny_notebook("x")})
    from_zip = read_source(archive, tmp_path / "s2", NOTEBOOKS).submissions[0]
    assert from_folder.sha256 == from_zip.sha256 and len(from_zip.sha256) == 64
    # The digest follows the content: one changed byte changes it.
    (folder / "ex1_fanout.ipynb").write_bytes(tiny_notebook("y"))
    assert read_source(tmp_path / "src", tmp_path / "s3", NOTEBOOKS).submissions[0].sha256 != from_folder.sha256


# --------------------------------------------------------------------------- hostile archives


def test_path_traversal_and_absolute_names_are_never_extracted(tmp_path):
    outside = tmp_path / "outside"
    members = {
        "../../outside/evil.ipynb": tiny_notebook("evil"),
        "/etc/cron.d/evil.ipynb": tiny_notebook("abs"),
        "C:/Windows/evil.ipynb": tiny_notebook("drive"),
        "..\\..\\outside\\evil2.ipynb": tiny_notebook("backslash"),
        "alice/ch11/../../../outside/evil3.ipynb": tiny_notebook("inner"),
        "alice/ch11/ex1_fanout.ipynb": tiny_notebook("ok"),
    }
    archive = zip_source(tmp_path / "evil.zip", members)
    # Premise: a naive extraction by name would write outside its target folder.
    naive = (tmp_path / "x" / "y" / "../../outside/evil.ipynb").resolve()
    assert not naive.is_relative_to(tmp_path / "x" / "y")
    staging = tmp_path / "work" / "staging"
    intake = read_source(archive, staging, NOTEBOOKS)
    assert not outside.exists()
    assert file_tree(tmp_path) - {"evil.zip"} == {"work", "work/staging", "work/staging/alice",
                                                  "work/staging/alice/ex1_fanout.ipynb"}
    ignored = " ".join(intake.notes)
    for name in ("../../outside/evil.ipynb", "/etc/cron.d/evil.ipynb", "C:/Windows/evil.ipynb"):
        assert repr(name) in ignored
    assert [s.student for s in intake.submissions] == ["alice"]


def test_symlinks_in_zips_and_folders_are_ignored_not_followed(tmp_path):
    secret = tmp_path / "gradebook.db"
    secret.write_bytes(b"SECRET")
    archive = zip_source(tmp_path / "links.zip", {
        "alice/ch11/ex1_fanout.ipynb": str(secret).encode(),
        "alice/ch11/ex2_finite_difference.ipynb": tiny_notebook("real"),
    }, modes={"alice/ch11/ex1_fanout.ipynb": stat.S_IFLNK | 0o777})
    intake = read_source(archive, tmp_path / "staging", NOTEBOOKS)
    alice = intake.submissions[0]
    assert list(alice.files) == ["ex2_finite_difference.ipynb"]
    assert any("ex1_fanout.ipynb: symbolic link ignored" in n for n in intake.notes)

    folder = tmp_path / "src" / "bob" / "ch11"
    folder.mkdir(parents=True)
    os.symlink(secret, folder / "ex1_fanout.ipynb")
    os.symlink(tmp_path, tmp_path / "src" / "carol")  # a student "folder" that is a link
    (folder / "ex3_block_length.ipynb").write_bytes(tiny_notebook("bob"))
    intake = read_source(tmp_path / "src", tmp_path / "staging2", NOTEBOOKS)
    subs = by_student(intake)
    assert list(subs) == ["bob"] and list(subs["bob"].files) == ["ex3_block_length.ipynb"]
    assert any("ex1_fanout.ipynb: ignored (symbolic link)" in n for n in subs["bob"].notes)
    assert any("carol: symbolic link ignored" in n for n in intake.notes)
    assert b"SECRET" not in b"".join(p.read_bytes() for p in (tmp_path / "staging2").rglob("*") if p.is_file())


def test_zip_bomb_notebook_is_stopped_at_the_cap_while_decompressing(tmp_path):
    limits = IntakeLimits(max_notebook_bytes=1 << 20, max_total_bytes=4 << 20)
    bomb = b'{"nbformat": 4, "cells": [], "x": "' + b"A" * (64 << 20) + b'"}'
    archive = zip_source(tmp_path / "bomb.zip", {"mallory/ch11/ex1_fanout.ipynb": bomb,
                                                 "alice/ch11/ex1_fanout.ipynb": tiny_notebook("a")})
    # Premise: a real bomb, a tiny archive that inflates to 64 MiB.
    assert archive.stat().st_size < (1 << 20) // 4
    intake = read_source(archive, tmp_path / "staging", NOTEBOOKS, limits=limits)
    subs = by_student(intake)
    assert subs["mallory"].error and "cap" in subs["mallory"].error and "ex1_fanout.ipynb" in subs["mallory"].error
    assert subs["alice"].error is None
    staged = sum(p.stat().st_size for p in (tmp_path / "staging").rglob("*") if p.is_file())
    assert staged < (1 << 20)


def test_lying_size_headers_do_not_get_past_the_cap(tmp_path):
    # The local header claims a tiny size; decompression itself is what is counted.
    limits = IntakeLimits(max_notebook_bytes=1 << 20)
    big = b'{"nbformat": 4, "cells": [], "x": "' + b"B" * (8 << 20) + b'"}'
    path = zip_source(tmp_path / "liar.zip", {"mallory/ch11/ex1_fanout.ipynb": big})
    raw = bytearray(path.read_bytes())
    # Patch the central directory's uncompressed size (offset 24 in each central header) to 100.
    at = raw.find(b"PK\x01\x02")
    raw[at + 24: at + 28] = (100).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    intake = read_source(path, tmp_path / "staging", NOTEBOOKS, limits=limits)
    error = intake.submissions[0].error
    assert error is not None and ("cap" in error or "unreadable" in error)
    assert not any((tmp_path / "staging").rglob("*.ipynb"))


def test_total_size_cap_and_member_count_cap(tmp_path):
    members = {f"s{i:02d}/ch11/ex1_fanout.ipynb": tiny_notebook(str(i)) + b" " * 4000 for i in range(10)}
    archive = zip_source(tmp_path / "many.zip", members)
    limits = IntakeLimits(max_total_bytes=5 * 4200)
    subs = read_source(archive, tmp_path / "staging", NOTEBOOKS, limits=limits).submissions
    over = [s for s in subs if s.error]
    assert over and all("intake cap" in s.error for s in over) and len(over) < len(subs)
    with pytest.raises(IntakeError, match="more than the cap of 5"):
        read_source(archive, tmp_path / "staging2", NOTEBOOKS, limits=IntakeLimits(max_members=5))


def test_not_a_zip_or_missing_source_is_refused(tmp_path):
    (tmp_path / "garbage.zip").write_bytes(b"not a zip at all")
    with pytest.raises(IntakeError, match="not a readable zip"):
        read_source(tmp_path / "garbage.zip", tmp_path / "s", NOTEBOOKS)
    with pytest.raises(IntakeError, match="no such folder or zip"):
        read_source(tmp_path / "missing", tmp_path / "s", NOTEBOOKS)


# --------------------------------------------------------------------------- duplicates


def test_colliding_ids_and_two_files_for_one_notebook_are_errors_naming_both(tmp_path):
    archive = zip_source(tmp_path / "dups.zip", {
        "Jane Doe/ch11/ex1_fanout.ipynb": tiny_notebook("1"),
        "Jane_Doe/ch11/ex1_fanout.ipynb": tiny_notebook("2"),
        "zed/ch11/ex1_fanout.ipynb": tiny_notebook("3"),
    })
    subs = read_source(archive, tmp_path / "staging", NOTEBOOKS).submissions
    jane = [s for s in subs if s.student == "Jane_Doe"]
    assert len(jane) == 2 and all(s.error and "duplicate student id" in s.error for s in jane)
    assert "'Jane Doe'" in jane[1].error or "'Jane Doe'" in jane[0].error
    assert [s.error for s in subs if s.student == "zed"] == [None]

    archive = zip_source(tmp_path / "canvas.zip", {
        "smithjohn_1_10_ex1_fanout.ipynb": tiny_notebook("a"),
        "smithjohn_1_11_ex1_fanout-1.ipynb": tiny_notebook("b"),
    })
    (john,) = read_source(archive, tmp_path / "staging2", NOTEBOOKS).submissions
    assert john.error and "two files for ex1_fanout.ipynb" in john.error
    assert "smithjohn_1_10_ex1_fanout.ipynb" in john.error and "smithjohn_1_11_ex1_fanout-1.ipynb" in john.error


# --------------------------------------------------------------------------- notebook checks


def test_malformed_json_wrong_nbformat_and_non_notebooks_are_named_errors(tmp_path):
    cases = {
        "broken": (b'{"nbformat": 4, "cells": [', "malformed JSON"),
        "old": (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "wrong nbformat (3)"),
        "listy": (b"[1, 2, 3]", "not a notebook"),
        "nocells": (json.dumps({"nbformat": 4}).encode(), "no list of cells"),
        "binary": (b"\xff\xfe\x00garbage", "not UTF-8"),
    }
    archive = zip_source(tmp_path / "bad.zip", {f"{who}/ch11/ex2_finite_difference.ipynb": data
                                                for who, (data, _) in cases.items()})
    subs = by_student(read_source(archive, tmp_path / "staging", NOTEBOOKS))
    for who, (_, cause) in cases.items():
        error = subs[who].error
        assert error is not None and cause in error and "ex2_finite_difference.ipynb" in error, (who, error)
    # Control: the check accepts a real notebook from the demo class.
    real = (DEMO_CLASS_DIR / "ada" / ASSIGNMENT / "ex1_fanout.ipynb").read_bytes()
    assert check_notebook(real, "ex1_fanout.ipynb") is None


def test_a_student_without_notebooks_is_an_error_and_others_are_unaffected(tmp_path):
    (tmp_path / "src" / "empty" / "ch11").mkdir(parents=True)
    (tmp_path / "src" / "nofolder").mkdir()
    (tmp_path / "src" / "nofolder" / "ex1_fanout.ipynb").write_bytes(tiny_notebook())
    (tmp_path / "src" / "other" / "ch11").mkdir(parents=True)
    (tmp_path / "src" / "other" / "ch11" / "answers.py").write_text("print(1)\n")
    (tmp_path / "src" / "good" / "ch11").mkdir(parents=True)
    (tmp_path / "src" / "good" / "ch11" / "ex1_fanout.ipynb").write_bytes(tiny_notebook())
    subs = by_student(read_source(tmp_path / "src", tmp_path / "staging", NOTEBOOKS))
    assert "no notebooks of ch11 found" in subs["empty"].error
    assert "no ch11/ folder" in subs["nofolder"].error
    assert "no notebooks of ch11 found" in subs["other"].error
    assert subs["good"].error is None and subs["good"].sha256


def test_the_exchange_s_submission_secret_is_kept_and_a_bad_one_dropped_with_a_note(tmp_path):
    """``nbgrader collect`` brings ``submission_secret.txt``; release_feedback needs it beside the feedback."""
    secret = "0123456789abcdef" * 8  # nbgrader's: secrets.token_hex(64)
    for student, text in (("alice", secret), ("bob", "not a key; cat /etc/shadow"), ("cy", "a" * 2000)):
        folder = tmp_path / "src" / student / "ch11"
        folder.mkdir(parents=True)
        (folder / "ex1_fanout.ipynb").write_bytes(tiny_notebook(student))
        (folder / "submission_secret.txt").write_text(text)
    subs = by_student(read_source(tmp_path / "src", tmp_path / "staging", NOTEBOOKS))
    assert {s: (sub.secret, sub.error) for s, sub in subs.items()} == {
        "alice": (secret, None), "bob": (None, None), "cy": (None, None)}
    assert not [n for n in subs["alice"].notes if "secret" in n]
    assert any("submission_secret.txt: ignored (not an nbgrader submission secret: not a hex string)" in n
               for n in subs["bob"].notes)
    assert any("submission_secret.txt: ignored (not an nbgrader submission secret: _TooBig)" in n
               for n in subs["cy"].notes)
    assert sorted(p.name for p in (tmp_path / "staging" / "alice").iterdir()) == ["ex1_fanout.ipynb"]


def test_invalid_timestamp_is_dropped_with_a_note(tmp_path):
    folder = tmp_path / "src" / "alice" / "ch11"
    folder.mkdir(parents=True)
    (folder / "ex1_fanout.ipynb").write_bytes(tiny_notebook())
    (folder / "timestamp.txt").write_text("yesterday-ish, honest")
    (alice,) = read_source(tmp_path / "src", tmp_path / "staging", NOTEBOOKS).submissions
    assert alice.timestamp is None and alice.error is None
    assert any("timestamp.txt: ignored" in n for n in alice.notes)


def test_staging_holds_only_the_chosen_notebooks(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("alice/ch11/ex1_fanout.ipynb", tiny_notebook())
        archive.writestr("alice/ch11/run.sh", b"rm -rf /")
        archive.writestr("alice/ch11/data.bin", b"\0" * 100)
    (tmp_path / "c.zip").write_bytes(buffer.getvalue())
    read_source(tmp_path / "c.zip", tmp_path / "staging", NOTEBOOKS)
    assert file_tree(tmp_path / "staging") == {"alice", "alice/ex1_fanout.ipynb"}
