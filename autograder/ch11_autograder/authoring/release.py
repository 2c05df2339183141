"""Produce assignments/ch11 exactly as ``nbgrader generate_assignment ch11`` does.

    python -m ch11_autograder.authoring.release           # rewrite assignments/ch11
    python -m ch11_autograder.authoring.release --check   # exit 1 on any difference

nbgrader runs in a throwaway course directory (a copy of the course config and
source/), so no gradebook or log lands in the repository.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

from ..course_layout import CONFIG, RELEASE, SOURCE, assignment_source
from ..nbgrader_cli import run_nbgrader
from ..paths import ASSIGNMENT, COURSE_CONFIG, RELEASE_DIR, SOURCE_DIR


def generate(dest: Path) -> Path:
    """Run the real ``nbgrader generate_assignment`` on a copy of source/; returns the release dir."""
    course = dest / "course"
    (course / SOURCE).mkdir(parents=True)
    shutil.copy2(COURSE_CONFIG, course / CONFIG)
    shutil.copytree(SOURCE_DIR, assignment_source(course, ASSIGNMENT))
    done = run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force", capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment failed:\n{done.stdout}\n{done.stderr}")
    return course / RELEASE / ASSIGNMENT


def differences(generated: Path, committed: Path) -> list[str]:
    """Relative paths that differ, are missing, or are extra in ``committed``."""
    if not committed.is_dir():
        return [f"{committed} is missing"]
    comparison = filecmp.dircmp(generated, committed)
    out = [f"only in generated: {n}" for n in comparison.left_only]
    out += [f"not produced by nbgrader: {n}" for n in comparison.right_only]
    out += [f"differs: {n}" for n in comparison.diff_files]
    out += [f"differs: {n}" for n in comparison.common_files if not filecmp.cmp(generated / n, committed / n, False)
            and n not in comparison.diff_files]
    return sorted(set(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        generated = generate(Path(tmp))
        if args.check:
            problems = differences(generated, RELEASE_DIR)
            for line in problems:
                print(f"assignments/{ASSIGNMENT}: {line} (run: make release)")
            return 1 if problems else 0
        if RELEASE_DIR.exists():
            shutil.rmtree(RELEASE_DIR)
        shutil.copytree(generated, RELEASE_DIR)
        print(f"wrote {RELEASE_DIR}: {', '.join(sorted(p.name for p in RELEASE_DIR.iterdir()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
