"""A seat that speaks the JSON-lines protocol (PROTOCOL.md) over a
:class:`~arena.seats.seat.Transport`: the one place where a bot's output is
framed into lines, held to the 64 KiB line cap, decoded, matched to its
request by ``id`` and judged (malformed, unsolicited floods, timeouts, a
closed output); and where the arena's messages are queued, written without
ever blocking, and capped (a bot that stops reading counts as crashed).

:class:`WireSeat` is shared by the bot process (pipes,
:class:`arena.seats.process.BotProcess`) and the in-memory bot
(:class:`arena.seats.memory.MemorySeat`): a fault produced through memory
under Trio's mock clock is the fault a process gets. Subclasses supply the
transport and the off-move hooks: taking and giving back a core (thaw,
freeze), the per-seat CPU clock, and why the bot's output or input ended.

Logging: every line sent is logged at DEBUG as ``<<`` and every line received
as ``>>``, prefixed with the seat's label (logger ``arena.seats.wire``).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Final

import trio

from arena.protocol import codec as protocol
from arena.protocol.faults import FaultKind
from arena.seats.capped import CappedBuffer
from arena.seats.seat import Message, Reply, Request, SeatStats, Transport

log = logging.getLogger(__name__)

#: Unread bytes queued for a bot that stopped reading before it counts as crashed.
MAX_OUTGOING_BYTES: Final = 4 * 1024 * 1024
#: Bytes read from a bot's output at most before a request is sent (lines the
#: bot wrote while no request was pending); the rest is read during the request.
MAX_PRE_REQUEST_READ: Final = 1024 * 1024
#: Bytes asked of the transport per read.
READ_CHUNK: Final = 65536
#: Least extension of a CPU-time deadline, in seconds (a bot that gets almost
#: no CPU is looked at again after this long, not in a tight loop).
MIN_EXTENSION: Final = 0.005
#: CPU time left, in seconds, below which a bot's CPU budget counts as used up.
BUDGET_SLACK: Final = 0.001


#: Under a pace, a request whose bot got its core within this many seconds
#: of the tick it was asked on is sent at once, not on the next tick (taking
#: a free core is not instant: the referee's own work, the lock files).
SEND_SLACK: Final = 0.02


def next_tick(
    origin: float, tick: float, now: float, *, first: int = 0, slack: float = 0.0
) -> float:
    """The first instant ``origin + k * tick`` (``k >= first``, an integer)
    at or after ``now - slack``, or ``now`` if that is later (within the
    slack); all in seconds of one clock (Trio time). The pace's ticks
    (``--pace``: :class:`arena.game.referee.RefereeSettings`)."""
    k = max(first, math.ceil((now - slack - origin) / tick - 1e-9))
    return max(now, origin + k * tick) if slack else origin + k * tick


def cpu_deadline(
    due: float,
    now: float,
    cpu_used: float,
    budget: float,
    cap: float,
    runnable: bool | None,
    looked: bool = False,
) -> float | None:
    """When a bot whose wall deadline ``due`` has come (Trio time ``now``)
    is due next under a CPU-time budget of ``budget`` seconds, having used
    ``cpu_used`` seconds of CPU since it was asked; ``None``: it is due now.

    * It used its budget (less :data:`BUDGET_SLACK`), or the wall cap
      ``cap`` (Trio time) has come: due now.
    * It is runnable (a thread running or waiting for a CPU; ``None``,
      cannot be told, counts as runnable): ``now`` plus the CPU it has left
      (at least :data:`MIN_EXTENSION`), at most ``cap``: it runs on one core
      at most, so it cannot use that much sooner.
    * Every thread asleep with CPU left: waiting on something else (its
      input, a sleep), or done, its reply in the pipe while the referee
      itself was kept from its core. ``now`` once (a last look at what it
      wrote: ``looked`` is false), then due.

    Before ``due``, ``due``: the budget never makes a deadline earlier (a
    bot that answers within its wall time is never late), only later, up
    to ``cap``: a bot the machine's other load kept from its core gets the
    CPU time it is owed.
    """
    if now < due:
        return due
    left = budget - cpu_used
    if left <= BUDGET_SLACK or now >= cap:
        return None
    if runnable is False:
        return None if looked else now
    return min(cap, now + max(left, MIN_EXTENSION))


class _OutputEnded(Exception):
    """The bot's output reached its end while a request waited (internal)."""


