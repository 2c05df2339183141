"""A student's own zip inside the source: unpacked one level deep, under the source's rules and caps."""

from __future__ import annotations

import io
import os
import stat
import types

from ch11_autograder.batch.intake import read_source
from ch11_autograder.batch.intake_records import IntakeLimits
from conftest import NOTEBOOKS, by_student, file_tree, tiny_notebook, zip_bytes, zip_source


def test_a_students_zip_in_a_canvas_download_is_unpacked_one_level_under_the_same_rules(tmp_path, monkeypatch):
    from ch11_autograder.batch import intake_stage

    inner = zip_bytes({
        "hw11/ex1_fanout.ipynb": tiny_notebook("john1"),
        "hw11/ex3_block_length (1).ipynb": tiny_notebook("john3"),
        "__MACOSX/hw11/._ex1_fanout.ipynb": b"\0\5\26\7 resource fork",
        "hw11/.ipynb_checkpoints/ex1_fanout-checkpoint.ipynb": tiny_notebook("old"),
        "hw11/timestamp.txt": b"2020-01-01 00:00:00.000000 UTC",  # the student's own claim
        "hw11/submission_secret.txt": b"0123456789abcdef" * 8,  # nor is this the exchange's key
        "hw11/more.zip": zip_bytes({"ex2_finite_difference.ipynb": tiny_notebook("deeper")}),
        "../../outside/evil.ipynb": tiny_notebook("evil"),
        "hw11/ex4_audit.ipynb": b"/etc/passwd",
    }, modes={"hw11/ex4_audit.ipynb": stat.S_IFLNK | 0o777})
    archive = zip_source(tmp_path / "canvas.zip", {
        "smithjohn_12345_900001_hw11.zip": inner,
        "doejane_777_900003_ex1_fanout.ipynb": tiny_notebook("jane"),
    })
    staging = tmp_path / "work" / "staging"

    def john_of(intake):
        return by_student(intake)["smithjohn_12345"]

    john = john_of(read_source(archive, staging, NOTEBOOKS))
    assert john.error is None and sorted(john.files) == ["ex1_fanout.ipynb", "ex3_block_length.ipynb"]
    assert john.files["ex3_block_length.ipynb"].read_bytes() == tiny_notebook("john3")
    assert john.timestamp is None and john.secret is None
    notes = "\n".join(john.notes)
    for expected in ("smithjohn_12345_900001_hw11.zip: the student's own zip, unpacked (9 members)",
                     "hw11.zip!hw11/submission_secret.txt: ignored (a file inside the student's own zip is not an "
                     "nbgrader submission key)",
                     "hw11.zip!../../outside/evil.ipynb': ignored ('..' in name)",
                     "hw11.zip!hw11/ex4_audit.ipynb: symbolic link ignored",
                     "hw11.zip!hw11/more.zip: ignored (a zip inside the student's zip; only one level is unpacked)",
                     "hw11.zip!hw11/timestamp.txt: ignored (a file inside the student's own zip is not an nbgrader",
                     "ex1_fanout-checkpoint.ipynb: ignored (not a notebook of the assignment)",
                     "hw11/ex3_block_length (1).ipynb: graded as ex3_block_length.ipynb"):
        assert expected in notes, expected
    assert "__MACOSX" not in notes
    # Nothing was written by an archive's names: staging holds the chosen notebooks only.
    assert file_tree(tmp_path) - {"canvas.zip"} == {
        "work", "work/staging", "work/staging/doejane_777", "work/staging/doejane_777/ex1_fanout.ipynb",
        "work/staging/smithjohn_12345", "work/staging/smithjohn_12345/ex1_fanout.ipynb",
        "work/staging/smithjohn_12345/ex3_block_length.ipynb"}

    # The same checks catch intake that leaves the student's zip packed (the behaviour before): no notebooks.
    monkeypatch.setattr(intake_stage, "unpack_nested", lambda group, *args: (group, None))
    packed = john_of(read_source(archive, tmp_path / "staging2", NOTEBOOKS))
    assert packed.error is not None and "no notebooks of ch11 found" in packed.error and not packed.files


