"""``hearts-arena serve`` end to end (issue 27, "Done when"): a real runner
with sealed bots and the web process, driven by ``submit --wait`` and
``status``: a ``.py`` and a zip through check and validation, a failing
check whose output only its owner reads, ranked ladder tables with the
house bots, standings and a finished table's replay served. Skipped where
the runner cannot seal bots."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.cli import submit as submit_module
from arena.cli.main import main
from arena.core.resources import sample_bots_dir

pytestmark = pytest.mark.slow
ROOT = os.geteuid() == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    monkeypatch.setattr(submit_module, "POLL_SECONDS", 0.2)
    monkeypatch.delenv(submit_module.TOKEN_VARIABLE, raising=False)
    top = Path(tempfile.mkdtemp(prefix="hearts-arena-serve-"))
    top.chmod(0o711)  # the web process's user goes through it to db/ and uploads/
    comp = top / "comp"
    user = ["--user", "nobody"] if ROOT else []
    (top / "settings.toml").write_text('[web]\npages = "public"\n')  # pages read anonymously
    made = arena("serve", str(comp), "--init", "--settings", str(top / "settings.toml"), *user)
    assert made.returncode == 0, made.stderr
    for name in ("ann", "bob", "cy"):
        added = arena("serve", str(comp), "--add", name, "--token-file", str(top / name))
        assert added.returncode == 0, added.stderr
    port = free_port()
    log = (top / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "serve", str(comp), *user, "--listen", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                text = (top / "serve.log").read_text()
                if "seal" in text.lower():
                    pytest.skip(f"the runner cannot seal bots here: {text.strip()[-300:]}")
                raise AssertionError(f"serve ended: {text}")
            try:
                httpx.get(f"{url}/api/standings", timeout=5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the web process did not answer"
                time.sleep(0.2)
        yield url, top
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(top, ignore_errors=True)


def test_serve_submit_wait_status_pages(
    server: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, top = server
    bots = sample_bots_dir()
    # a .py through check and validation
    assert (
        main(
            ["submit", url, str(bots / "random_bot.py"), "--token-file", str(top / "ann"), "--wait"]
        )
        == 0
    )
    assert "[ranked] check: passed, validation: passed" in capsys.readouterr().err
    # a bot folder, zipped by submit
    folder = top / "zbot"
    folder.mkdir()
    shutil.copy(bots / "low_bot.py", folder / "main.py")
    (folder / "bot.toml").write_text('command = "main.py"\n')
    assert main(["submit", url, str(folder), "--token-file", str(top / "bob"), "--wait"]) == 0
    capsys.readouterr()
    # a bot that crashes: check fails; its owner reads the output
    bad = top / "bad.py"
    bad.write_text("raise SystemExit('no-such-strategy-here')\n")
    assert main(["submit", url, str(bad), "--token-file", str(top / "cy"), "--wait"]) == 5
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("error: submission 3 failed at check: ")
    assert main(["status", url, "--token-file", str(top / "cy")]) == 0
    out = capsys.readouterr().out
    assert "submission 3 [failed] check: failed" in out and "output of its check:" in out
    # ranked ladder tables with the house bots; standings and a replay served
    deadline = time.monotonic() + 600
    while True:
        standings = httpx.get(f"{url}/api/standings", timeout=30).json()
        if standings["rated_through"] >= 1:
            break
        assert time.monotonic() < deadline, standings
        time.sleep(1)
    names = {r["participant"] for r in standings["rows"]}
    assert {"ann", "bob"} <= names and "cy" not in names
    assert any(r["house"] for r in standings["rows"])
    page = httpx.get(f"{url}/tables/0", timeout=30)
    assert page.status_code == 200
    start = page.text.index('id="replay-data">') + len('id="replay-data">')
    replay = json.loads(page.text[start : page.text.index("</script>", start)])
    assert len(replay["seats"]) == 4 and replay["hands"]
    for path in ("/", "/tables", "/tables/0", "/api/standings", "/environment"):
        assert "no-such-strategy-here" not in httpx.get(f"{url}{path}", timeout=30).text
