"""hearts-arena: a tournament arena for programs that play Hearts.

The package's folders are its layers, each importing only those below it
(checked in CI by the import-linter contracts in ``pyproject.toml``)::

    cli          the command line: parsing, settings, exit codes
    server       the competition server: database, gate, ladder, runner
    tools, live  check/replay/play/verify; the spectator's view
    run          one tournament run as a library: plan, record store, play, finish
    report       results.json, standings.csv, HTML, JUnit, verdicts
    tournament   schedules, formats, the runner, executors, run.json's settings
    results      ratings (TrueSkill), standings, statistics
    game         the referee; the public view of a game's events (it sees
                 seats only: never the sandbox)
    seats        the Seat interface, the protocol over a bot's pipes, bots
                 in memory, stand-in seats
    sandbox      the confinement of a bot's process: launch, seal, control
                 groups, uids, limits, core tokens, kill and reap
    protocol     the wire protocol's codec and the kinds of fault (beside
                 the sandbox: neither imports the other)
    core         cards, rules (pure), the tournament key, package data

:mod:`arena.botkit` is the kit for writing a bot in Python; it imports
nothing from the rest of the package.
"""
