"""The competition folder (arena/server/folder.py) and ``hearts-arena serve``'s
administration commands (arena/cli/serve.py)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.cli.main import main
from arena.core.keys import MasterKey
from arena.server import db, folder, store
from arena.server.rating import Rating


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_makes_the_folder_with_its_modes_and_prints_the_key_sha256(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "comp"
    assert main(["serve", str(root), "--init"]) == 0
    out = capsys.readouterr().out
    key = MasterKey.from_hex((root / "key").read_text())
    assert f"key SHA-256: {hashlib.sha256(key.secret).hexdigest()}" in out
    assert "house bots sample:low, sample:random, sample:heuristic" in out
    assert _mode(root) == 0o711
    assert _mode(root / "key") == 0o600
    assert _mode(root / "db") == 0o700
    assert _mode(root / "uploads") == 0o700
    assert _mode(root / "runner") == 0o700
    assert _mode(root / "db" / db.DATABASE_NAME) == 0o600
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            assert store.get_meta(conn, "key_sha256") == key.commitment()
            assert store.get_meta(conn, "schema_version") == db.SCHEMA_VERSION
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert comp.settings == folder.CompetitionSettings()
        assert folder.check_key(comp.paths, comp.database) == key
        # The key is never in the database.
        raw = (root / "db" / db.DATABASE_NAME).read_bytes()
        assert key.hex().encode() not in raw and key.secret not in raw
    finally:
        comp.close()
    assert main(["serve", str(root), "--init"]) == 2
    assert "exists and is not an empty folder" in capsys.readouterr().err


def test_the_settings_file_round_trips_and_is_checked(tmp_path: Path) -> None:
    given = tmp_path / "s.toml"
    given.write_text(
        "[game]\nhands = 3\ntime_limit = 0.5\n[ladder]\nlag = 4\n"
        'house_bots = ["sample:low", "sample:random", "sample:heuristic", "sample:duck"]\n'
    )
    s = folder.CompetitionSettings.read(given)
    assert (s.game.hands, s.game.target_score, s.game.time_limit) == (3, None, 0.5)
    assert s.ladder.lag == 4 and s.house_labels[-1] == "house:duck"
    made = folder.init_folder(tmp_path / "c", s)
    assert folder.CompetitionSettings.read(made.paths.settings) == s
    for text, reason in [
        ('[ladder]\nhouse_bots = ["sample:low", "sample:random"]\n', "at least 3 are needed"),
        (
            '[ladder]\nhouse_bots = ["sample:low", "sample:low", "sample:x"]\n',
            "each house bot once",
        ),
        ('[ladder]\nhouse_bots = ["sample:low", "sample:random", "/bin/sh"]\n', "not a sample bot"),
        ("[game]\nhands = 0\n", "hands must be at least 1"),
        ("[game]\nhands = 2\ntarget_score = 50\n", "exactly one of hands and target_score"),
        ("[game]\ntime_limit = 'x'\n", "time_limit: a number of seconds"),
        ("[gamez]\n", "unknown section [gamez]"),
        ("[game]\nspeed = 1\n", "unknown key 'speed'"),
        ("[game\n", "not TOML"),
    ]:
        given.write_text(text)
        with pytest.raises(folder.FolderError, match=None) as info:
            folder.CompetitionSettings.read(given)
        assert reason in str(info.value), (text, str(info.value))
        assert "\n" not in str(info.value)


def test_init_refuses_fewer_than_three_house_bots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "s.toml"
    given.write_text('[ladder]\nhouse_bots = ["sample:low", "sample:random"]\n')
    assert main(["serve", str(tmp_path / "c"), "--init", "--settings", str(given)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "at least 3 are needed" in err
    assert not (tmp_path / "c").exists()


def test_add_prints_a_token_once_and_stores_its_sha256(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    folder.init_folder(root)
    assert main(["serve", str(root), "--add", "ann"]) == 0
    token = capsys.readouterr().out.splitlines()[-1]
    assert len(token) == 43  # 256 bits, URL-safe base64
    tf = tmp_path / "bob.token"
    assert main(["serve", str(root), "--add", "bob", "--token-file", str(tf)]) == 0
    assert str(tf) in capsys.readouterr().out
    bob_token = tf.read_text().strip()
    assert _mode(tf) == 0o600 and len(bob_token) == 43 and bob_token != token
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            ann = store.participant_by_token_hash(conn, store.token_hash(token))
            bob = store.participant_by_token_hash(conn, store.token_hash(bob_token))
            hashes = conn.execute(select(db.tokens.c.sha256)).scalars().all()
    finally:
        comp.close()
    assert (ann.name, bob.name) == ("ann", "bob")  # type: ignore[union-attr]
    assert sorted(hashes) == sorted(
        hashlib.sha256(t.encode()).hexdigest() for t in (token, bob_token)
    )
    raw = (root / "db" / db.DATABASE_NAME).read_bytes()
    assert token.encode() not in raw and bob_token.encode() not in raw
    assert main(["serve", str(root), "--add", "ann"]) == 2
    assert "a participant named 'ann' exists already" in capsys.readouterr().err
    assert main(["serve", str(root), "--add", "cy", "--token-file", str(tf)]) == 2
    assert "exists: give a new file" in capsys.readouterr().err
    assert main(["serve", str(root), "--add", "bad\x1bname"]) == 2
    assert "participant name" in capsys.readouterr().err


def test_add_to_a_token_file_that_exists_makes_no_participant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    folder.init_folder(root)
    tf = tmp_path / "someone-elses.token"
    tf.write_text("not ours\n")
    assert main(["serve", str(root), "--add", "ann", "--token-file", str(tf)]) == 2
    assert capsys.readouterr().err == f"error: token file {tf} exists: give a new file\n"
    assert tf.read_text() == "not ours\n"
    # The refused add stored nobody: the name is free for the next try.
    fresh = tmp_path / "ann.token"
    assert main(["serve", str(root), "--add", "ann", "--token-file", str(fresh)]) == 0
    assert len(fresh.read_text().strip()) == 43
    # A taken name refuses the add and leaves no token file behind.
    other = tmp_path / "ann2.token"
    assert main(["serve", str(root), "--add", "ann", "--token-file", str(other)]) == 2
    assert "a participant named 'ann' exists already" in capsys.readouterr().err
    assert not other.exists()


def test_revoke_suspend_and_list_with_void_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    folder.init_folder(root)
    comp = folder.open_folder(root)
    _, token = folder.add_participant(comp, "ann", 1.0)
    folder.add_participant(comp, "bob", 2.0)
    with comp.database.write() as conn:
        ann = store.participant_by_name(conn, "ann")
        assert ann is not None
        s, _ = store.add_submission(conn, ann.id, "a" * 64, "py", 10, 3.0)
        store.record_step(conn, s.id, "check", False, 4.0, reason="no hello within 10 s\x1b[2J")
        seating = ["house:low", "house:random", "house:heuristic", "s1"]
        t = store.add_table(conn, "validation", 0, "V1", seating, seating, 5.0, submission_id=1)
        store.set_table_status(conn, t.id, "void", 6.0, "house bot house:low crashed (exit 1)")
    comp.close()
    assert main(["serve", str(root), "--suspend", "bob"]) == 0
    assert main(["serve", str(root), "--revoke", "ann"]) == 0
    assert main(["serve", str(root), "--revoke", "cy"]) == 2
    assert "no participant named 'cy'" in capsys.readouterr().err
    assert main(["serve", str(root), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 participants, no ladder table rated yet"
    assert " ".join(out[1].split()) == (
        "ann revoked, 1 submissions, latest #1 failed (check: no hello within 10 s[2J)"
    )
    assert out[2].split() == ["bob", "suspended,", "0", "submissions"]
    assert out[3:] == [
        "1 void tables",
        "  validation table 0 (V1): house bot house:low crashed (exit 1)",
        "    seats: house:low, house:random, house:heuristic, s1",
        "0 workers refused or flagged",
    ]
    comp = folder.open_folder(root)
    with comp.database.read() as conn:
        assert store.participant_by_token_hash(conn, store.token_hash(token)) is None
    comp.close()
    # Folded over ladder tables 0..2: --list names the last table rated, as verify does.
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        store.store_fold(conn, 3, {"s1": Rating(25.0, 8.0, 4)})
    comp.close()
    assert main(["serve", str(root), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 participants, rated through ladder table 2 (3 tables)"


def test_a_key_that_is_not_the_stored_one_is_refused(tmp_path: Path) -> None:
    made = folder.init_folder(tmp_path / "c")
    comp = folder.open_folder(made.paths.root)
    try:
        os.chmod(made.paths.key, 0o644)
        with pytest.raises(folder.FolderError, match="can be read by other users"):
            folder.check_key(comp.paths, comp.database)
        os.chmod(made.paths.key, 0o600)
        made.paths.key.write_text(MasterKey.generate().hex() + "\n")
        with pytest.raises(folder.FolderError) as info:
            folder.check_key(comp.paths, comp.database)
        assert "is not this competition's: its SHA-256 is" in str(info.value)
        assert made.key_sha256[:16] in str(info.value)
    finally:
        comp.close()


def test_serve_on_a_folder_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(tmp_path), "--list"]) == 2
    assert "is not a competition folder (make one with" in capsys.readouterr().err


@pytest.fixture
def request_cleanup() -> Iterator[list[Path]]:
    folders: list[Path] = []
    yield folders
    import shutil

    for f in folders:
        shutil.rmtree(f, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving folders to another user needs root")
def test_init_as_root_gives_the_database_and_uploads_to_the_web_user(
    tmp_path: Path, request_cleanup: list[Path]
) -> None:
    import pwd
    import sqlite3
    import tempfile

    nobody = pwd.getpwnam("nobody")
    # pytest's tmp_path is under a root-only folder: the web user could not reach it.
    base = Path(tempfile.mkdtemp(prefix="hearts-serve-test-"))
    os.chmod(base, 0o755)
    request_cleanup.append(base)
    made = folder.init_folder(base / "c", web_user="nobody")
    p = made.paths
    owners = {
        x.name: (x.stat().st_uid, _mode(x))
        for x in (p.root, p.key, p.db_dir, p.uploads, p.runner, p.database)
    }
    assert owners == {
        "c": (0, 0o711),
        "key": (0, 0o600),
        "db": (nobody.pw_uid, 0o700),
        "uploads": (nobody.pw_uid, 0o700),
        "runner": (0, 0o700),
        db.DATABASE_NAME: (nobody.pw_uid, 0o600),
    }
    pid = os.fork()
    if pid == 0:  # the web user: may write the database, may not read the key
        code = 0
        try:
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            (p.root / "competition.toml").read_text()  # the folder is reachable
            try:
                p.key.read_bytes()
                code = 1
            except PermissionError:
                pass
            conn = sqlite3.connect(p.database)
            conn.execute("INSERT INTO meta (key, value) VALUES ('web', 'yes')")
            conn.commit()
            conn.close()
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    comp = folder.open_folder(p.root)
    with comp.database.read() as conn:
        assert store.get_meta(conn, "web") == "yes"
    comp.close()
    with pytest.raises(folder.FolderError, match="no user 'no-such-user-x'"):
        folder.init_folder(tmp_path / "d", web_user="no-such-user-x")
