"""The live view's parts without a browser (issue 17): the referee's events,
the public table state, the bounded feed, the hub (delay, hidden hands,
standings of the finished prefix), addresses and tokens, the CLI checks.
The page itself is tested in ``test_live_browser.py``."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from live_checks import cards_in, check_hands, check_tables

from arena.cli.main import main
from arena.game.feed import LiveFeed, TableState
from arena.game.referee import Referee, RefereeSettings, SeatSetup
from arena.live import server as live_server
from arena.live.hub import Hub, standings_rows
from arena.live.server import Address, LiveError, host_name, needs_token, parse_address
from arena.protocol.faults import Fault, FaultKind
from arena.results.analysis import analyse
from arena.tournament.runner import TournamentSettings, schedule_round_robin
from arena.tournament.synthetic import synthesize

NAMES = ["ada", "bob", "cy", "dee", "eve"]


def _settings(**kw: Any) -> TournamentSettings:
    return TournamentSettings(seed=5, rounds=1, hands=2, target_score=None, **kw)


def _play(events: list[dict[str, Any]] | None, startup_fault: bool = False) -> Any:
    """One game of default moves (no bot processes), telling ``events``."""
    game = schedule_round_robin(NAMES[:4], _settings())[1]
    seats = [SeatSetup(name, None) for name in game.seats]
    if startup_fault:
        seats[2].startup_fault = Fault(2, game.seats[2], "crashed", "x", None, None, "hello", None)
    sink = events.append if events is not None else None
    return game, trio.run(Referee(game, seats, RefereeSettings(), sink).play)


def test_referee_events_are_public_and_fold_into_the_table() -> None:
    events: list[dict[str, Any]] = []
    game, record = _play(events, startup_fault=True)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "game_start" and kinds[-1] == "game_end"
    assert kinds.count("deal") == kinds.count("hand_end") == 2
    assert kinds.count("card") == 104 and kinds.count("trick") == 26
    # No event but a played card carries a card (the deal event has none).
    assert [e for e in events if cards_in(e) and e["event"] != "card"] == []
    deal = next(e for e in events if e["event"] == "deal")
    assert set(deal) == {"event", "hand_number", "direction"}
    played = [e["card"] for e in events if e["event"] == "card"]
    tricks = [c for h in record.hands for t in h["tricks"] for c in t["cards"]]
    assert played == tricks
    table = TableState(game)
    for e in events:
        table.apply(e)
        state = table.to_json()
        assert all(p.startswith("/trick/") for p in cards_in(state))
        if state["phase"] == "play" and state["hand"]:
            hand = record.hands[state["hand"] - 1]
            played_this_hand = sum(state["tricks"]) * 4 + (
                0 if state["trick_winner"] is not None else len(state["trick"])
            )
            assert sum(state["held"]) == 52 - played_this_hand
            assert sum(state["points"]) <= 26
            assert hand["direction"] == state["direction"]
    final = table.to_json()
    assert final["phase"] == "over"
    assert final["scores"] == record.scores
    assert final["fault_counts"] == [0, 0, 1, 0]
    assert final["faults"] == [[2, "startup", 0]]
    assert final["game_id"] == game.game_id and final["seats"] == list(game.seats)


def test_fault_events_carry_no_detail() -> None:
    game = schedule_round_robin(NAMES[:4], _settings())[0]
    ref = Referee(game, [SeatSetup(n, None) for n in game.seats], RefereeSettings(), None)
    seen: list[dict[str, Any]] = []
    ref._events = seen.append
    ref._fault(ref.seats[1], FaultKind.ILLEGAL, "played QS: R7; legal: 2C 3C", "play", 4, "QS")
    assert seen == [{"event": "fault", "seat": 1, "reason": "illegal"}]
    assert ref.record.faults[0].detail == "played QS: R7; legal: 2C 3C"


def test_a_failing_sink_is_dropped_and_the_game_goes_on() -> None:
    calls = []

    def broken(event: dict[str, Any]) -> None:
        calls.append(event["event"])
        raise RuntimeError("the view broke")

    game = schedule_round_robin(NAMES[:4], _settings())[0]
    seats = [SeatSetup(n, None) for n in game.seats]
    record = trio.run(Referee(game, seats, RefereeSettings(), broken).play)
    assert calls == ["game_start"]
    assert len(record.hands) == 2 and sum(record.scores) > 0


def test_feed_keeps_the_newest_state_when_the_queue_is_full() -> None:
    channel: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
    feed = LiveFeed(channel)
    games = schedule_round_robin(NAMES[:4], _settings())
    one, two = feed.sink(games[0]), feed.sink(games[1])
    one({"event": "deal", "hand_number": 1, "direction": "left"})
    two({"event": "deal", "hand_number": 1, "direction": "left"})
    feed.flush()
    assert channel.get_nowait()["game_id"] == games[0].game_id
    assert feed.dropped == 1  # the second table waits
    two({"event": "card", "seat": 0, "card": "2C"})
    feed.flush()
    newest = channel.get_nowait()
    assert newest["game_id"] == games[1].game_id
    assert newest["trick"] == [[0, "2C"]] and newest["held"] == [12, 13, 13, 13]
    feed.flush()
    assert channel.empty()


def _journal(path: Path, records: list[dict[str, Any]], partial: bool = False) -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    with path.open("a") as f:
        f.write(text)
        if partial:
            f.write('{"game_index": 99, "cut')


def _hub(tmp_path: Path, settings: TournamentSettings, delay: float = 0.0) -> Hub:
    info = {**settings.to_json(), "entrants": [{"name": n} for n in NAMES]}
    return Hub(info, 20, tmp_path / "games.jsonl", "live", "", delay)


def test_hub_reveals_a_deal_only_when_all_its_games_ended(tmp_path: Path) -> None:
    settings = _settings()
    records = synthesize(NAMES, settings)
    hub = _hub(tmp_path, settings)
    assert hub.read_journal() == 0  # no journal yet
    # Three of the four rotations of r1-t0, and a cut line.
    _journal(hub.journal, records[:3], partial=True)
    assert hub.read_journal(now=0.0) == 3
    hub.tick(now=0.0)
    assert not hub.revealed("r1-t0")
    assert hub.game_hands(0) is None
    finished = json.loads(hub.texts["finished"])
    assert [g["revealed"] for g in finished["games"]] == [False, False, False]
    assert cards_in(finished) == []
    # The cut line completes; then the fourth rotation.
    with hub.journal.open("w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records[:4]))
    hub._offset = len("".join(json.dumps(r) + "\n" for r in records[:3]))
    hub._partial = b""
    assert hub.read_journal(now=1.0) == 1
    hub.tick(now=1.0)
    assert hub.revealed("r1-t0")
    hands = hub.game_hands(2)
    assert hands is not None
    assert hands["hands"][0]["dealt"] == records[2]["hands"][0]["dealt"]
    assert hub.game_hands(4) is None  # not finished


def test_hub_holds_back_by_the_delay_and_drops_finished_tables(tmp_path: Path) -> None:
    settings = _settings()
    records = synthesize(NAMES, settings)
    hub = _hub(tmp_path, settings, delay=5.0)
    state = TableState(schedule_round_robin(NAMES, settings)[0]).to_json()
    hub.add_table(state, now=10.0)
    assert not hub.tick(now=14.9)
    assert json.loads(hub.texts["tables"])["tables"] == []
    assert hub.tick(now=15.0)
    assert [t["game_id"] for t in json.loads(hub.texts["tables"])["tables"]] == ["r1-t0-k0"]
    hub.add_record(records[0], now=20.0)
    hub.add_table(state, now=20.5)  # a late state of a finished game
    hub.tick(now=24.0)
    assert len(json.loads(hub.texts["tables"])["tables"]) == 1
    hub.tick(now=26.0)
    assert json.loads(hub.texts["tables"])["tables"] == []
    assert json.loads(hub.texts["finished"])["played"] == 1


def test_hub_standings_count_every_finished_game_and_converge(tmp_path: Path) -> None:
    # Issue 24 item 6: the schedule's first game may finish last; the
    # standings rate every finished game (schedule order, as the report).
    settings = _settings()
    records = synthesize(NAMES, settings, faults={"eve": "played 2H: R7"})
    hub = _hub(tmp_path, settings)
    hub.games_total = len(records)
    for r in records[1:4]:  # game 0 still in play
        hub.add_record(r, now=0.0)
    hub.tick(now=0.0)
    assert hub.standings_due(now=0.0)
    hub.compute_standings(now=0.0)
    part = json.loads(hub.texts["standings"])
    assert (part["counted"], part["prefix"], part["played"]) == (3, 0, 3)
    assert part["missing"] == len(records) - 3 and part["missing_ids"] == ["game 0"]
    expected = analyse(hub.settings, NAMES, records[1:4])
    assert part["rows"] == standings_rows(expected.standings)
    assert sum(r["games"] for r in part["rows"]) == 3 * 4
    assert part["verdict"]["text"] == expected.verdict["text"]
    for i, r in enumerate([records[0], *records[4:]]):
        hub.add_record(r, now=0.5 + i)
    hub.tick(now=100.0)
    assert not hub.standings_due(now=0.5)  # at most once a second
    hub.compute_standings(now=100.0)
    final = json.loads(hub.texts["standings"])
    assert (final["counted"], final["missing"], final["missing_ids"]) == (len(records), 0, [])
    rows = standings_rows(analyse(hub.settings, NAMES, records).standings)
    assert final["rows"] == rows  # the report's standings
    eve = next(r for r in rows if r["name"] == "eve")
    assert eve["faults"] == f"{4 * len(records) // 5} ({4 * len(records) // 5} illegal)"
    assert any(r["duplicate"].startswith("−") for r in rows)  # U+2212, as the report
    assert all(r["duplicate_interval"].startswith("[") for r in rows)


def test_the_last_standings_before_the_end_are_every_games(tmp_path: Path) -> None:
    # Issue 24 item 7: games that end just before the run does are rated
    # before ``end``, whatever the standings' interval.
    settings = _settings()
    records = synthesize(NAMES, settings)
    hub = _hub(tmp_path, settings)
    _journal(hub.journal, records[:3])
    hub.read_journal(now=0.0)
    hub.tick(now=0.0)
    hub.compute_standings(now=0.0)
    _journal(hub.journal, records[3:])  # the last games, 0.3 s later
    hub.read_journal(now=0.3)
    hub.tick(now=0.3)
    assert not hub.standings_due(now=0.3)
    seen: dict[str, int] = {}
    hub.message(seen)
    hub.finish()
    tail = hub.message(seen).decode()
    assert tail.endswith("event: end\ndata: {}\n\n")
    standings = json.loads(tail.split("event: standings\ndata: ")[1].split("\n")[0])
    assert standings["counted"] == len(records) == standings["played"]
    assert standings["rows"] == standings_rows(analyse(hub.settings, NAMES, records).standings)


@pytest.mark.parametrize("old_run_file", [False, True], ids=["run.json gone", "run.json old"])
def test_a_replaced_journal_starts_the_hub_over(tmp_path: Path, old_run_file: bool) -> None:
    # Issue 24 item 8: ``run --overwrite`` removes the journal and run.json,
    # then writes another run's; the hub forgets the first run. The hub may
    # look between the two removals: the old run's run.json is still there
    # ("run.json old"), and must not be taken for the new run's.
    first = synthesize(NAMES, _settings())
    other_settings = TournamentSettings(seed=9, rounds=1, hands=1, target_score=None)
    other_names = ["fay", "gus", "hal", "ivy"]
    second = synthesize(other_names, other_settings)
    current: dict[str, Any] = {}

    def reload() -> tuple[dict[str, Any], int] | None:
        return (current["settings"], current["total"]) if current else None

    info = {**_settings().to_json(), "entrants": [{"name": n} for n in NAMES]}
    hub = Hub(info, len(first), tmp_path / "games.jsonl", "finished", "", 0.0, reload)
    _journal(hub.journal, first)
    hub.read_journal(now=0.0)
    hub.tick(now=0.0)
    hub.compute_standings(now=0.0)
    assert len(hub.records) == len(first) and hub.revealed("r1-t0")
    if old_run_file:
        current.update(settings=info, total=len(first))
    hub.journal.unlink()  # --overwrite
    hub.read_journal(now=1.0)
    current.clear()  # run.json removed
    hub.tick(now=1.0)
    assert hub.records == {} and not hub.revealed("r1-t0")
    assert json.loads(hub.texts["finished"])["games"] == []
    assert json.loads(hub.texts["standings"])["rows"] == []
    assert json.loads(hub.texts["replays"])["games"] == []
    # The new run's journal lines come before its run.json can be read: they
    # wait (rated with the old run's entrants they crashed `watch`: "unknown
    # entrant 'fay'"), and the standings can be made meanwhile.
    _journal(hub.journal, second[:2])
    assert hub.read_journal(now=1.5) == 0
    hub.compute_standings(now=1.5)
    assert json.loads(hub.texts["standings"])["rows"] == []
    current.update(
        settings={**other_settings.to_json(), "entrants": [{"name": n} for n in other_names]},
        total=len(second),
    )
    hub.read_journal(now=2.0)
    hub.tick(now=2.0)
    info_part = json.loads(hub.texts["info"])
    assert info_part["entrants"] == other_names and info_part["games_total"] == len(second)
    assert info_part["run"] == 2
    hub.compute_standings(now=2.0)
    shown = json.loads(hub.texts["standings"])
    assert {r["name"] for r in shown["rows"]} == set(other_names)
    assert [g["game_id"] for g in json.loads(hub.texts["finished"])["games"]] == [
        second[1]["game_id"],
        second[0]["game_id"],
    ]
    # A journal rewritten in place (same file, another first line) too.
    with hub.journal.open("r+b") as f:
        f.write(b'{"zzzzzz": 1, ')
    hub.read_journal(now=3.0)
    assert hub.run == 3


def test_replays_and_hands_of_revealed_deals_only_and_older_pages(tmp_path: Path) -> None:
    # Issue 24 items 5 and 9: the paced view gets games of finished deals,
    # in the order the deals were revealed; older finished games page by page.
    settings = TournamentSettings(seed=5, rounds=4, hands=1, target_score=None)
    records = synthesize(NAMES, settings)
    hub = _hub(tmp_path, settings)
    by_deal: dict[str, list[int]] = {}
    for r in records:
        by_deal.setdefault(r["deal_key"], []).append(r["game_index"])
    deals = list(by_deal)
    # The second deal's four games, and three of the first's.
    order = by_deal[deals[1]] + by_deal[deals[0]][:3]
    for i in order:
        hub.add_record(records[i], now=0.0)
    hub.tick(now=0.0)
    part = json.loads(hub.texts["replays"])
    assert [g["game_index"] for g in part["games"]] == sorted(by_deal[deals[1]])
    assert hub.game_replay(by_deal[deals[0]][0]) is None
    data = hub.game_replay(by_deal[deals[1]][2])
    assert data is not None
    rec = records[by_deal[deals[1]][2]]
    assert [c for t in data["hands"][0]["tricks"] for c in t[1]] == [
        c for t in rec["hands"][0]["tricks"] for c in t["cards"]
    ]
    hub.add_record(records[by_deal[deals[0]][3]], now=1.0)
    hub.tick(now=1.0)
    part = json.loads(hub.texts["replays"])
    assert [g["game_index"] for g in part["games"]] == sorted(by_deal[deals[1]]) + sorted(
        by_deal[deals[0]]
    )
    for r in records:
        hub.add_record(r, now=2.0)
    hub.tick(now=2.0)
    newest = hub.finished()
    assert len(newest["games"]) == 12 and newest["older"]
    shown = [g["game_index"] for g in newest["games"]]
    seen = list(shown)
    page = newest
    while page["older"]:
        page = hub.finished(before=page["games"][-1]["game_index"])
        seen += [g["game_index"] for g in page["games"]]
    assert seen == sorted(range(len(records)), reverse=True)  # every game reachable


def test_viewers_get_no_table_in_play(tmp_path: Path) -> None:
    # Issue 24 item 5: the cards of games in play go to the organiser only.
    settings = _settings()
    hub = _hub(tmp_path, settings)
    games = schedule_round_robin(NAMES, settings)
    hub.add_table(TableState(games[0]).to_json(), now=0.0)
    hub.tick(now=0.0)
    organiser: dict[str, int] = {}
    viewer: dict[str, int] = {}
    assert b"event: tables" in hub.message(organiser)
    from arena.live.hub import VIEWER_PARTS

    seen = hub.message(viewer, VIEWER_PARTS)
    assert b"event: tables" not in seen and b"event: info" in seen
    hub.add_table(TableState(games[1]).to_json(), now=1.0)
    hub.tick(now=1.0)
    assert hub.message(viewer, VIEWER_PARTS) == b""
    assert b"event: tables" in hub.message(organiser)


def test_streams_at_the_same_versions_share_one_encoded_message(tmp_path: Path) -> None:
    settings = _settings()
    hub = _hub(tmp_path, settings)
    games = schedule_round_robin(NAMES, settings)
    hub.add_table(TableState(games[0]).to_json(), now=0.0)
    hub.tick(now=0.0)
    one: dict[str, int] = {}
    two: dict[str, int] = {}
    first = hub.message(one)
    assert hub.message(two) is first  # joined once, for both streams
    # info, replays, finished, then tables (no standings before the first rating)
    assert first.decode().count("event: ") == 4
    assert first.startswith(b"event: info\ndata: ") and b"\nevent: tables\ndata: " in first
    info = json.loads(first.decode().split("\n")[1][len("data: ") :])
    assert info["entrants"] == NAMES and info["mode"] == "live"
    assert hub.message(one) == b""  # up to date: nothing to write
    hub.add_table(TableState(games[1]).to_json(), now=1.0)
    hub.tick(now=1.0)
    late: dict[str, int] = {}  # a stream that connects now gets every part
    assert hub.message(late).decode().count("event: ") == 4
    update = hub.message(one)
    assert hub.message(two) is update
    assert update.decode().startswith("event: tables\n") and update.count(b"event: ") == 1
    tables = json.loads(update.decode().split("\n")[1][len("data: ") :])
    assert [t["game_id"] for t in tables["tables"]] == [games[0].game_id, games[1].game_id]
    hub.end()
    assert hub.message(one) == b"event: end\ndata: {}\n\n" == hub.message(late)


def test_standings_rate_the_same_games_once_and_less_often_when_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arena.live.hub as hub_module

    settings = _settings()
    records = synthesize(NAMES, settings)
    rated: list[int] = []

    def counting(settings: Any, names: Any, games: Any) -> Any:
        rated.append(len(games))
        return analyse(settings, names, games)

    monkeypatch.setattr(hub_module, "analyse", counting)
    hub = _hub(tmp_path, settings)
    for r in records[:2]:
        hub.add_record(r, now=0.0)
    hub.tick(now=0.0)
    hub.compute_standings(now=0.0)
    before = json.loads(hub.texts["standings"])
    hub.compute_standings(now=1.0)  # nothing new: not rated again
    assert rated == [2] and json.loads(hub.texts["standings"]) == before
    hub.add_record(records[3], now=1.0)  # out of order: counted all the same
    hub.tick(now=1.0)
    assert hub.standings_due(now=2.0)
    hub.compute_standings(now=2.0)
    after = json.loads(hub.texts["standings"])
    assert rated == [2, 3]
    assert (after["counted"], after["prefix"], after["played"]) == (3, 2, 3)
    hub.add_record(records[2], now=2.0)
    hub.tick(now=2.0)
    hub._standings_cost = 0.5  # as if rating took half a CPU second
    assert not hub.standings_due(now=6.9)  # 0.5 s / STANDINGS_SHARE = 5 s
    assert hub.standings_due(now=7.0)
    hub.compute_standings(now=7.0)
    assert rated == [2, 3, 4] and json.loads(hub.texts["standings"])["counted"] == 4


def test_checks_catch_a_leaked_card() -> None:
    settings = _settings()
    rec = synthesize(NAMES, settings)[0]
    trick = rec["hands"][0]["tricks"][0]
    table = TableState(schedule_round_robin(NAMES, settings)[0]).to_json()
    table.update(hand=1, trick=[[trick["leader"], trick["cards"][0]]])
    good = [(0.0, "tables", {"now": 0, "tables": [table]})]
    assert check_tables(good, [rec]) == 1
    wrong = {**table, "trick": [[trick["leader"], trick["cards"][1]]]}
    with pytest.raises(AssertionError):
        check_tables([(0.0, "tables", {"now": 0, "tables": [wrong]})], [rec])
    leaked = {**table, "hand_cards": rec["hands"][0]["dealt"][0]}
    with pytest.raises(AssertionError):
        check_tables([(0.0, "tables", {"now": 0, "tables": [leaked]})], [rec])
    with pytest.raises(AssertionError):
        check_tables([(0.0, "finished", {"games": [{"x": "QS"}]})], [rec])
    recs = synthesize(NAMES, settings)[:4]
    for i, r in enumerate(recs):
        r["started_at"], r["duration_s"] = 100.0 + i, 1.0
    assert check_hands([(103.5, 0, 404), (104.0, 0, 200)], recs) == 1
    with pytest.raises(AssertionError):
        check_hands([(103.9, 1, 200)], recs)  # game 3 ends at 104.0


def test_addresses_and_tokens() -> None:
    assert parse_address("8000") == Address("127.0.0.1", 8000)
    assert parse_address("0.0.0.0:0") == Address("0.0.0.0", 0)
    assert parse_address("[::1]:9") == Address("::1", 9)
    assert parse_address("[::1]:9").loopback and parse_address("localhost:1").loopback
    for bad in ("x", "host:", "70000"):
        with pytest.raises(LiveError):
            parse_address(bad)
    lan = parse_address("0.0.0.0:8000")
    assert needs_token(lan, bots_sealed=True) and needs_token(lan, bots_sealed=False)
    assert [host_name(h) for h in ("127.0.0.1:80", "[::1]:8000", "evil.example", "x:1")] == [
        "127.0.0.1",
        "::1",
        "evil.example",
        "x",
    ]
    loop = parse_address("8000")
    assert needs_token(loop, bots_sealed=False) and not needs_token(loop, bots_sealed=True)


def test_every_loopback_address_is_answered_and_every_address_is_named() -> None:
    # Issue 24 item 9: 127.0.0.2 is loopback (no token is printed for it),
    # so the page must answer it; a bind on every address prints one a
    # remote viewer can open.
    from arena.live.server import loopback_name, page_url

    assert parse_address("127.0.0.2:1").loopback
    assert all(loopback_name(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1"))
    assert not any(loopback_name(h) for h in ("evil.example", "10.0.0.1", "0.0.0.0", ""))
    url = page_url("http://0.0.0.0:8123", "tok")
    assert "0.0.0.0" not in url and url.endswith(":8123/?token=tok")
    assert page_url("http://127.0.0.2:80", None) == "http://127.0.0.2:80/"


def test_cli_refuses_live_options_it_cannot_use(tmp_path: Path, capsys: Any) -> None:
    assert main(["run", "--live-delay", "3", "--out", str(tmp_path / "a"), "--dry-run"]) == 2
    assert "--live-delay is for --live" in capsys.readouterr().err
    assert main(["run", "--live", "nope", "--out", str(tmp_path / "b")]) == 2
    assert "give [HOST:]PORT" in capsys.readouterr().err
    assert main(["watch", str(tmp_path), "--live", "0"]) == 3
    assert "holds no tournament" in capsys.readouterr().err


def test_dask_runs_serve_finished_games_only_and_the_token_is_checked(tmp_path: Path) -> None:
    import argparse
    import urllib.error
    import urllib.request

    from arena.cli.live import open_live

    settings = _settings()
    info = {**settings.to_json(), "entrants": [{"name": n} for n in NAMES]}
    args = argparse.Namespace(live="0", live_delay=0.0, executor="dask")
    server = open_live(args, info, 20, synthesize(NAMES, settings)[:4], sandboxed=False)
    try:
        assert server.channel is None  # Dask games send no events
        base, token = server.started_url.split("/?token=")
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"{base}/events?token=wrong", timeout=60)
        assert denied.value.code == 403
        parts: dict[str, Any] = {}
        with urllib.request.urlopen(f"{base}/events?token={token}", timeout=60) as reply:
            event = ""
            for raw in reply:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    parts[event] = json.loads(line[6:])
                if {"info", "finished", "standings"} <= parts.keys():
                    break
        assert parts["info"]["mode"] == "finished"
        assert "Dask" in parts["info"]["note"]
        assert parts["finished"]["played"] == 4
        assert all(g["revealed"] for g in parts["finished"]["games"])  # r1-t0 is over
        assert parts["standings"]["prefix"] == 4
        with urllib.request.urlopen(f"{base}/api/game/1?token={token}", timeout=60) as reply:
            assert len(json.loads(reply.read())["hands"]) == 2
    finally:
        server.close()


def test_a_complete_run_reveals_every_deal(tmp_path: Path) -> None:
    # A ladder's budget can end inside a table: once every scheduled game is
    # played, no deal is still to be played.
    settings = _settings()
    records = synthesize(NAMES, settings)
    hub = _hub(tmp_path, settings)
    hub.games_total = 6  # games 4 and 5 of deal r1-t1, the last two of the run
    for r in records[:5]:
        hub.add_record(r, now=0.0)
    hub.tick(now=0.0)
    assert hub.game_replay(4) is None
    hub.add_record(records[5], now=1.0)
    hub.tick(now=1.0)
    assert hub.game_replay(4) is not None and hub.game_hands(5) is not None
    assert json.loads(hub.texts["replays"])["revealed"] == 6


def test_a_hub_without_a_journal_takes_the_records_it_is_handed(tmp_path: Path) -> None:
    # ``run --live``: the hub subscribes to the run's records (a memory
    # channel) and reads no file, even one lying in the folder.
    settings = _settings()
    records = synthesize(NAMES, settings)
    _journal(tmp_path / "games.jsonl", records[4:8])  # another run's lines: never read
    info = {**settings.to_json(), "entrants": [{"name": n} for n in NAMES]}
    hub = Hub(info, 20, None, "live", "")
    seen: list[int] = []

    async def main() -> None:
        send, receive = trio.open_memory_channel[Any](10)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hub.subscribe, receive)
            async with send:
                for r in records[:3]:
                    await send.send(r)
                await trio.testing.wait_all_tasks_blocked()
                assert hub.read_journal() == 0
                hub.tick(now=float("inf"))
                seen.append(json.loads(hub.texts["finished"])["played"])
                await send.send(records[3])
                await send.send(None)  # the run is over: the subscription ends

    trio.run(main)
    assert seen == [3]
    hub.finish()
    finished = json.loads(hub.texts["finished"])
    assert [g["game_index"] for g in finished["games"]] == [3, 2, 1, 0]
    assert hub.revealed("r1-t0") and hub.game_hands(2) is not None
    assert json.loads(hub.texts["standings"])["counted"] == 4


def test_standings_of_games_taken_when_the_run_ends_are_published(tmp_path: Path) -> None:
    # Found by a loaded run: the run ended while the journal was read (a
    # thread), the next standings computation was cancelled at its start
    # after take_finished had cleared the dirty flag, and the page was
    # marked over with the standings of an earlier prefix.
    settings = _settings()
    records = synthesize(NAMES, settings)
    info = {**settings.to_json(), "entrants": [{"name": n} for n in NAMES]}
    hub = Hub(info, 20, None, "live", "")
    for r in records[:2]:
        hub.add_record(r)
    hub.tick(now=float("inf"))
    hub.compute_standings(now=-1e9)
    assert json.loads(hub.texts["standings"])["counted"] == 2
    reading = threading.Event()
    release = threading.Event()

    def slow_read(now: float | None = None) -> int:
        reading.set()
        release.wait(10)
        for r in records[2:6]:
            hub.add_record(r, now=-1e9)
        return 4

    hub.read_journal = slow_read  # type: ignore[method-assign]

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(live_server._keep_up, hub, live_server.Pusher(), None)
            await trio.to_thread.run_sync(reading.wait, 10)
            nursery.cancel_scope.cancel()
            release.set()

    trio.run(main)
    hub.read_journal = lambda now=None: 0  # type: ignore[method-assign]
    hub.finish()
    assert json.loads(hub.texts["standings"])["counted"] == 6


def test_watch_ends_on_ctrl_c_with_an_end_event_for_every_stream(tmp_path: Path) -> None:
    """``watch`` takes Ctrl-C as a signal that stops its server: every open
    stream gets the ``end`` event, then "stopped" and exit 130. (As a
    KeyboardInterrupt raised wherever the loop was, inside Hypercorn's or
    Starlette's tasks, it dropped the streams without one, and now and then
    corrupted Trio's nursery stack: exit 1; or was swallowed: a hang.)"""
    import os
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time
    import urllib.request

    from arena.report.outputs import write_outputs

    settings = _settings()
    records = synthesize(NAMES, settings)
    entrants = [{"name": n, "command": f"bots/{n}", "cwd": "."} for n in NAMES]
    out = tmp_path / "run"
    out.mkdir()
    write_outputs(out, {**settings.to_json(), "entrants": entrants}, NAMES, records, len(records))
    _journal(out / "games.jsonl", records)
    run = {"format_version": 2, "settings": {**settings.to_json(), "entrants": entrants}}
    run.update(games_total=len(records), run_id="a1", verdict={"fail_if": [], "junit": None})
    (out / "run.json").write_text(json.dumps(run))
    log = tmp_path / "watch.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena", "watch", str(out), "--live", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        while not (found := re.search(r"live view: (http://\S+)", log.read_text())):
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        origin = found.group(1).rstrip("/")
        events: list[list[str]] = [[] for _ in range(3)]
        opened = threading.Barrier(len(events) + 1)

        def read(seen: list[str]) -> None:
            with urllib.request.urlopen(f"{origin}/events", timeout=60) as reply:
                opened.wait()
                for raw in reply:
                    if raw.startswith(b"event: "):
                        seen.append(raw[7:].decode().strip())

        readers = [threading.Thread(target=read, args=(seen,), daemon=True) for seen in events]
        for reader in readers:
            reader.start()
        opened.wait(timeout=60)
        while not all("finished" in seen for seen in events):  # the streams are served
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        for reader in readers:
            reader.join(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert code == 130, text
    assert text.splitlines()[-1] == "stopped", text
    assert [seen[-1] for seen in events] == ["end"] * 3, events
