"""Grade on submit through a JupyterHub: from the Assignments tab's Submit to the practice feedback.

    .venv/bin/python bench/hub_latency.py [--repeats 3] [--out bench/results/hub_latency.json]

The hub of docs/course.md ("The hub"), as the hub tier runs it (``tests/support/hub.py``, as
root: real unix users, PAM, Debian's proxy, the page's managed-service block, ``ch11-grade serve``
as the hub's service with the page's default policy: 2 workers, ``properties`` level). The
students are the demo class (``demo/class/<student>/ch11/``: ada, blank, hal, lin), each a unix
user logged in to their own JupyterLab in Chromium. Per round, every student's notebooks (each
with a comment line naming the round appended to its last code cell, so that no verdict is
reused) go into their fetched assignment, and the students submit one after the other, as a
class does at once, through the call the Assignments tab's Submit button makes
(``POST /user/<name>/assignments/submit``). A submission's clock starts when that call
returns; it stops when every notebook's page in the exchange's feedback folder is the practice
feedback (polled every 0.1 s), i.e. when ``fetch_feedback`` would bring it. Reported: every
latency, their median and 95th percentile, the load averages before and after.

This is the folder exchange. The same through the hub exchange's plug-in is not measured: grading on
submit does not yet take submissions from the hub exchange service (bench/README.md).

A number is only meaningful on an idle machine: every student's server, the hub, the proxy,
Chromium and the gradings share its cores. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests"))  # the hub tier's machinery: one implementation of the hub
from support import browser, course_users
from support import hub as hub_support
from support.serve_exchange import served_course

RESULTS = REPO_ROOT / "bench" / "results"
STUDENTS = ("ada", "blank", "hal", "lin")
COURSE_ID = "ch11-hubbench"
#: The page's policy defaults, attempts aside (the rounds must not run out of them).
POLICY = "\nc.ServePolicy.attempts = 1000\nc.ServePolicy.workers = 2\n"
CALL_JS = """async ([prefix, course, assignment, action]) => {
  const xsrf = decodeURIComponent((document.cookie.split('; ').find(c => c.startsWith('_xsrf=')) || '=').split('=')[1]);
  const done = await fetch(prefix + 'assignments/' + action, {method: 'POST', headers: {'X-XSRFToken': xsrf},
                           body: JSON.stringify({course_id: course, assignment_id: assignment})});
  return [done.status, await done.text()];
}"""


def _call(page, prefix: str, action: str) -> None:
    """The Assignments tab's call ``action`` (``fetch``, ``submit``) from the student's page."""
    status, body = page.evaluate(CALL_JS, [prefix, COURSE_ID, ASSIGNMENT, action])
    if status != 200 or not json.loads(body).get("success", False):
        raise SystemExit(f"POST assignments/{action} from {prefix}: {status} {body[:2000]}")


def _hand_in(course, role: str, round_: int) -> list[str]:
    """The demo student's notebooks, edited for this round, in their fetched assignment; their names."""
    user = course.students[role]
    folder = user.home / ASSIGNMENT
    names = []
    for source in sorted((DEMO_CLASS_DIR / role / ASSIGNMENT).glob("*.ipynb")):
        nb = json.loads(source.read_text(encoding="utf-8"))
        cell = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = text + f"\n# round {round_}"
        (folder / source.name).write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
        names.append(source.stem)
    course_users.chown_tree(folder, user)
    return names


def _newest_secret(course, role: str, known: set[str]) -> tuple[str, str]:
    folders = [p for p in course.cache(role).iterdir() if p.name not in known]
    assert len(folders) == 1, folders
    known.add(folders[0].name)
    return folders[0].name, (folders[0] / "submission_secret.txt").read_text().strip()


def _all_feedback(course, secret: str, notebooks: list[str]) -> bool:
    for stem in notebooks:
        page = course.feedback / feedback_name(secret, stem)
        try:
            if "practice feedback" not in page.read_text(errors="replace"):
                return False
        except FileNotFoundError:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "hub_latency.json")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per round")
    args = parser.parse_args()
    reason = hub_support.hub_reason()
    if reason:
        raise SystemExit(f"hub_latency: {reason}")
    load_before = os.getloadavg()
    latencies: list[dict] = []
    with served_course(COURSE_ID, STUDENTS, POLICY, prefix="c11b", make=hub_support.HubCourse) as course:
        try:
            hub_support.prepare_hub(course)
            hub_support.start_served_hub(course)
            with browser.chromium() as chromium:
                pages = {}
                for role in STUDENTS:
                    page = chromium.new_context().new_page()
                    prefix = course.user_prefix(role)
                    hub_support.log_in(page, course.hub_url, course.students[role], course.passwords[role],
                                       f"{course.hub_url}{prefix}lab**")
                    page.locator("#jp-menu-panel").wait_for(timeout=240_000)
                    _call(page, prefix, "fetch")
                    pages[role] = page
                known: dict[str, set[str]] = {role: set() for role in STUDENTS}
                for round_ in range(args.repeats):
                    notebooks = {role: _hand_in(course, role, round_) for role in STUDENTS}
                    pending = {}
                    for role in STUDENTS:
                        _call(pages[role], course.user_prefix(role), "submit")
                        folder, secret = _newest_secret(course, role, known[role])
                        pending[role] = (time.monotonic(), folder, secret)
                    deadline = time.monotonic() + args.timeout
                    while pending and time.monotonic() < deadline:
                        for role, (started, folder, secret) in list(pending.items()):
                            if _all_feedback(course, secret, notebooks[role]):
                                latencies.append({"round": round_, "student": role, "folder": folder,
                                                  "seconds": round(time.monotonic() - started, 2)})
                                del pending[role]
                        time.sleep(0.1)
                    if pending:
                        raise SystemExit(f"round {round_}: no feedback within {args.timeout} s for {sorted(pending)}")
                    print(f"round {round_}:", [(x["student"], x["seconds"]) for x in latencies if x["round"] == round_],
                          flush=True)
        finally:
            hub_support.end_hub(course, keep_log=REPO_ROOT / "build" / "bench" / "hub" / "hub.log")
    seconds = sorted(x["seconds"] for x in latencies)
    p95 = statistics.quantiles(seconds, n=20, method="inclusive")[18] if len(seconds) > 1 else seconds[0]
    result = {"what": "nbgrader submit (the Assignments tab's call) to every notebook's practice feedback, via the hub",
              "students": list(STUDENTS), "repeats": args.repeats, "workers": 2,
              "median_seconds": round(statistics.median(seconds), 2), "p95_seconds": round(p95, 2),
              "latencies": latencies, "load_before": load_before, "load_after": os.getloadavg(),
              "cpus": os.cpu_count(), "jupyterhub": _version(course.student_venv)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "latencies"}, indent=1))


def _version(venv: Path) -> str:
    metadata = sorted((venv / "lib").glob("python3*/site-packages/jupyterhub-*.dist-info"))
    return metadata[0].name.removeprefix("jupyterhub-").removesuffix(".dist-info") if metadata else "?"


if __name__ == "__main__":
    main()