@dataclass(slots=True)
class _Line:
    obj: dict[str, Any] | None = None
    bad: str | None = None  # malformed line detail


class WireSeat:
    """The protocol side of a seat whose bot speaks JSON lines.

    Subclasses give the transport to ``__init__``, start
    :meth:`_write_loop` in a nursery of theirs (it finishes writes the
    transport could not take at once), and implement :meth:`_take_core`,
    :meth:`_release_core`, :meth:`_cpu_ns`, :meth:`_why_ended`,
    :meth:`thaw`, :meth:`freezer_state`, :meth:`abandon`,
    :meth:`renew_cpu_limit`, :meth:`close` and :attr:`label`; a seat whose
    bot has a memory bound also :meth:`_oom_kills`.

    Attributes:
        outgoing_cap: bytes queued for the bot, unread, beyond which it counts
            as crashed ("stopped reading its input"); default
            :data:`MAX_OUTGOING_BYTES`.
        cpu_budget: time limits count the bot's CPU time when the referee
            gives a wall cap (default ``True``; an in-memory bot's default is
            ``False``).
    """

    outgoing_cap: int = MAX_OUTGOING_BYTES
    #: Count a request's time limit in the bot's CPU time where a ``wall_cap``
    #: is given and :meth:`_cpu_ns` reads a clock (see :meth:`request`).
    cpu_budget: bool = True

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._input_open = True  # False once the arena closed the bot's input
        self._next_id = 0
        self._out = bytearray()  # encoded messages not yet written
        self._backlog = trio.Event()  # set when the transport was full
        self._input_closed = False
        self._absorbing: int | None = None  # id whose unsolicited burst is being skipped
        self._inbuf = bytearray()  # the start of a line not yet complete
        self._discarding = False  # inside an over-long line, dropping until its newline
        self._lines: list[_Line] = []  # lines read but not yet judged
        self._unsolicited = 0  # unsolicited lines during the pending request
        self._eof = False  # the output reached its end
        self._waiting: trio.CancelScope | None = None  # the pending request's scope
        self._io_nursery: trio.Nursery | None = None
        self.stderr = CappedBuffer()
        self.dead: str | None = None  # why the bot can no longer be used
        self.games_played: set[str] = set()  # deal keys of games played (never two from one deal)
        self.self_name: str | None = None
        self.stats = SeatStats()
        self.cpu_seconds = 0.0  # CPU seconds charged to requests so far
        self._oom_taken = 0  # memory kills already taken by game records

    @property
    def transport(self) -> Transport:
        """The transport to the bot."""
        return self._transport

    @property
    def label(self) -> str:  # pragma: no cover - overridden
        """The entrant's name, as faults and log lines name the seat."""
        raise NotImplementedError

    # -- hooks of the subclasses ------------------------------------------

    async def _take_core(self, pace: tuple[float, float] | None = None) -> None:
        """Before a request's clock starts: wait for a core, then (with
        ``pace``, see :meth:`request`) for the next tick, then thaw the bot."""
        raise NotImplementedError

    def _release_core(self, cpu_before: int | None) -> float | None:
        """After a request: freeze the bot (or lower it to idle priority),
        give the core back; return the CPU seconds it used since
        ``cpu_before`` (nanoseconds of :meth:`_cpu_ns`), if known."""
        raise NotImplementedError

    def _cpu_ns(self) -> int | None:
        """The bot's CPU clock in nanoseconds, or ``None`` where not measured."""
        raise NotImplementedError

    def _runnable(self) -> bool | None:
        """Whether the bot is running or waiting for a CPU now (not all
        asleep), or ``None`` where that cannot be told."""
        return None

    def _oom_kills(self) -> int:
        """Processes of the bot killed for its memory bound so far (0 where
        there is none)."""
        return 0

    def take_oom_kills(self) -> int:
        """Memory kills since the last call (:meth:`arena.seats.seat.Seat.take_oom_kills`)."""
        now = self._oom_kills()
        new = max(0, now - self._oom_taken)
        self._oom_taken = max(self._oom_taken, now)
        return new

    async def _why_ended(self, what: str) -> str:
        """Why the bot's ``what`` (``"output"`` or ``"input"``) ended: it
        exited (and how), or it closed that stream while still running."""
        raise NotImplementedError

    def _log_prefix(self) -> str:
        return self.label

    # -- dead ---------------------------------------------------------------

    def _gone(self, reason: str) -> None:
        """The bot can no longer answer: remember why and wake a pending request."""
        if self.dead is None:
            self.dead = reason
            if self._waiting is not None:
                self._waiting.cancel()

    # -- writing ------------------------------------------------------------

    async def _write_loop(self) -> None:
        """Write what :meth:`flush` could not write at once, when the transport has room."""
        transport = self._transport
        while self.dead is None:
            await self._backlog.wait()
            self._backlog = trio.Event()
            while self._out and self.dead is None:
                try:
                    await transport.wait_writable()
                except (trio.ClosedResourceError, OSError):
                    return
                self._write_now()

    def _write_now(self) -> None:
        try:
            n = self._transport.write_some(self._out)
        except BlockingIOError:
            n = 0
        except OSError:  # EPIPE: the bot closed its input or exited
            self._out.clear()
            if self._io_nursery is not None and not self._input_closed:
                self._input_closed = True
                self._io_nursery.start_soon(self._note_input_closed)
            return
        del self._out[:n]

    async def _note_input_closed(self) -> None:
        self._gone(await self._why_ended("input"))

    def flush(self) -> None:
        """Write queued messages now, as far as the transport takes them; the
        rest is written in the background as the bot reads. Never blocks."""
        if self._out and self._input_open:
            self._write_now()
            if self._out:
                self._backlog.set()

    def _send(self, message: dict[str, Any], data: bytes | None = None) -> None:
        if data is None:
            data = protocol.encode(message)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s << %s", self._log_prefix(), data[:500])
        if len(self._out) + len(data) > self.outgoing_cap:
            self._gone(f"stopped reading its input ({len(self._out)} bytes unread)")
            return
        self._out += data

    def notify(self, message: Message, data: bytes | None = None) -> None:
        """Queue a notification (no ``id``, no answer). Never blocks.

        Notifications are written together with the bot's next request (one
        write instead of several), or at the latest at the next :meth:`flush`.
        ``data`` is the message already encoded (:func:`protocol.encode`), when
        the same notification goes to several bots.
        """
        if self.dead is None:
            self._send(message, data)
        if self.stats.transcript is not None:
            self.stats.transcript.append({"t": trio.current_time(), "sent": message})

    # -- reading ------------------------------------------------------------

    def _frame(self, chunk: bytes) -> None:
        """Split bytes of the bot's output into lines (judged later), enforcing
        the 64 KiB line cap without keeping more than that in memory."""
        buf = self._inbuf
        cap = protocol.MAX_LINE_BYTES
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not self._discarding:
                    buf += chunk[start:]
                    if len(buf) > cap:
                        buf.clear()
                        self._discarding = True
                        self._lines.append(_Line(bad=f"line longer than {cap} bytes"))
                return
            if self._discarding:
                self._discarding = False
            else:
                if buf:
                    buf += chunk[start:nl]
                    line = bytes(buf)
                    buf.clear()
                else:
                    line = chunk[start:nl]
                if len(line) > cap:
                    self._lines.append(_Line(bad=f"line longer than {cap} bytes"))
                elif line.strip():
                    self._lines.append(self._decode(line))
            start = nl + 1

    def _decode(self, line: bytes) -> _Line:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s >> %s", self._log_prefix(), line[:500])
        try:
            return _Line(obj=protocol.decode_line(line))
        except protocol.ProtocolError as exc:
            return _Line(bad=exc.detail)

    def _read_ready(self) -> None:
        """Read what the output holds now without waiting (bounded)."""
        total = 0
        transport = self._transport
        while not self._eof and total < MAX_PRE_REQUEST_READ:
            chunk = transport.read_now(READ_CHUNK)
            if chunk is None:
                return
            if not chunk:
                self._eof = True
                return
            total += len(chunk)
            self._frame(chunk)

    async def _output_ended(self) -> str:
        """Why the output ended: the bot exited, or it closed its output."""
        return await self._why_ended("output")

    # -- talking ------------------------------------------------------------

    async def request(self, request: Request) -> Reply:
        """Send ``request`` (a :class:`~arena.seats.seat.Request`) and wait
        for its reply or a fault.

        ``request.time_limit`` seconds run from the sending (after the bot
        holds a core and, with ``request.pace``, on the next tick), or until
        ``request.deadline``; with ``request.wall_cap`` and a CPU clock
        (:attr:`cpu_budget`), the time limit is counted in the bot's CPU
        time: at ``time_limit`` of wall time a bot that has not used
        ``time_limit`` of CPU gets what it has left, up to ``wall_cap`` of
        wall time (:func:`cpu_deadline`). Without a CPU clock: wall time only.

        Returns:
            A :class:`Reply`; a reply that fails the schema, a malformed line,
            or too many unsolicited lines give ``malformed``; no valid reply in
            time gives ``timeout``; a dead bot gives ``crashed``. Never
            raises for the bot's behaviour. ``elapsed`` is counted from the
            request's sending.
        """
        kind, fields, time_limit = request.kind, request.fields, request.time_limit
        deadline, encoded, wall_cap = request.deadline, request.encoded, request.wall_cap
        self._next_id += 1
        rid = self._next_id
        start = trio.current_time()
        if self.dead is not None:
            return Reply(None, FaultKind.CRASHED, self.dead, 0.0, rid)
        # Lines that arrived while no request was pending: stale objects are
        # dropped; a malformed line is charged to this request (protocol/README.md).
        charged: str | None = None
        self._read_ready()
        if rid > 1:
            for event in self._lines:
                if event.bad is not None:
                    if charged is None:
                        charged = event.bad
                elif event.obj is not None and protocol.request_id_of(event.obj) == self._absorbing:
                    self._absorbing = None
            self._lines.clear()
        # else: the first request (the handshake) holds the bot's core from its
        # start: what it wrote while starting is judged as written during it.
        if self._eof and not self._lines:
            self._gone(await self._output_ended())
            return Reply(None, FaultKind.CRASHED, self.dead or "gone", 0.0, rid)
        # The clock starts once the bot holds a core and is thawed (arena.sandbox.cores).
        await self._take_core(request.pace)
        cpu_before = self._cpu_ns()
        try:
            start = trio.current_time()
            message = {"type": kind, "id": rid, **fields, "time_ms": int(time_limit * 1000)}
            if encoded is None:
                self._send(message)
            else:
                key, value, text = encoded
                data = protocol.encode(message)
                spliced = b"%s,%s:%s}\n" % (data[:-2], json.dumps(key).encode(), text.encode())
                self._send(message, spliced)
                message[key] = value
            self.flush()
            transcript = self.stats.transcript
            if transcript is not None:
                transcript.append({"t": start, "sent": message})
            due = start + time_limit if deadline is None else deadline
            budget: tuple[int, float] | None = None
            if wall_cap is not None and self.cpu_budget and cpu_before is not None:
                budget = (cpu_before, start + max(wall_cap, time_limit))
            reply = await self._await_reply(kind, rid, start, due, time_limit, charged, budget)
        finally:
            cpu = self._release_core(cpu_before)
        if cpu is not None:
            # Built directly: dataclasses.replace costs a field walk per request.
            reply = Reply(
                reply.message, reply.fault, reply.detail, reply.elapsed, reply.request_id, cpu
            )
            self.cpu_seconds += cpu
        self.stats.requests += 1
        if reply.message is not None and reply.elapsed > self.stats.slowest:
            self.stats.slowest = reply.elapsed
        if transcript is not None:
            entry: dict[str, Any] = {"t": trio.current_time(), "id": rid}
            if cpu is not None:
                entry["cpu_ms"] = round(cpu * 1000, 1)
            if reply.message is not None:
                entry["received"] = protocol.transcript_reply(reply.message)
            else:
                entry["fault"] = reply.fault.value if reply.fault else None
                entry["detail"] = reply.detail
            transcript.append(entry)
        return reply

    async def _await_reply(
        self,
        kind: str,
        rid: int,
        start: float,
        deadline: float,
        limit: float,
        charged: str | None,
        budget: tuple[int, float] | None = None,
    ) -> Reply:
        """Wait for request ``rid``'s reply until ``deadline`` (Trio time);
        with ``budget`` (``(cpu_ns at the start, wall cap in Trio time)``)
        the deadline is moved on while the bot has CPU time of ``limit``
        left (:func:`cpu_deadline`)."""
        if self.dead is not None:
            return Reply(None, FaultKind.CRASHED, self.dead, 0.0, rid)
        if charged is not None:
            return Reply(None, FaultKind.MALFORMED, f"before the request: {charged}", 0.0, rid)
        self._unsolicited = 0
        due = deadline
        cpu_used = 0.0
        looked = False  # the last look at an asleep bot's output was taken
        while True:
            with trio.CancelScope(deadline=due) as scope:
                self._waiting = scope
                try:
                    return await self._read_reply(kind, rid, start)
                except _OutputEnded:
                    pass
                finally:
                    self._waiting = None
            if budget is None or self._eof or self.dead is not None:
                break
            if not scope.cancelled_caught:  # pragma: no cover - ends only by EOF or cancel
                break
            cpu_now = self._cpu_ns()
            if cpu_now is None:
                break
            cpu_used = max(0, cpu_now - budget[0]) / 1e9
            now = trio.current_time()
            later = cpu_deadline(due, now, cpu_used, limit, budget[1], self._runnable(), looked)
            if later is None:
                break
            looked = later <= now
            due = later
        now = trio.current_time()
        if self._eof:
            # Waited as long as the transport waits for the bot's exit (a
            # process: EXIT_WAIT_SECONDS): a shorter wait here cut it when the
            # output ended near the deadline, and the crash was told as "gone".
            self._gone(await self._output_ended())
        if self.dead is not None:
            return Reply(None, FaultKind.CRASHED, self.dead, now - start, rid)
        if not scope.cancelled_caught:  # pragma: no cover - the loop only ends by EOF or cancel
            return Reply(None, FaultKind.CRASHED, "gone", now - start, rid)
        limit_ms = round(limit * 1000)
        detail = f"no reply within {limit_ms} ms"
        if due > deadline and not looked:
            cap = ", the wall-clock cap" if budget is not None and due >= budget[1] else ""
            detail = (
                f"no reply within {limit_ms} ms of CPU time (used {round(cpu_used * 1000)} ms "
                f"of CPU in {round((due - start) * 1000)} ms{cap})"
            )
        return Reply(None, FaultKind.TIMEOUT, detail, due - start, rid)

    async def _read_reply(self, kind: str, rid: int, start: float) -> Reply:
        """Read and judge the bot's lines until request ``rid``'s reply or a
        fault (returned), or the output's end (raises :class:`_OutputEnded`);
        runs inside the request's cancel scope (its deadline)."""
        read_before = False  # the last read returned bytes without waiting
        transport = self._transport
        while True:
            while self._lines:
                event = self._lines.pop(0)
                if event.bad is not None:
                    now = trio.current_time()
                    return Reply(None, FaultKind.MALFORMED, event.bad, now - start, rid)
                assert event.obj is not None
                if protocol.carries_id(event.obj, rid):
                    elapsed = trio.current_time() - start
                    try:
                        protocol.check_reply(kind, event.obj)
                    except protocol.ProtocolError as exc:
                        return Reply(None, FaultKind.MALFORMED, exc.detail, elapsed, rid)
                    return Reply(event.obj, None, "", elapsed, rid)
                if self._absorbing is not None:
                    # The rest of a burst that already cost an earlier
                    # request its reply: not counted again, up to that
                    # request's own (late) reply.
                    if protocol.request_id_of(event.obj) == self._absorbing:
                        self._absorbing = None
                    continue
                self._unsolicited += 1
                if self._unsolicited > protocol.MAX_UNSOLICITED:
                    self._absorbing = rid
                    detail = f"more than {protocol.MAX_UNSOLICITED} unsolicited lines"
                    now = trio.current_time()
                    return Reply(None, FaultKind.MALFORMED, detail, now - start, rid)
            if self._eof:
                raise _OutputEnded
            # Read without waiting (no stream lock); wait only when
            # the output is empty. A chunk judged without this
            # request's reply lets the deadline in before the next
            # read: a bot that floods its output faster than it is
            # read still times out.
            if read_before:
                await trio.lowlevel.checkpoint_if_cancelled()
            chunk = transport.read_now(READ_CHUNK)
            if chunk is None:
                read_before = False
                try:
                    await transport.wait_readable()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    self._eof = True
                continue
            read_before = True
            if chunk:
                self._frame(chunk)
            else:
                self._eof = True
            # After each read, as a stream's read does, the seats' other
            # tasks run (the stderr drain: a chatty bot must not fill its
            # pipe; its lines belong to this game's record); shielded, so
            # a reply that arrived is never turned into a timeout here.
            await trio.lowlevel.cancel_shielded_checkpoint()
