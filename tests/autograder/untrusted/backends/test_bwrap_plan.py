"""The bwrap mount plan, made from a fake host layout under a temporary directory (no sandbox runs).

The layout has a merged-/usr style system (a real directory and a link), a base Python
installation, a virtualenv whose site-packages holds a hidden package with its
metadata, and an editable package outside every tree.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ch11_autograder.untrusted.backends.bwrap_plan import (
    LIB_MOUNT,
    PROTOCOL_MOUNT,
    RUNTIME_MOUNT,
    SANDBOX_UID,
    VENV_MOUNT,
    HostLayout,
    Mount,
    check_reveals,
    check_scratch,
    make_plan,
)
from ch11_autograder.untrusted.launch import SandboxUnavailable


class FakeHost:
    """Directories of a fake host and the plan options that go with them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.usr = root / "usr"
        (self.usr / "lib").mkdir(parents=True)
        self.lib_link = root / "lib"
        self.lib_link.symlink_to("usr/lib")
        self.etc = root / "etc"
        self.etc.mkdir()
        (self.etc / "ld.so.cache").write_text("")
        self.base = root / "base"
        (self.base / "bin").mkdir(parents=True)
        self.venv = root / "venv"
        self.site = self.venv / "lib" / "python3.11" / "site-packages"
        (self.venv / "bin").mkdir(parents=True)
        (self.venv / "bin" / "python").write_text("")
        for entry in ("hidden_pkg", "hidden_pkg-1.0.dist-info", "numpyish", "numpyish-2.0.dist-info"):
            (self.site / entry).mkdir(parents=True)
        (self.site / "alias").symlink_to("numpyish")
        self.editable = root / "src" / "extpkg"
        self.editable.mkdir(parents=True)
        self.runtime = root / "runtime"
        self.runtime.mkdir()
        self.protocol = root / "protocol" / "__init__.py"
        self.protocol.parent.mkdir()
        self.protocol.write_text("")
        self.locations = {"hidden_pkg": [self.site / "hidden_pkg"], "extpkg": [self.editable]}

    def layout(self, *, prefix: Path | None = None, base: Path | None = None) -> HostLayout:
        prefix = prefix or self.venv
        return HostLayout(
            system_dirs=(str(self.usr), str(self.lib_link), str(self.root / "lib64")),
            etc_files=(str(self.etc / "ld.so.cache"), str(self.etc / "localtime")),
            base_prefix=str(base or self.base),
            prefix=str(prefix),
            executable=str(prefix / "bin" / "python"),
            locate=lambda name: self.locations.get(name, []),
            distributions=lambda module: {module},
        )

    def plan(self, *, forbidden=(), extra_files=None, layout=None, **options):
        return make_plan(
            runtime_dir=self.runtime,
            extra_files={self.protocol: f"{PROTOCOL_MOUNT}/__init__.py"} if extra_files is None else extra_files,
            importable_packages=options.get("importable_packages", ("extpkg",)),
            hidden_modules=options.get("hidden_modules", ("hidden_pkg",)),
            forbidden=list(forbidden),
            host=layout or self.layout(),
        )


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path.resolve())


def test_system_dirs_keep_their_paths_and_links_stay_links(host):
    mounts = host.plan().mounts
    assert Mount("ro-bind", str(host.usr), str(host.usr)) in mounts
    assert Mount("symlink", "usr/lib", str(host.lib_link)) in mounts
    assert not any(m.dest == str(host.root / "lib64") for m in mounts)  # absent on this host
    assert Mount("ro-bind", str(host.etc / "ld.so.cache"), str(host.etc / "ld.so.cache")) in mounts
    assert not any("localtime" in m.dest for m in mounts)


def test_passwd_group_and_hosts_are_generated(host):
    data = {m.dest: m.src for m in host.plan().mounts if m.kind == "data"}
    assert list(data) == ["/etc/passwd", "/etc/group", "/etc/hosts"]
    assert f"sandbox:x:{SANDBOX_UID}:" in data["/etc/passwd"] and "localhost" in data["/etc/hosts"]


def test_venv_goes_to_opt_and_the_base_python_keeps_its_path(host):
    plan = host.plan()
    assert Mount("ro-bind", str(host.base), str(host.base)) in plan.mounts
    assert Mount("ro-bind", str(host.venv), VENV_MOUNT) in plan.mounts
    assert plan.python == f"{VENV_MOUNT}/bin/python"
    assert plan.sources[:2] == [host.base, host.venv]


def test_without_a_venv_the_interpreter_runs_at_its_host_path(host):
    plan = host.plan(layout=host.layout(prefix=host.base))
    assert not any(m.dest == VENV_MOUNT for m in plan.mounts)
    assert plan.python == str(host.base / "bin" / "python")


def test_a_base_python_inside_a_system_dir_is_not_mounted_twice(host):
    inner = host.usr / "local"
    (inner / "bin").mkdir(parents=True)
    plan = host.plan(layout=host.layout(base=inner))
    assert not any(m.src == str(inner) for m in plan.mounts)


