"""Issue 28's "Done when", in a real browser: headless Chromium (Debian's
``chromium`` through Playwright's ``executable_path``, as
tests/live/test_live_browser.py runs it) against ``hearts-arena serve`` (the
runner with sealed bots and the web process; one hand a game).

The organiser opens the one-time organiser link and invites two
participants; both accept their links (a second use of one fails); one
uploads a bot through their page, the other with ``hearts-arena submit`` and
a token made on their page; both pass check and validation; ranked tables
play with the house bots; the standings update without a reload; a replay
opens; a participant's page shows their own seat's output and no other's.
The first participant's bot writes hostile stderr (markup, ANSI escapes, a
bidirectional override, CRLF-forged log lines): the organiser sees it as
text, no dialog opens, no request leaves the page, and the server's log
stays one JSON object a line. Skipped where Chromium, Playwright or the
seal is missing."""

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
from typing import Any

import httpx
import pytest

from arena.core.resources import sample_bots_dir

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="Chromium is not installed (apt-get install -y chromium)",
    ),
]
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)

FLAGS = ["--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
ROOT = os.geteuid() == 0
HOSTILE = (
    "<script>alert(1)</script>"
    '<img src=x onerror="alert(2)">'
    "\x1b[31mred\x1b[0m"
    "abc\u202edcba"
    '\r\n{"t": 0, "event": "forged"}\r\n'
)
SETTINGS = """
[game]
hands = 1
time_limit = 1.0

[ladder]
lag = 1
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture
def served() -> Iterator[dict[str, Any]]:
    top = Path(tempfile.mkdtemp(prefix="hearts-arena-pages-"))
    top.chmod(0o711)
    comp = top / "comp"
    (top / "settings.toml").write_text(SETTINGS)
    user = ["--user", "nobody"] if ROOT else []
    made = _arena("serve", str(comp), "--init", "--settings", str(top / "settings.toml"), *user)
    assert made.returncode == 0, made.stderr
    port = _free_port()
    # The organiser's link, as shell access to the server gives it.
    linked = _arena("serve", str(comp), "--organiser-link", "--listen", f"127.0.0.1:{port}")
    assert linked.returncode == 0, linked.stderr
    link = linked.stdout.splitlines()[-1]
    assert link.startswith(f"http://127.0.0.1:{port}/signin/"), linked.stdout
    log_path = top / "serve.log"
    log = log_path.open("w")
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
                text = log_path.read_text()
                if "seal" in text.lower():
                    pytest.skip(f"the runner cannot seal bots here: {text.strip()[-300:]}")
                raise AssertionError(f"serve ended: {text}")
            try:
                httpx.get(f"{url}/environment", timeout=5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the web process did not answer"
                time.sleep(0.2)
        yield {"url": url, "top": top, "organiser": link, "log": log_path}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


class Watched:
    """A page with every dialog, request and console error recorded."""

    def __init__(self, context: Any, origin: str) -> None:
        self.page = context.new_page()
        self.origin = origin
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def outside(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.origin + "/")]


def _accept(browser: Any, link: str, origin: str) -> tuple[Any, Watched]:
    context = browser.new_context()
    w = Watched(context, origin)
    w.page.goto(link)
    with w.page.expect_navigation():
        w.page.click("#sign-in")
    # redirected to an address without the link
    assert "/signin/" not in w.page.url, w.page.content()[:2000]
    return context, w


def _wait(fn: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, what
        time.sleep(1)


def test_organiser_invites_participants_submit_play_and_see_their_own_output(
    served: dict[str, Any], browser: Any
) -> None:
    url, top = served["url"], served["top"]
    # the organiser signs in with the one-time link and invites two participants
    org_context, org = _accept(browser, served["organiser"], url)
    assert org.page.url == f"{url}/organiser"
    links = {}
    for name in ("ann", "bob"):
        org.page.goto(f"{url}/organiser")
        org.page.fill("input[name=display_name]", name)
        with org.page.expect_navigation():
            org.page.click("#invite")
        links[name] = org.page.inner_text("#secret").strip()
        assert links[name].startswith(f"{url}/signin/")
    # the organiser's link works once
    again = browser.new_context()
    p = again.new_page()
    p.goto(served["organiser"])
    assert p.locator("#sign-in").count() == 0 or "cannot be used" in p.content()
    again.close()
    ann_context, ann = _accept(browser, links["ann"], url)
    bob_context, bob = _accept(browser, links["bob"], url)
    # a second use of ann's link fails
    third = browser.new_context()
    p = third.new_page()
    p.goto(links["ann"])
    if p.locator("#sign-in").count():
        with p.expect_navigation():
            p.click("#sign-in")
    assert "/me" not in p.url and "cannot be used" in p.content().lower()
    third.close()

    # ann uploads her bot (hostile stderr) through her page
    bot = top / "ann_bot.py"
    text = (sample_bots_dir() / "random_bot.py").read_text()
    head = "from __future__ import annotations\n"  # stays the file's first statement
    write = f"import sys as _sys\n_sys.stderr.write({HOSTILE!r})\n_sys.stderr.flush()\n"
    bot.write_text(text.replace(head, head + write, 1))
    ann.page.goto(f"{url}/me")
    ann.page.set_input_files("input[name=file]", str(bot))
    with ann.page.expect_navigation():
        ann.page.click("form[action='/me/submissions'] button")
    assert "received" in ann.page.content()
    # bob makes a token on his page and submits with the command line
    bob.page.goto(f"{url}/me")
    with bob.page.expect_navigation():
        bob.page.click("#new-token")
    token_file = top / "bob.token"
    token_file.write_text(bob.page.inner_text("#secret").strip() + "\n")
    token_file.chmod(0o600)

    # the organiser watches the standings, never reloading
    org.page.goto(f"{url}/")
    submitted = _arena(
        "submit", url, str(sample_bots_dir() / "low_bot.py"), "--token-file", str(token_file),
        "--wait", "--timeout", "900",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr

    def ranked() -> bool:
        ann.page.goto(f"{url}/submissions/1")
        status = ann.page.inner_text("#status")
        assert status in ("queued", "check", "validation", "ranked"), ann.page.content()[:3000]
        return status == "ranked"

    _wait(ranked, 900, "ann's submission did not pass check and validation")
    org.page.wait_for_function(
        "() => { const t = document.querySelector('#standings tbody').textContent;"
        " return t.includes('ann') && t.includes('bob')"
        " && Number(document.getElementById('rated-through').textContent) >= 1; }",
        timeout=600_000,
    )
    assert org.page.evaluate("performance.getEntriesByType('navigation').length") == 1

    # a replay opens; ann sees her own seat's output only, bob his
    org.page.goto(f"{url}/tables/0")
    org.page.wait_for_selector("#player:not([hidden])")
    seats = org.page.locator("#seat-output h3").all_inner_texts()
    assert len(seats) == 4
    for who, w in (("ann", ann), ("bob", bob)):
        w.page.goto(f"{url}/tables/0")
        w.page.wait_for_selector("#player:not([hidden])")
        mine = w.page.locator("#seat-output h3").all_inner_texts()
        assert len(mine) == 1 and who in mine[0], mine
        assert ("<script>alert(1)</script>" in w.page.inner_text("#seat-output")) == (who == "ann")

    # the organiser reads ann's stderr: text, no dialog, no request outside
    ann_seat = next(i for i, s in enumerate(seats) if "ann" in s)
    org.page.goto(f"{url}/tables/0/seats/{ann_seat}?rotation=0")
    shown = org.page.inner_text("#stderr")
    assert "<script>alert(1)</script>" in shown and '<img src=x onerror="alert(2)">' in shown
    assert "\\x1b[31mred" in shown and "abc\\u202edcba" in shown and "\u202e" not in shown
    for w in (org, ann, bob):
        assert w.dialogs == [] and w.outside() == [] and w.errors == []
    for context in (org_context, ann_context, bob_context):
        context.close()
    # the server's log: one JSON object a line, nothing forged
    lines = [x for x in served["log"].read_text().splitlines() if x.strip()]
    events = [json.loads(x)["event"] for x in lines if x.startswith("{")]
    assert "forged" not in events and "validated" in events
    assert all(x.startswith("{") for x in lines), [x for x in lines if not x.startswith("{")][:3]
