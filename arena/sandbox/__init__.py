"""The sandbox: the confinement of a bot's process, a layer below
:mod:`arena.seats` that imports nothing of the package but :mod:`arena.core`.

Control groups (:mod:`~arena.sandbox.cgroups`), uids, limits and the leftovers
of a killed run (:mod:`~arena.sandbox.isolation`), the bubblewrap seal
(:mod:`~arena.sandbox.seal`), core tokens (:mod:`~arena.sandbox.cores`),
descriptors (:mod:`~arena.sandbox.descriptors`), page cache forgetting
(:mod:`~arena.sandbox.forget`), the memory budget (:mod:`~arena.sandbox.budget`)
and what describes the program to confine: entrants
(:mod:`~arena.sandbox.entrants`) and bot folders (:mod:`~arena.sandbox.botfolder`).
"""
