"""Tools for bot authors and organisers: ``check``, ``replay``, ``play``, ``verify``.

Owns: the conformance checker and its scenarios (``check``: scenario files,
judging, hints, running and the report, one module each; ``scenarios/``),
asking a bot a recorded decision again (``replay``), a game in the terminal
(``play``), checking a finished run against its revealed key
(``verify``) and regenerating the documentation's generated parts
(``docs``).
The tools take plain arguments, return results and raise their own errors
(``ReplayError``, ``PlayError``, ``ScenarioError``, ...); turning those into
output and exit codes is :mod:`arena.cli.tools`' work.
May import: every layer below it (core .. report); never :mod:`arena.cli`.
"""
