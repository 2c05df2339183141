"""Where the hidden suites' time goes: a sampling profile of one submission's TrustedVerdicts.

    .venv/bin/python bench/suite_profile.py [--student ada] [--sandbox bwrap] [--interval 0.001]
                                            [--cprofile] [--out bench/results/suite-profile.json]

Each of the student's notebooks (``demo/class/<student>/ch11``) goes through the course's
``TrustedVerdicts`` (configured by ``nbgrader_config.py``) in this process, as in an
``nbgrader autograde``. A thread samples the main thread's Python stack every
``--interval`` seconds and files each sample under the first phase, in the order below,
that one of its frames belongs to:

* worker start: ``WorkerSession.start`` (not the suites' time; reported apart);
* round trip, split into encoding the request (``protocol.make_*``), writing it to the pipe
  (``_send``; the write wakes the worker, and a busy machine may switch to it there), waiting for the reply
  (``select`` and ``read`` on the worker's pipe: the worker decoding, the student's code,
  its encoding and the pipe), and decoding the reply (``loads_message``, ``parse_reply``);
* reference computation: frames of ``ch11_solutions`` (the expected values);
* comparing: ``roundtrip``/``wire_equal`` outside a round trip;
* misconception naming (``name_misconception`` outside the phases above);
* hypothesis, split by the engine's phase: shrinking (``Shrinker``), example generation
  and the engine's own bookkeeping (everything else of ``hypothesis``);
* the suites' own code and other.

Also measured: CPU time of each notebook's trusted work (this process) and of its worker
(its whole process tree, read before it is killed; ``worker_start_cpu`` at the end of its
start: interpreter, imports, the submission's cells).

Samples are wall clock, so waiting shows as waiting. With ``--cprofile`` the run is also
profiled with cProfile on CPU time (``time.process_time``), and the trusted process's CPU is
split the same way from the call graph (each phase's functions, counted once where they call
each other); a profiler inflates function-heavy code, so read the shares, not the seconds.

Besides the profile, the script counts round trips (a message of a ``call_many`` is one) and
hypothesis test-function calls per notebook, and times a no-op call through a worker (the
latency floor of one round trip).
Scores are printed so that a change can be checked not to alter them. Writes a JSON with
every number and prints a table.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent

PHASES = (
    "worker start",
    "round trip: encoding the request",
    "round trip: writing the request",
    "round trip: waiting for the reply",
    "round trip: decoding the reply",
    "round trip: other",
    "reference computation",
    "comparing (roundtrip, wire_equal)",
    "misconception naming",
    "hypothesis: shrinking",
    "hypothesis: generation and engine",
    "suites and other",
)


def classify(frame: FrameType | None) -> str:
    """The phase of one sample (see the module docstring), from its innermost frame outwards."""
    names: list[tuple[str, str]] = []
    # A frame taken from another thread can be torn down while it is walked (its f_back read as another
    # object): stop there rather than lose the sampler thread.
    while isinstance(frame, FrameType):
        names.append((frame.f_code.co_filename, frame.f_code.co_name))
        frame = frame.f_back
    outer_first = list(reversed(names))

    def has(path_part: str, func: str | None = None) -> bool:
        return any(path_part in f and (func is None or n == func) for f, n in outer_first)

    if has("worker_client.py", "start"):
        return "worker start"
    exchanging = any(has("worker_client.py", name) for name in ("_exchange", "_call", "keep"))
    if exchanging or has("worker_batches.py", "call_many"):
        if has("worker_pipe.py", "_receive"):
            inner = names[0]
            if "/protocol/" in inner[0] or "json" in inner[0] or has("/protocol/", "loads_message"):
                return "round trip: decoding the reply"
            return "round trip: waiting for the reply"
        if has("worker_pipe.py", "_send"):
            return "round trip: writing the request"
        if has("/protocol/", "parse_reply") or has("/protocol/", "loads_message"):
            return "round trip: decoding the reply"
        if has("/protocol/"):
            return "round trip: encoding the request"
        return "round trip: other"
    if has("ch11_solutions"):
        return "reference computation"
    if has("roundtrip.py", "roundtrip") or has("protocol/values.py", "wire_equal"):
        return "comparing (roundtrip, wire_equal)"
    if has("misconception_naming.py", "name_misconception"):
        return "misconception naming"
    if has("hypothesis", None):
        if has("shrinker.py") or has("/shrinking/"):
            return "hypothesis: shrinking"
        # The sample is in hypothesis itself or in the test function it called (the suite).
        inner_file = names[0][0]
        if "hypothesis" in inner_file:
            return "hypothesis: generation and engine"
    return "suites and other"


class Sampler:
    """Samples one thread's stack every ``interval`` seconds into phase counts."""

    def __init__(self, thread_id: int, interval: float) -> None:
        self.thread_id = thread_id
        self.interval = interval
        self.counts: collections.Counter[str] = collections.Counter()
        #: (phase, innermost function) -> samples, to see what a phase is made of.
        self.innermost: collections.Counter[tuple[str, str]] = collections.Counter()
        self.active = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            time.sleep(self.interval)
            if self.active:
                frame = sys._current_frames().get(self.thread_id)
                phase = classify(frame)
                self.counts[phase] += 1
                if frame is not None:
                    code = frame.f_code
                    self.innermost[phase, f"{Path(code.co_filename).name}:{code.co_name}"] += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


