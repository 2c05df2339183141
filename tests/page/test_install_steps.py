"""docs/course.md's install steps (The hub, steps 1-4) run as written on fresh Debian 12 and Debian 13.

Each suite's machine is a container of the debootstrap base (``support.debian_machine``) with the
checkout at ``<checkout>``. The page's marked blocks ``admin-*`` of steps 1-4 run in it
(``support.page_runner``) as root under umask 077, with ``<checkout>`` the only placeholder
replaced. Then, on that machine:

* the environments are Debian's own Python (3.11 on bookworm, 3.13 on trixie) and readable by a
  user other than root (``nobody``): the students' has nbgrader and the harness and no grading
  package, the instructor's has the package; ``nobody`` reads the checkout's course config;
* the behaviour fixtures hold under that Python, with the instructor's environment: every
  catalogue verdict (``tests/behaviour/test_unchanged.py``, in-process, ``sandbox = "none"`` as
  ``capture.py`` grades them: the catalogue and the reference are trusted code), and the demo class
  graded by the installed ``ch11-grade batch`` into an empty ``--course`` (the course from the
  wheel's files) with ``--sandbox none`` (the demo class is made of the reference and catalogue
  answers: trusted; a container has no user namespaces for bwrap), its scores and feedback
  digests equal to ``tests/behaviour/demo.json``.

Mark ``page``: needs root and a Docker engine; skipped without them, failed under CI.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from support import batch_support, debian_machine, page_runner, tier_gate
from support.paths import BUILD_DIR, DOCS_DIR

pytestmark = pytest.mark.page

#: The page's steps 1-4 of "The hub (admin, once)", in page order.
INSTALL_STEPS = ("admin-harness-wheel", "admin-install-students", "admin-install-grader", "admin-proxy")
CHECKOUT = debian_machine.CHECKOUT

_COMPARE_DEMO = """
import json, sys
from behaviour import capture
from pathlib import Path
got = capture.demo_outcome(Path(sys.argv[1]))
want = capture.expected_demo()
bad = [s for s in sorted(set(got["scores"]) | set(want["scores"])) if got["scores"].get(s) != want["scores"].get(s)]
bad += [f for f in sorted(set(got["feedback_sha256"]) | set(want["feedback_sha256"]))
        if got["feedback_sha256"].get(f) != want["feedback_sha256"].get(f)]
print(json.dumps(bad))
sys.exit(1 if bad else 0)
"""


def _exec(machine: str, user: str, script: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "exec", "--user", user, "--workdir", "/", machine, "bash", "-euo", "pipefail",
                           "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


@pytest.mark.parametrize("suite", sorted(debian_machine.PYTHONS))
def test_the_install_steps_run_as_written_on_a_fresh_debian(suite):
    import os

    tier_gate.require("page", None if os.geteuid() == 0 else "needs root (docker, and the machine's users)")
    batch_support.require_docker()
    start = time.monotonic()
    batch_support.base_image(suite)
    base_s = time.monotonic() - start
    steps = page_runner.page_steps((DOCS_DIR / "course.md").read_text(), {"<checkout>": CHECKOUT}, only=INSTALL_STEPS)
    assert [s.name for s in steps] == list(INSTALL_STEPS)
    log = BUILD_DIR / "page" / f"install-{suite}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    with debian_machine.fresh_machine(suite) as machine:
        timings = page_runner.run_steps(steps, page_runner.DockerTarget(machine, env=debian_machine.host_env(),
                                                                      umask="077"), log=log)
        steps_s = ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        print(f"\n{suite}: base {base_s:.0f} s (0 when cached); {steps_s}")

        major, minor = debian_machine.PYTHONS[suite]
        probe = _exec(machine, "nobody", f"""
            cd /tmp
            /opt/ch11/grader/bin/python -c 'import sys, ch11_autograder, nbgrader; print(sys.version_info[:2])'
            /opt/ch11/students/bin/python -c 'import nbgrader, numpy, matplotlib, trainable_harness, jupyterhub'
            ! /opt/ch11/students/bin/python -c 'import ch11_autograder' 2>/dev/null
            head -c 1 {CHECKOUT}/nbgrader_config.py >/dev/null
            /opt/ch11/grader/bin/ch11-grade --help >/dev/null
        """)
        assert probe.returncode == 0, probe.stdout
        assert f"({major}, {minor})" in probe.stdout, probe.stdout

        start = time.monotonic()
        catalogue = _exec(machine, "root", f"""
            cd {CHECKOUT}
            PYTHONPATH={CHECKOUT}/autograder:{CHECKOUT}/solutions /opt/ch11/grader/bin/python -m pytest \\
                -p no:cacheprovider -q -o addopts= tests/behaviour/test_unchanged.py -m 'not class_batch'
        """)
        catalogue_s = time.monotonic() - start
        assert catalogue.returncode == 0, catalogue.stdout[-6000:]

        start = time.monotonic()
        demo = _exec(machine, "root", f"""
            cd /tmp
            /opt/ch11/grader/bin/ch11-grade batch {CHECKOUT}/demo/class --course /tmp/demo-course --sandbox none
            cd {CHECKOUT}
            PYTHONPATH={CHECKOUT}/tests /opt/ch11/grader/bin/python -c '{_COMPARE_DEMO}' /tmp/demo-course
        """)
        demo_s = time.monotonic() - start
        assert demo.returncode == 0, demo.stdout[-6000:]
        print(f"{suite}: catalogue fixtures {catalogue_s:.0f} s, demo class {demo_s:.0f} s")
