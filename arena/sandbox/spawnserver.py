"""The spawn server: a small process that starts an arena's bot processes
for it, so that each start forks this process (a few MiB) rather than the
arena's (hundreds of MiB in a test worker: the fork copies its page tables,
the child takes copy-on-write faults until ``exec``).

Started by :mod:`arena.sandbox.spawn` at an arena process's first bot start
(``python -S -m arena.sandbox.spawnserver ARENA_PID FD``, from the arena's
spawner thread), with one end of a ``SOCK_SEQPACKET`` socket pair as ``FD``.
It imports the standard library's small modules and
:mod:`arena.sandbox.childsetup`, nothing else of the package.

It asks the kernel for SIGKILL when the arena's spawner thread ends
(``PR_SET_PDEATHSIG``; it exits at once if the arena is already gone), so
it dies with the arena, and the sealed bots it started with it (bubblewrap's
``--die-with-parent``, whose parent is now this process's one thread). It
runs in a session of its own (a Ctrl-C at the arena's terminal does not
reach it) and exits when the arena closes its end of the socket.

Messages are pickled tuples, one per packet:

* arena to server: ``("start", N, StartRequest)`` with the child's three pipe
  ends, then the seccomp program's descriptor if any, passed as
  ``SCM_RIGHTS``; ``("reap", PID)`` once the arena is done with an exited bot
  (until then it stays a zombie: its pid and process group id cannot be reused);
* server to arena: ``("ready", PID)`` once; ``("started", N, PID)`` with the
  bot's pidfd, or ``("failed", N, OSError)``, the error ``subprocess`` raised,
  in request order; ``("exited", PID, RC)`` once the bot has exited (RC the
  return code, negative for a signal), read without reaping it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass

from arena.sandbox.childsetup import StartRequest, die_with_parent

#: Bytes of the largest request read (argv and environment; a sealed bot's
#: bubblewrap argv is some 10 KiB).
MAX_REQUEST: int = 1 << 20


@dataclass(slots=True)
class _Bot:
    popen: subprocess.Popen[bytes]
    pidfd: int
    exited: bool = False
    reap_asked: bool = False


def _send(sock: socket.socket, message: tuple[object, ...], fds: list[int] | None = None) -> None:
    data = pickle.dumps(message)
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def _start(sock: socket.socket, number: int, request: StartRequest, fds: list[int]) -> _Bot | None:
    """Start one bot; reply with its pid and pidfd, or with the error."""
    try:
        program = fds[3] if len(fds) > 3 else None
        popen = request.popen(fds[0], fds[1], fds[2], program)
    except Exception as exc:  # the OSError the arena's caller sees (a bad argv, cwd)
        try:
            _send(sock, ("failed", number, exc))
        except pickle.PicklingError:
            _send(sock, ("failed", number, OSError(f"{type(exc).__name__}: {exc}")))
        return None
    finally:
        for fd in fds:
            os.close(fd)
    pidfd = os.pidfd_open(popen.pid)  # not reaped before this loop does it: never ESRCH
    _send(sock, ("started", number, popen.pid), [pidfd])
    return _Bot(popen, pidfd)


def serve(sock: socket.socket) -> None:
    """Answer the arena's requests on ``sock`` until it closes its end."""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    bots: dict[int, _Bot] = {}
    by_pidfd: dict[int, int] = {}
    _send(sock, ("ready", os.getpid()))
    while True:
        for fd, _ in poller.poll():
            if fd != sock.fileno():
                pid = by_pidfd[fd]
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if info is None:
                    continue
                rc = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
                poller.unregister(fd)
                os.close(fd)
                del by_pidfd[fd]
                bot = bots[pid]
                bot.exited = True
                _send(sock, ("exited", pid, rc))
                if bot.reap_asked:
                    bot.popen.wait()
                    del bots[pid]
                continue
            data, fds, flags, _ = socket.recv_fds(sock, MAX_REQUEST, 8, socket.MSG_CMSG_CLOEXEC)
            if not data:
                return  # the arena closed its end
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise RuntimeError(f"request of over {MAX_REQUEST} bytes or {len(fds)} descriptors")
            message = pickle.loads(data)
            if message[0] == "start":
                bot_ = _start(sock, message[1], message[2], fds)
                if bot_ is not None:
                    bots[bot_.popen.pid] = bot_
                    by_pidfd[bot_.pidfd] = bot_.popen.pid
                    poller.register(bot_.pidfd, select.POLLIN)
            elif message[0] == "reap":
                found = bots.get(message[1])
                if found is not None and found.exited:
                    found.popen.wait()
                    del bots[message[1]]
                elif found is not None:
                    found.reap_asked = True


def main() -> int:
    """``python -m arena.sandbox.spawnserver ARENA_PID FD``: serve the arena
    whose pid is ``ARENA_PID`` on the socket ``FD``; 0 once it closed it (or
    was gone at the start)."""
    arena, fd = int(sys.argv[1]), int(sys.argv[2])
    die_with_parent(signal.SIGKILL)
    if os.getppid() != arena:  # it died before the request was made
        return 0
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    with sock, contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the arena ended
        serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
