"""A control group per bot process: what binds, freezes, counts and kills
everything a bot started, children in new sessions included.

The machine decides where each facility comes from; :func:`probe` finds out
once per process by trying (never assuming that root means writable):

* **freezing** (bots not on move are stopped), **killing** and **CPU
  accounting**: a writable cgroup2 (``cgroup.freeze``, ``cgroup.kill``,
  ``cpu.stat``; these exist in every non-root cgroup2 group, even with no
  controller enabled), else the v1 ``freezer`` and ``cpuacct`` hierarchies;
  without ``cgroup.kill``, every pid of the group is killed until none is left.
* **memory** and **processes** for the bot as a whole: cgroup2 where its
  ``cgroup.controllers`` lists ``memory`` / ``pids`` and they can be enabled
  for our groups, otherwise the v1 ``memory`` / ``pids`` hierarchies.
* **one core for the bot on move** (:mod:`arena.sandbox.cores`): the CPU controller
  (a CFS quota of one core, the highest weight on move, the lowest for a
  pondering bot off move) and the cpuset controller (pinned to the core of its
  token), from cgroup2 where enabled, else v1 ``cpu`` and ``cpuset``. The
  referee itself moves to ``<base>/referees``, above the machine's other
  load but below a bot on move (:func:`prioritize_self`,
  :data:`WEIGHT_REFEREES`): it keeps the clocks; it moves back when its
  command ends (:func:`leave_referees`).

Layout, in each hierarchy used: ``<the arena's own group>/hearts-arena/<run>/<bot>``,
where ``<run>`` and ``<bot>`` are random hex tokens (opaque names) and every
folder is mode 0700, owned by the arena's user: a bot running as another uid
can neither leave its group nor touch another's. A run's folders
(:meth:`RunGroups.dirs`) are recorded in the output folder so that
``--resume`` and ``hearts-arena cleanup`` remove what a killed arena left
(:func:`remove_run_dirs`).

A bot process joins its group in the child, after ``fork`` and before
``exec`` *and* before the uid is dropped (:meth:`BotGroup.join_self`, called by
:mod:`arena.sandbox.spawn`), so nothing it runs is ever outside the group.

Units: CPU time in **nanoseconds** (:meth:`BotGroup.cpu_ns`); memory in bytes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from arena.sandbox.childsetup import join_groups

#: Name of the folder holding the arena's groups under its own group.
BASE_NAME: Final = "hearts-arena"
#: The key of the cgroup2 hierarchy in :attr:`Plan.bases` (v1 ones go by controller).
UNIFIED: Final = "unified"
_V1_USED: Final = ("freezer", "cpuacct", "cpu", "cpuset", "memory", "pids")
#: CPU weight of a bot on move (cgroup2 ``cpu.weight``, v1 ``cpu.shares``): the
#: highest, so that other load on the machine does not eat into its clock.
WEIGHT_ON_MOVE: Final = {"v2": "10000", "v1": "262144"}
#: ... and of a pondering bot off move (``--ponder``): the lowest, idle CPU only.
WEIGHT_OFF_MOVE: Final = {"v2": "1", "v1": "2"}
#: ... and of the referees' group (every arena's referee and its workers):
#: a sixteenth of a bot on move, so that a busy referee (this arena's, or
#: another's on the same machine) takes at most about 6% of the core of a
#: bot on move, yet still far above the machine's other load (its group sits
#: beside the runs' groups, under the arena's base at the highest weight).
#: Measured: four bots needing 0.9 of a 250 ms budget, next to an arena of
#: four instant bots, timed out 25 and 5 of 448 times at a referee weight
#: equal to a bot on move, 1 and 1 of 448 at this one.
WEIGHT_REFEREES: Final = {"v2": "625", "v1": "16384"}
#: CFS period in microseconds; a bot's quota is one period per period: one core.
CPU_PERIOD_US: Final = 100_000


class CgroupError(OSError):
    """A group could not be created or set up."""


@dataclass(frozen=True)
class Plan:
    """Where each facility comes from on this machine (see :func:`probe`).

    Attributes:
        bases: folder holding the arena's groups (``.../hearts-arena``) per
            hierarchy used: ``"unified"`` for cgroup2, else the v1 controller name.
        freeze, kill, cpu, memory, pids, share: the key of :attr:`bases`
            providing the facility, or ``""`` where this machine offers none
            (``kill`` is then done by signalling each pid found in the group).
            ``cpu`` is CPU accounting; ``share`` is the CPU controller: at
            most one core per bot (a CFS quota), and the highest weight while
            on move; ``cpuset`` pins a bot on move to the core of its token.
        notes: why a facility is missing, one short phrase each.
    """

    bases: dict[str, Path] = field(default_factory=dict)
    freeze: str = ""
    kill: str = ""
    cpu: str = ""
    memory: str = ""
    pids: str = ""
    share: str = ""
    cpuset: str = ""
    notes: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Whether bots get a group at all (any hierarchy is usable)."""
        return bool(self.bases)

    def describe(self, memory_mb: int, processes: int) -> str:
        """One line saying where each bound comes from and what is not enforced here."""

        def where(key: str, what: str) -> str:
            if not key:
                return ""
            if key == UNIFIED:
                return f"cgroup2 {what}"
            return f"cgroup v1 {key}"

        parts = []
        missing = []
        if memory_mb:
            src = where(self.memory, "memory.max")
            if src:
                parts.append(f"memory {memory_mb} MiB per bot ({src})")
            else:
                parts.append(f"memory {memory_mb} MiB per process (RLIMIT_AS)")
                missing.append("memory per bot")
        if self.pids:
            parts.append(f"{processes} processes per bot ({where(self.pids, 'pids.max')})")
        else:
            missing.append("processes per bot (only RLIMIT_NPROC per uid)")
        if self.freeze:
            parts.append(f"freezing ({where(self.freeze, 'cgroup.freeze')})")
        else:
            missing.append("freezing bots off move")
        if self.kill:
            parts.append(f"kill ({where(self.kill, 'cgroup.kill')})")
        elif self.usable:
            parts.append("kill (every pid of the group)")
        if self.cpu:
            parts.append(f"CPU time ({where(self.cpu, 'cpu.stat')})")
        else:
            missing.append("CPU time per bot")
        if self.share:
            parts.append(f"one core per bot, first on move ({where(self.share, 'cpu.max')})")
        else:
            missing.append("one core per bot and priority on move")
        if self.cpuset:
            parts.append(f"pinned to its core ({where(self.cpuset, 'cpuset.cpus')})")
        else:
            missing.append("pinning a bot to its core")
        if not self.usable:
            missing.append("a group per bot")
        text = "bot groups: " + ", ".join(parts)
        text += "; not enforced here: " + (", ".join(missing) if missing else "nothing")
        if self.notes:
            text += f" ({'; '.join(self.notes)})"
        return text


