"""The page runner (``support/page_runner.py``): marks, the placeholder table, a failing step named.

A toy page runs here with local bash (fast, no container); the real page is parsed: its install
steps are marked in order and a planted change of one of them changes what the tier runs.
"""

from __future__ import annotations

import getpass

import pytest
from support import page_runner
from support.page_runner import LocalBash, PageError, PageStepError, page_steps, placeholders, run_steps
from support.paths import DOCS_DIR

ME = getpass.getuser()

TOY = f"""# A toy page

## Placeholders

| placeholder | stands for |
| --- | --- |
| `<dir>` | a scratch directory |
| `<who>` | the user who runs the steps |

## Steps

1. Make a file:

   <!-- page-run: make-file as=<who> -->
   ```
   mkdir -p <dir>/made
   echo one > <dir>/made/one
   ```

2. Read it back (the planted fault: a file that step 1 never made):

   <!-- page-run: read-file as={ME} -->
   ```sh
   cat <dir>/made/one
   cat <dir>/made/two
   echo never reached
   ```

A block without a mark is not run:

```
touch <dir>/unmarked
```

<!-- page-run: after as={ME} -->
```
touch <dir>/after
```
"""


def test_placeholders_are_the_table_of_the_placeholders_heading():
    assert placeholders(TOY) == {"<dir>": "a scratch directory", "<who>": "the user who runs the steps"}


def test_a_failing_step_stops_the_run_with_its_name_line_and_output(tmp_path):
    steps = page_steps(TOY, {"<dir>": str(tmp_path), "<who>": ME})
    assert [(s.name, s.user) for s in steps] == [("make-file", ME), ("read-file", ME), ("after", ME)]
    assert steps[0].script == f"mkdir -p {tmp_path}/made\necho one > {tmp_path}/made/one\n"
    with pytest.raises(PageStepError) as caught:
        run_steps(steps, LocalBash(), log=tmp_path / "log")
    error = caught.value
    mark_line = TOY.splitlines().index(f"   <!-- page-run: read-file as={ME} -->") + 1
    assert error.step == "read-file" and error.line == mark_line
    assert "one" in error.output_tail and "two: No such file or directory" in error.output_tail
    assert "never reached" not in error.output_tail
    assert "page step 'read-file'" in str(error)
    assert (tmp_path / "made" / "one").read_text() == "one\n" and not (tmp_path / "after").exists()
    assert not (tmp_path / "unmarked").exists()


def test_the_fixed_page_runs_to_the_end(tmp_path):
    fixed = TOY.replace("cat <dir>/made/two\n", "")
    timings = run_steps(page_steps(fixed, {"<dir>": str(tmp_path), "<who>": ME}), LocalBash())
    assert list(timings) == ["make-file", "read-file", "after"] and (tmp_path / "after").exists()
    assert not (tmp_path / "unmarked").exists()


def test_a_placeholder_outside_the_table_fails_naming_the_step(tmp_path):
    page = TOY.replace("touch <dir>/after", "touch <elsewhere>/after")
    with pytest.raises(PageStepError, match=r"'after'.*<elsewhere>, not in the page's placeholder table"):
        page_steps(page, {"<dir>": str(tmp_path), "<who>": ME})


def test_a_placeholder_without_a_value_fails_naming_the_step(tmp_path):
    with pytest.raises(PageStepError, match=r"'make-file'.*<who>, for which the tier gave no value"):
        page_steps(TOY, {"<dir>": str(tmp_path)})


def test_only_the_tables_names_are_substituted(tmp_path):
    with pytest.raises(PageError, match="<home>"):
        page_steps(TOY, {"<dir>": str(tmp_path), "<who>": ME, "<home>": "/root"})


def test_a_mark_must_announce_a_block_and_be_well_formed():
    with pytest.raises(PageError, match="not followed by a fenced block"):
        page_steps(TOY.replace("<!-- page-run: after as=" + ME + " -->\n```", "<!-- page-run: after as=x -->\n\n```"),
                   {"<dir>": "/tmp", "<who>": ME})
    with pytest.raises(PageError, match="malformed page-run mark"):
        page_steps(TOY.replace("page-run: after as=", "page-run: after user="), {"<dir>": "/tmp", "<who>": ME})
    with pytest.raises(PageError, match="marked twice"):
        page_steps(TOY.replace("page-run: after", "page-run: make-file"), {"<dir>": "/tmp", "<who>": ME})


FILE_PAGE = TOY + """
<!-- page-run: config-one as=<who> file=<dir>/conf.py -->
```python
c = get_config()
home = "$HOME"   # as written: nothing is expanded
```

<!-- page-run: config-two as=<who> file=<dir>/conf.py -->
```python
c.Two = `echo not run`
```
"""


