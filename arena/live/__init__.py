"""The spectator's view of a tournament (``run --live``, ``watch --live``).

* :mod:`arena.game.feed`: in the processes that play games, folds the
  referee's public events (:data:`arena.game.referee.EventSink`) into one small
  state per table and sends the latest state of each table, at most ten
  times a second, over a bounded queue that never blocks the referee.
* :mod:`arena.live.hub`: in the server, the view's state: tables in play
  (from the feed), finished games and standings (from ``games.jsonl``, as it
  grows), held back by ``--live-delay``, hidden hands only once every game of
  their deal is finished.
* :mod:`arena.live.server`: the web page and its server-sent events
  (Starlette on Hypercorn's Trio worker).

The ``--live`` options and ``watch`` are in :mod:`arena.cli.live`. May
import: every layer up to :mod:`arena.report`; never :mod:`arena.cli`.
"""
