"""Leads its lowest heart whenever it leads after trick 1, broken or not (R9)."""

from botlib import reply, serve


def lead_hearts(msg, counts):
    hearts = [c for c in msg.get("hand", []) if c[1] == "H"]
    if msg["type"] == "play" and not msg["trick"] and msg["trick_number"] > 1 and hearts:
        reply(msg, card=hearts[0])
        return True
    return False


serve("leads-hearts", lead_hearts)
