"""Grading inside the Docker image: the whole batch in one container, student code as slot users.

These tests build the local debootstrap base (once; kept while the image
exists) and the grading image from this working tree. Without a Docker
engine they are skipped, except when ``$CI`` is set: CI must exercise Docker,
so there they fail. The demo class graded in the image, compared with the
bwrap run, is in ``tests/hostile/test_hostile.py`` (the same batch grades the
hostile corpus beside it).
"""

from __future__ import annotations

import subprocess

import pytest
from ch11_autograder.batch.docker import CONTAINER_ROOT, SCRATCH_ROOT, DockerError, docker_argv, run_in_docker
from ch11_autograder.untrusted.launch import EXERCISES_ENV
from support import batch_support
from support.paths import DEMO_CLASS_DIR

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_docker_run_command_isolates_the_container(tmp_path):
    course = tmp_path / "course"
    argv = docker_argv(DEMO_CLASS_DIR, course, image="img", name="n", workers=3, timeout=60, regrade=False, memory="5g",
                       pids=999, scratch_bytes=1000, owner=(1234, 99))
    joined = " ".join(argv)
    for flag in ("--rm", "--init", "--network none", "--memory 5g", "--memory-swap 5g", "--pids-limit 999",
                 "CH11_SANDBOX=container-user", f"CH11_SCRATCH_ROOT={SCRATCH_ROOT}"):
        assert flag in joined
    assert f"type=bind,source={DEMO_CLASS_DIR},target={CONTAINER_ROOT}/source,readonly" in argv
    assert f"type=bind,source={course},target={CONTAINER_ROOT}/course" in argv
    # One size-capped tmpfs per worker slot: a submission filling its scratch fills only its slot.
    assert [a for a in argv if a.startswith("type=tmpfs")] == [
        f"type=tmpfs,destination={SCRATCH_ROOT}/slot{n},tmpfs-size=1000,tmpfs-mode=0711" for n in range(3)]
    script = argv[-1]
    assert script.startswith(f"chmod 0700 {CONTAINER_ROOT} && chmod 0755 /tmp /var/tmp /dev/shm && "
                             "python3 -m ch11_autograder.cli batch")
    assert "--sandbox container-user" in script and "--workers 3" in script
    assert script.endswith("; status=$?; chown -R 1234:99 /grading/course; exit $status")


def test_slot_users_cannot_reach_the_mounted_course(tmp_path):
    image = batch_support.grading_image()
    course = tmp_path / "course"
    course.mkdir()
    course.chmod(0o755)
    (course / "gradebook.db").write_text("grades")
    (course / "gradebook.db").chmod(0o644)
    probe = "setpriv --reuid=20000 --regid=20000 --clear-groups cat /grading/course/gradebook.db"

    def run(prefix: str) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "run", "--rm", "--network", "none", "--mount",
                               f"type=bind,source={course},target=/grading/course", "--entrypoint", "sh", image,
                               "-c", f"{prefix}{probe}"], capture_output=True, text=True, timeout=120)

    # Control: without closing /grading a slot user reads the gradebook...
    opened = run("")
    assert opened.returncode == 0 and opened.stdout == "grades"
    # ...with the batch's chmod it cannot.
    closed = run(f"chmod 0700 {CONTAINER_ROOT} && ")
    assert closed.returncode != 0 and "Permission denied" in closed.stderr


def test_a_missing_image_is_refused_with_how_to_build_it(tmp_path):
    batch_support.require_docker()
    with pytest.raises(DockerError, match="not found; build it with"):
        run_in_docker(DEMO_CLASS_DIR, tmp_path / "course", image="ch11-grader:no-such-tag")
    assert not (tmp_path / "course").exists()


def test_another_courses_exercises_are_refused_before_docker_is_asked(tmp_path, monkeypatch):
    # The image holds the chapter's registry only: grading there would run the chapter's suites on them.
    monkeypatch.setenv(EXERCISES_ENV, "other_course")
    with pytest.raises(DockerError, match=r"\$CH11_EXERCISES names 'other_course', but the grading image holds"):
        run_in_docker(tmp_path / "src", tmp_path / "course", image="ch11-grader", docker="no-such-docker-client")
    assert not (tmp_path / "course").exists()
    # Control: unset, the same call gets as far as looking for the docker client.
    monkeypatch.delenv(EXERCISES_ENV)
    with pytest.raises(DockerError, match="no-such-docker-client not found"):
        run_in_docker(tmp_path / "src", tmp_path / "course", image="ch11-grader", docker="no-such-docker-client")