def test_a_students_zip_in_the_nbgrader_layout_or_a_folder_is_unpacked_too(tmp_path):
    inner = zip_bytes({"ex2_finite_difference.ipynb": tiny_notebook("a2")})
    archive = zip_source(tmp_path / "class.zip", {"alice/ch11/work.zip": inner})
    (alice,) = read_source(archive, tmp_path / "s1", NOTEBOOKS).submissions
    assert list(alice.files) == ["ex2_finite_difference.ipynb"] and alice.error is None
    folder = tmp_path / "src" / "bob" / "ch11"
    folder.mkdir(parents=True)
    (folder / "Bob's work.zip").write_bytes(inner)
    (bob,) = read_source(tmp_path / "src", tmp_path / "s2", NOTEBOOKS).submissions
    assert list(bob.files) == ["ex2_finite_difference.ipynb"]
    # The digest is the notebooks', however they were packed.
    loose = zip_source(tmp_path / "loose.zip", {"alice/ch11/ex2_finite_difference.ipynb": tiny_notebook("a2")})
    assert read_source(loose, tmp_path / "s3", NOTEBOOKS).submissions[0].sha256 == alice.sha256


def test_a_students_zip_meets_the_caps_of_the_source(tmp_path, monkeypatch):
    from ch11_autograder.batch import intake_student_zip

    bomb = b'{"nbformat": 4, "cells": [], "x": "' + b"A" * (32 << 20) + b'"}'
    members = {
        "bomber_1_1_hw.zip": zip_bytes({"ex1_fanout.ipynb": bomb}),  # a small zip that inflates to 32 MiB
        "bulky_2_2_hw.zip": zip_bytes({"ex1_fanout.ipynb": tiny_notebook("b"), "data.bin": os.urandom(300_000)}),
        "many_3_3_hw.zip": zip_bytes({f"f{i}.txt": b"x" for i in range(40)}),
        "fine_4_4_hw.zip": zip_bytes({"ex1_fanout.ipynb": tiny_notebook("f")}),
    }
    archive = zip_source(tmp_path / "canvas.zip", members)
    limits = IntakeLimits(max_notebook_bytes=1 << 20, max_nested_archive_bytes=200_000, max_members=30)
    subs = by_student(read_source(archive, tmp_path / "staging", NOTEBOOKS, limits=limits))
    assert "bomber_1_1_hw.zip!ex1_fanout.ipynb" in subs["bomber_1"].error and "1048576" in subs["bomber_1"].error
    assert "bulky_2_2_hw.zip: larger than the 200000-byte cap for a zip inside the source" in subs["bulky_2"].error
    assert "many_3_3_hw.zip: more members than the 30-member cap" in subs["many_3"].error
    assert subs["fine_4"].error is None and list(subs["fine_4"].files) == ["ex1_fanout.ipynb"]
    staged = sum(p.stat().st_size for p in (tmp_path / "staging").rglob("*") if p.is_file())
    assert staged < 4096

    # The member count is checked before the zip's directory is parsed: no zip is opened for "many".
    opened = []
    recording = types.SimpleNamespace(BytesIO=lambda data: opened.append(len(data)) or io.BytesIO(data))
    monkeypatch.setattr(intake_student_zip, "io", recording)
    only_many = zip_source(tmp_path / "many.zip", {"many_3_3_hw.zip": members["many_3_3_hw.zip"]})
    (many,) = read_source(only_many, tmp_path / "staging2", NOTEBOOKS, limits=limits).submissions
    assert "member cap" in many.error and opened == []

    # Bytes of the student's zip count toward the total cap.
    tight = IntakeLimits(max_total_bytes=1000)
    (fine,) = read_source(zip_source(tmp_path / "f.zip", {"fine_4_4_hw.zip": zip_bytes({"ex1_fanout.ipynb": os.urandom(
        3000)})}), tmp_path / "staging3", NOTEBOOKS, limits=tight).submissions
    assert "exceeds the 1000-byte intake cap" in fine.error


def test_a_notebook_loose_and_inside_the_students_zip_is_a_duplicate_and_a_broken_zip_is_named(tmp_path):
    archive = zip_source(tmp_path / "canvas.zip", {
        "smithjohn_1_10_ex1_fanout.ipynb": tiny_notebook("loose"),
        "smithjohn_1_11_hw.zip": zip_bytes({"hw/ex1_fanout.ipynb": tiny_notebook("zipped")}),
        "doejane_2_12_hw.zip": b"PK\x03\x04 this is not really a zip",
    })
    subs = by_student(read_source(archive, tmp_path / "staging", NOTEBOOKS))
    john = subs["smithjohn_1"]
    assert john.error and "two files for ex1_fanout.ipynb" in john.error
    assert "smithjohn_1_10_ex1_fanout.ipynb" in john.error and "smithjohn_1_11_hw.zip!hw/ex1_fanout.ipynb" in john.error
    jane = subs["doejane_2"]
    assert jane.error.startswith("no notebooks of ch11 found") and "doejane_2_12_hw.zip: ignored (not a readable zip" \
        in jane.error
