"""The sandbox backends: one module per way of running untrusted code.

* :mod:`.bwrap` (``BwrapLauncher``), the default: bubblewrap namespaces plus per-run
  cgroups. Its pure parts live beside it: :mod:`.bwrap_plan` (what is mounted where),
  :mod:`.bwrap_argv` (the bwrap command line and environment for one run) and
  :mod:`.cgroups` (cgroup discovery, the per-run cgroup, sweeping stale ones; nothing
  bwrap-specific).
* :mod:`.container_user` (``ContainerUserLauncher``): separation by uid inside the
  grading container.
* :mod:`.unsandboxed` (``UnsandboxedLauncher``): the loud opt-out for trusted runs.

Every backend implements :class:`~ch11_autograder.untrusted.launch.Launcher`;
``untrusted.choose.choose_launcher`` picks one by name. This package imports no backend
on its own, so choosing one never loads the others.
"""