# -- probing -------------------------------------------------------------------


@dataclass(frozen=True)
class _Mount:
    version: int  # 1 or 2
    controllers: frozenset[str]
    root: str  # the mount's root inside the hierarchy
    point: Path


def _mounts(mountinfo: str) -> list[_Mount]:
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        rfields = right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        fstype, superopts = rfields[0], rfields[2]
        point = Path(fields[4].replace("\\040", " "))
        if fstype == "cgroup2":
            out.append(_Mount(2, frozenset(), fields[3], point))
        elif fstype == "cgroup":
            ctrls = frozenset(o for o in superopts.split(",") if o in _V1_USED)
            if ctrls:
                out.append(_Mount(1, ctrls, fields[3], point))
    return out


def _own_groups(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller or "unified": path}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            out[UNIFIED] = parts[2]
        else:
            for c in parts[1].split(","):
                out[c] = parts[2]
    return out


#: Where :func:`prioritize_self` puts a referee, below its arena's own group.
REFEREES: Final = "referees"


def _outside_referees(path: str) -> str:
    """``path`` (a group in ``/proc/self/cgroup``) without a trailing
    ``/hearts-arena/referees``: a process in the referees' group (a worker
    process of ``--jobs``, which inherits it) keeps its bots' groups, and the
    referees' group, where the arena that moved there keeps them (not nested
    in ``referees``, where a run's record would not find them)."""
    tail = f"/{BASE_NAME}/{REFEREES}"
    if path == tail or path.endswith(tail):
        return path[: -len(tail)] or "/"
    return path


def _group_dir(mount: _Mount, path: str) -> Path:
    rel = path
    if mount.root != "/" and (path == mount.root or path.startswith(mount.root + "/")):
        rel = path[len(mount.root) :]
    return mount.point / rel.lstrip("/")


