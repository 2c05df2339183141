"""The font list a grading process builds once for all its graders (``batch/fonts.py``)."""

from __future__ import annotations

import threading

import pytest
from ch11_autograder.batch import fonts
from ch11_autograder.batch.guards import check_sandbox
from ch11_autograder.untrusted.backends.bwrap import BwrapLauncher
from ch11_autograder.untrusted.font_list import FONT_LIST_ENV, FontList, load_font_list


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test is a grading process of its own: no build started yet."""
    monkeypatch.setattr(fonts, "_PATHS", {})
    monkeypatch.setattr(fonts, "_UNWRITTEN", set())


class Builds:
    """A launcher that shares a font list, counting its builds; ``release`` lets a build finish."""

    def __init__(self, result: FontList | Exception | None) -> None:
        self.result = result
        self.calls = 0
        self.release = threading.Event()
        self.release.set()

    def font_list(self) -> FontList | None:
        self.calls += 1
        self.release.wait(30)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


FONTS = FontList("fontlist-v390.json", b'{"__class__": "FontManager", "_version": "390", "ttflist": [], '
                                       b'"afmlist": []}')


def test_graders_are_told_the_file_at_once_and_read_the_list_when_it_is_built():
    launcher = Builds(FONTS)
    launcher.release.clear()
    fonts.start("bwrap", launcher)
    env = fonts.grader_env("bwrap")  # while the build is under way: not waited for
    assert set(env) == {FONT_LIST_ENV}
    threading.Timer(0.2, launcher.release.set).start()
    assert load_font_list(env[FONT_LIST_ENV], wait_seconds=30) == FONTS


def test_one_build_per_process_and_backend():
    first, second = Builds(FONTS), Builds(FONTS)
    fonts.start("bwrap", first)
    fonts.start("bwrap", second)
    assert load_font_list(fonts.grader_env("bwrap")[FONT_LIST_ENV], wait_seconds=30) == FONTS
    assert (first.calls, second.calls) == (1, 0)


@pytest.mark.parametrize(
    ("result", "words"),
    [(RuntimeError("no user namespaces"), "RuntimeError: no user namespaces"),
     (None, "the sandboxed build failed")],
)
def test_a_failed_build_leaves_a_file_saying_why_so_no_grader_waits_in_vain(result, words):
    fonts.start("bwrap", Builds(result))
    with pytest.raises(ValueError, match="holds no font list") as error:
        load_font_list(fonts.grader_env("bwrap")[FONT_LIST_ENV], wait_seconds=30)
    assert words in str(error.value)


def test_no_variable_without_a_build_or_when_the_file_cannot_be_written(monkeypatch):
    fonts.start("container-user", object())  # a backend that shares no font list
    assert fonts.grader_env("container-user") == {}
    assert fonts.grader_env("bwrap") == {}  # never started

    def unwritable(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fonts, "save_font_list", unwritable)
    launcher = Builds(FONTS)
    fonts.start("bwrap", launcher)
    for thread in threading.enumerate():
        if thread.name == "ch11-font-list":
            thread.join(30)
    assert launcher.calls == 1 and fonts.grader_env("bwrap") == {}


def test_the_batch_sandbox_check_builds_the_list_its_sandbox_builds():
    check_sandbox("bwrap", 2)
    shared = load_font_list(fonts.grader_env("bwrap")[FONT_LIST_ENV], wait_seconds=120)
    own = BwrapLauncher().font_list()
    assert own is not None and shared == own
