"""The tournament key and everything random that derives from it.

Pure: no I/O, no Trio. The algorithm is written out for other languages in
``protocol/DEALS.md``; this module is its reference implementation.

One 256-bit **master key** per tournament (:class:`MasterKey`): drawn fresh
from the operating system's random source unless the organiser gives one
(``--key-file``) or a public seed (``--seed S``, for reproducible runs whose
deals anyone who knows ``S`` can compute). Every random value of a
tournament is an HMAC-SHA256 of the master key, with domain separation:

* ``subkey("deal")``  -> one **table key** per deal key (``"r1-t3"``,
  ``"L17"``): ``HMAC(deal subkey, deal_key)``; the cards of hand ``h`` come
  from an HMAC stream under the table key driving a Fisher-Yates shuffle with
  rejection sampling (:func:`deal_hands`). A worker is given the table key
  of each game it plays, never the master key.
* ``subkey("bot")``   -> the ``seed`` each seat's bot gets in ``game_start``
  (:func:`bot_seeds`), from the game's identity (its id and the seat).
* ``subkey("ladder")`` -> a ladder's draws, per batch.
* ``subkey("bootstrap")`` -> the bootstrap of the report's intervals.

A value a bot is given (its bot seed, its cards) is an HMAC output: nothing
short of a search of the 2^256 keys leads back to the master key.

**Commit, then reveal**: the arena prints :meth:`MasterKey.commitment`
(SHA-256 of the key) when a run starts and writes the key itself into
``results.json`` only once every scheduled game is done, so anyone can
check afterwards (``hearts-arena verify``) that the deals were fixed before
the first card was played and not chosen as the games went.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Final

#: Bytes of a master key (256 bits).
KEY_BYTES: Final = 32
#: Prefix of every domain label, so no other use of HMAC-SHA256 collides.
DOMAIN: Final = "hearts-arena/2/"
#: The HMAC key that turns a public seed text into a master key.
SEED_LABEL: Final = b"hearts-arena/2/seed"


class BadKeyError(ValueError):
    """A key given by the user (``--key-file``, a revealed key) is malformed."""


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def _int63(digest: bytes) -> int:
    """The first 8 bytes of ``digest`` as a big-endian integer, shifted to 63 bits."""
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class MasterKey:
    """A tournament's master key (32 bytes). ``repr`` never shows it.

    Attributes:
        secret: the 32 key bytes.
        seed: the public seed it was made from (``--seed``), or ``None``
            for a secret key (drawn, or read from a key file); not compared.
    """

    secret: bytes
    seed: str | int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise BadKeyError(f"a master key has {KEY_BYTES} bytes, got {len(self.secret)}")

    def __repr__(self) -> str:
        return f"MasterKey(commitment={self.commitment()[:16]}..., seed={self.seed!r})"

    @classmethod
    def generate(cls) -> MasterKey:
        """A fresh secret key from the operating system's random source."""
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def from_seed(cls, seed: str | int) -> MasterKey:
        """The key of a public seed: ``HMAC-SHA256(key="hearts-arena/2/seed",
        message=UTF-8 seed text)``. Anyone who knows the seed knows every deal."""
        text = str(seed)
        return cls(hmac.new(SEED_LABEL, text.encode("utf-8"), hashlib.sha256).digest(), seed)

    @classmethod
    def from_hex(cls, text: str) -> MasterKey:
        """A key written as 64 hexadecimal digits (surrounding white space ignored).

        Raises:
            BadKeyError: not 64 hexadecimal digits.
        """
        text = text.strip()
        if len(text) != 2 * KEY_BYTES:
            raise BadKeyError(
                f"a key is {2 * KEY_BYTES} hexadecimal digits, got {len(text)} characters"
            )
        try:
            return cls(bytes.fromhex(text))
        except ValueError:
            raise BadKeyError("a key is written in hexadecimal digits (0-9, a-f)") from None

    def hex(self) -> str:
        """The key as 64 lowercase hexadecimal digits (what ``results.json`` reveals)."""
        return self.secret.hex()

    def commitment(self) -> str:
        """SHA-256 of the key bytes, 64 hexadecimal digits: printed at the start,
        revealing nothing of the key."""
        return hashlib.sha256(self.secret).hexdigest()

    def subkey(self, domain: str) -> bytes:
        """``HMAC-SHA256(master, "hearts-arena/2/" + domain)``: independent keys
        for independent uses (``"deal"``, ``"bot"``, ``"ladder"``, ``"bootstrap"``)."""
        return _hmac(self.secret, DOMAIN + domain)

    def table_key(self, deal_key: str) -> bytes:
        """The key of every hand dealt under ``deal_key`` (32 bytes):
        ``HMAC(subkey("deal"), deal_key)``."""
        return _hmac(self.subkey("deal"), deal_key)

    def bot_seeds(self, game_id: str) -> tuple[int, int, int, int]:
        """The ``game_start`` seeds of the four seats of game ``game_id``:
        ``HMAC(subkey("bot"), f"{game_id}:{seat}")``, first 8 bytes, 63 bits.
        They depend on the game's identity only, never on a position in a schedule."""
        key = self.subkey("bot")
        s0, s1, s2, s3 = (_int63(_hmac(key, f"{game_id}:{seat}")) for seat in range(4))
        return s0, s1, s2, s3

    def draw_seed(self, domain: str, label: str) -> int:
        """A 63-bit integer for seeding a generator (a ladder batch, the bootstrap):
        ``HMAC(subkey(domain), label)``, first 8 bytes, 63 bits."""
        return _int63(_hmac(self.subkey(domain), label))
