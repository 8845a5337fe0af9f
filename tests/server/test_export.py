"""Closing, exporting and verifying a competition, and a participant's
download of one table (issue 30, "Closing and verifying", "Downloads").

The competition is built with the runner's one seam to the tournament layer,
``play_games``, replaced by the real referee with in-process seats that play
the first legal card and pass their first three (the moves of
``tests/bots/first_legal.py``): real deals, real rules, real ratings, one
hand a game, no bot process. Real SQLite."""

from __future__ import annotations

import io
import json
import shlex
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from conftest import BOTS

from arena.cli.main import main
from arena.core.keys import MasterKey
from arena.game.referee import Referee, SeatSetup
from arena.seats.stand_ins import InProcessSeat, Message
from arena.server import downloads, export, folder, runner, store
from arena.server import tables as server_tables
from arena.server.runner import RunnerConfig, start_runner
from arena.server.verifying import verify_server
from arena.server.web import WebConfig, make_app

LADDER_TABLES = 6
#: The deal of the ladder table the machine fails to play (void: the fold skips it).
VOID_DEAL = "L2"


class FirstLegal(InProcessSeat):
    """``tests/bots/first_legal.py``'s moves, in process."""

    async def answer(self, request: Message) -> Message:
        if request["type"] == "hello":
            return {"name": "first-legal"}
        if request["type"] == "pass":
            return {"cards": request["hand"][:3]}
        return {"card": request["legal"][0]}


def _secret(name: str) -> str:
    return f"stderr-of-{name}-kept-private"


async def _play(
    entrants: Any,
    settings: Any,
    launcher: Any,
    games: Any,
    locks: Any,
    on_record: Any,
    live: Any = None,
) -> None:
    """The runner's tables played by the real referee with in-process seats;
    ladder table 2 fails as the machine's (it is void)."""
    if games[0].deal_key == VOID_DEAL:
        raise OSError(28, "No space left on device")
    for spec in games:
        seats = [SeatSetup(name, FirstLegal(name)) for name in spec.seats]
        record = (await Referee(spec, seats, settings.referee).play()).to_json()
        record["stderr"] = [_secret(n) for n in spec.seats]
        on_record(record)


@pytest.fixture(scope="module")
def referee_seam() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(server_tables, "play_games", _play)
        mp.setattr(runner.Launcher, "check", lambda self, entrants: None)
        yield


def _competition(root: Path, subs: int = 3) -> None:
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1}}, "t"
    )
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        for i in range(subs):
            p = store.add_participant(conn, f"p{i}", 0.0)
            store.add_token(conn, p.id, store.token_hash(f"token-{i}"), 0.0)
            s, _ = store.add_submission(conn, p.id, f"{i:x}" * 64, "py", 1, 1.0)
            d = folder.submission_dir(comp.paths, s.sha256)
            d.mkdir()
            (d / "bot.py").write_text("print('never run')\n")
            store.record_step(conn, s.id, "check", True, 2.0)  # the check is another test's
    comp.close()


def _run(root: Path, ladder_tables: int) -> None:
    r = start_runner(
        root,
        RunnerConfig(
            sandbox=False, ladder_tables=ladder_tables, exit_when_idle=True, log=io.StringIO()
        ),
    )
    try:
        trio.run(r.run)
    finally:
        r.comp.close()


def _with(root: Path, fn: Callable[[folder.Competition], Any]) -> Any:
    comp = folder.open_folder(root)
    try:
        return fn(comp)
    finally:
        comp.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, referee_seam: None) -> Path:
    """A competition of three submissions: three validation tables and six
    ladder tables played, not closed yet."""
    root = tmp_path_factory.mktemp("built") / "c"
    _competition(root)
    _run(root, LADDER_TABLES)
    return root


@pytest.fixture
def played(built: Path, tmp_path: Path, referee_seam: None) -> Path:
    """A copy of :func:`built` of the test's own."""
    return Path(shutil.copytree(built, tmp_path / "c"))


def _export(root: Path, out: Path, *args: str) -> int:
    return main(["export", str(root), str(out), *args])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _tampered(src: Path, dst: Path, edit: Callable[[Path], None]) -> list[str]:
    shutil.copytree(src, dst)
    edit(dst)
    return verify_server(dst).problems


