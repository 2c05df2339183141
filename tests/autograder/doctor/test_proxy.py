"""The proxy check: the hub config's proxy command found and answering ``--version``; not checked without a hub."""

from __future__ import annotations

from pathlib import Path

from ch11_autograder.doctor.proxy import check_proxy
from ch11_autograder.doctor.resolve import resolve

from .conftest import COURSE_ID, fake_env


def lines(good: dict[str, Path], config: Path | None) -> list[str]:
    deployment = resolve(good["course"], exchange=good["exchange"], course_id=COURSE_ID, hub_config=config)
    return [problem.line() for problem in check_proxy(deployment)]


def test_the_proxy(good, tmp_path: Path) -> None:
    answers = fake_env(tmp_path / "ok", "#!/bin/sh\necho 4.5.6\n") / "bin" / "nbgrader"
    fails = fake_env(tmp_path / "bad", "#!/bin/sh\necho \"Cannot find module 'commander'\" >&2\nexit 1\n")
    config = tmp_path / "jupyterhub_config.py"
    for command, expected in [
        (answers, []),
        (fails / "bin" / "nbgrader", [f"{fails}/bin/nbgrader --version fails (exit status 1: Cannot find module "
                                      "'commander') (docs/course.md, \"The hub\", step \"The proxy\")"]),
        (tmp_path / "no-proxy", [f"no {tmp_path / 'no-proxy'} on PATH: the hub cannot start its proxy (apt-get "
                                 "install -y node-configurable-http-proxy) (docs/course.md, \"The hub\", step "
                                 "\"The proxy\")"]),
    ]:
        config.write_text(f"c = get_config()\nc.ConfigurableHTTPProxy.command = [{str(command)!r}]\n")
        assert lines(good, config) == expected
    assert lines(good, None) == []  # not the hub's machine: no proxy to check
