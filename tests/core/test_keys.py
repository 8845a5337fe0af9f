"""The master key and its derivations (arena/core/keys.py, R2 deals in arena/core/rules.py)."""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

import pytest

from arena.core.keys import KEY_BYTES, BadKeyError, MasterKey
from arena.core.rules import deal_hands, shuffled_deck
from arena.tournament.runner import TournamentSettings, schedule_gauntlet, schedule_round_robin

DEALS_DOC = Path(__file__).resolve().parents[2] / "protocol" / "DEALS.md"


def _words(key: bytes, label: str):  # type: ignore[no-untyped-def]
    """The word stream of protocol/DEALS.md, written again from the text."""
    n = 0
    while True:
        block = hmac.new(key, (label + ":" + str(n)).encode(), hashlib.sha256).digest()
        for k in range(8):
            yield int.from_bytes(block[4 * k : 4 * k + 4], "big")
        n += 1


def _reference_deck(key: bytes, label: str) -> list[int]:
    words = _words(key, label)
    deck = list(range(52))
    for i in range(51, 0, -1):
        m = i + 1
        while (w := next(words)) >= 2**32 - 2**32 % m:
            pass
        j = w % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_r2_shuffle_matches_the_written_algorithm() -> None:
    """R2: the arena's shuffle is the one protocol/DEALS.md writes out, on many keys."""
    for n in range(300):
        key = hashlib.sha256(str(n).encode()).digest()
        assert shuffled_deck(key, str(n % 7)) == _reference_deck(key, str(n % 7))


def test_r2_rejection_sampling_is_exercised() -> None:
    """R2: some draws are rejected (the bias-free path runs): with m = 52 the
    limit is 2^32 - 2^32 mod 52, and a word above it must be skipped."""
    limit = 2**32 - 2**32 % 52
    assert limit < 2**32
    # The stream's 32-bit words are near-uniform; count how often the first
    # word of a deal would be rejected for m = 52 over many labels: rare but
    # the deck must still be a permutation whatever happens.
    key = b"k" * 32
    for n in range(2000):
        deck = shuffled_deck(key, str(n))
        assert sorted(deck) == list(range(52))


def test_deals_doc_vector_is_the_implementation() -> None:
    """protocol/DEALS.md's test vector is what the arena deals."""
    text = DEALS_DOC.read_text(encoding="utf-8")
    key = bytes(range(32))
    for seat, hand in enumerate(deal_hands("1", key)):
        from arena.core.cards import names_of

        assert " ".join(names_of(hand)) in text, f"seat {seat}'s cards are not in DEALS.md"
    master = MasterKey.from_seed(7)
    assert master.hex() in text
    assert master.table_key("r1-t0").hex() in text


def test_key_from_hex_round_trip_and_errors() -> None:
    key = MasterKey.generate()
    assert len(key.secret) == KEY_BYTES
    assert MasterKey.from_hex(key.hex() + "\n") == key
    with pytest.raises(BadKeyError, match="64 hexadecimal digits"):
        MasterKey.from_hex("abc")
    with pytest.raises(BadKeyError, match="hexadecimal"):
        MasterKey.from_hex("z" * 64)
    assert key.hex() not in repr(key)


def test_commitment_is_sha256_of_the_key() -> None:
    key = MasterKey.from_hex("00" * 32)
    assert key.commitment() == hashlib.sha256(bytes(32)).hexdigest()
    assert MasterKey.generate().commitment() != MasterKey.generate().commitment()


def test_subkeys_are_independent() -> None:
    """Domain separation: every use has its own key, none equal to the master
    key or to each other, and table keys differ per deal key."""
    key = MasterKey.generate()
    subs = {d: key.subkey(d) for d in ("deal", "bot", "ladder", "bootstrap")}
    assert len(set(subs.values())) == 4
    assert key.secret not in subs.values()
    assert key.table_key("r1-t0") != key.table_key("r1-t1") != key.table_key("r2-t0")
    assert len({key.draw_seed("ladder", str(b)) for b in range(100)}) == 100


def test_seed_keys_are_public_and_reproducible() -> None:
    assert MasterKey.from_seed(7) == MasterKey.from_seed("7")
    assert MasterKey.from_seed(7).seed == 7
    assert MasterKey.from_seed(7) != MasterKey.from_seed(8)
    expected = hmac.new(b"hearts-arena/2/seed", b"7", hashlib.sha256).digest()
    assert MasterKey.from_seed(7).secret == expected


