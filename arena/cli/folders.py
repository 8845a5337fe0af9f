"""What the commands that read a tournament folder do once their arguments
are parsed: ``report``, ``verify``, ``audit`` and ``cleanup``, and their
errors as exit codes (:mod:`arena.cli.errors`). The run itself is
:mod:`arena.cli.commands`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_OUTPUT, CliError
from arena.report.outputs import GAMES_FILE, INDEX_FILE, RUN_FILE, write_outputs
from arena.run import host
from arena.run.folder import KEY_FILE, folder_not_in_use, out_lock, read_key_file, read_run_file
from arena.tournament.runner import read_journal


def print_standings(results: dict[str, Any], out: Path) -> None:
    """Print the standings table, the report's verdict sentence and where the report is."""
    from arena.report.terminal import standings_table

    print("\n".join(standings_table(results["standings"])))
    verdict = (results.get("confidence") or {}).get("verdict") or {}
    if verdict.get("text"):  # the report's sentence: is the top settled?
        print(verdict["text"])
    print(
        f"{results['games_played']} of {results['games_total']} games; report: {out / INDEX_FILE}"
    )


def report_command(args: argparse.Namespace) -> int:
    """``hearts-arena report DIR``: rebuild ``results.json`` and the HTML from
    ``run.json`` and ``games.jsonl`` without replaying a game."""
    folder: Path = args.folder
    run_path = folder / RUN_FILE
    if not run_path.exists():
        raise CliError(f"{folder} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    with folder_not_in_use(folder):
        return _report(folder, run_path)


def _report(folder: Path, run_path: Path) -> int:
    results = rebuild_report(folder, run_path)
    print_standings(results, folder)
    return EXIT_OK


def rebuild_report(folder: Path, run_path: Path) -> dict[str, Any]:
    """Rewrite ``results.json``, ``standings.csv`` and the HTML of ``folder``
    from its ``run.json`` and ``games.jsonl`` (and ``audit.json`` where the
    audit wrote one); returns the results.

    Raises:
        CliError: (exit code 3) the journal cannot be read or shown.
    """
    run = read_run_file(run_path)
    names = run.settings.names
    try:
        records = read_journal(folder / GAMES_FILE, names)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
    key_path = folder / KEY_FILE
    key = read_key_file(key_path).hex() if key_path.exists() else None
    try:
        results = write_outputs(
            folder, run.settings.to_json(), names, records, run.games_total, key
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CliError(
            f"{folder / GAMES_FILE} holds a game this version cannot show "
            f"({type(exc).__name__}: {str(exc)[:200]})",
            EXIT_OUTPUT,
        ) from None
    return results


def verify_command(args: argparse.Namespace) -> int:
    """``hearts-arena verify DIR``: check a finished tournament's deals, seeds
    and hands against its revealed key (:mod:`arena.tools.verify`). Exit 0 if all
    holds, 5 with one line per problem if not, 3 if the folder cannot be verified."""
    from arena.tools.verify import MAX_PROBLEMS, VerifyError, verify_folder

    folder: Path = args.folder
    if not (folder / RUN_FILE).exists():
        raise CliError(f"{folder} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    key_file: Path | None = args.key_file
    if server_format(folder):
        return _verify_server(folder, key_file)
    if key_file is not None:
        raise CliError("--key-file goes with a competition server's run folder (export, download)")
    try:
        games, problems = verify_folder(folder)
    except VerifyError as exc:
        raise CliError(f"verify: {exc}", EXIT_OUTPUT) from None
    if problems:
        for line in problems[:MAX_PROBLEMS]:
            print(f"FAIL {line}")
        if len(problems) > MAX_PROBLEMS:
            print(f"... and {len(problems) - MAX_PROBLEMS} more")
        noun = "problem" if len(problems) == 1 else "problems"
        print(f"verify: {len(problems)} {noun} in {games} games of {folder}")
        return EXIT_FAILED
    print(
        f"verified: {games} games of {folder}: the key matches its commitment, and every "
        "deal, bot seed and hand is the one the key and the rules give"
    )
    return EXIT_OK


def server_format(folder: Path) -> bool:
    """Whether ``folder`` is a competition server's run folder (``run.json``
    format ``server``: ``hearts-arena export``, a table's download)."""
    try:
        data = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == "server"


def _verify_server(folder: Path, key_file: Path | None) -> int:
    """``verify`` on a server's run folder (:mod:`arena.server.verifying`)."""
    from arena.server.verifying import verify_server
    from arena.tools.verify import MAX_PROBLEMS, VerifyError

    key_text = None
    if key_file is not None:
        try:
            key_text = key_file.read_text(encoding="ascii")[:1000]
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--key-file {key_file}: {exc}", EXIT_OUTPUT) from None
    try:
        found = verify_server(folder, key_text)
    except VerifyError as exc:
        raise CliError(f"verify: {exc}", EXIT_OUTPUT) from None
    if found.problems:
        for line in found.problems[:MAX_PROBLEMS]:
            print(f"FAIL {line}")
        if len(found.problems) > MAX_PROBLEMS:
            print(f"... and {len(found.problems) - MAX_PROBLEMS} more")
        noun = "problem" if len(found.problems) == 1 else "problems"
        print(f"verify: {len(found.problems)} {noun} in {found.games} games of {folder}")
        return EXIT_FAILED
    print(f"verified: {found.games} games of {folder}: " + "; ".join(found.checked))
    return EXIT_OK


def audit_command(args: argparse.Namespace) -> int:
    """``hearts-arena audit DIR``: the audit of :mod:`arena.tools.audit`; exit 0
    when no entrant is flagged, 5 when one is, 3 when DIR cannot be audited."""
    from arena.tools.audit import AuditError, audit, load_run, table_text, write_audit

    try:
        run = load_run(args.folder)
    except AuditError as exc:
        raise CliError(f"audit: {exc}", EXIT_OUTPUT) from None
    bar: Any = None

    def total(n: int) -> None:
        nonlocal bar
        if sys.stderr.isatty() and not args.json:
            from tqdm import tqdm

            bar = tqdm(total=n, unit="decision", desc="audit", dynamic_ncols=True)

    def progress(n: int) -> None:
        if bar is not None:
            bar.update(n)

    try:
        result = audit(
            run,
            alpha=args.alpha,
            decisions=args.decisions,
            budget=args.budget,
            jobs=args.jobs,
            progress=progress,
            on_total=total,
        )
    except (AuditError, ValueError) as exc:
        raise CliError(f"audit: {exc}", EXIT_OUTPUT) from None
    finally:
        if bar is not None:
            bar.close()
    if not args.no_write:
        try:
            write_audit(args.folder, result)
        except OSError as exc:
            raise CliError(f"audit: cannot write into {args.folder}: {exc}", EXIT_OUTPUT) from None
        # The report's Fair play section (the key file keeps results.json's key).
        if (args.folder / "index.html").exists() and (args.folder / "tournament.key").exists():
            with folder_not_in_use(args.folder):
                rebuild_report(args.folder, args.folder / "run.json")
    if args.json:
        print(json.dumps(result.to_json(), indent=1, sort_keys=True))
    else:
        print(table_text(result))
    return EXIT_FAILED if result.flagged else EXIT_OK


def cleanup_command(args: argparse.Namespace) -> int:
    """``hearts-arena cleanup DIR``: end everything a killed run on ``DIR`` left
    on this machine: its bots' control groups (thawed, then killed, then
    removed), any bot process still carrying the run's id in its environment,
    and the bots' temporary folders; also the copies of the package for bots
    of any arena that is gone (:func:`arena.run.host.remove_package_copies`).
    Refuses while the run is still going.

    Raises:
        CliError: (exit code 3) ``DIR`` holds no tournament, or its run is
            still going.
    """
    out: Path = args.folder
    if not (out / RUN_FILE).exists() and not host.groups_record_exists(out):
        raise CliError(f"{out} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    if host.run_alive(out):
        raise CliError(f"the run writing to {out} is still going; stop it first", EXIT_OUTPUT)
    killed = host.remove_groups_left(out)
    with out_lock(out):  # refused if a run (without a record) still holds it
        killed += host.remove_groups_left(out)
        run_id = None
        if (out / RUN_FILE).exists():
            value = read_run_file(out / RUN_FILE).run_id
            run_id = value if value is not None and value.isalnum() else None
        if run_id:
            killed += host.end_run_left(run_id)
    copies = host.remove_package_copies()
    print(f"cleanup: killed {killed} bot processes left by the run in {out}")
    if copies:
        print(f"cleanup: removed {copies} package copies left by arenas that are gone")
    return EXIT_OK
