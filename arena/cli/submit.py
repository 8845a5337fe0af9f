"""``hearts-arena submit URL PATH`` and ``hearts-arena status URL``: a
participant's side of a competition server (``hearts-arena serve``).

``submit`` uploads ``PATH`` (a ``.py`` file, a zip with ``bot.toml`` at its
root, or a bot folder, zipped here: its regular files, no links, no
``.git``) to ``URL/api/submissions``; with ``--wait`` it follows the
submission through check and validation and exits as ``check`` does: 0 once
it is ranked, 5 with one line naming the step that failed. ``status``
prints the participant's submissions, each step's result and the check's
output (theirs only).

The token (printed by ``serve --add``) comes from ``--token-file F`` (a file
only its owner may read, as a key file) or the ``HEARTS_ARENA_TOKEN``
environment variable (a CI secret), and is sent only in the
``Authorization`` header. The HTTP client (httpx) is the ``[server]`` extra's,
imported when a command runs.

Exit codes: 0 done (ranked, with ``--wait``); 2 a token, a file or an
upload refused (the server's one line); 4 the server cannot be reached, says
to try later (429: ``Retry-After``) or ``--timeout`` passed; 5 a step failed,
or the submission was superseded or retired before it was ranked.
"""

from __future__ import annotations

import argparse
import io
import os
import stat
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from arena.cli.options import Number
from arena.protocol.codec import visible_text

#: The environment variable holding the token when there is no ``--token-file``.
TOKEN_VARIABLE: Final = "HEARTS_ARENA_TOKEN"
#: Seconds between two looks at a submission with ``--wait``.
POLL_SECONDS: Final = 2.0
#: Seconds ``--wait`` waits at most, by default.
WAIT_TIMEOUT: Final = 3600.0
#: Seconds an HTTP request may take.
REQUEST_TIMEOUT: Final = 60.0
#: Statuses a submission ends in.
FINAL: Final = ("ranked", "failed", "superseded", "retired")


def add_submit_commands(sub: Any) -> None:
    """Add ``submit`` and ``status`` to the subcommands."""
    submit = sub.add_parser(
        "submit",
        allow_abbrev=False,
        help="upload a bot to a competition server (hearts-arena serve)",
        description="Upload PATH (a .py file, a zip with bot.toml at its root, or a bot "
        "folder, zipped here) to the competition server at URL. With --wait, follow it "
        "through check and validation: exit 0 once it is ranked, 5 with the step that failed.",
    )
    submit.add_argument("url", metavar="URL", help="the server, e.g. http://127.0.0.1:8000")
    submit.add_argument("path", metavar="PATH", type=Path, help="a .py file, a zip or a bot folder")
    submit.add_argument("--wait", action="store_true", help="follow it until ranked or failed")
    submit.add_argument(
        "--timeout",
        type=Number(1, 30 * 86400, integer=False, unit="seconds"),
        default=WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"with --wait: give up after SECONDS (exit 4; default {WAIT_TIMEOUT:g})",
    )
    status = sub.add_parser(
        "status",
        allow_abbrev=False,
        help="your submissions to a competition server: each step's result and your output",
    )
    status.add_argument("url", metavar="URL", help="the server, e.g. http://127.0.0.1:8000")
    for p in (submit, status):
        p.add_argument(
            "--token-file",
            type=Path,
            metavar="F",
            help=f"the file holding your token (owner-only); else ${TOKEN_VARIABLE}",
        )


def read_token(path: Path | None, environ: dict[str, str] | None = None) -> str:
    """The token: the first line of ``path`` (which only its owner may read),
    else ``$HEARTS_ARENA_TOKEN``.

    Raises:
        CliError: (2) no token given, the file cannot be read, its group or
            others may read it, or it is empty.
    """
    environ = dict(os.environ) if environ is None else environ
    if path is None:
        token = environ.get(TOKEN_VARIABLE, "").strip()
        if not token:
            raise CliError(f"no token: give --token-file F or set {TOKEN_VARIABLE}", EXIT_USAGE)
        return token
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            raise CliError(
                f"token file {path} can be read by other users ({stat.filemode(mode)}): make "
                f"it owner-only (chmod 600 {path})",
                EXIT_USAGE,
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"token file {path}: {reason}", EXIT_USAGE) from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise CliError(f"token file {path} is empty", EXIT_USAGE)
    return token


def zip_folder(folder: Path) -> bytes:
    """A bot folder as a zip (its regular files, no links, nothing under ``.git``).

    Raises:
        CliError: (2) no ``bot.toml`` at its top.
    """
    if not (folder / "bot.toml").is_file():
        raise CliError(f"{folder} holds no bot.toml: not a bot folder", EXIT_USAGE)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if ".git" in relative.parts or path.is_symlink() or not path.is_file():
                continue
            archive.write(path, relative.as_posix())
    return buffer.getvalue()


def upload_bytes(path: Path) -> bytes:
    """What ``submit`` sends for ``path``.

    Raises:
        CliError: (2) missing or unreadable.
    """
    try:
        if path.is_dir():
            return zip_folder(path)
        return path.read_bytes()
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}", EXIT_USAGE) from None