def test_hidden_package_is_left_out_of_its_directory_entry_by_entry(host):
    plan = host.plan()
    sandbox_site = f"{VENV_MOUNT}/lib/python3.11/site-packages"
    rebuilt = [m for m in plan.mounts if m.dest == sandbox_site or m.dest.startswith(sandbox_site + "/")]
    assert rebuilt == [
        Mount("tmpfs", "", sandbox_site),
        Mount("symlink", "numpyish", f"{sandbox_site}/alias"),
        Mount("ro-bind", str(host.site / "numpyish"), f"{sandbox_site}/numpyish"),
        Mount("ro-bind", str(host.site / "numpyish-2.0.dist-info"), f"{sandbox_site}/numpyish-2.0.dist-info"),
        Mount("remount-ro", "", sandbox_site),
    ]
    assert plan.covered == {host.site: {"hidden_pkg", "hidden_pkg-1.0.dist-info"}}
    # The venv itself is bound first; the rebuilt directory is laid over it.
    assert plan.mounts.index(Mount("ro-bind", str(host.venv), VENV_MOUNT)) < plan.mounts.index(rebuilt[0])


def test_nothing_is_rebuilt_when_no_hidden_module_lies_in_a_tree(host):
    plan = host.plan(hidden_modules=("extpkg",))
    assert plan.covered == {}
    assert not any(m.kind in ("tmpfs", "remount-ro") for m in plan.mounts)


def test_packages_outside_the_trees_are_mounted_on_the_pythonpath(host):
    plan = host.plan()
    assert Mount("ro-bind", str(host.editable), f"{LIB_MOUNT}/extpkg") in plan.mounts
    assert plan.pythonpath == [LIB_MOUNT]
    # A package already inside a mounted tree needs no mount of its own.
    host.locations["numpyish"] = [host.site / "numpyish"]
    plan = host.plan(importable_packages=("numpyish", "not_installed"))
    assert plan.pythonpath == [] and not any(m.dest.startswith(LIB_MOUNT) for m in plan.mounts)


def test_extra_files_are_bound_alone_and_checked(host):
    plan = host.plan()
    assert Mount("ro-bind", str(host.protocol), f"{PROTOCOL_MOUNT}/__init__.py") in plan.mounts
    assert host.runtime in plan.sources and host.protocol in plan.sources
    assert os.path.normpath(f"{RUNTIME_MOUNT}/../../protocol") == PROTOCOL_MOUNT
    with pytest.raises(SandboxUnavailable, match="does not exist"):
        host.plan(extra_files={host.root / "missing.py": "/opt/ch11/missing.py"})
    with pytest.raises(ValueError, match="must be absolute"):
        host.plan(extra_files={host.protocol: "opt/protocol.py"})


def test_forbidden_paths_inside_a_source_are_refused_unless_left_out(host):
    host.plan(forbidden=[host.site / "hidden_pkg" / "secret.py", host.root / "course"])  # left out / not mounted
    with pytest.raises(SandboxUnavailable, match="would reveal"):
        host.plan(forbidden=[host.venv / "bin" / "python"])
    # Inside a directory that is rebuilt, only the left-out entries are hidden.
    with pytest.raises(SandboxUnavailable, match=r"would reveal .*numpyish/core"):
        host.plan(forbidden=[host.site / "numpyish" / "core"])


def test_check_reveals_on_its_own(tmp_path):
    tree, gradebook = tmp_path / "tree", tmp_path / "tree" / "course" / "gradebook.db"
    check_reveals([tmp_path / "elsewhere"], [gradebook])
    check_reveals([tree], [gradebook], covered={tree: {"course"}})
    with pytest.raises(SandboxUnavailable, match="would reveal"):
        check_reveals([tree], [gradebook], covered={tree: {"other"}})


def test_scratch_may_not_overlap_a_source_a_forbidden_path_or_bwrap(host):
    plan = host.plan()
    bwrap = host.usr / "bin" / "bwrap"
    forbidden = [host.root / "course" / "gradebook.db"]
    check_scratch(host.root / "scratch", plan, forbidden, bwrap)  # beside everything: fine
    for bad in (host.site / "numpyish", host.venv, host.root / "course", host.root, host.usr):
        with pytest.raises(SandboxUnavailable, match="overlaps"):
            check_scratch(bad, plan, forbidden, bwrap)


def test_module_locations_names_a_shadowed_folder_of_the_same_name(tmp_path, monkeypatch):
    # An editable install's package shadows a `site-packages/<name>/` folder of data files that a
    # wheel build put there: hide the package alone and the folder imports as a namespace package.
    from ch11_autograder.untrusted.backends.bwrap_plan import module_locations

    data, code = tmp_path / "site-packages", tmp_path / "checkout"
    (data / "hiddenpkg_x" / "course").mkdir(parents=True)
    (data / "hiddenpkg_x" / "course" / "answers.ipynb").write_text("{}")
    (code / "hiddenpkg_x").mkdir(parents=True)
    (code / "hiddenpkg_x" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.syspath_prepend(str(data))
    found = module_locations("hiddenpkg_x")
    assert (code / "hiddenpkg_x").resolve() in found
    assert (data / "hiddenpkg_x").resolve() in found