def test_bot_seed_does_not_lead_back_to_the_key() -> None:
    """Attack 3 of issue 11: the old seeds were below 2^31 and a bot searched
    them from its own game_start seed. A drawn key is 256 bits; a bounded
    search of 2^16 seed keys (the whole old space takes 2^31; any bound finds
    a drawn key with odds of 2^-64 a seed) finds nothing, neither from a bot
    seed nor from the commitment, where the same search finds a seed key
    inside its bound (seed 40000) from either."""
    key = MasterKey.generate()
    target = key.bot_seeds("r1-t0-k0")[0]
    commitment = bytes.fromhex(key.commitment())
    seeded = MasterKey.from_seed(40000)
    seeded_target = seeded.bot_seeds("r1-t0-k0")[0]
    seeded_commitment = bytes.fromhex(seeded.commitment())
    found_seeded = []
    label = b"hearts-arena/2/bot"
    # hmac.digest: the same HMAC-SHA256 as hmac.new(...).digest(), in one C call
    # (the search takes a third of the time). The seeds compared as their
    # 8 bytes: a bot seed is those bytes' integer shifted right by one.
    digest, sha256 = hmac.digest, hashlib.sha256
    seed_label = b"hearts-arena/2/seed"
    found = []
    for s in range(2**16):
        master = digest(seed_label, str(s).encode(), "sha256")
        seed = int.from_bytes(digest(digest(master, label, "sha256"), b"r1-t0-k0:0", "sha256")[:8])
        hashed = sha256(master).digest()
        if seed >> 1 == target or hashed == commitment:
            found.append(s)
        if seed >> 1 == seeded_target:
            found_seeded.append(("bot seed", s))
        if hashed == seeded_commitment:
            found_seeded.append(("commitment", s))
    assert found == []
    assert found_seeded == [("bot seed", 40000), ("commitment", 40000)]
    # The fast path is the same function: it reproduces a seed key's bot seed.
    known = MasterKey.from_seed(99)
    raw = digest(digest(known.secret, label, "sha256"), b"r1-t0-k0:0", "sha256")[:8]
    assert int.from_bytes(raw) >> 1 == known.bot_seeds("r1-t0-k0")[0]
    # The commitment search works too: it finds a seed key from its commitment.
    seven = bytes.fromhex(MasterKey.from_seed(7).commitment())
    assert (
        hashlib.sha256(hmac.new(b"hearts-arena/2/seed", b"7", hashlib.sha256).digest()).digest()
        == seven
    )
    # The search itself works: it finds a seed key's bot seed.
    assert MasterKey.from_seed(12345).bot_seeds("r1-t0-k0")[0] == (
        int.from_bytes(
            hmac.new(
                hmac.new(MasterKey.from_seed(12345).secret, label, hashlib.sha256).digest(),
                b"r1-t0-k0:0",
                hashlib.sha256,
            ).digest()[:8]
        )
        >> 1
    )


def test_games_derive_from_their_identity_not_their_position() -> None:
    """Issue 14 item 3: a gauntlet's game r1-t3-k2 has the round-robin's deal
    key, table key and bot seeds (everything random comes from the game's id)."""
    names = ["a", "b", "c", "d", "e"]
    rr = {g.game_id: g for g in schedule_round_robin(names, TournamentSettings(seed=9))}
    gauntlet = schedule_gauntlet(
        names, TournamentSettings(seed=9, format="gauntlet", candidate="e")
    )
    assert {g.table for g in gauntlet} == {1, 2, 3, 4}
    for g in gauntlet:
        twin = rr[g.game_id]
        assert (g.deal_key, g.table_key, g.bot_seeds, g.seats) == (
            twin.deal_key,
            twin.table_key,
            twin.bot_seeds,
            twin.seats,
        )
        assert re.fullmatch(rf"r{g.round}-t{g.table}-k{g.rotation}", g.game_id)


def test_rotations_of_a_table_share_a_deal_and_tables_do_not() -> None:
    games = schedule_round_robin(list("abcde"), TournamentSettings(seed=1, rounds=2))
    keys: dict[tuple[int, int], set[bytes]] = {}
    for g in games:
        keys.setdefault((g.round, g.table), set()).add(g.table_key)
        assert g.deal_key == f"r{g.round}-t{g.table}"
    assert all(len(v) == 1 for v in keys.values())
    assert len({next(iter(v)) for v in keys.values()}) == len(keys)


def test_worker_settings_carry_no_key() -> None:
    settings = TournamentSettings(key=MasterKey.generate())
    stripped = settings.without_key()
    assert stripped.key is None and stripped.seed is None
    with pytest.raises(RuntimeError, match="no key"):
        stripped.master_key  # noqa: B018
    assert settings.to_json()["key_commitment"] == settings.master_key.commitment()
    assert settings.master_key.hex() not in str(settings.to_json())
