"""The live view's state, in the server: tables, finished games, standings.

The hub takes table states from the game processes (:mod:`arena.game.feed`)
and finished games either as the run hands them over (:meth:`Hub.add_record`,
:meth:`Hub.subscribe`: ``run --live`` feeds each record as it is journaled,
a hub without a journal) or from a ``games.jsonl`` as it grows
(:meth:`Hub.read_journal`: ``watch DIR``), stamps each with its arrival time
and applies it ``delay`` seconds later (``--live-delay``).
The page gets these parts, each with a version that grows when it changes:

* ``info``: ``{"mode": "live" | "finished", "note", "delay", "games_total",
  "entrants", "seatings", "run"}`` (``run`` counts the tournaments this hub
  has followed: it grows when the journal is replaced, ``run --overwrite``);
* ``tables``: ``{"now": wall-clock seconds, "tables": [TableState.to_json(),
  ...]}``, the games in play by game index; a game leaves when its record
  is applied. Sent only to the organiser's streams (:data:`VIEWER_PARTS`
  leaves it out): the cards played to a trick of a game in play are the
  deal a later rotation of its table will be dealt;
* ``replays``: ``{"revealed", "games": [...]}``, the newest
  :data:`REPLAYS_SHOWN` finished games whose deal is revealed, in the order
  they were revealed (``game_index``, ``game_id``, ``deal_key``, ``seats``,
  ``scores``): the paced view plays them back card by card
  (:meth:`Hub.game_replay`);
* ``finished``: ``{"played", "games_total", "games": [...]}``, the newest
  :data:`FINISHED_SHOWN` finished games (``game_index``, ``game_id``,
  ``deal_key``, ``seats``, ``scores``, ``ranks``, ``faults``, ``revealed``);
  older ones page by page from :meth:`Hub.finished` (``before``);
* ``standings``: the report's standings of *every finished game*, rated in
  schedule order as the report does (:func:`arena.results.analysis.analyse`:
  a game still in play is skipped, and rated in its place once finished, so
  the standings become the report's when the last game ends), recomputed
  at most once a second, and once more, whatever the interval, before
  ``end`` (:meth:`Hub.finish`);
* ``end``: ``{}``, once, when the run is over and the server stops.

Each part is encoded once when it changes: its JSON text (:attr:`Hub.texts`)
and its server-sent event (:attr:`Hub.frames`, bytes); :meth:`Hub.message`
gives an event stream what it has not sent yet, one ``bytes`` shared by
every stream at the same versions (100 viewers: one join per change, not
100 encodings).

Hidden hands: a finished game's dealt hands and its card-by-card replay are
given (:meth:`Hub.game_hands`, :meth:`Hub.game_replay`) only once every game
of its deal key is finished -- the four rotations (or 24 seatings) of a table
in a round share their deals (R2), so until the last of them ends the cards
are still secret. Cards played to a trick are public as they are played (to
the organiser); no other card of a game in play ever reaches the hub.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, cast

import trio

from arena.protocol.records import GameRecordJSON
from arena.report.html import number_text as _num
from arena.report.html import signed_text as _signed
from arena.report.replays import replay_data
from arena.results.analysis import analyse
from arena.results.standings import StandingsRow
from arena.results.stats import seatings_per_table
from arena.tournament.settings import entrant_names

#: Finished games listed on the page (the newest).
FINISHED_SHOWN: Final = 12
#: Items (table states and records) waiting out ``--live-delay``; more are
#: dropped (table states only: a newer state of the same table follows).
DELAY_ROOM: Final = 200_000
#: Seconds between two standings computations, at least.
STANDINGS_INTERVAL: Final = 1.0
#: Share of a core the standings may take: the next computation waits at
#: least the last one's CPU time divided by this (rating a long prefix takes
#: about a millisecond per game, so a run of thousands of games is rated
#: every few seconds rather than every second).
STANDINGS_SHARE: Final = 0.1
#: Revealed games listed for the paced view (the newest).
REPLAYS_SHOWN: Final = 60
#: Game ids named in the standings' "not yet counted" (the first ones).
MISSING_SHOWN: Final = 8
#: The parts, in the order a stream sends them.
PARTS: Final = ("info", "standings", "replays", "finished", "tables", "end")
#: The parts a viewer's stream gets: every part but ``tables`` (the cards of
#: games in play, for the organiser's address only).
VIEWER_PARTS: Final = tuple(p for p in PARTS if p != "tables")
#: Joined messages kept for streams at different versions (a stream that
#: just connected, or one that lags); more clears them.
JOINED_ROOM: Final = 32


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{_num(low)}, {_num(high)}]"


def standings_rows(standings: Sequence[StandingsRow]) -> list[dict[str, Any]]:
    """The report's standings columns as the page shows them: plain text
    cells (numbers formatted as the report does, U+2212 for minus)."""
    rows = []
    for r in standings:
        faults = r.get("faults", {})
        total = sum(faults.values())
        detail = ", ".join(f"{v} {k}" for k, v in faults.items() if v)
        rows.append(
            {
                "rank": r["rank"],
                "name": r["name"],
                "conservative": _num(r["conservative"]),
                "mu": _num(r["mu"]),
                "sigma": _num(r["sigma"]),
                "games": r["games"],
                "wins": r["wins"],
                "mean_rank": _num(r["mean_rank"]),
                "points_per_hand": _num(r["points_per_hand"]),
                "points_interval": _interval(
                    r.get("points_per_hand_low"), r.get("points_per_hand_high")
                ),
                "duplicate": _signed(r.get("duplicate")),
                "duplicate_interval": _interval(r.get("duplicate_low"), r.get("duplicate_high")),
                "moons": r["moons"],
                "queens": r["queens"],
                "faults": f"{total} ({detail})" if total else "0",
                "disqualified": bool(r.get("disqualified")),
            }
        )
    return rows


#: What :class:`Hub` reloads when the journal is replaced (``watch`` after
#: ``run --overwrite``): the new run's ``(settings, games_total)``, or
#: ``None`` when its ``run.json`` cannot be read yet.
Reload = Callable[[], "tuple[dict[str, Any], int] | None"]


class Hub:
    """See the module docstring.

    Args:
        settings: the run's settings record (``run.json``'s ``settings``).
        games_total: games scheduled (a ladder's budget).
        journal: the run's ``games.jsonl`` (followed as it grows; it may not
            exist yet), or ``None``: the records are handed to the hub
            (:meth:`add_record`, :meth:`subscribe`).
        mode: ``"live"`` (tables in play are shown to the organiser) or
            ``"finished"`` (finished games, replays and standings only:
            ``watch``, Dask).
        note: a sentence for the page about what it shows.
        delay: seconds the view is held back (``--live-delay``).
        reload: called when the journal was replaced by another run's (it
            shrank, is another file, or its first line changed): the new
            settings and games total (``watch`` reads ``run.json`` again);
            without it the hub keeps its settings and starts over.
    """

    def __init__(
        self,
        settings: dict[str, Any],
        games_total: int,
        journal: Path | None,
        mode: str,
        note: str,
        delay: float = 0.0,
        reload: Reload | None = None,
    ) -> None:
        self.journal = journal
        self.delay = delay
        self.mode = mode
        self.note = note
        self.reload = reload
        self.run = 0
        self.versions = dict.fromkeys(PARTS, 0)
        self.texts = dict.fromkeys(PARTS, "{}")
        self.frames = {name: b"" for name in PARTS}
        self._joined: dict[tuple[Any, ...], bytes] = {}
        # Parts are published from threads too (finish, in the server's last
        # step) while the streams build their messages in the loop: a message
        # and a publish never interleave (a part published between a message's
        # frames and its versions was marked sent and never written).
        self._parts_lock = threading.Lock()
        self.errors: list[str] = []
        self._start(settings, games_total)

    def _start(self, settings: dict[str, Any], games_total: int) -> None:
        """(Re)set every state of the run ``settings`` and publish its parts."""
        self.run += 1
        self.settings = settings
        self.names = entrant_names(settings)
        self.games_total = games_total
        self.seatings = seatings_per_table(settings)
        self.info = {
            "mode": self.mode,
            "note": self.note,
            "delay": self.delay,
            "games_total": games_total,
            "entrants": self.names,
            "seatings": self.seatings,
            "run": self.run,
        }
        self.records: dict[int, GameRecordJSON] = {}
        self.deal_done: collections.Counter[str] = collections.Counter()
        self.deal_games: dict[str, list[int]] = collections.defaultdict(list)
        self.revealed_order: list[int] = []  # game indexes, as their deals were revealed
        self.tables: dict[str, dict[str, Any]] = {}
        self._pending: collections.deque[tuple[float, str, Any]] = collections.deque()
        self._offset = 0
        self._partial = b""
        self._identity: tuple[int, int] | None = None  # the journal's (device, inode)
        self._first_line = b""  # its first complete line, to tell another run's
        self._finished_ids: set[str] = set()
        self._reload_pending = False
        self._standings_dirty = True
        self._standings_at = -1e9
        self._standings_cost = 0.0  # CPU seconds of the last computation
        # The last set of games rated: (how many, standings rows, verdict).
        self._analysed: tuple[int, list[dict[str, Any]], dict[str, Any]] | None = None
        self._publish("info", json.dumps(self.info))
        self._publish("tables", '{"now":0,"tables":[]}')
        self._publish("replays", json.dumps(self.replays(), separators=(",", ":")))
        self._publish("finished", json.dumps(self.finished(), separators=(",", ":")))
        if self.versions["standings"]:  # a run replaced: clear the old standings now
            self.publish_standings(self.standings_part([]))

    def _publish(self, name: str, text: str) -> None:
        """Make ``text`` (JSON) part ``name``'s new version."""
        frame = f"event: {name}\ndata: {text}\n\n".encode()
        with self._parts_lock:
            self.versions[name] += 1
            self.texts[name] = text
            self.frames[name] = frame
            self._joined.clear()

    def message(self, sent: dict[str, int], parts: Sequence[str] = PARTS) -> bytes:
        """The server-sent events a stream that has sent the part versions
        ``sent`` (name -> version; updated here) must write now: every part
        of ``parts`` (:data:`PARTS` for the organiser, :data:`VIEWER_PARTS`
        for a viewer) published since, in :data:`PARTS` order; ``b""`` when
        none. Streams at the same versions get the same ``bytes`` object,
        joined once."""
        names = tuple(name for name in PARTS if name in parts)
        key = (names, *(sent.get(name, 0) for name in names))
        with self._parts_lock:
            joined = self._joined.get(key)
            if joined is None:
                if len(self._joined) >= JOINED_ROOM:
                    self._joined.clear()
                joined = self._joined[key] = b"".join(
                    self.frames[name]
                    for name, version in zip(names, key[1:], strict=True)
                    if self.versions[name] != version
                )
            sent.update({name: self.versions[name] for name in names})
        return joined

    # -- input ----------------------------------------------------------------

    def add_table(self, state: dict[str, Any], now: float | None = None) -> None:
        """A table state from the feed; shown ``delay`` seconds from now."""
        if len(self._pending) < DELAY_ROOM:
            self._pending.append((time.monotonic() if now is None else now, "table", state))

    def add_record(self, record: GameRecordJSON, now: float | None = None) -> None:
        """A finished game's record; applied ``delay`` seconds from now."""
        self._pending.append((time.monotonic() if now is None else now, "record", record))

    async def subscribe(self, records: trio.MemoryReceiveChannel[GameRecordJSON | None]) -> None:
        """Take the run's records from ``records`` as they come
        (:meth:`add_record` each), until the channel is closed or sends
        ``None`` (the run is over)."""
        async with records:
            async for record in records:
                if record is None:
                    return
                self.add_record(record)

    def _replaced(self, f: Any, size: int) -> bool:
        """Whether the open journal ``f`` (``size`` bytes) is another run's
        than the one read so far: another file, shorter than what was read,
        or another first line."""
        st = os.fstat(f.fileno())
        identity = (st.st_dev, st.st_ino)
        if self._identity is not None and identity != self._identity:
            return True
        self._identity = identity
        if size < self._offset:
            return True
        if self._first_line:
            f.seek(0)
            return bool(f.read(len(self._first_line)) != self._first_line)
        return False

    def restart(self) -> None:
        """Forget the run followed so far (its records, revealed deals, tables,
        standings) and start over with :attr:`reload`'s settings; every part
        is published again, so open pages show the new run."""
        fresh = self.reload() if self.reload is not None else None
        settings, total = fresh if fresh is not None else (self.settings, self.games_total)
        self._start(settings, total)
        # The new run's run.json may not be written yet: ask again later.
        self._reload_pending = self.reload is not None and fresh is None

    def _retry_reload(self) -> None:
        """Take the new run's settings once its ``run.json`` can be read."""
        fresh = self.reload() if self.reload is not None else None
        if fresh is None:
            return
        self._reload_pending = False
        self.settings, self.games_total = fresh
        self.names = entrant_names(self.settings)
        self.seatings = seatings_per_table(self.settings)
        self.info.update(games_total=self.games_total, entrants=self.names, seatings=self.seatings)
        self._publish("info", json.dumps(self.info))
        self._analysed = None
        self._standings_dirty = True

    def read_journal(self, now: float | None = None) -> int:
        """Take the complete lines added to the journal since the last call;
        returns how many records were new. A journal replaced by another
        run's (``run --overwrite``: it shrank, is a new file, or its first
        line changed) makes the hub :meth:`restart` and read it from the
        start; a line that is not a JSON object is skipped (and counted in
        ``errors``). A journal that was read and is gone (``--overwrite``
        removes it first) makes the hub :meth:`restart` as well. While the new
        run's ``run.json`` cannot be read yet, its records are left in the
        journal (they could not be rated without its entrants)."""
        if self.journal is None:  # records are handed over instead
            return 0
        if self._reload_pending:
            if not self.journal.exists():
                return 0  # the new run's run.json is written before its journal
            self._retry_reload()
            if self._reload_pending:
                return 0  # a new run's records wait for its settings (its entrants)
        try:
            with self.journal.open("rb") as f:
                size = f.seek(0, 2)
                if self._replaced(f, size):
                    self.restart()
                    st = os.fstat(f.fileno())
                    self._identity = (st.st_dev, st.st_ino)
                    if self._reload_pending:
                        return 0  # read from the start once run.json can be read
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            if self._identity is not None:
                # Gone (--overwrite removes the journal, then run.json): the
                # run.json still there may be the old run's, so the new run's
                # settings are read once its journal is back, not now (read
                # now, the new run's records were rated with the old run's
                # entrants: "unknown entrant").
                self._start(self.settings, self.games_total)
                self._reload_pending = self.reload is not None
            return 0
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if not self._first_line and lines:
            self._first_line = lines[0] + b"\n"
        count = 0
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                self.errors.append("a journal line is not JSON")
                continue
            if isinstance(record, dict) and isinstance(record.get("game_index"), int):
                self.add_record(cast(GameRecordJSON, record), now)
                count += 1
        return count

    def end(self) -> None:
        """Publish the ``end`` part: the run is over and the server stops."""
        self._publish("end", "{}")

    def finish(self) -> None:
        """The run is over: take the rest of the journal, apply everything
        still held back, rate every game (whatever
        :data:`STANDINGS_INTERVAL`), then :meth:`end`: the last standings a
        page gets are those of every game, the report's."""
        self.read_journal()
        self.tick(now=float("inf"))
        if self._standings_dirty or not self.versions["standings"]:
            self.compute_standings()
        self.end()

    # -- applying ---------------------------------------------------------------

    def tick(self, now: float | None = None) -> bool:
        """Apply what has waited out the delay; returns whether a part changed."""
        now = time.monotonic() if now is None else now
        tables_changed = finished_changed = False
        revealed = len(self.revealed_order)
        while self._pending and self._pending[0][0] + self.delay <= now:
            _, kind, item = self._pending.popleft()
            if kind == "table":
                if item["game_id"] not in self._finished_ids:
                    self.tables[item["game_id"]] = item
                    tables_changed = True
            else:
                self._apply_record(item)
                tables_changed = finished_changed = True
        if tables_changed:
            ordered = sorted(self.tables.values(), key=lambda t: t["game_index"])
            part = {"now": time.time(), "tables": ordered}
            self._publish("tables", json.dumps(part, separators=(",", ":")))
        if finished_changed:
            self._publish("finished", json.dumps(self.finished(), separators=(",", ":")))
        if len(self.revealed_order) != revealed:
            self._publish("replays", json.dumps(self.replays(), separators=(",", ":")))
        return tables_changed or finished_changed

    def _apply_record(self, record: GameRecordJSON) -> None:
        index = record["game_index"]
        if index in self.records:
            return
        self.records[index] = record
        deal = str(record.get("deal_key"))
        self.deal_done[deal] += 1
        self.deal_games[deal].append(index)
        if self.deal_done[deal] == self.seatings:
            self.revealed_order.extend(sorted(self.deal_games[deal]))
        if len(self.records) >= self.games_total:
            # A complete run (a ladder's budget can end inside a table): no
            # game is still to be played, so every deal is revealed.
            shown = set(self.revealed_order)
            self.revealed_order.extend(i for i in sorted(self.records) if i not in shown)
        game_id = str(record.get("game_id"))
        self._finished_ids.add(game_id)
        self.tables.pop(game_id, None)
        self._standings_dirty = True

    def revealed(self, deal_key: str) -> bool:
        """Whether every game of ``deal_key`` is finished (its hands may be
        shown): all its seatings, or every game of the run."""
        return self.deal_done[deal_key] >= self.seatings or len(self.records) >= self.games_total

    def finished(self, before: int | None = None) -> dict[str, Any]:
        """The ``finished`` part (see the module docstring): the newest
        :data:`FINISHED_SHOWN` finished games, or with ``before`` (a game
        index) the newest of those with a smaller index (an older page);
        ``older`` says whether a page of older games follows."""
        indexes = sorted(self.records)
        if before is not None:
            indexes = [i for i in indexes if i < before]
        newest = indexes[-FINISHED_SHOWN:]
        games = []
        for index in reversed(newest):
            r = self.records[index]
            games.append(
                {
                    "game_index": index,
                    "game_id": r.get("game_id"),
                    "deal_key": r.get("deal_key"),
                    "seats": r.get("seats"),
                    "scores": r.get("scores"),
                    "ranks": r.get("ranks"),
                    "faults": len(r.get("faults") or []),
                    "revealed": self.revealed(str(r.get("deal_key"))),
                }
            )
        return {
            "played": len(self.records),
            "games_total": self.games_total,
            "games": games,
            "before": before,
            "older": len(indexes) > len(newest),
        }

    def replays(self) -> dict[str, Any]:
        """The ``replays`` part: the newest :data:`REPLAYS_SHOWN` games whose
        deal is revealed, in the order their deals were revealed."""
        games = []
        for index in self.revealed_order[-REPLAYS_SHOWN:]:
            r = self.records[index]
            games.append(
                {
                    "game_index": index,
                    "game_id": r.get("game_id"),
                    "deal_key": r.get("deal_key"),
                    "seats": r.get("seats"),
                    "scores": r.get("scores"),
                }
            )
        return {"revealed": len(self.revealed_order), "games": games}

    def _revealed_record(self, index: int) -> GameRecordJSON | None:
        r = self.records.get(index)
        if r is None or not self.revealed(str(r.get("deal_key"))):
            return None
        return r

    def game_hands(self, index: int) -> dict[str, Any] | None:
        """The dealt hands of every hand of finished game ``index``
        (``{"game_id", "seats", "hands": [{"hand_number", "dealt": [4 lists of
        card names], "points"}]}``), or ``None`` while the game is not
        finished or another game of its deal is still to be played."""
        r = self._revealed_record(index)
        if r is None:
            return None
        return {
            "game_id": r.get("game_id"),
            "deal_key": r.get("deal_key"),
            "seats": r.get("seats"),
            "hands": [
                {"hand_number": h.get("hand_number"), "dealt": h["dealt"], "points": h["points"]}
                for h in r.get("hands", [])
            ],
        }

    def game_replay(self, index: int) -> dict[str, Any] | None:
        """Finished game ``index`` as the replay player reads it
        (:func:`arena.report.replays.replay_data`, with ``game_index``,
        ``game_id`` and ``deal_key``), or ``None`` while the game is not
        finished or another game of its deal is still to be played."""
        r = self._revealed_record(index)
        if r is None:
            return None
        return {
            **replay_data(r),
            "game_index": index,
            "game_id": r.get("game_id"),
            "deal_key": r.get("deal_key"),
        }

    # -- standings ----------------------------------------------------------------

    def prefix(self) -> list[GameRecordJSON]:
        """The finished prefix of the schedule: games ``0..k-1``, all finished."""
        out: list[GameRecordJSON] = []
        while len(out) in self.records:
            out.append(self.records[len(out)])
        return out

    def standings_due(self, now: float | None = None) -> bool:
        """Whether the standings changed and were last computed long enough
        ago: :data:`STANDINGS_INTERVAL` seconds, or the last computation's CPU
        seconds divided by :data:`STANDINGS_SHARE` when that is longer."""
        now = time.monotonic() if now is None else now
        wait = max(STANDINGS_INTERVAL, self._standings_cost / STANDINGS_SHARE)
        return self._standings_dirty and now - self._standings_at >= wait

    def take_finished(self, now: float | None = None) -> list[GameRecordJSON]:
        """Every finished game, in schedule order, marking the standings
        computed now (call :meth:`standings_part` on it, maybe in a thread,
        then :meth:`publish_standings`)."""
        self._standings_at = time.monotonic() if now is None else now
        self._standings_dirty = False
        return [self.records[i] for i in sorted(self.records)]

    def standings_part(self, records: Sequence[GameRecordJSON]) -> dict[str, Any]:
        """The ``standings`` part of finished games ``records`` (schedule
        order), rated as the report does: ``{"counted" (games rated),
        "prefix" (how many of them are games 0..k-1 of the schedule), "played",
        "games_total", "missing" (how many scheduled games are not counted
        yet), "missing_ids" (the first :data:`MISSING_SHOWN` of them, game
        ids, among the games finished after), "rows"
        (:func:`standings_rows`), "verdict": {"text", "settled"}}``. The games
        are rated again only when there are more than the last time (its CPU
        seconds are kept for :meth:`standings_due`). Reads nothing else of the
        hub that changes and writes only that cache, so it may run in a
        thread (one at a time)."""
        indexes = [int(r["game_index"]) for r in records]
        prefix = 0
        while prefix < len(indexes) and indexes[prefix] == prefix:
            prefix += 1
        top = max(indexes, default=-1)
        gaps = sorted(set(range(top + 1)) - set(indexes))
        part: dict[str, Any] = {
            "counted": len(records),
            "prefix": prefix,
            "played": len(records),
            "games_total": self.games_total,
            "missing": max(0, self.games_total - len(records)),
            "missing_ids": [f"game {i}" for i in gaps[:MISSING_SHOWN]],
            "rows": [],
            "verdict": {"text": "No game has finished yet.", "settled": False},
        }
        if not records:
            return part
        if self._analysed is None or self._analysed[0] != len(records):
            started = time.thread_time()
            a = analyse(self.settings, self.names, records)
            verdict = {"text": a.verdict["text"], "settled": bool(a.verdict["settled"])}
            self._analysed = (len(records), standings_rows(a.standings), verdict)
            self._standings_cost = time.thread_time() - started
        part["rows"], part["verdict"] = self._analysed[1], self._analysed[2]
        return part

    def publish_standings(self, part: dict[str, Any]) -> None:
        """Make ``part`` the page's standings."""
        self._publish("standings", json.dumps(part, separators=(",", ":")))

    def compute_standings(self, now: float | None = None) -> None:
        """:meth:`take_finished`, :meth:`standings_part` and :meth:`publish_standings` at once."""
        self.publish_standings(self.standings_part(self.take_finished(now)))
