"""The live view's state, in the server: tables, finished games, standings.

The hub takes table states from the game processes (:mod:`arena.game.feed`)
and finished games from the run's ``games.jsonl`` as it grows (the journal
the ``run`` command appends to, flushed as each game ends), stamps each with
its arrival time and applies it ``delay`` seconds later (``--live-delay``).
The page gets four parts, each with a version that grows when it changes:

* ``info``: ``{"mode": "live" | "finished", "note", "delay", "games_total",
  "entrants", "seatings"}``;
* ``tables``: ``{"now": wall-clock seconds, "tables": [TableState.to_json(),
  ...]}``, the games in play by game index; a game leaves when its record
  is applied;
* ``finished``: ``{"played", "games_total", "games": [...]}``, the newest
  :data:`FINISHED_SHOWN` finished games (``game_index``, ``game_id``,
  ``deal_key``, ``seats``, ``scores``, ``ranks``, ``faults``, ``revealed``);
* ``standings``: the report's standings of the *finished prefix* of the
  schedule (games ``0..k-1`` all finished), rated in schedule order as the
  report does (:func:`arena.report.outputs.analyse`), recomputed at most once a second;
* ``end``: ``{}``, once, when the run is over and the server stops.

Each part is encoded once when it changes: its JSON text (:attr:`Hub.texts`)
and its server-sent event (:attr:`Hub.frames`, bytes); :meth:`Hub.message`
gives an event stream what it has not sent yet, one ``bytes`` shared by
every stream at the same versions (100 viewers: one join per change, not
100 encodings).

Hidden hands: a finished game's dealt hands are given (:meth:`Hub.game_hands`)
only once every game of its deal key is finished -- the four rotations (or
24 seatings) of a table in a round share their deals (R2), so until the last
of them ends the cards are still secret. Cards played to a trick are public
as they are played; no other card of a game in play ever reaches the hub.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast

from arena.protocol.records import GameRecordJSON
from arena.report.outputs import analyse
from arena.report.outputs import number_text as _num
from arena.report.outputs import signed_text as _signed

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
#: The parts, in the order a stream sends them.
PARTS: Final = ("info", "standings", "finished", "tables", "end")
#: Joined messages kept for streams at different versions (a stream that
#: just connected, or one that lags); more clears them.
JOINED_ROOM: Final = 32


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{_num(low)}, {_num(high)}]"


def standings_rows(standings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
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


class Hub:
    """See the module docstring.

    Args:
        settings: the run's settings record (``run.json``'s ``settings``).
        games_total: games scheduled (a ladder's budget).
        journal: the run's ``games.jsonl`` (followed as it grows; it may not
            exist yet).
        mode: ``"live"`` (tables in play are shown) or ``"finished"``
            (finished games and standings only: ``watch``, Dask).
        note: a sentence for the page about what it shows.
        delay: seconds the view is held back (``--live-delay``).
    """

    def __init__(
        self,
        settings: dict[str, Any],
        games_total: int,
        journal: Path,
        mode: str,
        note: str,
        delay: float = 0.0,
    ) -> None:
        self.settings = settings
        self.names = [e["name"] for e in settings["entrants"]]
        self.games_total = games_total
        self.journal = journal
        self.delay = delay
        self.seatings = 24 if settings.get("seating") == "full" else 4
        self.info = {
            "mode": mode,
            "note": note,
            "delay": delay,
            "games_total": games_total,
            "entrants": self.names,
            "seatings": self.seatings,
        }
        self.records: dict[int, GameRecordJSON] = {}
        self.deal_done: collections.Counter[str] = collections.Counter()
        self.tables: dict[str, dict[str, Any]] = {}
        self._pending: collections.deque[tuple[float, str, Any]] = collections.deque()
        self._offset = 0
        self._partial = b""
        self._finished_ids: set[str] = set()
        self.versions = dict.fromkeys(PARTS, 0)
        self.texts = dict.fromkeys(PARTS, "{}")
        self.frames = {name: b"" for name in PARTS}
        self._joined: dict[tuple[int, ...], bytes] = {}
        self._publish("info", json.dumps(self.info))
        self.texts["tables"] = '{"now":0,"tables":[]}'
        self._standings_dirty = True
        self._standings_at = -1e9
        self._standings_cost = 0.0  # CPU seconds of the last computation
        # The last prefix rated: (its length, standings rows, verdict).
        self._analysed: tuple[int, list[dict[str, Any]], dict[str, Any]] | None = None
        self.errors: list[str] = []

    def _publish(self, name: str, text: str) -> None:
        """Make ``text`` (JSON) part ``name``'s new version."""
        self.versions[name] += 1
        self.texts[name] = text
        self.frames[name] = f"event: {name}\ndata: {text}\n\n".encode()
        self._joined.clear()

    def message(self, sent: dict[str, int]) -> bytes:
        """The server-sent events a stream that has sent the part versions
        ``sent`` (name -> version; updated here) must write now: every part
        published since, in :data:`PARTS` order; ``b""`` when none. Streams
        at the same versions get the same ``bytes`` object, joined once."""
        key = tuple(sent.get(name, 0) for name in PARTS)
        joined = self._joined.get(key)
        if joined is None:
            if len(self._joined) >= JOINED_ROOM:
                self._joined.clear()
            joined = self._joined[key] = b"".join(
                self.frames[name]
                for name, version in zip(PARTS, key, strict=True)
                if self.versions[name] != version
            )
        sent.update(self.versions)
        return joined

    # -- input ----------------------------------------------------------------

    def add_table(self, state: dict[str, Any], now: float | None = None) -> None:
        """A table state from the feed; shown ``delay`` seconds from now."""
        if len(self._pending) < DELAY_ROOM:
            self._pending.append((time.monotonic() if now is None else now, "table", state))

    def add_record(self, record: GameRecordJSON, now: float | None = None) -> None:
        """A finished game's record; applied ``delay`` seconds from now."""
        self._pending.append((time.monotonic() if now is None else now, "record", record))

    def read_journal(self, now: float | None = None) -> int:
        """Take the complete lines added to the journal since the last call;
        returns how many records were new. A journal that shrank (a run
        started over with ``--overwrite``) is read again from the start; a
        line that is not a JSON object is skipped (and counted in ``errors``)."""
        try:
            with self.journal.open("rb") as f:
                size = f.seek(0, 2)
                if size < self._offset:
                    self._offset, self._partial = 0, b""
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return 0
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
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

    # -- applying ---------------------------------------------------------------

    def tick(self, now: float | None = None) -> bool:
        """Apply what has waited out the delay; returns whether a part changed."""
        now = time.monotonic() if now is None else now
        tables_changed = finished_changed = False
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
        return tables_changed or finished_changed

    def _apply_record(self, record: GameRecordJSON) -> None:
        index = record["game_index"]
        if index in self.records:
            return
        self.records[index] = record
        self.deal_done[str(record.get("deal_key"))] += 1
        game_id = str(record.get("game_id"))
        self._finished_ids.add(game_id)
        self.tables.pop(game_id, None)
        self._standings_dirty = True

    def revealed(self, deal_key: str) -> bool:
        """Whether every game of ``deal_key`` is finished (its hands may be shown)."""
        return self.deal_done[deal_key] >= self.seatings

    def finished(self) -> dict[str, Any]:
        """The ``finished`` part (see the module docstring)."""
        newest = sorted(self.records)[-FINISHED_SHOWN:]
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
        return {"played": len(self.records), "games_total": self.games_total, "games": games}

    def game_hands(self, index: int) -> dict[str, Any] | None:
        """The dealt hands of every hand of finished game ``index``
        (``{"game_id", "seats", "hands": [{"hand_number", "dealt": [4 lists of
        card names], "points"}]}``), or ``None`` while the game is not
        finished or another game of its deal is still to be played."""
        r = self.records.get(index)
        if r is None or not self.revealed(str(r.get("deal_key"))):
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

    def take_prefix(self, now: float | None = None) -> list[GameRecordJSON]:
        """The finished prefix, marking the standings computed now (call
        :meth:`standings_part` on it, maybe in a thread, then
        :meth:`publish_standings`)."""
        self._standings_at = time.monotonic() if now is None else now
        self._standings_dirty = False
        return self.prefix()

    def standings_part(self, prefix: Sequence[GameRecordJSON]) -> dict[str, Any]:
        """The ``standings`` part of ``prefix``, rated as the report does:
        ``{"prefix", "played", "games_total", "rows" (:func:`standings_rows`),
        "verdict": {"text", "settled"}}``. The prefix is rated again only when
        it is longer than the last one rated (its CPU seconds are kept for
        :meth:`standings_due`). Reads nothing else of the hub that changes and
        writes only that cache, so it may run in a thread (one at a time)."""
        part: dict[str, Any] = {
            "prefix": len(prefix),
            "played": len(self.records),
            "games_total": self.games_total,
            "rows": [],
            "verdict": {
                "text": "No game at the start of the schedule has finished yet.",
                "settled": False,
            },
        }
        if not prefix:
            return part
        if self._analysed is None or self._analysed[0] != len(prefix):
            # Rated again only when the prefix grew (a game finished out of
            # schedule order changes ``played`` alone).
            started = time.thread_time()
            a = analyse(self.settings, self.names, prefix)
            verdict = {"text": a.verdict["text"], "settled": bool(a.verdict["settled"])}
            self._analysed = (len(prefix), standings_rows(a.standings), verdict)
            self._standings_cost = time.thread_time() - started
        part["rows"], part["verdict"] = self._analysed[1], self._analysed[2]
        return part

    def publish_standings(self, part: dict[str, Any]) -> None:
        """Make ``part`` the page's standings."""
        self._publish("standings", json.dumps(part, separators=(",", ":")))

    def compute_standings(self, now: float | None = None) -> None:
        """:meth:`take_prefix`, :meth:`standings_part` and :meth:`publish_standings` at once."""
        self.publish_standings(self.standings_part(self.take_prefix(now)))
