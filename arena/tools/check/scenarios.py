"""The scenario files of ``hearts-arena check`` (``arena/tools/scenarios/*.toml``,
described in the README there): what each check is (:class:`CheckSpec`), where
its position is (:class:`At`), the scripted deals, passes and plays of a
scenario (:class:`Scenario`), and what a position must show
(:func:`expectation_problems`). Loading checks every key and names the file
and key at fault (:class:`ScenarioError`)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from arena.core.cards import CARD_NAMES, SUITS, mask_of_names
from arena.core.keys import MasterKey
from arena.core.rules import deal_name, deal_with, table_deal
from arena.seats.stand_ins import Exchange, Message

#: The scenarios shipped with the package.
SCENARIO_DIR: Final = Path(__file__).resolve().parent.parent / "scenarios"

_SCENARIO_KEYS: Final = frozenset(
    {"about", "seat", "hands", "games", "seed", "checks", "deals", "passes", "plays"}
)
_CHECK_KEYS: Final = frozenset({"name", "about", "at", "expect"})
_AT_KEYS: Final = frozenset({"hello", "bye", "game", "hand", "trick", "pass"})
#: Expectation keys and the TOML type of their value.
EXPECT_KEYS: Final = {
    "direction": str,
    "legal": list,
    "legal_count": int,
    "legal_suits": str,
    "legal_has": str,
    "legal_lacks": str,
    "legal_excludes": list,
    "hand_suits": str,
    "holds": str,
    "void": str,
    "leading": bool,
    "hearts_broken": bool,
    "no_pass": bool,
}
_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class At:
    """Where a check's position is (see the scenarios README)."""

    hello: bool = False
    bye: bool = False
    game: int = 1
    hand: int | None = None
    trick: int | None = None
    pass_: bool = False

    def matches(self, ex: Exchange) -> bool:
        """Whether the request ``ex`` is this position."""
        if self.hello:
            return ex.kind == "hello"
        if self.bye or ex.kind == "hello" or ex.game != self.game:
            return False
        if self.hand is None:
            return True
        if ex.hand != self.hand:
            return False
        if self.pass_:
            return ex.kind == "pass"
        return ex.kind == "play" and ex.trick == self.trick

    def describe(self) -> str:
        """The position in words, e.g. ``"game 1 hand 2 trick 3"``."""
        if self.hello:
            return "the handshake"
        if self.bye:
            return "bye"
        text = f"game {self.game}"
        if self.hand is not None:
            text += f" hand {self.hand}"
            text += " pass" if self.pass_ else f" trick {self.trick}"
        return text


@dataclass(frozen=True)
class CheckSpec:
    """One check of a scenario: its name, what it is about, its position and
    the expectations on the request sent there."""

    name: str
    about: str
    at: At
    expect: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    """A scenario file, validated (see the scenarios README for the keys).

    ``deals``, ``passes`` and ``plays`` map hand number -> seat -> cards.
    """

    name: str
    path: Path
    about: str
    seat: int
    hands: int
    games: int
    seed: str
    checks: tuple[CheckSpec, ...]
    deals: dict[int, dict[int, list[str]]] = field(default_factory=dict)
    passes: dict[int, dict[int, list[str]]] = field(default_factory=dict)
    plays: dict[int, dict[int, list[str]]] = field(default_factory=dict)

    def key(self) -> MasterKey:
        """The scenario's key: public, from its seed text (``check:SEED``)."""
        return MasterKey.from_seed(f"check:{self.seed}")

    def deal(self, game: int, hand: int) -> tuple[str, tuple[int, int, int, int]]:
        """The deal's name and the four dealt card masks of a hand of ``game``.

        Seats listed in ``deals`` get their cards; the other cards, in the order
        of the deal the tournament algorithm makes for this hand, fill the
        other seats up to 13 cards in seat order (:func:`arena.core.rules.deal_with`
        under the scenario's table key; with no cards given, the tournament's
        own :func:`arena.core.rules.table_deal`).

        Raises:
            ValueError: the scenario gives a card twice or a seat over 13 cards (R2).
        """
        label = deal_name(self.deal_key(game), hand)
        table_key = self.key().table_key(str(game))
        given = self.deals.get(hand)
        if not given:
            return label, table_deal(table_key, hand)
        fixed = [mask_of_names(given.get(s, [])) for s in range(4)]
        return label, deal_with(fixed, str(hand), table_key)

    def deal_key(self, game: int) -> str:
        """The public name of ``game``'s deals: ``check:SEED:GAME``."""
        return f"check:{self.seed}:{game}"