#: The protocol's request builders (a batch's calls are encoded one by one, then framed).
_ENCODERS = ("make_call", "make_keep", "make_defaults", "make_call_entry", "make_calls")

#: CPU phases from the call graph: name -> (file part, function names); the first phases are
#: disjoint subtrees of the suites' calls, the last ones are differences (see cpu_breakdown).
CPU_SETS = {
    "worker start": [("worker_client.py", ("start",))],
    "round trip: encoding the request": [("/protocol/", _ENCODERS)],
    "round trip: decoding the reply": [("/protocol/", ("parse_reply", "loads_message"))],
    "round trip: pipe I/O": [("worker_pipe.py", ("_send", "_receive"))],
    "round trip: all": [
        ("worker_client.py", ("_exchange",)),
        ("worker_batches.py", ("call_many",)),
        ("/protocol/", _ENCODERS),
    ],
    "formatting calls for feedback": [("verdicts.py", ("format_call",))],
    "reference computation": [("ch11_solutions", ())],
    "comparing (roundtrip, wire_equal)": [
        ("trusted/roundtrip.py", ("roundtrip",)),
        ("protocol/values.py", ("wire_equal",)),
    ],
    "hypothesis: shrinking": [("shrinker.py", ("shrink",))],
    "suites": [("trusted/suite.py", ("run_suite",))],
    "hypothesis: test bodies": [("trusted/hypothesis_properties.py", ("run_example",))],
    "hypothesis: whole": [("hypothesis/core.py", ("wrapped_test",))],
}


def _inclusive(stats: Any, members: list[tuple[str, tuple[str, ...]]]) -> float:
    """CPU seconds spent in (and below) the functions ``members`` name, counted once per outermost call."""
    def member(key: tuple[str, int, str]) -> bool:
        return any(part in key[0] and (not names or key[2] in names) for part, names in members)

    total = 0.0
    for key, (_cc, _nc, _tt, _ct, callers) in stats.stats.items():
        if member(key):
            total += sum(edge[3] for caller, edge in callers.items() if not member(caller))
    return total


def cpu_breakdown(stats: Any) -> dict[str, float]:
    """The trusted process's CPU in the suites by phase (profiled seconds; see the module docstring)."""
    got = {name: _inclusive(stats, members) for name, members in CPU_SETS.items()}
    pipe = got["round trip: pipe I/O"] - _inclusive(stats, [("/protocol/", ("loads_message",))])
    rt = got["round trip: all"]
    phases = {
        "worker start (trusted side)": got["worker start"],
        "round trip: encoding the request": got["round trip: encoding the request"],
        "round trip: decoding the reply": got["round trip: decoding the reply"],
        "round trip: pipe I/O and the rest": rt - got["round trip: encoding the request"]
        - got["round trip: decoding the reply"],
        "formatting calls for feedback": got["formatting calls for feedback"],
        "reference computation": got["reference computation"],
        "comparing (roundtrip, wire_equal)": got["comparing (roundtrip, wire_equal)"],
        "hypothesis: generation and engine": got["hypothesis: whole"] - got["hypothesis: test bodies"],
    }
    phases["suites' own code and other"] = got["suites"] - sum(phases.values())
    phases["total (run_suite)"] = got["suites"]
    phases["of which while shrinking"] = got["hypothesis: shrinking"]
    phases["of which pipe I/O"] = pipe
    return {k: round(v, 3) for k, v in phases.items()}


