"""What a signed-in request costs the web process (issue 28): the sign-in
middleware resolves the session cookie with one database read per request.

The same cheap route (``GET /favicon.ico``, no database work of its own) is
asked N times through the application (httpx's ASGI transport under Trio, a
real SQLite file in WAL mode), anonymously (the baseline: no cookie, no
read) and with a live session's cookie; printed: requests per second of
each and their ratio, then the same for the standings page (``GET /``), whose
own reads dominate.

    python benchmarks/server_sessions.py              # 400 requests each
    python benchmarks/server_sessions.py --requests 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import httpx
import trio

from arena.server import db, sessions
from arena.server.migrate import migrate
from arena.server.signin import COOKIE
from arena.server.web import WebConfig, make_app


def main() -> None:
    """Run the measurement and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as top:
        path = Path(top) / db.DATABASE_NAME
        db.set_wal(path)
        database = db.Database(path)
        migrate(database)
        made = database.run_write(sessions.start_session, "organiser", None, time.time())
        app = make_app(WebConfig(database, Path(top)))

        async def rate(route: str, cookie: str | None) -> float:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                if cookie:
                    c.cookies.set(COOKIE, cookie)
                await c.get(route)  # warm up
                start = time.perf_counter()
                for _ in range(args.requests):
                    r = await c.get(route)
                    assert r.status_code in (200, 204), r.status_code
                return args.requests / (time.perf_counter() - start)

        async def run() -> None:
            for route in ("/favicon.ico", "/"):
                anonymous = await rate(route, None)
                signed_in = await rate(route, made.session_id)
                print(
                    f"GET {route:13} anonymous {anonymous:7.0f} req/s   signed in "
                    f"{signed_in:7.0f} req/s   ratio {signed_in / anonymous:.2f}"
                )

        try:
            trio.run(run)
        finally:
            database.close()


if __name__ == "__main__":
    main()
