"""The hub exchange service under a class: 300 students fetch and submit within 5 minutes.

    .venv/bin/python bench/hub_exchange_load.py [--students 300] [--window 300] [--seed 0]
                                                [--out bench/results/hub_exchange_load.json]

What runs (all on 127.0.0.1):

* **the service**, by its real entry point (``python -m ch11_autograder.exchange.hub.service --storage
  <folder> --ip 127.0.0.1``, this checkout's ``.venv``), with the five variables a hub gives a service it
  runs (its URL naming a host that is not this one, as on Zero to JupyterHub), and its real storage
  on disk (a fresh folder under ``--workdir``, default a temporary one, removed after);
* **a stand-in for the hub's REST API** (``tests/support/hub_api_standin.py``, its own process): the two
  calls the service makes per request (whose token is this, which groups is that user in),
  answered from a table. It stands in for nothing else: no proxy between the clients and the
  service, no hub database, no token hashing; on a real hub each request also waits for those two
  calls to the hub (``tests/support/hub_exchange.py`` runs the service behind a real one);
* **the clients**: one thread per student in this process, running the plug-in's nbgrader
  classes (:mod:`ch11_autograder.exchange.hub.plugin`, nbgrader 0.9.6's exchange code) with the
  student's token, exactly as the Assignments tab calls them
  (``nbgrader/server_extensions/assignment_list/handlers.py``): *open* the tab (``list`` and
  ``list --cached``), *fetch* (``fetch_assignment``, then both lists again), *submit* (``submit``,
  then both lists again). Each submission is one of the demo class's notebooks sets
  (``demo/class/{ada,blank,hal,lin}/ch11``, 5 notebooks, about 170 KB), in turn, with a comment
  naming the student appended to every notebook's last code cell.

The spread: student *i*'s submit time ``s`` is drawn with a density rising linearly to the end
of the window (``s = window * sqrt(u)``: twice the mean rate in the last seconds, as a deadline
does), their opening of the tab and fetch at a uniform time in ``[0, s)``, and they submit at ``s``
(or as soon as their fetch is done, if later). Before the class, the instructor releases with the
plug-in; after it, the instructor collects with the plug-in.

Measured: the service's resident memory (``VmRSS`` sampled every 0.25 s, and the kernel's peak
``VmHWM``) and CPU time; every request's time as the service took it (``served``: its access log,
from the request's start to its answer's end, the two calls to the hub API included), every HTTP
call's as the plug-in sees it (``requests``: the client's whole call, request, answer and
unpacking), each nbgrader action's and each tab action's, as p50 / p95 / max per kind; every
error. Checked (the run exits 1 if one fails, after writing the results): no
error; each student's submission stored exactly once (one entry under the storage's
``submissions/<student>/<assignment>/``, nothing left in its ``tmp/``); the instructor's
``collect`` brings every student's submission, each notebook carrying that student's comment.

The clients share this process (and its GIL) and the machine with the service: a time here is
an upper bound of the service's own on an idle machine, and the machine's load is recorded
before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ch11_autograder.exchange.hub import plugin
from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR, RELEASE_DIR, REPO_ROOT
from nbgrader.api import Gradebook
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

RESULTS = REPO_ROOT / "bench" / "results"
STANDIN = REPO_ROOT / "tests" / "support" / "hub_api_standin.py"
SERVICE = "nbgrader-exchange"
COURSE = "ch11"
INSTRUCTOR = "prof"
VARIANTS = ("ada", "blank", "hal", "lin")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Record:
    """Every time and error of the run, appended to from the students' threads (list.append is atomic)."""

    requests: list[tuple[str, float]] = field(default_factory=list)
    actions: list[tuple[str, float]] = field(default_factory=list)
    tab: list[tuple[str, float]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


RECORD = Record()


class _Timed(plugin.HubExchange):
    """Every client call of the plug-in timed, named by what it asks of the service."""

    def call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        name = method.__name__
        if name == "view":
            name = "view " + ",".join(args[1])
        elif name == "upload":
            name = "upload " + args[0].split("/")[2]
        started = time.perf_counter()
        try:
            return super().call(method, *args, **kwargs)
        finally:
            RECORD.requests.append((name, time.perf_counter() - started))


ACTIONS: dict[str, type] = {
    name: type(f"Timed{cls.__name__}", (_Timed, cls), {})
    for name, cls in {"release_assignment": plugin.HubReleaseAssignment, "fetch_assignment": plugin.HubFetchAssignment,
                      "submit": plugin.HubSubmit, "list": plugin.HubList, "collect": plugin.HubCollect}.items()}


@dataclass(frozen=True)
class Person:
    name: str
    token: str
    home: Path


def _config(person: Person, url: str, course_root: Path) -> Config:
    c = Config()
    c.CourseDirectory.root = str(course_root)
    c.CourseDirectory.course_id = COURSE
    c.CourseDirectory.assignment_id = ASSIGNMENT
    c.Exchange.assignment_dir = str(person.home)
    c.Exchange.cache = str(person.home / ".cache")
    c.HubExchange.service_url = url
    c.HubExchange.api_token = person.token
    return c


def _act(person: Person, url: str, course_root: Path, action: str, **options: Any) -> Any:
    """``person``'s nbgrader exchange action ``action``, built and started as nbgrader's command or the tab does."""
    config = _config(person, url, course_root)
    exchange = ACTIONS[action](coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                               config=config)
    for key, value in options.items():
        setattr(exchange, key, value)
    name = action + ("_cached" if options.get("cached") else "")
    started = time.perf_counter()
    try:
        return exchange.start()
    finally:
        RECORD.actions.append((name, time.perf_counter() - started))


def _tab(person: Person, url: str, course_root: Path, what: str) -> None:
    """One click of the Assignments tab: ``open``, ``fetch`` or ``submit``, with the two lists it shows after."""
    started = time.perf_counter()
    if what != "open":
        _act(person, url, course_root, "fetch_assignment" if what == "fetch" else "submit")
    _act(person, url, course_root, "list")
    _act(person, url, course_root, "list", cached=True)
    RECORD.tab.append((what, time.perf_counter() - started))


def _marker(name: str) -> str:
    return f"# load test: submitted by {name}"


def _answer(person: Person, index: int) -> None:
    """The demo class's notebooks of variant ``index`` in ``person``'s fetched assignment, each marked as theirs."""
    for source in sorted((DEMO_CLASS_DIR / VARIANTS[index % len(VARIANTS)] / ASSIGNMENT).glob("*.ipynb")):
        notebook = json.loads(source.read_text(encoding="utf-8"))
        cell = [c for c in notebook["cells"] if c["cell_type"] == "code"][-1]
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = text + "\n" + _marker(person.name)
        (person.home / ASSIGNMENT / source.name).write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")


def _student(person: Person, index: int, url: str, course_root: Path, start: float, fetch_at: float,
             submit_at: float) -> None:
    step = "open"
    try:
        time.sleep(max(0.0, start + fetch_at - time.monotonic()))
        _tab(person, url, course_root, "open")
        step = "fetch"
        _tab(person, url, course_root, "fetch")
        _answer(person, index)
        time.sleep(max(0.0, start + submit_at - time.monotonic()))
        step = "submit"
        _tab(person, url, course_root, "submit")
    except Exception as err:  # every failure is a result: counted and named, never lost
        RECORD.errors.append({"student": person.name, "step": step, "error": f"{type(err).__name__}: {err}"})


class _Memory(threading.Thread):
    """``VmRSS`` of ``pid`` every 0.25 s, its largest kept, until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.largest_kib, self.samples = pid, 0, 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.25):
            with contextlib.suppress(OSError, KeyError):
                self.largest_kib = max(self.largest_kib, _status(self.pid)["VmRSS"])
                self.samples += 1


def _status(pid: int) -> dict[str, int]:
    """The ``kB`` fields of ``/proc/<pid>/status``."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith(" kB"):
            found[key] = int(value.split()[0])
    return found


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Running:
    url: str
    service: subprocess.Popen[bytes]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running(work: Path, people: dict[str, Any], probe_token: str) -> Iterator[Running]:
    """The stand-in hub API and the service (see the module), both stopped after."""
    (work / "people.json").write_text(json.dumps(people))
    hub_port, service_port = _free_port(), _free_port()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with open(work / "hub-api.log", "wb") as log:
            processes.append(subprocess.Popen([sys.executable, str(STANDIN), "--people", str(work / "people.json"),
                                               "--port", str(hub_port)], stdout=log, stderr=subprocess.STDOUT))
        prefix = f"/services/{SERVICE}/"
        env = {**os.environ, "JUPYTERHUB_API_URL": f"http://127.0.0.1:{hub_port}/hub/api",
               "JUPYTERHUB_API_TOKEN": people["service"]["token"], "JUPYTERHUB_SERVICE_NAME": SERVICE,
               # A name that is not this machine's, as a Kubernetes Service's is on Zero to JupyterHub: --ip binds.
               "JUPYTERHUB_SERVICE_URL": f"http://{SERVICE}.invalid:{service_port}",
               "JUPYTERHUB_SERVICE_PREFIX": prefix}
        with open(work / "service.log", "wb") as log:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "ch11_autograder.exchange.hub.service", "--storage", str(work / "storage"),
                 "--ip", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT, env=env))
        url = f"http://127.0.0.1:{service_port}{prefix}"
        _wait_ready(url, probe_token, processes, work)
        yield Running(url, processes[1])
    finally:
        for process in reversed(processes):
            _stop(process)