def noop_latency(launcher_name: str, calls: int = 300) -> dict[str, float]:
    """Seconds per round trip of ``f()`` returning 0 through a fresh worker (median of ``calls``)."""
    from ch11_autograder.trusted.steps.process import grading_process
    from ch11_autograder.trusted.worker_client import WorkerSession

    cells = ["def f():\n    return 0\n", "def g(x):\n    return x\n"]
    with WorkerSession(cells, grading_process().launcher(launcher_name, {}, fork=False)) as session:
        session.start()
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            session.call("f")
            times.append(time.perf_counter() - t)
        big = list(range(1000))
        big_times = []
        for _ in range(calls // 3):
            t = time.perf_counter()
            session.call("g", big)
            big_times.append(time.perf_counter() - t)
    times.sort()
    big_times.sort()
    return {"noop_median": times[len(times) // 2], "list1000_median": big_times[len(big_times) // 2]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="ada")
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--interval", type=float, default=0.001)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--cprofile", action="store_true", help="also split the trusted CPU from a cProfile run")
    args = parser.parse_args(argv)
    os.environ["CH11_SANDBOX"] = args.sandbox

    import nbformat
    from ch11_autograder.paths import COURSE_CONFIG
    from ch11_autograder.trusted import worker_client
    from ch11_autograder.trusted.steps import TrustedVerdicts
    from ch11_autograder.trusted.submission_cells import autograded_test_cells
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()
    counters: collections.Counter[str] = collections.Counter()
    original_exchange = worker_client.WorkerSession._exchange

    def counted_exchange(self: Any, *a: Any, **k: Any) -> Any:
        counters["round_trips"] += 1
        return original_exchange(self, *a, **k)

    worker_client.WorkerSession._exchange = counted_exchange  # type: ignore[method-assign]
    original_frame = worker_client.WorkerSession._run_frame

    def counted_frame(self: Any, *a: Any, **k: Any) -> Any:
        counters["round_trips"] += 1  # one message of a call_many, however many calls it carries
        return original_frame(self, *a, **k)

    worker_client.WorkerSession._run_frame = counted_frame  # type: ignore[method-assign]
    import hypothesis.core

    original_execute_once = hypothesis.core.StateForActualGivenExecution.execute_once

    def counted_execute_once(self: Any, *a: Any, **k: Any) -> Any:
        counters["test_function_calls"] += 1
        return original_execute_once(self, *a, **k)

    hypothesis.core.StateForActualGivenExecution.execute_once = counted_execute_once  # type: ignore[method-assign]

    original_kill = worker_client.WorkerSession._kill
    original_start = worker_client.WorkerSession.start

    def worker_cpu_ms(session: Any) -> int:
        """CPU time of the worker's process tree so far (bwrap and the Python inside it)."""
        import psutil

        used = 0
        with contextlib.suppress(psutil.Error):
            if session._proc is not None:
                root = psutil.Process(session._proc.pid)
                for proc in [root, *root.children(recursive=True)]:
                    times = proc.cpu_times()
                    used += round(1000 * (times.user + times.system))
        return used

    def measured_start(self: Any) -> Any:
        try:
            return original_start(self)
        finally:
            counters["worker_start_cpu_ms"] += worker_cpu_ms(self)  # imports and the submission's cells

    def measured_kill(self: Any) -> None:
        counters["worker_cpu_ms"] += worker_cpu_ms(self)
        original_kill(self)

    worker_client.WorkerSession.start = measured_start  # type: ignore[method-assign]

    worker_client.WorkerSession._kill = measured_kill  # type: ignore[method-assign]
    # A sampler thread gets the GIL only when the main thread lets go of it: at once at a blocking
    # system call, else after the switch interval (5 ms by default). A short interval keeps the
    # samples from piling up on I/O calls.
    sys.setswitchinterval(args.interval / 10)
    sampler = Sampler(threading.get_ident(), args.interval)
    notebooks = sorted((REPO / "demo" / "class" / args.student / "ch11").glob("*.ipynb"))
    per_notebook = {}
    total_phases: collections.Counter[str] = collections.Counter()
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    profiler = None
    if args.cprofile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        step = TrustedVerdicts(config=config)
        step.sandbox = args.sandbox
        counters.clear()
        sampler.counts.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        sampler.active = True
        graded, _ = step.preprocess(nb, {"metadata": {"path": str(path.parent)}, "unique_key": path.stem})
        sampler.active = False
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        scores = {cell.metadata.nbgrader.grade_id: cell.metadata.get("ch11_verdict", {}).get("score")
                  for _, cell in autograded_test_cells(graded)}
        samples = sum(sampler.counts.values()) or 1
        phases = {p: round(wall * sampler.counts[p] / samples, 3) for p in PHASES}
        total_phases.update({p: phases[p] for p in PHASES})
        per_notebook[path.stem] = {"wall": round(wall, 3), "trusted_cpu": round(cpu, 3), "phases": phases,
                                   "round_trips": counters["round_trips"],
                                   "test_function_calls": counters["test_function_calls"],
                                   "worker_cpu": counters["worker_cpu_ms"] / 1000,
                                   "worker_start_cpu": counters["worker_start_cpu_ms"] / 1000, "scores": scores}
    sampler.stop()
    cpu_phases: dict[str, float] = {}
    if profiler is not None:
        import pstats

        profiler.disable()
        cpu_phases = cpu_breakdown(pstats.Stats(profiler))
    latency = noop_latency(args.sandbox)
    result = {
        "student": args.student, "sandbox": args.sandbox, "interval": args.interval,
        "wall": round(time.perf_counter() - wall_start, 3), "trusted_cpu": round(time.process_time() - cpu_start, 3),
        "load": os.getloadavg(), "phases": {p: round(total_phases[p], 3) for p in PHASES},
        "notebooks": per_notebook, "latency": latency, "cpu_phases_profiled": cpu_phases,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.student} ({args.sandbox}), load {result['load']}: wall {result['wall']} s, trusted CPU "
          f"{result['trusted_cpu']} s; no-op round trip {latency['noop_median'] * 1e3:.2f} ms, a 1000-int list "
          f"{latency['list1000_median'] * 1e3:.2f} ms")
    names = list(per_notebook)
    print("| phase | " + " | ".join(names) + " | all |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    for p in PHASES:
        print(f"| {p} | " + " | ".join(f"{per_notebook[n]['phases'][p]:.2f}" for n in names)
              + f" | {result['phases'][p]:.2f} |")
    for key in ("wall", "trusted_cpu", "worker_cpu", "worker_start_cpu", "round_trips", "test_function_calls"):
        print(f"| {key} | " + " | ".join(str(per_notebook[n][key]) for n in names) + " | |")
    if cpu_phases:
        whole = cpu_phases["total (run_suite)"] or 1
        print("trusted CPU in the suites, from cProfile (profiled CPU-s, share of run_suite):")
        for name, value in cpu_phases.items():
            print(f"| {name} | {value:.2f} | {value / whole:.0%} |")
    total = sum(sampler.innermost.values()) or 1
    print("most sampled innermost functions (share of all samples):")
    for (phase, where), n in sampler.innermost.most_common(25):
        print(f"  {n / total:6.1%}  {phase}: {where}")
    result["innermost"] = [[phase, where, n] for (phase, where), n in sampler.innermost.most_common(60)]
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("scores:", json.dumps({n: per_notebook[n]["scores"] for n in names}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
