"""Cheap calls one by one against the same calls in batches, through the real worker.

    .venv/bin/python bench/batched_calls.py [--sandbox bwrap] [--calls 1000] [--repeats 5]
                                            [--out bench/results/batched-calls.json]

One worker (the backend's launcher, as ``WorkerSession`` uses it) answers ``--calls``
calls of ``double(i)`` (return ``2 * i``) per round, made one way per round:

* ``single``: ``WorkerSession.call`` for each call, a round trip each;
* ``batch 10``, ``batch 50``, ``batch all``: ``WorkerSession.call_many`` with that many
  calls per batch (one message out; the worker flushes each reply as its call returns).

Every way runs once per repetition, in an order rotated from one repetition to the next,
so drift in the machine's load falls on every way alike. Reported per way: wall-clock
microseconds per call (median over repetitions, with min and max) and this process's CPU
microseconds per call (the trusted side's share: encoding, decoding, waiting in
``select``), with the load averages before and after. The student's function does
next to nothing, so the numbers are the cost of the exchange itself. A benchmark, not a
test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import RESULTS, load, machine, write_json

CELLS = ["def double(x):\n    return 2 * x\n"]
BATCH_SIZES = (10, 50, 0)  # 0: every call in one batch


def _ways(session: Any, calls: int) -> dict[str, Callable[[], None]]:
    from ch11_autograder.trusted.worker_batches import Call

    batch = [Call("double", (i,)) for i in range(calls)]

    def single() -> None:
        for i in range(calls):
            if session.call("double", i) != 2 * i:
                raise RuntimeError("wrong answer from the worker")

    def batched(size: int) -> Callable[[], None]:
        step = size or calls

        def run() -> None:
            for start in range(0, calls, step):
                outcomes = session.call_many(batch[start : start + step])
                if [o.value for o in outcomes] != [2 * i for i in range(start, min(start + step, calls))]:
                    raise RuntimeError("wrong answer from the worker")

        return run

    ways = {"single": single}
    for size in BATCH_SIZES:
        ways[f"batch {size or 'all'}"] = batched(size)
    return ways


def measure(sandbox: str, calls: int, repeats: int) -> dict[str, Any]:
    from ch11_autograder.trusted.worker_client import WorkerSession
    from ch11_autograder.untrusted.choose import choose_launcher

    results: dict[str, dict[str, list[float]]] = {}
    load_before = load()
    with WorkerSession(CELLS, choose_launcher(sandbox), call_timeout=10.0) as session:
        session.start()
        ways = _ways(session, calls)
        ways["single"]()  # warm up both sides
        names = list(ways)
        for repeat in range(repeats):
            order = names[repeat % len(names) :] + names[: repeat % len(names)]
            for name in order:
                wall, cpu = time.perf_counter(), time.process_time()
                ways[name]()
                timing = results.setdefault(name, {"wall_us": [], "cpu_us": []})
                timing["wall_us"].append((time.perf_counter() - wall) / calls * 1e6)
                timing["cpu_us"].append((time.process_time() - cpu) / calls * 1e6)
        if session.starts != 1:
            raise RuntimeError("the worker was restarted during the benchmark")
    single = statistics.median(results["single"]["wall_us"])
    summary = {
        name: {
            "wall_us_per_call": round(statistics.median(t["wall_us"]), 1),
            "wall_us_min": round(min(t["wall_us"]), 1),
            "wall_us_max": round(max(t["wall_us"]), 1),
            "cpu_us_per_call": round(statistics.median(t["cpu_us"]), 1),
            "speedup_vs_single": round(single / statistics.median(t["wall_us"]), 2),
        }
        for name, t in results.items()
    }
    return {
        "sandbox": sandbox,
        "calls": calls,
        "repeats": repeats,
        "load_before": load_before,
        "load_after": load(),
        "machine": machine(),
        "ways": summary,
        "raw": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "batched-calls.json")
    args = parser.parse_args(argv)
    data = measure(args.sandbox, args.calls, args.repeats)
    write_json(args.out, data)
    print(f"{args.calls} calls of double(i) through one {args.sandbox} worker, {args.repeats} repetitions")
    print(f"load average before {data['load_before']}, after {data['load_after']}")
    print(f"{'way':10}  {'wall us/call':>12}  {'(min-max)':>15}  {'cpu us/call':>11}  {'vs single':>9}")
    for name, row in data["ways"].items():
        span = f"({row['wall_us_min']:.0f}-{row['wall_us_max']:.0f})"
        print(
            f"{name:10}  {row['wall_us_per_call']:>12.1f}  {span:>15}  {row['cpu_us_per_call']:>11.1f}  "
            f"{row['speedup_vs_single']:>8.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
