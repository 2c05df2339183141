"""Running a whole batch inside the grading image (``ch11-grade batch ... --docker IMAGE``).

The host only lays out the course (:func:`~.runner.init_course`, so the
repository's config and source notebooks are used) and starts one container::

    docker run --rm --init --network none --memory M --memory-swap M --pids-limit P
        --mount <source>:/grading/source (read-only)  --mount <course>:/grading/course
        IMAGE batch /grading/source --course /grading/course --sandbox container-user ...

Inside, the orchestrator runs as root and makes ``/grading`` mode 0700 before
anything else, so the unprivileged slot users that run student code cannot
reach the source or the course (and with it the gradebook). Results land in
the course directory on the host; progress lines stream to this terminal.
Files the container writes are owned by root on the host.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path

from .intake import ASSIGNMENT
from .runner import BatchError, init_course

__all__ = ["CONTAINER_COURSE", "CONTAINER_ROOT", "DockerError", "docker_argv", "run_in_docker"]

CONTAINER_ROOT = "/grading"
CONTAINER_COURSE = f"{CONTAINER_ROOT}/course"


class DockerError(RuntimeError):
    """Docker or the image is not usable; nothing was graded."""


def docker_argv(
    source: Path,
    course: Path,
    *,
    image: str,
    name: str,
    workers: int,
    timeout: float,
    regrade: bool,
    memory: str,
    pids: int,
    docker: str = "docker",
) -> list[str]:
    """The ``docker run`` command line for a batch (paths must be absolute)."""
    inner_source = f"{CONTAINER_ROOT}/{'source.zip' if source.is_file() else 'source'}"
    inner = [
        "python3", "-m", "ch11_autograder.cli", "batch", inner_source, "--course", CONTAINER_COURSE,
        "--workers", str(workers), "--sandbox", "container-user", "--timeout", format(timeout, "g"),
    ]
    if regrade:
        inner.append("--regrade")
    # /grading is the image's WORKDIR, created by Docker as root 0755 inside the container's own layer:
    # closing it hides both mounts from every other user in the container.
    script = f"chmod 0700 {CONTAINER_ROOT} && exec {shlex.join(inner)}"
    return [
        docker, "run", "--rm", "--init", "--name", name,
        "--network", "none",
        "--memory", memory, "--memory-swap", memory, "--pids-limit", str(pids),
        "--env", "CH11_SANDBOX=container-user", "--env", "PYTHONUNBUFFERED=1",
        "--mount", f"type=bind,source={source},target={inner_source},readonly",
        "--mount", f"type=bind,source={course},target={CONTAINER_COURSE}",
        "--entrypoint", "sh",
        image, "-c", script,
    ]


def run_in_docker(
    source: Path,
    course: Path,
    *,
    image: str,
    workers: int = 2,
    timeout: float = 1800.0,
    regrade: bool = False,
    memory: str = "6g",
    pids: int = 2048,
    docker: str = "docker",
) -> int:
    """Grade ``source`` into ``course`` inside ``image``; returns the container's exit status.

    The exit status is the inner ``ch11-grade batch``'s (0 all graded, 1 some
    errors, 2 refused). Interrupting (Ctrl-C) kills the container; what was
    merged stays, and the same command resumes.

    Raises:
        DockerError: no docker client, no engine, or no such image.
    """
    exe = shutil.which(docker)
    if exe is None:
        raise DockerError(f"{docker} not found: install Docker, or grade without --docker (bubblewrap sandbox)")
    probe = subprocess.run([exe, "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True)
    if probe.returncode != 0:
        message = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        if "No such image" in message or "No such object" in message:
            raise DockerError(f"image {image} not found; build it with `python -m ch11_autograder.image build "
                              f"--tag {image}`")
        raise DockerError(f"docker cannot inspect {image}: {message}")
    source = Path(source).resolve()
    course = Path(course).resolve()
    if not source.exists():
        raise DockerError(f"{source}: no such folder or zip file")
    try:
        init_course(course, assignment=ASSIGNMENT)
    except BatchError as exc:
        raise DockerError(str(exc)) from exc
    name = f"ch11-batch-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    argv = docker_argv(source, course, image=image, name=name, workers=workers, timeout=timeout, regrade=regrade,
                       memory=memory, pids=pids, docker=exe)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        return proc.wait()
    except BaseException:
        with contextlib.suppress(OSError):
            subprocess.run([exe, "kill", name], capture_output=True, timeout=30)
        proc.wait()
        raise
