"""``ch11-grade --help``: the module docstring as argparse prints it, whole and in order; the batch
command's defaults as a batch takes them; and no nbgrader imported to print any of it. ``ch11-grade
serve``'s refusals, and the command stopped with SIGTERM while it grades: every process it started
gone within 10 s."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from ch11_autograder import cli
from ch11_autograder.batch import init_course
from ch11_autograder.batch.plan import DEFAULT_OPTIONS
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from support import batch_support, process_leaks
from support.inbound_folder import own_submission


def _help(capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_help_lists_each_command_once_then_says_what_each_does(capsys):
    text = _help(capsys)
    description = text[text.index("``ch11-grade``"):text.index("\npositional arguments:")]
    synopsis, _, prose = description.partition("\n\n``")
    commands = sorted(cli._parser()._subparsers._group_actions[0].choices)
    listed = re.findall(r"^    ch11-grade ([a-z-]+)", synopsis, flags=re.M)
    assert sorted(listed) == commands
    # The synopsis is one block: no line of it (a command, or its options' continuation) turns up in the prose.
    assert not re.search(r"^ +(ch11-grade |\[--)", prose, flags=re.M), prose
    described = re.findall(r"(?:^|\n\n)``([a-z-]+)", "``" + prose)
    assert sorted(set(described)) == commands
    # Every paragraph ends a sentence: none is cut off where another text was pasted in.
    assert all(paragraph.rstrip().endswith((".", ")", '"')) for paragraph in ("``" + prose).split("\n\n")
               if paragraph.strip()), prose


def test_the_batch_commands_defaults_are_a_batchs_defaults():
    batch = cli._parser().parse_args(["batch", "submissions", "--course", "course"])
    assert (batch.workers, batch.timeout) == (DEFAULT_OPTIONS.workers, DEFAULT_OPTIONS.timeout)


HELP_IMPORTS = r"""
import json, sys
from ch11_autograder import cli
for argv in (["--help"], ["batch", "--help"]):
    try:
        cli.main(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in ("nbgrader", "nbconvert", "sqlalchemy"))))
"""


def test_help_imports_neither_nbgrader_nor_what_it_brings():
    # A fresh interpreter: this process has imported nbgrader already.
    done = subprocess.run([sys.executable, "-c", HELP_IMPORTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def _serve(course, hold: float, capsys) -> tuple[int, float, str]:
    started = time.monotonic()
    status = cli.main(["serve", "--course", str(course), "--hold-refusal", str(hold)])
    return status, time.monotonic() - started, capsys.readouterr().err


def test_serve_without_its_course_says_so_holds_then_exits_2_creating_nothing(tmp_path, capsys):
    status, seconds, err = _serve(tmp_path / "course", 0.5, capsys)
    assert status == cli.EXIT_REFUSED and seconds >= 0.5
    assert f"{tmp_path / 'course'}: no course directory there" in err and "exits in 0.5 s" in err
    assert not (tmp_path / "course").exists(), "the refusal made the course it lacks"


def test_serve_on_a_course_config_that_stops_gives_its_line_and_holds(tmp_path, capsys):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text('raise SystemExit("nbgrader_config.py: the course stops here")\n')
    status, seconds, err = _serve(course, 0.5, capsys)
    assert status == cli.EXIT_REFUSED and seconds >= 0.5
    assert "ch11-grade: nbgrader_config.py: the course stops here" in err
    assert sorted(p.name for p in course.iterdir()) == ["nbgrader_config.py"]


def test_serve_refusing_without_a_hold_exits_at_once(tmp_path, capsys):
    status, seconds, err = _serve(tmp_path / "course", 0, capsys)
    assert status == cli.EXIT_REFUSED and seconds < 5 and "exits in" not in err


#: Seconds a stopped ``ch11-grade serve`` has for every process it started to end (docs/batch.md, "Stopping").
STOPPED_WITHIN = 10


def _log_until(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, f"no {text!r} in:\n{log.read_text(errors='replace')}"
        time.sleep(0.1)


@pytest.mark.slow
def test_serve_stopped_by_sigterm_while_grading_leaves_no_process(tmp_path):
    """The command as an instructor (or systemd) runs it, on a course of its own whose config names the exchange:
    SIGTERM while a submission's nbgrader runs, and the command, its slot's fork server, nbgrader, the sandboxes
    and kernels are all gone within :data:`STOPPED_WITHIN` seconds; the command exits 0 saying it stopped."""
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"\nc.CourseDirectory.course_id = 'c1'\nc.Exchange.root = {str(exchange)!r}\n"
                     "c.ServePolicy.workers = 1\nc.ServePolicy.rescan_seconds = 1\n")
    (exchange / "c1" / "inbound").mkdir(parents=True)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen([str(Path(sys.executable).parent / "ch11-grade"), "serve", "--course", str(course)],
                                 cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    tree = process_leaks.Descendants([serve.pid])
    try:
        _log_until(log, "serving", serve)
        me, stamp = own_submission(exchange / "c1" / "inbound", SOURCE_DIR / "ex4_audit.ipynb")
        _log_until(log, f"grading  {me} {stamp}", serve)
        deadline = time.monotonic() + 300
        while not batch_support.nbgrader_forked(tree):
            assert serve.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        tree.look()
        serve.send_signal(signal.SIGTERM)
        left = process_leaks.still_running([psutil.Process(serve.pid), *tree.seen.values()], STOPPED_WITHIN,
                                           reap=[serve])
        assert left == [], f"{STOPPED_WITHIN} s after SIGTERM these still run: {left}\n{log.read_text()}"
        assert serve.wait(timeout=5) == 0, log.read_text()
    finally:
        tree.stop()
        if serve.poll() is None:  # a failed assertion above: the command must not outlive its test
            serve.kill()
        serve.wait()
    text = log.read_text()
    assert "stopping (SIGTERM)" in text and f"abandoned {me} {stamp}" in text, text
    assert text.rstrip().endswith("stopped") and "Traceback" not in text, text