def test_export_of_a_closed_competition_verifies_and_tampering_is_named(
    played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, newly = _with(played, export.close_competition)
    assert newly and MasterKey.from_hex(key).commitment() == _with(
        played, lambda c: c.database.run_read(store.get_meta, "key_sha256")
    )
    out = tmp_path / "out"
    assert _export(played, out) == 0
    run = json.loads((out / "run.json").read_text())
    results = json.loads((out / "results.json").read_text())
    tables = _lines(out / "tables.jsonl")
    games = _lines(out / "games.jsonl")
    assert (run["format"], run["scope"], results["key"]) == ("server", "competition", key)
    assert (
        run["key_commitment"] == results["key_commitment"] == MasterKey.from_hex(key).commitment()
    )
    assert [(t["numbering"], t["number"], t["status"]) for t in tables] == [
        ("validation", 0, "done"),
        ("validation", 1, "done"),
        ("validation", 2, "done"),
        *[("ladder", n, "void" if n == 2 else "done") for n in range(LADDER_TABLES)],
    ]
    void = next(t for t in tables if t["numbering"] == "ladder" and t["number"] == 2)
    assert void["void_reason"] == (
        "the server could not play it: OSError: [Errno 28] No space left on device"
    )
    assert void["ratings_after"] == tables[4]["ratings_after"]  # skipped by the fold
    assert len(games) == 4 * (3 + LADDER_TABLES - 1) == run["games_total"]
    assert [t["fold_through"] for t in tables if t["numbering"] == "ladder"] == [0, 0, 1, 2, 3, 4]
    # No seat's stderr and no transcript in the export.
    text = (out / "games.jsonl").read_text()
    assert "kept-private" not in text and all(g["stderr"] == [""] * 4 for g in games)
    assert results["ladder"]["rated_through"] == LADDER_TABLES
    assert {r["entrant"] for r in results["ladder"]["standings"]} >= {"s1", "s2", "s3"}

    assert verify_server(out).problems == []
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"verified: {len(games)} games" in said
    assert "the seatings of the 6 ladder tables re-derive from their folds" in said
    # replay takes the export (the bot given: the folder names no command)
    code = main(
        ["replay", f"{out}#l5-k2", "--seat", "s3", "--bot", str(BOTS / "first_legal.py"),
         "--no-sandbox", "--hand", "1", "--trick", "4"]
    )  # fmt: skip
    assert code == 0 and capsys.readouterr().out.strip().endswith("same as recorded")

    def swap_cards(d: Path) -> None:  # two cards of hand 1 of l3-k1 traded between seats 0 and 1
        rows = _lines(d / "games.jsonl")
        rec = next(r for r in rows if r["game_id"] == "l3-k1")
        dealt = rec["hands"][0]["dealt"]
        dealt[0][0], dealt[1][0] = dealt[1][0], dealt[0][0]
        _write_lines(d / "games.jsonl", rows)

    problems = _tampered(out, tmp_path / "swapped", swap_cards)
    assert problems == [
        "ladder table 3: game l3-k1 hand 1: dealt cards are not the key's deal (R2)"
    ]

    def change_seating(d: Path) -> None:  # ladder table 4's seats 0 and 2 traded, games too
        rows = _lines(d / "tables.jsonl")
        t4 = next(r for r in rows if r["numbering"] == "ladder" and r["number"] == 4)
        s = t4["seating"]
        s[0], s[2] = s[2], s[0]
        _write_lines(d / "tables.jsonl", rows)
        games_ = _lines(d / "games.jsonl")
        for g in games_:
            if g["game_id"].startswith("l4-"):
                k = g["rotation"]
                g["seats"] = [s[(i - k) % 4] for i in range(4)]
        _write_lines(d / "games.jsonl", games_)

    problems = _tampered(out, tmp_path / "seated", change_seating)
    assert problems[0].startswith("ladder table 4: seating [")
    assert "is not the one the key and the fold give" in problems[0]
    # ... and, its games' ranks now another seat's, the fold from table 4 on.
    assert problems[1].startswith("ladder table 4: ratings after it: ")

    def edit_rating(d: Path) -> None:  # s2's mu after ladder table 3, a little higher
        rows = _lines(d / "tables.jsonl")
        t3 = next(r for r in rows if r["numbering"] == "ladder" and r["number"] == 3)
        t3["ratings_after"]["s2"]["mu"] += 0.25
        _write_lines(d / "tables.jsonl", rows)

    problems = _tampered(out, tmp_path / "rated", edit_rating)
    assert len(problems) == 1 and problems[0].startswith(
        "ladder table 3: ratings after it: s2's rating mu "
    )

    def edit_standings(d: Path) -> None:
        data = json.loads((d / "results.json").read_text())
        data["ladder"]["standings"][0]["mu"] += 1.0
        (d / "results.json").write_text(json.dumps(data))

    problems = _tampered(out, tmp_path / "standings", edit_standings)
    assert len(problems) == 1
    assert problems[0].startswith("results.json: ladder standings row 1 (")
    assert "through ladder table 5" in problems[0]

    other = MasterKey.generate().hex()

    def other_key(d: Path) -> None:
        data = json.loads((d / "results.json").read_text())
        data["key"] = other
        (d / "results.json").write_text(json.dumps(data))

    problems = _tampered(out, tmp_path / "rekeyed", other_key)
    assert problems == [
        f"the key's SHA-256 {MasterKey.from_hex(other).commitment()} is not the commitment "
        f"{run['key_commitment']} published since the competition's start"
    ]
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "rekeyed")]) == 5
    assert "FAIL the key's SHA-256" in capsys.readouterr().out


