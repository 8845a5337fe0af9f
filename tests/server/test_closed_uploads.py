"""An upload to a closed competition is refused as closed (403), even when
the participant's rate limit would also refuse it: a closed competition
takes no submission at any time, so telling them to try again in N seconds
(429, ``Retry-After``) would send them back for nothing (docs/checking-results.md,
"Closing and exporting")."""

from __future__ import annotations

from pathlib import Path

import httpx
import trio

from arena.server import export, folder, store
from arena.server.web import WebConfig, make_app

BOT = b"import sys\nfor line in sys.stdin:\n    pass\n"


def _post(root: Path, token: str) -> httpx.Response:
    comp = folder.open_folder(root)
    config = WebConfig(comp.database, comp.paths.uploads)
    got: list[httpx.Response] = []

    async def main_() -> None:
        transport = httpx.ASGITransport(app=make_app(config))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            got.append(
                await c.post(
                    "/api/submissions", content=BOT, headers={"Authorization": f"Bearer {token}"}
                )
            )

    try:
        trio.run(main_)
    finally:
        comp.close()
    return got[0]


def test_an_upload_after_the_close_is_refused_as_closed_not_rate_limited(
    tmp_path: Path,
) -> None:
    root = tmp_path / "c"
    folder.init_folder(root)
    comp = folder.open_folder(root)
    try:
        _, token = folder.add_participant(comp, "ann")
    finally:
        comp.close()
    first = _post(root, token)
    assert first.status_code == 201 and first.json()["submission"] == 1
    limited = _post(root, token)  # a second one at once: the rate limit
    assert limited.status_code == 429 and "Retry-After" in limited.headers
    comp = folder.open_folder(root)
    try:
        export.close_competition(comp)
        count = comp.database.run_read(lambda conn: len(store.submissions_of(conn, 1)))
    finally:
        comp.close()
    closed = _post(root, token)
    assert (closed.status_code, closed.json()) == (
        403,
        {"error": "the competition is closed: no new submissions"},
    )
    assert "Retry-After" not in closed.headers
    assert count == 1
