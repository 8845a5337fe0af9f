"""Turning an entrant into a :class:`~arena.sandbox.spawn.LaunchSpec`: working folder,
private temporary folder, environment, user, resource limits and seal.

Sealed (the default wherever bubblewrap can run, :mod:`arena.sandbox.seal`), each
entrant's folder is copied once, the copy bound read-only into each of its
processes; as root the copy belongs to a group of the entrant's own, so that
only its processes can read it (also without the seal)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

from arena.sandbox import cgroups, isolation, seal
from arena.sandbox.entrants import (
    IN_USE,
    TMPDIR_PREFIX,
    Entrant,
    bot_environment,
    copies_tag,
    private_tmpdir,
)
from arena.sandbox.isolation import IsolationError, UidLease
from arena.sandbox.options import LaunchOptions as LaunchOptions  # (moved; named here too)
from arena.sandbox.spawn import LaunchSpec

#: Environment variable naming the tournament run (to find its leftovers on --resume).
RUN_VARIABLE = "HEARTS_ARENA_RUN"
#: Environment variable with a token unique to one bot process (to find its strays).
TOKEN_VARIABLE = "HEARTS_ARENA_TOKEN"
#: Most files in an entrant's folder (it is copied for each entrant).
MAX_FOLDER_FILES: Final = 20_000
#: Most bytes in an entrant's folder, in MiB.
MAX_FOLDER_MB: Final = 2048


@dataclass(eq=False)
class _Copy:
    """An entrant's private copy of its folder; ``live``: processes started
    from it whose specs are not released yet; ``retired``: released by
    :meth:`Launcher.release` while some were, removed with the last."""

    source: Path
    folder: Path
    group: UidLease | None
    live: int = 0
    retired: bool = False


#: What :meth:`Launcher.release` did.
Released = Literal["released", "deferred", "none"]


@dataclass
class _Resources:
    """What a launcher holds until it is closed: the folder of the entrants'
    copies and their groups (the copies in hand by entrant name, and the
    released ones whose processes are still closing). Its lock guards both:
    specs are released from worker threads (:func:`arena.sandbox.spawn.release_specs`)."""

    root: Path | None = None
    copies: dict[str, _Copy] = field(default_factory=dict)
    retiring: list[_Copy] = field(default_factory=list)
    made: int = 0  # copies made so far: the next copy's folder name
    lock: threading.Lock = field(default_factory=threading.Lock)

    def release(self, name: str) -> Released:
        with self.lock:
            copy = self.copies.pop(name, None)
            if copy is None:
                return "none"
            if copy.live > 0:
                copy.retired = True
                self.retiring.append(copy)
                return "deferred"
        _discard(copy)
        return "released"

    def spec_done(self, copy: _Copy) -> None:
        """One process started from ``copy`` has had its spec released."""
        with self.lock:
            copy.live -= 1
            drop = copy.retired and copy.live <= 0 and copy in self.retiring
            if drop:
                self.retiring.remove(copy)
        if drop:
            _discard(copy)

    def close(self) -> None:
        with self.lock:
            held = [*self.copies.values(), *self.retiring]
            self.copies.clear()
            self.retiring.clear()
            root, self.root = self.root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
            IN_USE.discard(root)
        for copy in held:
            if copy.group is not None:
                copy.group.release()


def _discard(copy: _Copy) -> None:
    """Remove one copy's folder, then give back its group (its files gone,
    a later entrant given the gid cannot read them)."""
    shutil.rmtree(copy.folder, ignore_errors=True)
    if copy.group is not None:
        copy.group.release()


class _SpecHold:
    """A spec's hold on its entrant's copy, let go once (the spec's
    ``on_release``; a spec released twice lets go once)."""

    __slots__ = ("_copy", "_resources")

    def __init__(self, resources: _Resources, copy: _Copy) -> None:
        self._resources: _Resources | None = resources
        self._copy = copy
        with resources.lock:
            copy.live += 1

    def __call__(self) -> None:
        resources, self._resources = self._resources, None
        if resources is not None:
            resources.spec_done(self._copy)


class Launcher:
    """Makes a fresh :class:`LaunchSpec` for each process an entrant needs:
    a uid of its own when running as root, resource limits, a private
    temporary folder, and the seal (with a private copy of its folder).

    The copies are removed by :meth:`close` (or when the launcher is
    garbage-collected, or at exit), one entrant's by :meth:`release` (a
    long-lived launcher, such as the competition server's runner, whose
    entrants come and go).

    Raises:
        IsolationError: separate users asked for without root, or the seal
            required and unavailable (see :meth:`check`).
    """

    def __init__(self, options: LaunchOptions | None = None) -> None:
        self.options = options or LaunchOptions()
        self._python: tuple[str, str | None] | None = None
        self._seccomp: bytes | None = None
        self._seccomp_known = False
        self._resolved = False  # whether self.options.sandbox is decided here
        self._resources = _Resources()
        self._finalizer = weakref.finalize(self, self._resources.close)

    def close(self) -> None:
        """Remove the entrants' copies and give back their groups (idempotent)."""
        self._finalizer()

    def release(self, name: str) -> Released:
        """Remove the entrant ``name``'s private copy of its folder and give
        back its group (the gid that alone may read the copy), when it no
        longer plays; idempotent.

        An entrant may still have processes closing (specs made by
        :meth:`spec` whose :meth:`~arena.sandbox.spawn.LaunchSpec.release`
        has not run yet): its copy is then removed, and its group given
        back, when the last of them is released, never under a running bot.
        Either way the name is free at once: a later :meth:`check` or
        :meth:`spec` of the same entrant makes a fresh copy, in a folder of
        its own (the submission may come back, as a suspended participant's
        does).

        Returns:
            ``"released"`` (copy removed now), ``"deferred"`` (removed with
            its last process), or ``"none"`` (no copy held: never checked,
            already released, or bots run in place, unsealed and without
            separate users).

        Blocking (the copy's files are removed): call it from a thread in
        a Trio program. Never raises for an unknown name.
        """
        return self._resources.release(name)

    def copies(self) -> dict[str, Path]:
        """The private copies in hand: entrant name to the copy's folder (the
        arena's path, not the one a sealed bot sees). Copies released while
        processes were still closing (:meth:`release`) are not listed."""
        res = self._resources
        with res.lock:
            return {name: copy.folder for name, copy in res.copies.items()}

    @property
    def sealed(self) -> bool:
        """Whether bots are sealed (resolving the default on first use)."""
        if not self._resolved:
            self._resolve(announce=True)
        return bool(self.options.sandbox)

    def check(self, entrants: list[Entrant]) -> None:
        """Check up front that the options work here, resolve whether bots are
        sealed (printing one line on stderr when they cannot be), and make
        each entrant's private copy of its folder.

        Raises:
            IsolationError: with one line saying what is wrong: separate users
                without root, ``--sandbox`` where sealing cannot work, a
                missing ``--sandbox-ro`` path, a missing program or folder,
                two sealed entrants sharing a folder, a folder too large, a
                core token folder that is not this user's own
                (:meth:`arena.sandbox.cores.CoreGate.check`).
        """
        opts = self.options
        if opts.separate_users is True and os.geteuid() != 0:
            raise IsolationError("separate bot users need the arena to run as root")
        for path in opts.sandbox_ro:
            if not path.exists():
                raise IsolationError(f"--sandbox-ro {path}: no such file or folder")
        for e in entrants:
            program = _program_file(e)
            if not program.exists():
                if "/" not in str(program):  # a bare command name, looked up on PATH
                    raise IsolationError(
                        f"entrant {e.name!r}: command {str(program)!r} was not found on PATH"
                    )
                raise IsolationError(f"entrant {e.name!r}: bot file not found: {program}")
            if not program.is_file():
                raise IsolationError(f"entrant {e.name!r}: {program} is not a regular file")
            if not e.cwd.is_dir():
                raise IsolationError(f"entrant {e.name!r}: its folder {e.cwd} does not exist")
        if opts.gate is not None:
            try:
                opts.gate.check()
            except OSError as exc:
                raise IsolationError(str(exc)) from None
        if self.sealed:
            _check_own_folders(entrants)
        if opts.uses_separate_users and self._python is None:
            lease = isolation.lease_uid(opts.uid_base)
            try:
                self._python = isolation.python_for(lease.uid)
            finally:
                lease.release()
        for e in entrants:
            self._copy_of(e)

    def _read_only(self) -> list[Path]:
        """Paths bound read-only into every sealed process: the runtime of
        ``.py`` bots (see :meth:`_bot_python`) and ``--sandbox-ro``."""
        own = self._python is None or self._python[0] == sys.executable
        return [*seal.runtime_paths(arena_python=own), *self.options.sandbox_ro]

    def readable_roots(self) -> list[Path]:
        """The folders and files a sealed bot can read whose page cache
        outlives it (:mod:`arena.sandbox.forget`): the seal's fixed list of
        runtimes and ``/etc`` files (:func:`arena.sandbox.seal.readable_paths`),
        the bot kit's copy, the interpreter's and ``--sandbox-ro`` paths, and
        every entrant's private copy of its folder. Empty when bots are not
        sealed (they can then read, and leave, far more: see
        ``docs/competitions.md``). Symbolic links are resolved and each path
        given once.

        This is the list the runner makes forget between an entrant's games
        of one deal; a narrower seal passes its own list here.
        """
        if not self.sealed:
            return []
        found: list[Path] = [*seal.readable_paths(), seal.kit_source()]
        found += self._read_only()
        res = self._resources
        with res.lock:
            found += [copy.folder for copy in (*res.copies.values(), *res.retiring)]
        out: dict[Path, None] = {}  # in order, each once (a list's "in" was O(n^2))
        for path in found:
            if path.exists():
                out[path.resolve()] = None
        return list(out)

    def _resolve(self, *, announce: bool) -> None:
        """Decide whether bots are sealed here (probing bubblewrap as a bot
        user would run it) and build the seccomp program."""
        opts = self.options
        sealed = False
        program: bytes | None = None
        why_no_filter = ""
        if opts.sandbox is not False:
            program, why_no_filter = seal.seccomp_program()
            lease = isolation.lease_uid(opts.uid_base) if opts.uses_separate_users else None
            try:
                uid = lease.uid if lease else None
                if lease is not None:
                    self._bot_python(lease.uid)
                # Exactly what bots get: the same binds, /proc view and filter.
                why = seal.probe(
                    user=uid,
                    group=uid,
                    read_only=self._read_only(),
                    seccomp=program,
                    memory_mb=opts.limits.memory_mb,
                )
            finally:
                if lease is not None:
                    lease.release()
            if why is None:
                sealed = True
            elif opts.sandbox:
                raise IsolationError(f"--sandbox needs bubblewrap, which cannot seal bots: {why}")
            elif announce:
                print(f"hearts-arena: {why}: {seal.NOT_ISOLATED}", file=sys.stderr)
        self.options = dataclasses.replace(opts, sandbox=sealed)
        self._resolved = True
        if sealed:
            self._seccomp = program
            self._seccomp_known = True
            if self._seccomp is None and announce:
                print(
                    f"hearts-arena: {why_no_filter}: sealed bots can still signal each other "
                    "through file locks, keyrings and file watches (install libseccomp2)",
                    file=sys.stderr,
                )

    def _copy_of(self, entrant: Entrant) -> _Copy | None:
        """The entrant's private copy of its folder, made on first use; ``None``
        when bots are neither sealed nor run as separate users (they then
        run in place)."""
        if not self.sealed and not self.options.uses_separate_users:
            return None
        res = self._resources
        with res.lock:
            found = res.copies.get(entrant.name)
            if found is not None:
                return found
            if res.root is None:
                res.root = Path(
                    tempfile.mkdtemp(
                        prefix=f"{TMPDIR_PREFIX}{copies_tag(self.options.run_id)}-entrants-"
                    )
                )
                IN_USE.add(res.root)
                # Bot users may pass through (not list) it, into their own group's copy only.
                res.root.chmod(0o711 if self.options.uses_separate_users else 0o700)
            root = res.root
            # A name of its own, never reused: a released copy may still be closing.
            dest = root / str(res.made)
            res.made += 1
        _check_size(entrant)
        group = isolation.lease_gid() if self.options.uses_separate_users else None
        try:
            shutil.copytree(
                entrant.cwd, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
            if group is not None:
                _give_to_group(dest, group.uid)
            else:
                dest.chmod(0o700)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            if group is not None:
                group.release()
            raise
        copy = _Copy(entrant.cwd, dest, group)
        with res.lock:
            raced = res.copies.setdefault(entrant.name, copy)
        if raced is not copy:  # another thread made it meanwhile: keep one
            _discard(copy)
        return raced

    def spec(self, entrant: Entrant) -> LaunchSpec:
        """A launch spec for a new process of ``entrant``. Its control group,
        temporary folder and uid lease are released by
        :meth:`LaunchSpec.release` (a seat's close does it), which also lets
        go of the entrant's copy (see :meth:`release`)."""
        opts = self.options
        sealed = self.sealed
        copy = self._copy_of(entrant)
        # Held until the spec is released: release() never removes it under a bot.
        hold = _SpecHold(self._resources, copy) if copy is not None else None
        argv: tuple[str, ...] = entrant.argv
        cwd = entrant.cwd
        inside = cwd  # the folder the bot starts in, as the bot sees it
        if copy is not None:
            # Sealed, the copy is bound at a fixed name (seal.ENTRANT_DIR):
            # its path names neither the run nor the organiser's folders.
            where = seal.ENTRANT_DIR if sealed else copy.folder
            argv = tuple(_moved(a, copy.source, where) for a in argv)
            inside = where
            cwd = copy.folder
        home = None if sealed else private_tmpdir(opts.run_id)
        lease = None
        cgroup: cgroups.BotGroup | None = None
        try:
            run_groups = opts.run_groups
            if run_groups is not None:
                limits = opts.limits
                cgroup = run_groups.create(limits.memory_mb * isolation.MIB, limits.processes)
            if opts.uses_separate_users:
                lease = isolation.lease_uid(opts.uid_base)
                lease.purge = not sealed  # a sealed bot writes nothing outside its sandbox
                if home is not None:
                    os.chown(home, lease.uid, copy.group.uid if copy and copy.group else lease.uid)
            token = secrets.token_hex(8)
            extra = {TOKEN_VARIABLE: token}
            if sealed:
                # No run id (a sealed bot dies with bubblewrap, which dies
                # with the arena: nothing to find by it), PATH of the
                # sandbox's own, the bot kit at a fixed place.
                extra["PATH"] = seal.bot_path_variable(opts.sandbox_ro)
                extra["PYTHONPATH"] = str(seal.KIT_DIR)
            else:
                extra[RUN_VARIABLE] = opts.run_id
            if self.is_arena_python(argv[0]):
                if lease is not None:
                    python, pythonpath = self._bot_python(lease.uid)
                    argv = (python, *argv[1:])
                    if pythonpath and not sealed:
                        extra["PYTHONPATH"] = pythonpath
                else:  # a path with "..", which a sealed bot cannot walk: its folder resolved
                    argv = (_in_resolved_folder(argv[0]), *argv[1:])
            env = bot_environment(home or Path("/tmp"), extra)
            seccomp = None
            if sealed:
                if not self._seccomp_known:
                    self._seccomp, _ = seal.seccomp_program()
                    self._seccomp_known = True
                seccomp = self._seccomp
                argv = tuple(
                    seal.sealed_argv(
                        argv,
                        folder=cwd,
                        cwd=inside,
                        tmp_mb=opts.tmp_mb,
                        read_only=self._read_only(),
                        seccomp=seccomp is not None,
                        bwrap=seal.bwrap_path() or "bwrap",
                        memory_mb=opts.limits.memory_mb,
                        as_root=seal.runs_as_root(lease.uid if lease else None),
                    )
                )
            group = copy.group.uid if copy and copy.group else (lease.uid if lease else None)
            return LaunchSpec(
                argv=argv,
                cwd=cwd,
                env=env,
                label=entrant.name,
                preexec=isolation.make_preexec(
                    # The group bounds the bot's memory as a whole: no RLIMIT_AS
                    # (it breaks JVMs and Go, which reserve address space).
                    replace(opts.limits, memory_mb=0)
                    if cgroup and cgroup.binds_memory
                    else opts.limits,
                    limit_processes=lease is not None,
                ),
                user=lease.uid if lease else None,
                group=group,
                tmpdir=home,
                lease=lease,
                token=f"{TOKEN_VARIABLE}={token}",
                limits=opts.limits,
                seccomp=seccomp,
                sealed=sealed,
                cgroup=cgroup,
                gate=opts.gate,
                on_release=hold,
            )
        except BaseException:
            if hold is not None:
                hold()
            if cgroup is not None:
                cgroup.kill(timeout=0)
                cgroup.remove()
            if lease is not None:
                lease.release()
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
            raise

    def is_arena_python(self, word: str) -> bool:
        """Whether the command word ``word`` names the arena's interpreter
        (the one ``.py`` entrants are given, which a bot user may be unable
        to run: :meth:`spec` swaps in one it can): the coordinator's
        spelling (:attr:`LaunchOptions.arena_python`) or this process's
        ``sys.executable``, compared as normalized absolute paths, since a
        spawned worker's ``sys.executable`` is the coordinator's normalized
        (``/w/../venv/bin/python`` becomes ``/venv/bin/python``)."""
        if not word:
            return False
        mine = {_normalized(self.options.arena_python), _normalized(sys.executable)}
        return _normalized(word) in mine

    def _bot_python(self, uid: int) -> tuple[str, str | None]:
        if self._python is None:
            self._python = isolation.python_for(uid)
        return self._python


def _normalized(path: str) -> str:
    """``path`` absolute (from the current folder) with ``.``, ``..`` and
    repeated separators removed; symbolic links are not followed (a
    virtual environment's ``python`` is not the system's it links to)."""
    return os.path.normpath(os.path.abspath(path))


def _in_resolved_folder(path: str) -> str:
    """``path`` with its folder resolved (absolute, no ``.`` or ``..``, no
    symbolic links) and its last name kept: a virtual environment's
    ``python``, a link to the system's, stays the environment's."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(folder), name)


def _moved(word: str, source: Path, dest: Path) -> str:
    """``word`` with the folder ``source`` at its start replaced by ``dest``."""
    text = str(source)
    if word == text:
        return str(dest)
    if word.startswith(text + "/"):
        return str(dest) + word[len(text) :]
    return word


def _give_to_group(folder: Path, gid: int) -> None:
    """Make ``folder`` and everything in it owned by root and group ``gid``,
    readable (and, where the owner could, executable) by that group only."""
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            os.lchown(path, 0, gid)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(path, 0o750)
            elif stat.S_ISREG(st.st_mode):
                os.chmod(path, 0o750 if st.st_mode & 0o100 else 0o640)
    os.lchown(folder, 0, gid)
    folder.chmod(0o750)


def _check_size(entrant: Entrant) -> None:
    """Refuse a folder too large to copy for each entrant.

    Raises:
        IsolationError: more than :data:`MAX_FOLDER_FILES` files or
            :data:`MAX_FOLDER_MB` MiB.
    """
    files = 0
    size = 0
    for dirpath, dirnames, filenames in os.walk(entrant.cwd):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        files += len(filenames)
        for name in filenames:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
        if files > MAX_FOLDER_FILES or size > MAX_FOLDER_MB * 1024 * 1024:
            raise IsolationError(
                f"entrant {entrant.name!r}: its folder {entrant.cwd} holds more than "
                f"{MAX_FOLDER_FILES} files or {MAX_FOLDER_MB} MiB; each entrant's folder is "
                "copied for it: give it a folder holding only its own files"
            )


def _check_own_folders(entrants: list[Entrant]) -> None:
    """Sealed, an entrant sees its whole folder: refuse two entrants whose
    different programs share one (the same program entered twice, and the
    package's sample bots, are allowed).

    Raises:
        IsolationError: one line naming both entrants and saying how to fix it.
    """
    from arena.core.resources import sample_bots_dir

    samples = sample_bots_dir().resolve()
    seen: dict[Path, tuple[str, Path]] = {}
    for e in entrants:
        folder = e.cwd.resolve()
        program = _program_file(e).resolve()
        if folder == samples:
            continue
        other = seen.setdefault(folder, (e.name, program))
        if other[1] != program:
            raise IsolationError(
                f"entrant {e.name!r} has its program in the folder of entrant {other[0]!r}, "
                f"{folder}; sealed, a bot sees its whole folder: put each program in a "
                "folder of its own with only the files it needs (or give --no-sandbox)"
            )


def _program_file(entrant: Entrant) -> Path:
    """The file an entrant's command runs (a script, or the executable): the
    one found when it was parsed, else (an older record) guessed from its
    command; a bare command name not found on ``PATH`` is returned as it is."""
    if entrant.program is not None:
        return entrant.program
    argv = entrant.argv
    first = Path(argv[0])
    if len(argv) > 1 and first.name.startswith("python"):
        candidate = Path(entrant.cwd, argv[1])
        if candidate.is_file():
            return candidate
    if first.is_absolute() or "/" in argv[0]:
        return Path(entrant.cwd, first)
    found = shutil.which(argv[0])
    return Path(found) if found else first


__all__ = ["IsolationError", "LaunchOptions", "Launcher"]
