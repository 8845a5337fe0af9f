"""Shakes hands, then never answers a pass or play request (it keeps reading)."""

from botlib import serve

serve("never-answers", lambda msg, counts: msg["type"] != "hello")
