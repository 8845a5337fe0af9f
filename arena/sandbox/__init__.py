"""The sandbox: the confinement of a bot's process, the layer below
:mod:`arena.seats`. It imports nothing of the package but :mod:`arena.core`
(and nothing of :mod:`arena.protocol`, its neighbour: no module here speaks
the protocol).

Its interface to the layers above, narrow on purpose:

* start a confined process and hold its bounds: :mod:`~arena.sandbox.spawn`
  (:meth:`ConfinedProcess.start <arena.sandbox.spawn.ConfinedProcess.start>`
  from a :class:`~arena.sandbox.spawn.LaunchSpec`; the core token, freeze and
  thaw, the CPU clock, memory kills and the reason of a kill, then
  ``kill_tree`` of everything the bot started);
* decide the confinement: :mod:`~arena.sandbox.launcher` (``Launcher.check``
  and ``Launcher.spec``, applying the ``LaunchOptions`` of
  :mod:`~arena.sandbox.options`, a module without Trio), from what describes the program:
  entrants (:mod:`~arena.sandbox.entrants`) and bot folders
  (:mod:`~arena.sandbox.botfolder`);
* release: ``LaunchSpec.release`` and ``release_specs`` give back a process's
  control group, uid lease and folder;
* clean up what a killed run left: ``cgroups.remove_recorded`` (its recorded
  control groups), ``isolation.kill_all`` (its strays by uid or environment
  token), ``seal.remove_package_copies_of_dead_arenas``.

Behind it: control groups (:mod:`~arena.sandbox.cgroups`), unprivileged uids
and resource limits (:mod:`~arena.sandbox.isolation`), the bubblewrap seal
(:mod:`~arena.sandbox.seal`), core tokens (:mod:`~arena.sandbox.cores`),
descriptor and memory budgets (:mod:`~arena.sandbox.descriptors`,
:mod:`~arena.sandbox.budget`) and page cache forgetting
(:mod:`~arena.sandbox.forget`).
"""
