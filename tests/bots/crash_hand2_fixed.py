"""crash_hand2.py with its crash fixed: plays as it does everywhere else (first legal card)."""

from botlib import serve

serve("crash_hand2")