def _write(path: Path | str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path: Path | str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _make_dir(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    os.chmod(path, 0o700)


def _try_join(groups: dict[str, Path]) -> dict[str, Path]:
    """The groups a short-lived child can be moved into (really tried)."""
    ok: dict[str, Path] = {}
    try:
        child = subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL)
    except OSError:
        return ok
    try:
        for key, d in groups.items():
            try:
                _write(d / "cgroup.procs", str(child.pid))
                if str(child.pid) in _read(d / "cgroup.procs").split():
                    ok[key] = d
            except OSError:
                continue
    finally:
        child.kill()
        child.wait()
    return ok


def _enable_v2(parent: Path, wanted: Sequence[str]) -> list[str]:
    """Enable ``wanted`` controllers for ``parent``'s children; the ones enabled."""
    try:
        available = _read(parent / "cgroup.controllers").split()
    except OSError:
        return []
    enabled = []
    for c in wanted:
        if c not in available:
            continue
        with contextlib.suppress(OSError):
            _write(parent / "cgroup.subtree_control", f"+{c}")
        with contextlib.suppress(OSError):
            if c in _read(parent / "cgroup.subtree_control").split():
                enabled.append(c)
    return enabled


def probe_plan(
    mountinfo: str | None = None, own: str | None = None, *, allow_v1: bool = True
) -> Plan:
    """Find, by trying, which facilities this process can use (uncached; see :func:`probe`).

    Args:
        mountinfo: the text of ``/proc/self/mountinfo`` (read if ``None``).
        own: the text of ``/proc/self/cgroup`` (read if ``None``).
        allow_v1: also use cgroup v1 hierarchies (tests turn it off).

    Never raises: what cannot be used is left out and noted.
    """
    notes: list[str] = []
    try:
        mountinfo = mountinfo if mountinfo is not None else _read("/proc/self/mountinfo")
        own = own if own is not None else _read("/proc/self/cgroup")
    except OSError as exc:
        return Plan(notes=(f"cannot read /proc: {exc.strerror}",))
    groups = _own_groups(own)
    bases: dict[str, Path] = {}
    unified_ctrls: list[str] = []
    for m in _mounts(mountinfo):
        if m.version == 2 and UNIFIED not in bases and UNIFIED in groups:
            base = _group_dir(m, _outside_referees(groups[UNIFIED])) / BASE_NAME
            try:
                if not (base.parent / "cgroup.procs").exists():
                    continue
                _enable_v2(base.parent, ("memory", "pids", "cpu", "cpuset"))
                _make_dir(base)
                unified_ctrls = _enable_v2(base, ("memory", "pids", "cpu", "cpuset"))
                bases[UNIFIED] = base
            except OSError as exc:
                notes.append(f"cgroup2 not writable: {exc.strerror}")
        elif m.version == 1 and allow_v1:
            for c in sorted(m.controllers):
                if c in bases or c not in groups:
                    continue
                base = _group_dir(m, _outside_referees(groups[c])) / BASE_NAME
                try:
                    _make_dir(base)
                    if c == "cpuset":
                        _init_cpuset(base)
                    bases[c] = base
                except OSError as exc:
                    notes.append(f"cgroup v1 {c} not writable: {exc.strerror}")
    # Try a real group in each: its files, its limits, and joining it.
    token = "probe-" + secrets.token_hex(6)
    made: dict[str, Path] = {}
    for key, base in bases.items():
        d = base / token
        try:
            if d not in made.values():  # "cpu,cpuacct" mounted together: one folder
                d.mkdir(mode=0o700)
            if key == "cpuset":
                _init_cpuset(d)
            made[key] = d
        except OSError as exc:
            notes.append(f"cannot create a group in {base}: {exc.strerror}")
    joined = _try_join(made)
    for key in made:
        if key not in joined:
            notes.append(f"cannot move a process into {bases[key]}")
    usable = {k: bases[k] for k in joined}

    def has(key: str, name: str, value: str | None = None) -> bool:
        d = made.get(key)
        if key not in usable or d is None or not (d / name).exists():
            return False
        if value is None:
            return True
        try:
            _write(d / name, value)
        except OSError:
            return False
        return True

    freeze = UNIFIED if has(UNIFIED, "cgroup.freeze", "0") else ""
    freeze = freeze or ("freezer" if has("freezer", "freezer.state", "THAWED") else "")
    kill = UNIFIED if has(UNIFIED, "cgroup.kill") else ""
    cpu = (
        UNIFIED
        if has(UNIFIED, "cpu.stat")
        else ("cpuacct" if has("cpuacct", "cpuacct.usage") else "")
    )
    memory = UNIFIED if "memory" in unified_ctrls and has(UNIFIED, "memory.max", "max") else ""
    memory = memory or ("memory" if has("memory", "memory.limit_in_bytes", "-1") else "")
    pids = UNIFIED if "pids" in unified_ctrls and has(UNIFIED, "pids.max", "max") else ""
    pids = pids or ("pids" if has("pids", "pids.max", "max") else "")
    share = UNIFIED if "cpu" in unified_ctrls and has(UNIFIED, "cpu.max", "max") else ""
    share = share or ("cpu" if has("cpu", "cpu.cfs_quota_us", "-1") else "")
    cpuset = UNIFIED if "cpuset" in unified_ctrls and has(UNIFIED, "cpuset.cpus") else ""
    cpuset = cpuset or ("cpuset" if has("cpuset", "cpuset.cpus") else "")
    for d in made.values():
        _remove_dir(d)
    used = {k for k in (freeze, kill, cpu, memory, pids, share, cpuset) if k}
    if freeze == UNIFIED or kill == UNIFIED or cpu == UNIFIED:
        used.add(UNIFIED)
    return Plan(
        bases={k: v for k, v in usable.items() if k in used},
        freeze=freeze,
        kill=kill,
        cpu=cpu,
        memory=memory,
        pids=pids,
        share=share,
        cpuset=cpuset,
        notes=tuple(notes),
    )


_PLAN: Plan | None = None


def probe() -> Plan:
    """:func:`probe_plan` once per process (cached). Set ``HEARTS_ARENA_NO_CGROUPS=1``
    to use none (then only the per-process limits bind)."""
    global _PLAN
    if _PLAN is None:
        if os.environ.get("HEARTS_ARENA_NO_CGROUPS") == "1":
            _PLAN = Plan(notes=("HEARTS_ARENA_NO_CGROUPS=1",))
        else:
            _PLAN = probe_plan()
    return _PLAN


# -- groups --------------------------------------------------------------------


#: Guards the first opening of a :class:`_KeptFile` (a group is also thawed
#: and killed from a worker thread when its bot is closed).
_OPEN_GUARD: Final = threading.Lock()


class _KeptFile:
    """A control-group file a bot's group writes or reads at every decision
    (``cgroup.freeze``, ``cpu.stat``, the CPU weight, ``cpuset.cpus``), opened
    once (close-on-exec) and then written or read at offset 0 with one system
    call: no path lookup, no open and close per decision (issue 16: these
    were a third of the referee's CPU time with ``--ponder``).

    The kernel's control-group files take each ``pwrite`` as a whole new
    value and regenerate their text for each ``pread`` at offset 0. Once the
    group is removed, both raise :class:`OSError` (``ENODEV``), as opening
    its path would (``ENOENT``). An opening that fails is tried again at the
    next use.
    """

    __slots__ = ("fd", "flags", "path")

    def __init__(self, path: str, flags: int) -> None:
        self.path = path
        self.flags = flags
        self.fd = -1

    def _open(self) -> int:
        with _OPEN_GUARD:
            if self.fd < 0:
                self.fd = os.open(self.path, self.flags | os.O_CLOEXEC)
            return self.fd

    def write(self, data: bytes) -> None:
        """Write ``data`` as the file's new value.

        Raises:
            OSError: the file cannot be opened or refuses the value.
        """
        os.pwrite(self.fd if self.fd >= 0 else self._open(), data, 0)

    def read(self, size: int = 4096) -> bytes:
        """The file's current text, at most ``size`` bytes.

        Raises:
            OSError: the file cannot be opened or read.
        """
        return os.pread(self.fd if self.fd >= 0 else self._open(), size, 0)

    def close(self) -> None:
        """Close the descriptor, if open; idempotent."""
        with _OPEN_GUARD:
            fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class RunGroups:
    """The groups of one run: ``<base>/<token>`` in each hierarchy of ``plan``.

    Args:
        plan: from :func:`probe`.
        token: the run's opaque name (hex); every worker process of a run
            uses the same, so one folder per hierarchy holds the whole run.
    """

    def __init__(self, plan: Plan, token: str) -> None:
        if not token.isalnum():
            raise ValueError("a run token is letters and digits")
        self.plan = plan
        self.token = token

    def dirs(self) -> list[Path]:
        """The run's folders, one per hierarchy (what a run records)."""
        return [base / self.token for base in self.plan.bases.values()]

    def create(self, memory_bytes: int = 0, pids: int = 0) -> BotGroup:
        """A new group for one bot process, with its limits set.

        Args:
            memory_bytes: memory of the whole bot (0: no bound).
            pids: processes and threads of the whole bot (0: no bound).

        Raises:
            CgroupError: a folder could not be made or a limit not set.
        """
        plan = self.plan
        name = secrets.token_hex(8)
        dirs: dict[str, Path] = {}
        try:
            for key, base in plan.bases.items():
                run = base / self.token
                d = run / name
                # The run's folder is removed when it empties, by this or another
                # worker process, at any moment of this: start again then.
                for attempt in range(5):
                    try:
                        if not run.is_dir():
                            self._make_run_dir(key, base, run)
                        if key == plan.share:  # the bots' weight counts against others' only so
                            _set_weight(base, True)
                            _set_weight(run, True)
                        if d in dirs.values():  # "cpu,cpuacct" mounted together: one folder
                            break
                        d.mkdir(mode=0o700)
                        break
                    except FileNotFoundError:
                        if attempt == 4:
                            raise
                if key == "cpuset":
                    _init_cpuset(d)
                dirs[key] = d
            group = BotGroup(plan, dirs)
            group.set_limits(memory_bytes, pids)
        except OSError as exc:
            for d in dirs.values():
                _remove_dir(d)
            raise CgroupError(exc.errno, f"cannot set up a bot group: {exc.strerror}") from None
        return group

    def _make_run_dir(self, key: str, base: Path, run: Path) -> None:
        plan = self.plan
        _make_dir(run)
        if key == UNIFIED:
            wanted = [c for c in ("memory", "pids") if getattr(plan, c) == key]
            wanted += ["cpu"] if plan.share == key else []
            _enable_v2(run, wanted + (["cpuset"] if plan.cpuset == key else []))
        if key == "cpuset":
            _init_cpuset(run)


@dataclass(frozen=True)
class MemoryHeld:
    """What a bot's memory group held, in bytes (its ``memory.stat``).

    Attributes:
        anon: anonymous memory (the heap and stacks of its processes).
        tmpfs: shared memory: files in its ``/tmp`` and ``/dev/shm`` (tmpfs)
            and other shared mappings.
        cache: page cache of ordinary files it read or wrote.
    """

    anon: int
    tmpfs: int
    cache: int

    def describe(self, limit: int = 0) -> str:
        """``"5 MiB anonymous (...), 57 MiB tmpfs (...), 0 MiB page cache"``;
        with ``limit`` (the bound, bytes), also the MiB of it not found (freed
        before the group was read) when that is over a tenth of it."""
        mib = 1 << 20
        text = (
            f"{self.anon // mib} MiB anonymous (its processes' heap and stacks), "
            f"{self.tmpfs // mib} MiB tmpfs (files in /tmp and /dev/shm), "
            f"{self.cache // mib} MiB page cache"
        )
        missing = limit - self.anon - self.tmpfs - self.cache
        if limit and missing > limit // 10:
            text += f" ({missing // mib} MiB more already freed when read)"
        return text


class BotGroup:
    """One bot process's group, in every hierarchy of the plan.

    ``join_self`` runs in the child before ``exec``; the other methods in the
    arena. Methods that read or write the group never raise for a group that
    is already gone (they return ``None``, ``0`` or nothing).
    """

    def __init__(self, plan: Plan, dirs: dict[str, Path]) -> None:
        self.plan = plan
        self.dirs = dirs
        #: The ``cgroup.procs`` files to join, as plain strings (used after fork).
        self.procs_files: tuple[str, ...] = tuple(
            dict.fromkeys(str(d / "cgroup.procs") for d in dirs.values())
        )
        self.frozen = False
        self._pinned: int | None = None
        self._on_move: bool | None = None  # the weight last written (None: unknown)
        # The files written and read at every decision, kept open (see _KeptFile).
        fd_ = self._dir(plan.freeze)
        self._freeze_file = (
            None
            if fd_ is None
            else _KeptFile(
                str(fd_ / ("cgroup.freeze" if plan.freeze == UNIFIED else "freezer.state")),
                os.O_WRONLY,
            )
        )
        self._frozen_text, self._thawed_text = (
            (b"1", b"0") if plan.freeze == UNIFIED else (b"FROZEN", b"THAWED")
        )
        cd_ = self._dir(plan.cpu)
        self._cpu_file = (
            None
            if cd_ is None
            else _KeptFile(
                str(cd_ / ("cpu.stat" if plan.cpu == UNIFIED else "cpuacct.usage")), os.O_RDONLY
            )
        )
        sd_ = self._dir(plan.share)
        version = "v2" if plan.share == UNIFIED else "v1"
        self._weight_text = (
            WEIGHT_ON_MOVE[version].encode(),
            WEIGHT_OFF_MOVE[version].encode(),
        )
        self._weight_file = (
            None
            if sd_ is None
            else _KeptFile(
                str(sd_ / ("cpu.weight" if plan.share == UNIFIED else "cpu.shares")), os.O_WRONLY
            )
        )
        pd_ = self._dir(plan.cpuset)
        self._cpuset_file = (
            None if pd_ is None else _KeptFile(str(pd_ / "cpuset.cpus"), os.O_WRONLY)
        )

    def _kept_files(self) -> list[_KeptFile]:
        files = (self._freeze_file, self._cpu_file, self._weight_file, self._cpuset_file)
        return [f for f in files if f is not None]

    def close_files(self) -> None:
        """Close the descriptors of the files kept open (idempotent; they are
        opened again if the group is used after this)."""
        for f in self._kept_files():
            f.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit, modules may be gone
            self.close_files()

    def __repr__(self) -> str:
        return f"<BotGroup {next(iter(self.dirs.values()), '')}>"

    def _dir(self, key: str) -> Path | None:
        return self.dirs.get(key) if key else None

    def set_limits(self, memory_bytes: int, pids: int) -> None:
        """Set the memory (bytes) and process bounds of the bot as a whole."""
        plan = self.plan
        mem = self._dir(plan.memory)
        if mem is not None and memory_bytes:
            if plan.memory == UNIFIED:
                _write(mem / "memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(mem / "memory.swap.max", "0")
            else:
                _write(mem / "memory.limit_in_bytes", str(memory_bytes))
                with contextlib.suppress(OSError):  # no swap accounting here
                    _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
        pd = self._dir(plan.pids)
        if pd is not None and pids:
            _write(pd / "pids.max", str(pids))
        cd = self._dir(plan.share)
        if cd is not None:  # one core at most, the highest weight
            if plan.share == UNIFIED:
                _write(cd / "cpu.max", f"{CPU_PERIOD_US} {CPU_PERIOD_US}")
            else:
                _write(cd / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(cd / "cpu.cfs_quota_us", str(CPU_PERIOD_US))
            self.set_priority(True)

    def pin(self, cpu: int | None) -> None:
        """Let the bot's processes run only on CPU ``cpu`` (``None``: on
        every CPU of the arena's). No-op without a cpuset."""
        d = self._dir(self.plan.cpuset)
        kept = self._cpuset_file
        if d is None or kept is None or cpu == self._pinned:
            return
        with contextlib.suppress(OSError):
            if cpu is None:
                text = (
                    _read(d.parent / "cpuset.cpus").strip() if self.plan.cpuset != UNIFIED else ""
                )
            else:
                text = str(cpu)
            kept.write((text or "\n").encode())
            self._pinned = cpu

    def set_priority(self, on_move: bool) -> None:
        """Give the bot the highest CPU weight (on move) or the lowest (a
        pondering bot off move: idle CPU only). No-op without a CPU controller,
        and when the group already has that weight (written by this object)."""
        kept = self._weight_file
        if kept is None or on_move is self._on_move:
            return
        self._on_move = None  # unknown until the write succeeds
        with contextlib.suppress(OSError):
            kept.write(self._weight_text[0 if on_move else 1])
            self._on_move = on_move

    @property
    def binds_memory(self) -> bool:
        """Whether the group bounds the bot's memory (then ``RLIMIT_AS`` is dropped)."""
        return bool(self.plan.memory)

    @property
    def binds_pids(self) -> bool:
        """Whether the group bounds the bot's processes."""
        return bool(self.plan.pids)

    def join_self(self) -> None:
        """Move the calling process into every hierarchy of the group. Runs in
        the child between ``fork`` and ``exec``, before the uid is dropped
        (:func:`~arena.sandbox.childsetup.join_groups` of :attr:`procs_files`,
        which is what the spawn server is sent)."""
        join_groups(self.procs_files)

    def pids(self) -> list[int]:
        """Pids of the processes in the group (empty when it is gone)."""
        found: set[int] = set()
        for d in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in _read(d / "cgroup.procs").split())
        return sorted(found)

    def freeze(self) -> None:
        """Stop every process of the group (no-op where freezing is not available)."""
        kept = self._freeze_file
        if kept is None:
            return
        with contextlib.suppress(OSError):
            kept.write(self._frozen_text)
            self.frozen = True

    def thaw(self) -> None:
        """Let the group's processes run again."""
        kept = self._freeze_file
        if kept is None:
            return
        with contextlib.suppress(OSError):
            kept.write(self._thawed_text)
        self.frozen = False

    def freezer_state(self) -> str | None:
        """``"frozen"``, ``"freezing"`` or ``"thawed"`` as the kernel reports it;
        ``None`` without a freezer or once the group is gone."""
        d = self._dir(self.plan.freeze)
        if d is None:
            return None
        try:
            if self.plan.freeze == UNIFIED:
                events = dict(line.split() for line in _read(d / "cgroup.events").splitlines())
                if events.get("frozen") == "1":
                    return "frozen"
                return "freezing" if _read(d / "cgroup.freeze").strip() == "1" else "thawed"
            return _read(d / "freezer.state").strip().lower()
        except (OSError, ValueError):
            return None

    def cpu_ns(self) -> int | None:
        """CPU time (user + system) of every process the group ever held, in
        **nanoseconds**; ``None`` without CPU accounting or once it is gone."""
        kept = self._cpu_file
        if kept is None:
            return None
        try:
            data = kept.read()
            if self.plan.cpu == UNIFIED:  # "usage_usec N\n..." comes first
                start = data.index(b"usage_usec ") + 11
                return int(data[start : data.index(b"\n", start)]) * 1000
            return int(data)
        except (OSError, ValueError):
            return None

    def runnable(self) -> bool | None:
        """Whether a thread of the group is running or waiting for a CPU now
        (state ``R`` in ``/proc/TID/stat``), as opposed to every thread
        sleeping (blocked on its input, say); ``None`` when its threads cannot
        be listed. Reads one file per thread: asked only when a decision's
        wall time is up (:func:`arena.seats.wire.cpu_deadline`)."""
        for key, d in self.dirs.items():
            name = "cgroup.threads" if key == UNIFIED else "tasks"
            try:
                tids = _read(d / name).split()
            except OSError:
                continue
            return any(thread_state(tid) == "R" for tid in tids)
        return None

    def oom_kills(self) -> int:
        """Processes of the group the kernel killed for going over its memory bound."""
        d = self._dir(self.plan.memory)
        if d is None:
            return 0
        name = "memory.events" if self.plan.memory == UNIFIED else "memory.oom_control"
        try:
            for line in _read(d / name).splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def memory_peak(self) -> int | None:
        """Most memory the group used, in bytes, where the kernel says."""
        d = self._dir(self.plan.memory)
        if d is None:
            return None
        name = "memory.peak" if self.plan.memory == UNIFIED else "memory.max_usage_in_bytes"
        try:
            return int(_read(d / name))
        except (OSError, ValueError):
            return None

    def memory_usage(self) -> int | None:
        """Memory the group uses now, in bytes, or ``None`` without a memory group."""
        d = self._dir(self.plan.memory)
        if d is None:
            return None
        name = "memory.current" if self.plan.memory == UNIFIED else "memory.usage_in_bytes"
        try:
            return int(_read(d / name))
        except (OSError, ValueError):
            return None

    def memory_held(self) -> MemoryHeld | None:
        """What the group's memory is made of now (``memory.stat``), or
        ``None`` without a memory group (or once it is gone)."""
        d = self._dir(self.plan.memory)
        if d is None:
            return None
        try:
            text = _read(d / "memory.stat")
        except OSError:
            return None
        stat: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                stat[key] = int(value)
        shmem = stat.get("shmem", 0)
        if self.plan.memory == UNIFIED:  # "file" counts shmem
            return MemoryHeld(stat.get("anon", 0), shmem, max(0, stat.get("file", 0) - shmem))
        # v1: "rss" is anonymous memory, "cache" the page cache with shmem in it.
        return MemoryHeld(stat.get("rss", 0), shmem, max(0, stat.get("cache", 0) - shmem))

    def oom_events(self) -> int | None:
        """An ``eventfd`` (non-blocking, close-on-exec; the caller closes it)
        that becomes readable each time the group reaches its memory bound
        and the kernel is about to kill one of its processes, before it does,
        or ``None`` where that cannot be had (no memory group; cgroup2, whose
        ``memory.events`` is read after the fact instead). Cgroup v1's
        ``cgroup.event_control`` with ``memory.oom_control``."""
        d = self._dir(self.plan.memory)
        if d is None or self.plan.memory == UNIFIED:
            return None
        efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            ofd = os.open(d / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            try:  # the kernel keeps no hold on the control file once registered
                _write(d / "cgroup.event_control", f"{efd} {ofd}")
            finally:
                os.close(ofd)
        except OSError:
            os.close(efd)
            return None
        return efd

    def kill(self, timeout: float = 5.0) -> int:
        """Thaw, then kill every process of the group (``cgroup.kill`` where it
        exists, else SIGKILL to each pid until the group is empty). Blocks
        (call it from a thread in Trio) until empty or ``timeout`` seconds.

        Returns:
            How many processes were found in the group when it started.
        """
        found = len(self.pids())
        self.thaw()
        kill_dir = self._dir(self.plan.kill)
        if kill_dir is not None:
            with contextlib.suppress(OSError):
                _write(kill_dir / "cgroup.kill", "1")
        _kill_until_empty(self.pids, timeout)
        return found

    def remove(self) -> None:
        """Remove the group's folders (after :meth:`kill`), and the run's
        folder if it is left empty; idempotent. Closes the files kept open."""
        self.close_files()
        for d in dict.fromkeys(self.dirs.values()):
            _remove_dir(d)
            with contextlib.suppress(OSError):
                d.parent.rmdir()  # fails while other bots of the run have groups


def thread_state(tid: str | int) -> str | None:
    """The state letter of thread ``tid`` (``R`` running or runnable, ``S``
    sleeping, ``D``, ``T``, ...) from ``/proc/TID/stat``, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode("ascii", "replace")
    except (OSError, IndexError):
        return None


def _init_cpuset(d: Path) -> None:
    """A new v1 cpuset group has no CPUs and no memory nodes (no process can
    join it: ENOSPC): give it its parent's, filling the parent first when it
    is itself still empty (the run's folder, made by another worker process
    a moment before)."""
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not _read(d / name).strip():
            value = _read(d.parent / name).strip()
            if not value:  # a parent another worker made and has not filled yet
                _init_cpuset(d.parent)
                value = _read(d.parent / name).strip()
            _write(d / name, value)


def _set_weight(d: Path, high: bool, table: dict[str, str] | None = None) -> None:
    """Write ``table`` (default: :data:`WEIGHT_ON_MOVE` if ``high``, else
    :data:`WEIGHT_OFF_MOVE`) as the CPU weight of group ``d``; errors ignored."""
    if table is None:
        table = WEIGHT_ON_MOVE if high else WEIGHT_OFF_MOVE
    with contextlib.suppress(OSError):
        if (d / "cpu.weight").exists():
            _write(d / "cpu.weight", table["v2"])
        else:
            _write(d / "cpu.shares", table["v1"])


def _kill_until_empty(list_pids: Callable[[], list[int]], timeout: float) -> None:
    """SIGKILL every pid ``list_pids()`` gives until it gives none, or ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        pids = list_pids()
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _remove_dir(d: Path, tries: int = 40) -> None:
    for _ in range(tries):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            time.sleep(0.005)


#: The group this process was in before :func:`prioritize_self` moved it
#: (its ``cgroup.procs`` file), for :func:`leave_referees`; ``None`` if not moved.
_LEFT: Path | None = None


def _own_procs_file(key: str) -> Path | None:
    """The ``cgroup.procs`` of this process's group in hierarchy ``key``
    (``"unified"`` or a v1 controller), or ``None`` if it cannot be told."""
    try:
        own = _own_groups(_read("/proc/self/cgroup"))
        mounts = _mounts(_read("/proc/self/mountinfo"))
    except OSError:
        return None
    for m in mounts:
        if (key == UNIFIED and m.version == 2) or key in m.controllers:
            path = own.get(key)
            return None if path is None else _group_dir(m, path) / "cgroup.procs"
    return None


def prioritize_self(plan: Plan) -> bool:
    """Move this process (the referee: it keeps the bots' clocks) into
    ``<base>/referees`` of the CPU controller's hierarchy: under the
    arena's base (the highest weight), so that other load on the machine
    does not delay its reading of a reply, at :data:`WEIGHT_REFEREES` (a
    sixteenth of a bot on move), so that a busy referee does not eat into
    the clock of a bot on move. Its worker processes inherit it; bots join
    their own groups.
    :func:`leave_referees` moves it back (the CLI does, when a command ends).

    Returns:
        Whether it is there (``False`` without a CPU controller or rights).
    """
    global _LEFT
    if not plan.share:
        return False
    d = plan.bases[plan.share] / REFEREES
    before = _own_procs_file(plan.share)
    try:
        _make_dir(d)
        if plan.cpuset == plan.share:  # one folder for both: give it every CPU
            _init_cpuset(d)
        _set_weight(d.parent, True)
        _set_weight(d, True, WEIGHT_REFEREES)
        _write(d / "cgroup.procs", str(os.getpid()))
    except OSError:
        return False
    if _LEFT is None and before is not None and before.parent != d:
        _LEFT = before
    return True


def leave_referees() -> bool:
    """Move this process back to the group :func:`prioritize_self` took it
    from: a process that ran an arena in-process (a test session, a program
    calling :func:`arena.cli.main.main`) must not keep the referees' weight,
    which only the bots on move share, for whatever it runs next.

    Returns:
        Whether it was moved back (``False``: never moved, or the group is gone).
    """
    global _LEFT
    left, _LEFT = _LEFT, None
    if left is None:
        return False
    try:
        _write(left, str(os.getpid()))
    except OSError:
        return False
    return True


# -- clean-up of a run ---------------------------------------------------------


def _is_ours(path: Path) -> bool:
    """Whether ``path`` is a run folder of ours: ``.../hearts-arena/<hex>`` on a cgroup mount."""
    if path.parent.name != BASE_NAME or not path.name.isalnum() or ".." in path.parts:
        return False
    try:
        mounts = _mounts(_read("/proc/self/mountinfo"))
    except OSError:
        return False
    return any(m.point in path.parents for m in mounts)


def remove_run_dirs(paths: Iterable[Path | str]) -> int:
    """Thaw, kill and remove every bot group under each run folder in
    ``paths`` (as :meth:`RunGroups.dirs` gave them), then the folders.
    Paths that are not such folders are ignored (the list comes from a file).

    Returns:
        How many processes were killed.
    """
    killed = 0
    runs = [Path(p) for p in paths]
    runs = [p for p in runs if _is_ours(p) and p.is_dir()]
    # Thawed first: a process frozen by the v1 freezer keeps a SIGKILL pending.
    children: list[Path] = []
    for run in runs:
        with contextlib.suppress(OSError):
            children.extend(c for c in run.iterdir() if c.is_dir())
    for c in children:
        procs = c / "cgroup.procs"
        with contextlib.suppress(OSError):
            if (c / "cgroup.freeze").exists():
                _write(c / "cgroup.freeze", "0")
            elif (c / "freezer.state").exists():
                _write(c / "freezer.state", "THAWED")
        with contextlib.suppress(OSError):
            killed += len(_read(procs).split())
        if (c / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(c / "cgroup.kill", "1")

        def listed(procs: Path = procs) -> list[int]:
            try:
                return [int(p) for p in _read(procs).split()]
            except (OSError, ValueError):
                return []

        _kill_until_empty(listed, 5.0)
    for c in children:
        _remove_dir(c)
    for run in runs:
        _remove_dir(run)
    return killed


def groups_of_pid(pid: int) -> list[Path]:
    """The arena's bot group folders (``.../hearts-arena/<run>/<bot>``) that
    hold process ``pid`` (empty if none or it is gone)."""
    try:
        own = _own_groups(_read(f"/proc/{pid}/cgroup"))
        mounts = _mounts(_read("/proc/self/mountinfo"))
    except OSError:
        return []
    out = []
    for m in mounts:
        keys = [UNIFIED] if m.version == 2 else sorted(m.controllers)
        for key in keys:
            path = own.get(key)
            if path and f"/{BASE_NAME}/" in path:
                out.append(_group_dir(m, path))
    return out


def thaw_groups_of(pids: Iterable[int]) -> None:
    """Thaw the arena's groups holding any of ``pids``: a frozen process does
    not die of SIGKILL under the v1 freezer (used before killing a uid's leftovers)."""
    for pid in pids:
        for d in groups_of_pid(pid):
            with contextlib.suppress(OSError):
                if (d / "cgroup.freeze").exists():
                    _write(d / "cgroup.freeze", "0")
                elif (d / "freezer.state").exists():
                    _write(d / "freezer.state", "THAWED")


# -- the record of a run's groups in its output folder -------------------------

#: File in the output folder naming the run's group folders and its arena process.
RECORD_FILE: Final = ".hearts-arena-groups.json"


def _start_time(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), telling a pid's reuse apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def record_run(out: Path, dirs: Sequence[Path]) -> None:
    """Write (owner-only, atomically) which group folders this arena's run
    uses, and which process the arena is, to ``out/RECORD_FILE``."""
    import json

    me = os.getpid()
    data = {"arena_pid": me, "arena_start": _start_time(me), "dirs": [str(d) for d in dirs]}
    tmp = out / f"{RECORD_FILE}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            text = json.dumps(data).encode()
            if os.write(fd, text) != len(text):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, out / RECORD_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _recorded(out: Path) -> dict[str, object] | None:
    import json

    try:
        data = json.loads((out / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_arena_alive(out: Path) -> bool:
    """Whether the arena that recorded ``out``'s groups still runs (same pid,
    same start time)."""
    data = _recorded(out)
    if data is None:
        return False
    pid, start = data.get("arena_pid"), data.get("arena_start")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    return start is not None and _start_time(pid) == start


def remove_recorded(out: Path) -> int:
    """Thaw, kill and remove the groups recorded in ``out`` (see :func:`record_run`)
    and the record; returns how many processes were killed. Call only once
    the recording arena is gone (:func:`recorded_arena_alive`)."""
    data = _recorded(out)
    killed = 0
    if data is not None:
        dirs = data.get("dirs")
        if isinstance(dirs, list):
            killed = remove_run_dirs(d for d in dirs if isinstance(d, str))
    with contextlib.suppress(OSError):
        (out / RECORD_FILE).unlink()
    with contextlib.suppress(OSError):
        (out / f"{RECORD_FILE}.tmp").unlink()
    return killed


# -- the watchdog: clean-up when the arena is killed ---------------------------


def start_watchdog(dirs: Sequence[Path]) -> subprocess.Popen[bytes]:
    """Start a small process, in a session of its own, that waits for this
    arena process to end and then thaws, kills and removes the groups under
    the run folders ``dirs`` (:func:`remove_run_dirs`): a ``kill -9`` of the
    arena, or of its whole process group, leaves no bot running. The arena
    stops it (SIGKILL) once it has removed the groups itself.

    Raises:
        OSError: it could not be started.
    """
    import sys

    argv = [sys.executable, "-I", "-S", "-c", WATCHDOG_CODE, _package_parent(), str(os.getpid())]
    argv += [str(d) for d in dirs]
    return subprocess.Popen(
        argv,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )


#: The watchdog's program: Python started with ``-I -S`` (no ``site``, whose
#: ``.pth`` files cost 40 ms of CPU here, no environment variables, no
#: current folder on ``sys.path``), importing this module from the folder
#: holding the arena's own ``arena`` package (its first argument).
WATCHDOG_CODE: Final = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from arena.sandbox.cgroups import _watch; _watch(int(sys.argv[2]), sys.argv[3:])"
)


def _package_parent() -> str:
    """The folder holding the ``arena`` package this process runs."""
    import arena

    return str(Path(arena.__file__).resolve().parent.parent)


def _watch(arena: int, dirs: list[str]) -> None:
    """The watchdog's body: wait for process ``arena`` (its parent) to end, then clean up."""
    import select

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the arena
    try:
        fd = os.pidfd_open(arena)
    except OSError:
        fd = -1
    if fd >= 0 and os.getppid() == arena:  # else it is already gone
        poller = select.poll()  # not select: it refuses descriptors of 1024 and more
        poller.register(fd, select.POLLIN)
        poller.poll()
    remove_run_dirs(dirs)


if __name__ == "__main__":  # python -m arena.sandbox.cgroups ARENA_PID RUN_DIR...
    import sys

    _watch(int(sys.argv[1]), sys.argv[2:])