def _wait_ready(url: str, token: str, processes: list[subprocess.Popen[bytes]], work: Path) -> None:
    """Until the service answers ``api/courses`` for ``token`` with 200 (it then reaches the hub API too)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                logs = "".join((work / name).read_text(errors="replace")[-2000:] for name in ("hub-api.log",
                                                                                              "service.log"))
                raise SystemExit(f"hub_exchange_load: {process.args} exited ({process.returncode}):\n{logs}")
        request = urllib.request.Request(url + "api/courses", headers={"Authorization": f"token {token}"})
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        time.sleep(0.1)
    raise SystemExit("hub_exchange_load: the service did not answer within 120 s")


def _spread(students: int, window: float, seed: int) -> list[tuple[float, float]]:
    """(fetch time, submit time) per student, seconds from the start (see the module)."""
    chance = random.Random(seed)
    times = []
    for _ in range(students):
        submit_at = window * math.sqrt(chance.random())
        times.append((chance.uniform(0, submit_at), submit_at))
    return times


def _summary(samples: list[tuple[str, float]]) -> dict[str, dict[str, float]]:
    """p50, p95 and max (ms) and the count, per kind."""
    kinds: dict[str, list[float]] = {}
    for kind, seconds in samples:
        kinds.setdefault(kind, []).append(seconds * 1000)
    found = {}
    for kind, times in sorted(kinds.items()):
        cuts = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else [times[0]] * 99
        found[kind] = {"count": len(times), "p50_ms": round(cuts[49], 1), "p95_ms": round(cuts[94], 1),
                       "max_ms": round(max(times), 1)}
    return found


#: tornado's access log line: status, method, path (with the query), the caller's address, milliseconds.
ACCESS = re.compile(r"\] (?P<status>\d{3}) (?P<method>GET|POST) (?P<path>\S+) \(.*?\) (?P<ms>[\d.]+)ms$")


def _served(log: str, prefix: str) -> list[tuple[str, float]]:
    """Every request in the service's access log, named as :class:`_Timed` names the client's calls, with the
    time the service took (from the request's start to its answer's end, the hub API calls included)."""
    found = []
    for line in log.splitlines():
        match = ACCESS.search(line)
        if match is None or not match["path"].startswith(prefix):
            continue
        path, _, query = match["path"][len(prefix):].partition("?")
        parts = path.split("/")  # api, courses, <course>, <what>, ...
        if len(parts) == 2:
            kind = "courses"
        elif parts[3] == "view":
            kind = "view " + urllib.parse.parse_qs(query).get("parts", [""])[0]
        else:
            kind = "upload " + parts[3]
        found.append((kind if match["status"].startswith("2") else f"{kind} {match['status']}",
                      float(match["ms"]) / 1000))
    return found


def _check(storage: Path, course_root: Path, students: list[Person]) -> dict[str, Any]:
    """Stored exactly once, nothing left in the staging, and collected whole (see the module)."""
    problems = []
    submissions = storage / "courses" / COURSE / "submissions"
    stored = sorted(p.name for p in submissions.iterdir()) if submissions.is_dir() else []
    if stored != sorted(s.name for s in students):
        problems.append(f"students with a stored submission: {len(stored)} of {len(students)}")
    once = 0
    for student in students:
        entries = list((submissions / student.name / ASSIGNMENT).glob("*"))
        if len(entries) == 1:
            once += 1
        else:
            problems.append(f"{student.name}: {len(entries)} stored submissions, not 1")
    leftovers = list((storage / "tmp").iterdir())
    if leftovers:
        problems.append(f"left in the storage's tmp/: {[p.name for p in leftovers[:5]]}")
    collected = 0
    for index, student in enumerate(students):
        folder = course_root / "submitted" / student.name / ASSIGNMENT
        variant = DEMO_CLASS_DIR / VARIANTS[index % len(VARIANTS)] / ASSIGNMENT
        expected = sorted(p.name for p in variant.glob("*.ipynb"))
        notebooks = sorted(p.name for p in folder.glob("*.ipynb"))
        if notebooks != expected:
            problems.append(f"{student.name}: collected {notebooks}, submitted {expected}")
        elif not (folder / "timestamp.txt").is_file():
            problems.append(f"{student.name}: collected without timestamp.txt")
        elif all(_marker(student.name) in (folder / name).read_text(encoding="utf-8") for name in notebooks):
            collected += 1
        else:
            problems.append(f"{student.name}: a collected notebook lacks the student's own comment")
    return {"stored_once": once, "collected_whole": collected, "problems": problems}


def run(students: int, window: float, seed: int, work: Path) -> dict[str, Any]:
    """The class of the module's docstring under ``work``; the results (see :func:`main`)."""
    tokens = {name: secrets.token_hex(16) for name in [INSTRUCTOR] + [f"s{i:03d}" for i in range(students)]}
    people = {"service": {"name": SERVICE, "token": secrets.token_hex(16)},
              "users": {token: {"name": name, "groups": [f"formgrade-{COURSE}" if name == INSTRUCTOR else
                                                         f"nbgrader-{COURSE}"]} for name, token in tokens.items()}}
    persons = {name: Person(name, token, work / "homes" / name) for name, token in tokens.items()}
    for person in persons.values():
        person.home.mkdir(parents=True)
    prof = persons[INSTRUCTOR]
    course_root = prof.home / "course"
    shutil.copytree(RELEASE_DIR, course_root / "release" / ASSIGNMENT)
    # The gradebook collect reads the due date from, made before the clock (its first creation starts alembic).
    with Gradebook(f"sqlite:///{course_root / 'gradebook.db'}", COURSE):
        pass
    class_ = [persons[name] for name in sorted(persons) if name != INSTRUCTOR]
    spread = _spread(students, window, seed)
    load_before = os.getloadavg()
    with running(work, people, prof.token) as served:
        pid = served.service.pid
        idle = _status(pid)
        _act(prof, served.url, course_root, "release_assignment")
        memory = _Memory(pid)
        memory.start()
        cpu_before = _cpu_seconds(pid)
        start = time.monotonic()
        threads = [threading.Thread(target=_student, args=(person, i, served.url, course_root, start, *spread[i]),
                                    daemon=True) for i, person in enumerate(class_)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        class_seconds = time.monotonic() - start
        cpu_class = _cpu_seconds(pid) - cpu_before
        memory.stopping.set()
        memory.join()
        collect_started = time.perf_counter()
        try:
            _act(prof, served.url, course_root, "collect")
        except Exception as err:  # a failed collect is a result, reported
            RECORD.errors.append({"student": INSTRUCTOR, "step": "collect", "error": f"{type(err).__name__}: {err}"})
        collect_seconds = time.perf_counter() - collect_started
        final = _status(pid)
        checks = _check(work / "storage", course_root, class_)
    served = _served((work / "service.log").read_text(errors="replace"), f"/services/{SERVICE}/")
    storage_bytes = sum(p.stat().st_size for p in (work / "storage").rglob("*") if p.is_file())
    return {
        "what": "the hub exchange service (real entry point and storage) behind a stand-in for the hub's REST API; "
                "students through the plug-in as the Assignments tab calls it (bench/hub_exchange_load.py)",
        "students": students, "window_seconds": window, "seed": seed,
        "class_seconds": round(class_seconds, 1),
        "service": {"rss_idle_mib": round(idle["VmRSS"] / 1024, 1),
                    "rss_peak_sampled_mib": round(memory.largest_kib / 1024, 1),
                    "rss_peak_vmhwm_mib": round(final["VmHWM"] / 1024, 1),
                    "rss_after_collect_mib": round(final["VmRSS"] / 1024, 1), "rss_samples": memory.samples,
                    "cpu_seconds_during_class": round(cpu_class, 1)},
        "served": _summary(served), "requests": _summary(RECORD.requests), "actions": _summary(RECORD.actions),
        "tab": _summary(RECORD.tab),
        "collect_seconds": round(collect_seconds, 1), "storage_mib": round(storage_bytes / 2**20, 1),
        "errors": RECORD.errors, **checks,
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--window", type=float, default=300.0, help="seconds within which every student submits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "hub_exchange_load.json")
    parser.add_argument("--workdir", type=Path, help="where the storage and homes go (default: a temporary "
                                                     "folder, removed after)")
    args = parser.parse_args(argv)
    logging.getLogger("traitlets").setLevel(logging.ERROR)  # nbgrader's per-action info lines, 8 per student
    # nbgrader's gradebook (collect reads the due date from it) runs alembic from PATH, as in a user's venv.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with contextlib.ExitStack() as stack:
        work = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hub-exchange-load-")))
        work.mkdir(parents=True, exist_ok=True)
        result = run(args.students, args.window, args.seed, work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("errors", "problems")}, indent=1))
    failed = len(result["errors"]) + len(result["problems"])
    if failed:
        for line in [*(json.dumps(e) for e in result["errors"][:20]), *result["problems"][:20]]:
            print(line, file=sys.stderr)
        raise SystemExit(f"hub_exchange_load: {len(result['errors'])} errors, {len(result['problems'])} failed checks")


if __name__ == "__main__":
    main()
