"""Running a whole batch inside the grading image (``ch11-grade batch ... --docker IMAGE``).

The host only lays out the course (:func:`~.course.init_course`, so the
repository's config and source notebooks are used), copies it and the source
to a staging directory with a neutral name, and starts one container::

    docker run --rm --init --network none --memory M --memory-swap M --pids-limit P
        --mount <stage>/source:/grading/source (read-only)  --mount <stage>/course:/grading/course
        --mount tmpfs:/scratch/slot0 (size-capped) ...  --env CH11_SCRATCH_ROOT=/scratch
        IMAGE batch /grading/source --course /grading/course --sandbox container-user ...

Inside, the orchestrator runs as root and, before anything else, makes
``/grading`` mode 0700 (the unprivileged slot users that run student code
cannot reach the source or the course, and with it the gradebook) and closes
the world-writable directories (``/tmp``, ``/var/tmp``, ``/dev/shm``) to them:
everything a submission writes goes to its worker slot's own tmpfs of
``scratch_bytes``, never to the disk or another slot. Staging keeps the host's
paths out of the container (a bind mount's source path shows in
``/proc/self/mountinfo``, which every process there can read). When the
container ends, however it ends, the staged course is copied back: results
land in the course directory, owned by the calling user; progress lines
stream to this terminal.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from ..paths import ASSIGNMENT
from ..untrusted.launch import EXERCISES_ENV
from .course import init_course
from .records import BatchError

__all__ = ["CONTAINER_COURSE", "CONTAINER_ROOT", "DockerError", "docker_argv", "run_in_docker"]

CONTAINER_ROOT = "/grading"
CONTAINER_COURSE = f"{CONTAINER_ROOT}/course"
#: Worker slot N's scratch filesystem in the container is ``SCRATCH_ROOT/slotN``.
SCRATCH_ROOT = "/scratch"
#: World-writable directories of the image, closed to the slot users before grading.
CLOSED_TO_SLOTS = ("/tmp", "/var/tmp", "/dev/shm")


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
    scratch_bytes: int = 256 * 1024**2,
    owner: tuple[int, int] | None = None,
) -> list[str]:
    """The ``docker run`` command line for a batch (paths must be absolute).

    ``scratch_bytes`` sizes each worker slot's tmpfs (charged to the container's
    ``memory``). ``owner`` (uid, gid): who the course's files belong to afterwards.
    """
    inner_source = f"{CONTAINER_ROOT}/{'source.zip' if source.is_file() else 'source'}"
    inner = [
        "python3", "-m", "ch11_autograder.cli", "batch", inner_source, "--course", CONTAINER_COURSE,
        "--workers", str(workers), "--sandbox", "container-user", "--timeout", format(timeout, "g"),
    ]
    if regrade:
        inner.append("--regrade")
    # /grading is the image's WORKDIR, created by Docker as root 0755 inside the container's own layer:
    # closing it hides both mounts from every other user in the container.
    script = f"chmod 0700 {CONTAINER_ROOT} && chmod 0755 {' '.join(CLOSED_TO_SLOTS)} && {shlex.join(inner)}"
    if owner is not None:
        script = f"{script}; status=$?; chown -R {owner[0]}:{owner[1]} {CONTAINER_COURSE}; exit $status"
    slots = []
    for slot in range(workers):
        # 0711: a slot user may pass through to its own (0700) scratch directories, not list them.
        slots += ["--mount", f"type=tmpfs,destination={SCRATCH_ROOT}/slot{slot},tmpfs-size={scratch_bytes},"
                             "tmpfs-mode=0711"]
    return [
        docker, "run", "--rm", "--init", "--name", name,
        "--network", "none",
        "--memory", memory, "--memory-swap", memory, "--pids-limit", str(pids),
        "--env", "CH11_SANDBOX=container-user", "--env", "PYTHONUNBUFFERED=1",
        "--env", f"CH11_SCRATCH_ROOT={SCRATCH_ROOT}",
        "--mount", f"type=bind,source={source},target={inner_source},readonly",
        "--mount", f"type=bind,source={course},target={CONTAINER_COURSE}",
        *slots,
        "--entrypoint", "sh",
        image, "-c", script,
    ]  # fmt: skip


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
        DockerError: ``$CH11_EXERCISES`` names another course's exercises (the image holds the
            chapter's only), no docker client, no engine, or no such image.
    """
    other = os.environ.get(EXERCISES_ENV, "").strip()
    if other:
        # The image carries the chapter's registry alone: grading another course's notebooks there would
        # run the chapter's suites on them, so refuse rather than grade with the wrong suites.
        raise DockerError(f"${EXERCISES_ENV} names {other!r}, but the grading image holds the chapter's exercises "
                          "only: grade this course without --docker (the bubblewrap sandbox)")
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
    stage = Path(tempfile.mkdtemp(prefix="ch11-docker-"))
    staged_source = stage / ("source.zip" if source.is_file() else "source")
    staged_course = stage / "course"
    try:
        if source.is_file():
            shutil.copy2(source, staged_source)
        else:
            shutil.copytree(source, staged_source, symlinks=True)
        shutil.copytree(course, staged_course, symlinks=True)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise DockerError(f"cannot stage the batch in {stage}: {exc}") from exc
    argv = docker_argv(staged_source, staged_course, image=image, name=name, workers=workers, timeout=timeout,
                       regrade=regrade, memory=memory, pids=pids, docker=exe, owner=(os.getuid(), os.getgid()))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        return proc.wait()
    except BaseException:
        with contextlib.suppress(OSError):
            subprocess.run([exe, "kill", name], capture_output=True, timeout=30)
        proc.wait()
        raise
    finally:
        _unstage(staged_course, course, stage)


def _unstage(staged_course: Path, course: Path, stage: Path) -> None:
    """Copy the staged course back over ``course``, then remove the stage; keep it if the copy fails."""
    try:
        # The batch empties its work directory as it goes; a stale one on the host would only grow.
        shutil.rmtree(course / ".ch11-batch" / "work", ignore_errors=True)
        shutil.copytree(staged_course, course, symlinks=True, dirs_exist_ok=True)
    except OSError as exc:
        print(f"ch11-grade: could not copy the graded course back from {staged_course} to {course}: {exc}; "
              f"the staged copy is kept there", file=sys.stderr)
        return
    shutil.rmtree(stage, ignore_errors=True)
