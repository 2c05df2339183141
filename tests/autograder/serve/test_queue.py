"""The service's queue: durable across a SIGKILL, fair between students, within the attempts budget."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from ch11_autograder.serve.queue import Queue

HOUR = 3600.0


def admit(queue: Queue, student: str, at: float, *, attempts: int = 6, n: int | None = None):
    n = int(at) if n is None else n
    return queue.admit(f"{student}+ch11+t{n}+r", student, f"t{n}", f"{n:032x}{student.encode().hex()}",
                       ["ex4_audit.ipynb"], at, refused=None, attempts=attempts, window_seconds=HOUR)


def test_newer_submission_supersedes_the_queued_one(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    first, _ = admit(queue, "ann", 10)
    second, superseded = admit(queue, "ann", 20)
    assert [s.id for s in superseded] == [first.id]
    assert superseded[0].state == "superseded" and "t20" in (superseded[0].reason or "")
    assert [s.id for s in queue.order()] == [second.id]


def test_students_take_turns_and_a_flooder_waits_one_slot(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    admit(queue, "flood", 1)
    for t, name in enumerate(["bea", "cal"], start=2):
        admit(queue, name, t)
    assert [s.student for s in queue.claim(1, now=100)] == ["flood"]
    admit(queue, "flood", 101)  # the flooder submits again at once
    admit(queue, "dan", 102)  # a classmate's first submission, after it
    taken = [queue.claim(1, now=200 + i)[0].student for i in range(4)]
    assert taken == ["bea", "cal", "dan", "flood"]


def test_claim_takes_one_submission_per_student(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    admit(queue, "ann", 1)
    admit(queue, "bob", 2)
    assert sorted(s.student for s in queue.claim(5, now=10)) == ["ann", "bob"]
    assert queue.claim(5, now=11) == []


def test_claim_skips_the_students_named_busy(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    admit(queue, "ann", 1)
    admit(queue, "bob", 2)
    assert [s.student for s in queue.claim(1, now=10, busy={"ann"})] == ["bob"]  # ann's earlier one is graded
    assert queue.claim(1, now=11, busy={"ann"}) == []
    assert [s.student for s in queue.claim(1, now=12)] == ["ann"]


def test_attempts_budget_per_window(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    states = [admit(queue, "ann", at, attempts=3)[0].state for at in (0, 100, 200, 300)]
    assert states == ["queued", "queued", "queued", "refused"]
    refused = queue.in_state("refused")[0]
    assert "attempts used up: 3" in (refused.reason or "")
    assert admit(queue, "bob", 300, attempts=3)[0].state == "queued"  # another student's budget is their own
    # The refused one does not count: an hour after the first, one slot is free again.
    assert admit(queue, "ann", HOUR + 50, attempts=3)[0].state == "queued"
    assert admit(queue, "ann", HOUR + 60, attempts=3)[0].state == "refused"


def test_a_reused_secret_is_refused(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    queue.admit("ann+ch11+t1+r", "ann", "t1", "ab" * 32, ["ex4_audit.ipynb"], 1, refused=None, attempts=6,
                window_seconds=HOUR)
    copy, _ = queue.admit("bob+ch11+t2+r", "bob", "t2", "ab" * 32, ["ex4_audit.ipynb"], 2, refused=None,
                          attempts=6, window_seconds=HOUR)
    assert copy.state == "refused" and "secret" in (copy.reason or "")


_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ch11_autograder.serve.queue import Queue
    queue = Queue(Path(sys.argv[1]))
    for n in range(100000):
        sub, _ = queue.admit(f"s{n}+ch11+t{n}+r", f"s{n}", f"t{n}", f"{n:064x}", ["ex4_audit.ipynb"], float(n),
                             refused=None, attempts=6, window_seconds=3600.0)
        if n % 3 == 0:
            queue.claim(1, now=float(n))
        print(sub.id, flush=True)
""")


def test_survives_sigkill_mid_write(tmp_path: Path) -> None:
    """A real process admitting and claiming as fast as it can, killed with SIGKILL: every submission it reported
    committed is there, the database is intact, and the ones it was grading are queued again."""
    db = tmp_path / "q.db"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    reported = [int(proc.stdout.readline()) for _ in range(60)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    queue = Queue(db)
    ids = {s.id for s in queue.in_state("queued", "grading")}
    assert set(reported) <= ids
    grading = queue.in_state("grading")
    assert grading, "the writer claimed every third submission"
    recovered = queue.recover()
    assert {s.id for s in recovered} == {s.id for s in grading}
    assert queue.in_state("grading") == []
    assert {s.id for s in queue.in_state("queued")} == ids


def test_recover_supersedes_a_graded_one_with_a_newer_queued(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    old, _ = admit(queue, "ann", 1)
    queue.claim(1, now=5)
    new, _ = admit(queue, "ann", 6)  # arrives while the old one is being graded
    queue.recover()
    assert [s.id for s in queue.order()] == [new.id]
    assert queue.get(old.id).state == "superseded"


def test_forget_deletes_only_rows_that_are_not_pending(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    done, _ = admit(queue, "ann", 10)
    queue.claim(1, 11)
    queue.finish(done.id, score=1.0, max_score=4.0, reason=None, now=12)
    grading, _ = admit(queue, "ann", 20)
    queue.claim(1, 21)
    queued, _ = admit(queue, "bob", 30)
    assert queue.forget([done.id, grading.id, queued.id]) == 1
    assert [s.id for s in queue.in_state("done", "grading", "queued")] == [grading.id, queued.id]
    assert queue.forget(list(range(1000, 2200))) == 0  # more ids than one statement may carry
    assert "ann+ch11+t10+r" not in queue.known()


def test_a_grading_the_grader_failed_uses_up_no_attempt(tmp_path: Path) -> None:
    queue = Queue(tmp_path / "q.db")
    first, _ = admit(queue, "ann", 0, attempts=2)
    queue.claim(1, now=1)
    failed = queue.finish(first.id, score=None, max_score=None, reason="sandbox unavailable", now=2, spent=False)
    assert failed.state == "done" and not failed.spent
    assert queue.used("ann", 10, HOUR) == 0
    second, _ = admit(queue, "ann", 10, attempts=2)
    queue.claim(1, now=11)
    queue.finish(second.id, score=None, max_score=None, reason="ex4_audit.ipynb: malformed JSON", now=12)
    assert queue.used("ann", 20, HOUR) == 1  # a failure of the submission's own counts
    assert admit(queue, "ann", 20, attempts=2)[0].state == "queued"
    assert admit(queue, "ann", 30, attempts=2)[0].state == "refused"


def test_a_queue_of_an_earlier_version_counts_its_rows(tmp_path: Path) -> None:
    """A queue.db without the ``spent`` column (written before it existed) gets it, every row counted."""
    path = tmp_path / "q.db"
    Queue(path)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE submissions DROP COLUMN spent")
    db.commit()
    db.close()
    queue = Queue(path)
    admit(queue, "ann", 0, attempts=1)
    assert queue.used("ann", 1, HOUR) == 1
    assert admit(queue, "ann", 2, attempts=1)[0].state == "refused"