def test_serve_close_at_the_shell(played: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = _with(played, lambda c: folder.read_key(c.paths)).hex()
    assert main(["serve", str(played), "--close"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("competition closed: no new tables") and f"key: {key}\n" in said
    assert main(["serve", str(played), "--close"]) == 0
    assert capsys.readouterr().out == f"the competition was closed already; its key:\nkey: {key}\n"
    assert _with(played, lambda c: c.database.run_read(export.revealed_key)) == key


def test_before_the_close_the_export_holds_no_key_and_verify_refuses_it(
    played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _export(played, out, "--with-logs") == 0
    said = capsys.readouterr().out
    assert "the competition is not closed: results.json holds no key" in said
    results = json.loads((out / "results.json").read_text())
    assert (results["closed"], results["key"]) == (False, None)
    assert _secret("s1") in (out / "games.jsonl").read_text()  # --with-logs keeps stderr
    assert main(["verify", str(out)]) == 3
    err = capsys.readouterr().err
    assert "results.json reveals no key: the competition is not closed" in err
    assert _export(played, out) == 3  # OUT holds files: refused
    assert f"{out} exists and is not an empty folder" in capsys.readouterr().err


def test_closing_stops_new_tables_and_the_home_page_shows_the_key(
    played: Path, tmp_path: Path
) -> None:
    comp = folder.open_folder(played)
    config = WebConfig(comp.database, comp.paths.uploads, pages="public")  # read anonymously
    pages: dict[str, Any] = {}

    async def fetch(name: str) -> None:
        app = make_app(config)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            pages[name] = ((await c.get("/")).text, (await c.get("/api/standings")).json())

    try:
        commitment = comp.database.run_read(store.get_meta, "key_sha256")
        trio.run(fetch, "open")
        key, _ = export.close_competition(comp)
        assert export.close_competition(comp) == (key, False)  # closed once
        trio.run(fetch, "closed")
    finally:
        comp.close()
    html, api = pages["open"]
    assert commitment in html and key not in html
    assert api["competition"] == {"key_sha256": commitment, "closed_at": None, "key": None}
    html, api = pages["closed"]
    assert key in html and commitment in html
    assert api["competition"]["key"] == key and api["competition"]["closed_at"] is not None
    before = _with(played, lambda c: c.database.run_read(store.next_number, "ladder"))
    _run(played, LADDER_TABLES + 4)  # the runner would choose four more: closed, none
    assert _with(played, lambda c: c.database.run_read(store.next_number, "ladder")) == before


def _download(root: Path, token: str, path: str) -> httpx.Response:
    comp = folder.open_folder(root)
    config = WebConfig(comp.database, comp.paths.uploads)
    got: list[httpx.Response] = []

    async def main_() -> None:
        transport = httpx.ASGITransport(app=make_app(config))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            got.append(await c.get(path, headers={"Authorization": f"Bearer {token}"}))

    try:
        trio.run(main_)
    finally:
        comp.close()
    return got[0]


def _unzip(data: bytes, dst: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert sorted(z.namelist()) == sorted(export.FILES)
        z.extractall(dst)
    return dst


def test_a_downloaded_table_verifies_with_its_table_key_and_replays_locally(
    played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tables = _with(played, lambda c: c.database.run_read(store.tables_in, "ladder"))
    t = next(t for t in tables if "s1" in t.seating)
    seat = t.seating.index("s1")
    url = f"/api/tables/ladder/{t.number}/download"
    resp = _download(played, "token-0", url)  # p0's token: s1 is p0's submission
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/zip"
    dl = _unzip(resp.content, tmp_path / "dl")
    results = json.loads((dl / "results.json").read_text())
    key = _with(played, lambda c: folder.read_key(c.paths))
    assert results["key"] is None  # not closed: the master key stays secret
    assert results["table_key"] == key.table_key(f"L{t.number}").hex()
    games = _lines(dl / "games.jsonl")
    assert [g["game_id"] for g in games] == [f"l{t.number}-k{k}" for k in range(4)]
    for g in games:  # its own stderr kept, the other seats' not
        mine = g["seats"].index("s1")
        assert g["stderr"][mine] == _secret("s1")
        assert [x for i, x in enumerate(g["stderr"]) if i != mine] == ["", "", ""]

    found = verify_server(dl)
    assert found.problems == [] and found.games == 4
    assert "once the competition closes" in found.checked[-1]
    capsys.readouterr()
    assert main(["verify", str(dl)]) == 0
    assert "dealt by the table's key" in capsys.readouterr().out

    swapped = tmp_path / "dl-swapped"
    shutil.copytree(dl, swapped)
    rows = _lines(swapped / "games.jsonl")
    dealt = rows[2]["hands"][0]["dealt"]
    dealt[1][3], dealt[3][5] = dealt[3][5], dealt[1][3]
    _write_lines(swapped / "games.jsonl", rows)
    assert verify_server(swapped).problems == [
        f"ladder table {t.number}: game l{t.number}-k2 hand 1: "
        "dealt cards are not the key's deal (R2)"
    ]

    # After the close: against the master key too (given, or in a new download).
    key_file = tmp_path / "key"
    key_file.write_text(key.hex() + "\n")
    assert main(["verify", str(dl), "--key-file", str(key_file)]) == 0
    wrong = tmp_path / "wrong-key"
    wrong.write_text(MasterKey.generate().hex())
    assert main(["verify", str(dl), "--key-file", str(wrong)]) == 5
    _with(played, export.close_competition)
    again = _unzip(_download(played, "token-0", url).content, tmp_path / "dl2")
    assert json.loads((again / "results.json").read_text())["key"] == key.hex()
    assert verify_server(again).problems == []
    forged = tmp_path / "dl-forged"
    shutil.copytree(again, forged)
    data = json.loads((forged / "results.json").read_text())
    data["table_key"] = key.table_key("L999").hex()
    (forged / "results.json").write_text(json.dumps(data))
    assert verify_server(forged).problems == [
        f"ladder table {t.number}: its table key is not the master key's for deal L{t.number}"
    ]

    # The participant's own bot asked its decisions again, the others scripted.
    capsys.readouterr()
    for game, extra in ((f"l{t.number}-k1", ["--pass"]), (f"l{t.number}-k3", ["--trick", "7"])):
        code = main(
            ["replay", f"{dl}#{game}", "--seat", "s1", "--bot", str(BOTS / "first_legal.py"),
             "--no-sandbox", "--hand", "1", *extra]
        )  # fmt: skip
        said = capsys.readouterr().out
        assert code == 0, said
        assert said.strip().endswith("same as recorded")
    # Without --bot: the folder names no command.
    assert main(["replay", f"{dl}#l{t.number}-k0", "--seat", str(seat)]) == 2
    assert "holds no bot's command: give --bot" in capsys.readouterr().err


def test_a_download_is_only_for_a_finished_table_one_sat_at(played: Path) -> None:
    tables = _with(played, lambda c: c.database.run_read(store.tables_in, "validation"))
    t = next(t for t in tables if "s1" not in t.seating)  # p0 did not sit there
    resp = _download(played, "token-0", f"/api/tables/validation/{t.number}/download")
    assert resp.status_code == 403
    assert resp.json() == {
        "error": f"validation table {t.number}: none of your submissions sat at it"
    }
    resp = _download(played, "token-0", "/api/tables/ladder/99/download")
    assert (resp.status_code, resp.json()) == (404, {"error": "no finished ladder table 99"})
    assert _download(played, "nobody", "/api/tables/ladder/0/download").status_code == 401

    def chosen_again(c: folder.Competition) -> None:  # a table of the same deal still in play
        with c.database.write() as conn:
            row = store.tables_in(conn, "validation")[0]
            store.add_table(
                conn, "validation", 50, row.deal_key, row.seating, row.active, 9.0,
                submission_id=row.submission_id,
            )  # fmt: skip

    _with(played, chosen_again)
    resp = _download(played, "token-0", "/api/tables/validation/0/download")
    assert resp.status_code == 409 and "still in play" in resp.json()["error"]


def test_table_keys_are_kept_only_for_finished_tables(played: Path) -> None:
    def keys(c: folder.Competition) -> dict[tuple[str, int], str | None]:
        with c.database.read() as conn:
            out = {}
            for n in ("validation", "ladder"):
                for t in store.tables_in(conn, n):
                    out[(n, t.number)] = downloads.table_key_of(conn, t.id)
            return out

    key = _with(played, lambda c: folder.read_key(c.paths))
    kept = _with(played, keys)
    assert kept[("ladder", 3)] == key.table_key("L3").hex()
    assert kept[("validation", 0)] == key.table_key("V1").hex()
    assert kept[("ladder", 2)] is None  # void: never kept (a void deal may be played again)
    assert all(v is not None for k, v in kept.items() if k != ("ladder", 2))
    assert len(kept) == 3 + LADDER_TABLES

    def choose(c: folder.Competition) -> None:
        with c.database.write() as conn:
            store.add_table(conn, "ladder", 6, "L6", ["s1", "s2", "s3", "house:low"], [], 9.0)

    _with(played, choose)
    assert _with(played, keys)[("ladder", 6)] is None  # chosen, not played: its deals secret


def test_the_checking_page_commands_parse() -> None:
    """docs/checking-results.md's commands, as written, by the real parser."""
    from arena.cli.main import build_parser

    text = (Path(__file__).parents[2] / "docs" / "checking-results.md").read_text()
    commands = []
    for block in text.split("```sh\n")[1:]:
        for line in block.split("```", 1)[0].replace("\\\n", " ").splitlines():
            words = shlex.split(line.split("  #", 1)[0])  # a comment: two spaces, then #
            words = words[1:] if words[:1] == ["sudo"] else words
            if words[:1] == ["hearts-arena"]:
                commands.append(words[1:])
    assert [c[0] for c in commands] == ["serve", "export", "verify", "verify", "replay"]
    for words in commands:
        build_parser().parse_args(words)


def test_a_hostile_export_gives_one_line_problems(tmp_path: Path) -> None:
    """A folder whose lines are of the wrong shape fails with lines, never a traceback."""
    d = tmp_path / "bad"
    d.mkdir()
    key = MasterKey.generate()
    run = {"format": "server", "scope": "competition", "key_commitment": key.commitment()}
    (d / "run.json").write_text(json.dumps({**run, "entrants": [{"name": "s1"}]}))
    results = {"key": key.hex(), "key_commitment": key.commitment(), "ladder": {}}
    (d / "results.json").write_text(json.dumps(results))
    (d / "games.jsonl").write_text("")
    _write_lines(
        d / "tables.jsonl",
        [
            {"numbering": "ladder", "number": "x", "seating": 3},
            {"numbering": "validation", "number": 0, "seating": ["a"], "deal_key": "V9"},
        ],
    )
    problems = verify_server(d).problems
    assert problems[0].startswith("ladder table x: its line cannot be read (TypeError")
    assert problems[1] == "validation table 0: deal key 'V9' is not its numbering's (VNone)"
    assert problems[2] == "validation table 0: seating ['a'] is not four different entrants"
    assert problems[3].startswith("the ladder's tables or ratings cannot be read (ValueError")