def test_a_file_block_is_appended_to_its_file_as_written(tmp_path):
    steps = page_steps(FILE_PAGE.replace("cat <dir>/made/two\n", ""), {"<dir>": str(tmp_path), "<who>": ME})
    assert [s.name for s in steps][-2:] == ["config-one", "config-two"]
    run_steps(steps, LocalBash())
    assert (tmp_path / "conf.py").read_text() == (
        'c = get_config()\nhome = "$HOME"   # as written: nothing is expanded\nc.Two = `echo not run`\n')


def test_a_step_for_another_user_is_refused_locally(tmp_path):
    (step,) = page_steps(TOY, {"<dir>": str(tmp_path), "<who>": "someone-else"}, only=["make-file"])
    with pytest.raises(PageStepError, match="runs as someone-else"):
        run_steps([step], LocalBash())


# ----------------------------------------------------------------------------- the real page

INSTALL_STEPS = ("admin-harness-wheel", "admin-install-students", "admin-install-grader", "admin-proxy")


def _page() -> str:
    return (DOCS_DIR / "course.md").read_text()


def test_the_page_marks_its_install_steps_in_order_with_the_checkout_replaced():
    steps = page_steps(_page(), {"<checkout>": "/opt/ch11/checkout"}, only=INSTALL_STEPS)
    assert [s.name for s in steps] == list(INSTALL_STEPS)
    assert all(s.user == "root" for s in steps)
    assert "cd /opt/ch11/checkout && make wheel PYTHON=python3" in steps[0].script
    assert all(s.script.startswith("umask 022\n") for s in steps[:3])
    assert not any(page_runner.PLACEHOLDER.search(s.script) for s in steps)
    grader = steps[2].script
    assert "/opt/ch11/grader/bin/pip install -r requirements/lock.txt" in grader and grader.rstrip().endswith(" .")


HUB_PATH = ("admin-user", "admin-graders", "admin-profile", "admin-exchange", "admin-jupyter-dir",
            "admin-nbgrader-config", "admin-hub-dir", "admin-hub-config", "admin-hub-services", "admin-start-hub",
            "instructor-week1", "instructor-due-date")
NAMES = {"<checkout>": "/opt/ch11/checkout", "<user>": "alice", "<password>": "pw", "<instructor>": "instructor",
         "<student1>": "alice", "<student2>": "bob", "<graders>": "ch11-graders",
         "<exchange>": "/usr/local/share/nbgrader/exchange"}


def test_the_page_marks_its_hub_path_in_order_and_root_blocks_keep_files_readable():
    steps = page_steps(_page(), NAMES, only=HUB_PATH)
    assert [s.name for s in steps] == list(HUB_PATH)
    by_name = {s.name: s for s in steps}
    assert {s.user for s in steps} == {"root", "instructor"}
    # Under root's umask 077 a file or folder made without umask 022 is root's alone.
    for name in ("admin-profile", "admin-exchange", "admin-jupyter-dir", "admin-hub-dir"):
        assert by_name[name].script.startswith("umask 022\n"), name
    assert "chmod 1777 /usr/local/share/nbgrader/exchange" in by_name["admin-exchange"].script
    assert by_name["admin-hub-services"].script.startswith("cat >> /etc/jupyterhub/jupyterhub_config.py <<")
    assert '"user": "instructor"' in by_name["admin-hub-services"].script
    assert by_name["instructor-due-date"].script.startswith("cd ~/course\n")


def test_a_planted_wrong_install_line_is_what_the_tier_would_run():
    page = _page()
    planted = page.replace("/opt/ch11/grader/bin/pip install -r requirements/lock.txt",
                           "/opt/ch11/grader/bin/pip install -r requirements/no-such-lock.txt", 1)
    assert planted != page
    (step,) = page_steps(planted, {"<checkout>": "/opt/ch11/checkout"}, only=["admin-install-grader"])
    assert "requirements/no-such-lock.txt" in step.script


def test_every_placeholder_the_page_uses_in_its_marked_blocks_is_in_its_table():
    table = placeholders(_page())
    assert {"<checkout>", "<user>", "<instructor>", "<exchange>", "<course>", "<hub>"} <= set(table)
    # No value is missing but for the names the marked blocks use; page_steps fails on any other.
    used = {name for _step, user, _file, _line, body in page_runner._blocks(_page())
            for name in page_runner.PLACEHOLDER.findall("\n".join(body) + user)}
    assert used <= set(table)


def test_a_mark_shown_inside_a_fenced_block_is_text(tmp_path):
    shown = TOY + "\n```\n<!-- page-run: shown as=root -->\n<!-- page-run: bad -->\n```\n"
    steps = page_steps(shown, {"<dir>": str(tmp_path), "<who>": ME})
    assert [s.name for s in steps] == ["make-file", "read-file", "after"]