# -- loading ------------------------------------------------------------------


def _card_list(value: Any, where: str, *, most: int = 13) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise ScenarioError(f"{where}: must be a list of card names")
    bad = [c for c in value if c not in CARD_NAMES]
    if bad:
        raise ScenarioError(f"{where}: not a card: {bad[0]!r}")
    if len(set(value)) != len(value):
        raise ScenarioError(f"{where}: a card is listed twice")
    if len(value) > most:
        raise ScenarioError(f"{where}: at most {most} cards, got {len(value)}")
    return list(value)


def _int(value: Any, where: str, low: int, high: int | None = None) -> int:
    if type(value) is not int or value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f"{low} or more"
        raise ScenarioError(f"{where}: must be an integer {span}, got {value!r}")
    return value


def _by_hand(data: Any, key: str, where: str, hands: int) -> dict[int, dict[int, list[str]]]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: key '{key}': must be a table of hands")
    out: dict[int, dict[int, list[str]]] = {}
    for hand_key, seats in data.items():
        hand = _int(int(hand_key) if str(hand_key).isdigit() else hand_key,
                    f"{where}: key '{key}.{hand_key}'", 1, hands)  # fmt: skip
        if not isinstance(seats, dict):
            raise ScenarioError(f"{where}: key '{key}.{hand_key}': must be a table of seats")
        out[hand] = {}
        for seat_key, cards in seats.items():
            name = f"{where}: key '{key}.{hand_key}.{seat_key}'"
            seat = _int(int(seat_key) if str(seat_key).isdigit() else seat_key, name, 0, 3)
            out[hand][seat] = _card_list(cards, name, most=13 if key == "deals" else 52)
    return out


def _at(data: Any, where: str, games: int, hands: int) -> At:
    if not isinstance(data, dict) or not data:
        raise ScenarioError(f"{where}: must be a table such as {{ hand = 1, trick = 2 }}")
    unknown = set(data) - _AT_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    if data.get("hello") or data.get("bye"):
        if (
            len(data) != 1
            or data.get("hello", True) is not True
            or data.get("bye", True) is not True
        ):
            raise ScenarioError(f"{where}: hello = true and bye = true stand alone")
        return At(hello=bool(data.get("hello")), bye=bool(data.get("bye")))
    game = _int(data.get("game", 1), f"{where}.game", 1, games)
    if "hand" not in data:
        if set(data) - {"game"}:
            raise ScenarioError(f"{where}: trick and pass need a hand")
        return At(game=game)
    hand = _int(data["hand"], f"{where}.hand", 1, hands)
    if data.get("pass"):
        if "trick" in data:
            raise ScenarioError(f"{where}: give either pass = true or a trick")
        return At(game=game, hand=hand, pass_=True)
    trick = _int(data.get("trick"), f"{where}.trick", 1, 13)
    return At(game=game, hand=hand, trick=trick)