class Api:
    """The server's API for one participant (httpx, the token in the header)."""

    def __init__(self, url: str, token: str, transport: Any = None) -> None:
        import httpx

        self.httpx = httpx
        self.client = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_TIMEOUT,
            transport=transport,
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of a request.

        Raises:
            CliError: (4) the server cannot be reached or says to retry later;
                (2) it refused the request, with its one line.
        """
        try:
            response = self.client.request(method, path, **kwargs)
        except self.httpx.HTTPError as exc:
            raise CliError(
                f"cannot reach {self.client.base_url}: {exc}", EXIT_ENVIRONMENT
            ) from None
        try:
            data = response.json()
        except ValueError:
            data = {"error": response.text.strip().splitlines()[0][:200] if response.text else ""}
        if response.status_code == 429:
            raise CliError(
                f"{data.get('error', 'too many submissions')} (Retry-After: "
                f"{response.headers.get('Retry-After', '?')} s)",
                EXIT_ENVIRONMENT,
            )
        if response.status_code >= 500:
            raise CliError(f"the server failed: {response.status_code}", EXIT_ENVIRONMENT)
        if response.status_code >= 400:
            raise CliError(
                f"refused ({response.status_code}): {data.get('error', '')}".rstrip(": "),
                EXIT_USAGE,
            )
        return data

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()


def step_line(s: dict[str, Any]) -> str:
    """One line for a submission: its number, status and each step's result."""
    parts = []
    for step in s.get("steps", []):
        text = f"{step['step']}: {step['result']}"
        if step.get("place") is not None:
            text += f" (place {step['place']})"
        if step["step"] == "ranked" and step["result"] in ("playing", "left"):
            text += f" ({step.get('games', 0)} games)"
        if step.get("reason"):
            text += f" ({step['reason']})"
        parts.append(text)
    return f"submission {s['submission']} [{s['status']}] " + ", ".join(parts)


def failure_line(s: dict[str, Any]) -> str:
    """The one line ``--wait`` ends with when a submission is not ranked."""
    if s["status"] == "failed":
        return f"submission {s['submission']} failed at {s['failed_step']}: {s['reason']}"
    return f"submission {s['submission']} was {s['status']} before it was ranked: {s['reason']}"


def wait_for(
    api: Api,
    submission: int,
    timeout: float,
    poll: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Follow a submission until it ends, looking every ``poll`` seconds
    (:data:`POLL_SECONDS`); print each change (stderr). Its exit code.

    Raises:
        CliError: (4) ``timeout`` seconds passed first.
    """
    start = clock()
    last = ""
    while True:
        s = api.call("GET", f"/api/submissions/{submission}")
        line = step_line(s)
        if line != last:
            print(line, file=sys.stderr, flush=True)
            last = line
        if s["status"] == "ranked":
            return EXIT_OK
        if s["status"] in FINAL:
            if s.get("output"):
                print(visible_text(s["output"]).rstrip("\n"), file=sys.stderr)
            print(f"error: {failure_line(s)}", file=sys.stderr)
            return EXIT_FAILED
        if clock() - start > timeout:
            raise CliError(
                f"submission {submission} is still {s['status']} after {timeout:g} s "
                f"(hearts-arena status shows it later)",
                EXIT_ENVIRONMENT,
            )
        sleep(POLL_SECONDS if poll is None else poll)


def submit_command(args: argparse.Namespace, transport: Any = None) -> int:
    """``hearts-arena submit``: upload, and with ``--wait`` follow; the exit code."""
    token = read_token(args.token_file)
    data = upload_bytes(args.path)
    api = Api(args.url, token, transport)
    try:
        made = api.call(
            "POST",
            "/api/submissions",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        print(
            f"submission {made['submission']} received ({made['kind']}, {made['size']} bytes, "
            f"sha256 {made['sha256'][:16]}...): {made['status']}"
            + (f", place {made['place']} in the queue" if made.get("place") else "")
            + (f"; it replaces {made['superseded']}" if made.get("superseded") else ""),
            flush=True,
        )
        if not args.wait:
            return EXIT_OK
        return wait_for(api, int(made["submission"]), args.timeout)
    finally:
        api.close()


def status_command(args: argparse.Namespace, transport: Any = None) -> int:
    """``hearts-arena status``: the participant's submissions, newest first."""
    token = read_token(args.token_file)
    api = Api(args.url, token, transport)
    try:
        data = api.call("GET", "/api/submissions")
    finally:
        api.close()
    found = data.get("submissions", [])
    print(f"{data.get('participant', '?')}: {len(found)} submission(s)")
    for s in found:
        print(step_line(s))
        if s.get("output"):
            print("  output of its check:")
            for line in visible_text(str(s["output"])).splitlines():
                print(f"    {line}")
    return EXIT_OK


#: The commands of this module, by name.
SUBMIT_COMMANDS: Final = {"submit": submit_command, "status": status_command}
