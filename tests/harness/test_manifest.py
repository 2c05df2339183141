"""load_manifest: the documented successes and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import HARNESS_MANIFEST
from trainable_harness import HARNESS_REF, load_manifest
from trainable_harness.manifest import MANIFEST_ENV

GOOD = {
    "harness_ref": "ch-11",
    "version": "11.0.0",
    "wheel_filename": "trainable_harness-11.0.0-py3-none-any.whl",
    "wheel_sha256": "0123456789abcdef" * 4,
}


def _write(tmp_path: Path, data: object, name: str = "manifest.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_ambient_manifest(monkeypatch):
    # A developer's exported variable must not decide these tests.
    monkeypatch.delenv(MANIFEST_ENV, raising=False)


def test_good_file_is_returned_as_is(tmp_path):
    assert HARNESS_REF == "ch-11"
    assert load_manifest(_write(tmp_path, GOOD)) == GOOD
    assert load_manifest(str(_write(tmp_path, GOOD))) == GOOD


def test_the_repositorys_manifest_loads():
    data = load_manifest(HARNESS_MANIFEST)
    assert data["harness_ref"] == "ch-11"
    assert data["wheel_filename"].startswith("trainable_harness-")


@pytest.mark.parametrize("ref", ["ch-12", "CH-11", "", None, 11])
def test_wrong_harness_ref_is_refused(tmp_path, ref):
    with pytest.raises(ValueError, match="harness_ref is") as info:
        load_manifest(_write(tmp_path, {**GOOD, "harness_ref": ref}))
    assert repr(ref) in str(info.value)


def test_missing_harness_ref_is_refused(tmp_path):
    data = {key: value for key, value in GOOD.items() if key != "harness_ref"}
    with pytest.raises(ValueError, match="harness_ref is None"):
        load_manifest(_write(tmp_path, data))


@pytest.mark.parametrize(
    "digest",
    [
        "0123456789ABCDEF" * 4,  # uppercase
        "0123456789abcdef" * 4 + "0",  # 65 digits
        "0123456789abcdef" * 3,  # 48 digits
        "0123456789abcdeg" * 4,  # not hex
        "",
        None,
        int("1" * 64, 16),
    ],
)
def test_malformed_sha_is_refused(tmp_path, digest):
    with pytest.raises(ValueError, match="wheel_sha256 must be 64 lowercase hex digits"):
        load_manifest(_write(tmp_path, {**GOOD, "wheel_sha256": digest}))


def test_missing_sha_is_refused(tmp_path):
    data = {key: value for key, value in GOOD.items() if key != "wheel_sha256"}
    with pytest.raises(ValueError, match="wheel_sha256"):
        load_manifest(_write(tmp_path, data))


@pytest.mark.parametrize("payload", [[GOOD], "ch-11", 11])
def test_a_non_object_is_refused(tmp_path, payload):
    with pytest.raises(ValueError, match="a manifest is a JSON object"):
        load_manifest(_write(tmp_path, payload))


def test_invalid_json_is_a_value_error(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text("{not json", encoding="utf-8")
    # json.JSONDecodeError subclasses ValueError, the documented error for a bad manifest
    with pytest.raises(ValueError):
        load_manifest(path)


def test_env_var_names_the_path_when_none_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv(MANIFEST_ENV, str(_write(tmp_path, GOOD, "elsewhere.json")))
    assert MANIFEST_ENV == "TRAINABLE_HARNESS_MANIFEST"
    assert load_manifest() == GOOD
    assert load_manifest(None) == GOOD


def test_an_explicit_path_wins_over_the_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(MANIFEST_ENV, str(_write(tmp_path, {**GOOD, "harness_ref": "ch-12"}, "wrong.json")))
    assert load_manifest(_write(tmp_path, GOOD)) == GOOD


def test_env_var_manifest_is_checked_too(tmp_path, monkeypatch):
    monkeypatch.setenv(MANIFEST_ENV, str(_write(tmp_path, {**GOOD, "harness_ref": "ch-12"})))
    with pytest.raises(ValueError, match="harness_ref"):
        load_manifest()


@pytest.mark.parametrize("unset", ["absent", "empty"])
def test_no_path_and_no_env_var_is_file_not_found(monkeypatch, unset):
    if unset == "empty":
        monkeypatch.setenv(MANIFEST_ENV, "")
    with pytest.raises(FileNotFoundError, match=f"\\${MANIFEST_ENV} is unset"):
        load_manifest()


def test_missing_file_is_file_not_found(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        load_manifest(tmp_path / "nope.json")
    monkeypatch.setenv(MANIFEST_ENV, str(tmp_path / "also-nope.json"))
    with pytest.raises(FileNotFoundError):
        load_manifest()
