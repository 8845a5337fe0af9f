"""A cheating bot for the audit's tests and benchmark: a policy of ``cheatlib.py``
over the protocol. Needs ``--no-sandbox`` (it imports the arena from the checkout
and, for ``memory`` and ``partner``, shares files with its other processes).

argv: BUDGET KIND [ARGS...]: ``honest``, ``clairvoyant PUBLIC_SEED``,
``memory FOLDER``, ``partner FOLDER ALLY,ALLY`` (see cheatlib).
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cheatlib


def main() -> None:
    budget = int(sys.argv[1])
    policy = cheatlib.make(sys.argv[2], sys.argv[3:], budget)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        answer: dict[str, object] | None = None
        if kind == "bye":
            return
        if kind == "game_start":
            policy.start(msg)
        elif kind == "trick":
            policy.trick(msg)
        elif kind == "hand_end":
            policy.hand_end(msg)
        elif kind == "hello":
            answer = {"name": f"cheat-{sys.argv[2]}"}
        elif kind == "pass":
            answer = {"cards": policy.pass_(msg)}
        elif kind == "play":
            answer = {"card": policy.play(msg)}
        if answer is not None and "id" in msg:
            sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
