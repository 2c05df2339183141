"""The sandbox backends: one module per way of running untrusted code.

* :mod:`.bwrap` (``BwrapLauncher``), the default: bubblewrap namespaces plus per-run
  cgroups. Its pure parts live beside it: :mod:`.bwrap_plan` (what is mounted where),
  :mod:`.bwrap_argv` (the bwrap command line and environment for one run) and
  :mod:`.cgroups` (cgroup discovery, the per-run cgroup, sweeping stale ones; nothing
  bwrap-specific).
* :mod:`.container_user` (``ContainerUserLauncher``): separation by uid inside the
  grading container.
* :mod:`.unsandboxed` (``UnsandboxedLauncher``): the loud opt-out for trusted runs.

* :mod:`.docker`: a name only, refused with the way to grade inside the grading image.

Each backend's module declares its :class:`~..backend.Backend` (``BACKEND``: its private
directories, how its exit status names a signal, its slots, whether its runs are kept apart
or isolated at all) and :mod:`.registry` lists them; the grader asks the descriptor instead of
comparing names. Every launcher implements :class:`~ch11_autograder.untrusted.launch.Launcher`
and carries its descriptor (``backend``); ``untrusted.choose.choose_launcher`` builds one by
name. The package itself imports no backend: :mod:`.registry` does.
"""