def load_scenario(path: Path) -> Scenario:
    """Read and validate one scenario file.

    Raises:
        ScenarioError: the file is not TOML, or a key is unknown, missing or
            has a bad value; the message names the file and the key.
    """
    where = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    unknown = set(data) - _SCENARIO_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    stem = re.sub(r"^\d+[_-]", "", path.stem).replace("_", "-")
    seat = _int(data.get("seat"), f"{where}: key 'seat'", 0, 3)
    hands = _int(data.get("hands"), f"{where}: key 'hands'", 1, 50)
    games = _int(data.get("games", 1), f"{where}: key 'games'", 1, 10)
    seed = data.get("seed", stem)
    about = data.get("about", "")
    if not isinstance(seed, str) or not isinstance(about, str):
        raise ScenarioError(f"{where}: keys 'seed' and 'about' must be text")
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ScenarioError(f"{where}: key 'checks': give at least one [[checks]] table")
    checks = []
    for i, raw in enumerate(raw_checks):
        at_where = f"{where}: key 'checks[{i}]'"
        if not isinstance(raw, dict):
            raise ScenarioError(f"{at_where}: must be a table")
        unknown = set(raw) - _CHECK_KEYS
        if unknown:
            raise ScenarioError(f"{at_where}: unknown key '{sorted(unknown)[0]}'")
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ScenarioError(
                f"{at_where}.name: lower-case letters, digits and '-', got {name!r}"
            )
        expect = raw.get("expect", {})
        if not isinstance(expect, dict):
            raise ScenarioError(f"{at_where}.expect: must be a table")
        for key, value in expect.items():
            kind = EXPECT_KEYS.get(key)
            if kind is None:
                raise ScenarioError(f"{at_where}.expect: unknown key '{key}'")
            if type(value) is not kind:
                raise ScenarioError(f"{at_where}.expect.{key}: must be {kind.__name__}")
        checks.append(
            CheckSpec(
                name,
                str(raw.get("about", "")),
                _at(raw.get("at"), f"{at_where}.at", games, hands),
                dict(expect),
            )
        )
    if len({c.name for c in checks}) != len(checks):
        raise ScenarioError(f"{where}: two checks have one name")
    scenario = Scenario(
        name=stem,
        path=path,
        about=about,
        seat=seat,
        hands=hands,
        games=games,
        seed=seed,
        checks=tuple(checks),
        deals=_by_hand(data.get("deals"), "deals", where, hands),
        passes=_by_hand(data.get("passes"), "passes", where, hands),
        plays=_by_hand(data.get("plays"), "plays", where, hands),
    )
    for hand, seats in scenario.deals.items():
        cards = [c for s in seats.values() for c in s]
        if len(set(cards)) != len(cards):
            raise ScenarioError(f"{where}: key 'deals.{hand}': a card is dealt twice")
    for hand, seats in scenario.passes.items():
        for s, cards in seats.items():
            if len(cards) != 3:
                raise ScenarioError(f"{where}: key 'passes.{hand}.{s}': a pass is three cards")
            if s == seat:
                raise ScenarioError(f"{where}: key 'passes.{hand}.{s}': that is the bot's seat")
    for hand, seats in scenario.plays.items():
        if seat in seats:
            raise ScenarioError(f"{where}: key 'plays.{hand}.{seat}': that is the bot's seat")
    return scenario


def load_scenarios(extra: Iterable[Path] = ()) -> list[Scenario]:
    """The shipped scenarios, then those of each folder in ``extra``, each
    folder's ``*.toml`` files in name order.

    Raises:
        ScenarioError: a bad file, a missing folder, or two checks with one name.
    """
    files = sorted(SCENARIO_DIR.glob("*.toml"))
    for folder in extra:
        if not folder.is_dir():
            raise ScenarioError(f"scenario folder not found: {folder}")
        files.extend(sorted(folder.glob("*.toml")))
    scenarios = [load_scenario(f) for f in files]
    seen: dict[str, str] = {}
    for scn in scenarios:
        for check in scn.checks:
            if check.name in seen:
                raise ScenarioError(
                    f"{scn.path.name}: check {check.name!r} is also in {seen[check.name]}"
                )
            seen[check.name] = scn.path.name
    return scenarios


# -- expectations ---------------------------------------------------------------


def _suits(cards: Iterable[str]) -> set[str]:
    return {c[1] for c in cards}


def expectation_problems(
    expect: dict[str, Any], request: Message, passed_this_hand: bool
) -> list[str]:
    """What in ``request`` (the request sent at a check's position) differs
    from the scenario's ``expect`` table; empty when all hold."""
    legal: list[str] = request.get("legal", [])
    hand: list[str] = request.get("hand", [])
    actual: dict[str, Any] = {
        "direction": request.get("direction"),
        "legal": legal,
        "legal_count": len(legal),
        "leading": not request.get("trick"),
        "hearts_broken": request.get("hearts_broken"),
        "no_pass": not passed_this_hand,
    }
    problems = []
    for key, want in expect.items():
        if key in actual:
            ok = actual[key] == want
            got: Any = actual[key]
        elif key == "legal_suits":
            got = "".join(s for s in SUITS if s in _suits(legal))
            ok = _suits(legal) == set(want)
        elif key == "hand_suits":
            got = "".join(s for s in SUITS if s in _suits(hand))
            ok = _suits(hand) == set(want)
        elif key in ("legal_has", "holds"):
            pool = legal if key == "legal_has" else hand
            got = "".join(s for s in SUITS if s in _suits(pool))
            ok = set(want) <= _suits(pool)
        elif key in ("legal_lacks", "void"):
            pool = legal if key == "legal_lacks" else hand
            got = "".join(s for s in SUITS if s in _suits(pool))
            ok = not set(want) & _suits(pool)
        else:  # legal_excludes
            got = [c for c in want if c in legal]
            ok = not got
        if not ok:
            problems.append(f"{key} should be {want!r}, got {got!r}")
    return problems
