"""The status pages in a real headless Chromium, served by a real daemon process crawling the replay server.

The store is seeded first (entities with a hostile name, a frozen snapshot with its files and a report),
then `clkt run` starts on it with the bundled replay server (recorded dates, not re-dated: every crawled
entity fails the temporal gate, so no model is loaded and the run stays short). Each page must load with no
console error, exception, failed load or CSP refusal, show its content, never run the crawled script, and
leave a screenshot under the test's output folder (printed).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from storage.engine import Store
from tests.conftest import REPO, wait_for
from tests.web.cdp import browser, chromium_path
from tests.web.seed import HOSTILE_NAME, JA_TEXT, SNAPSHOT_ID, seed, settings_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # slow: a daemon process

# CI (.ci/run) sets it: there a missing Chromium fails the run instead of skipping (read at import: the root
# conftest clears CLKT_* variables around each test)
_REQUIRED = os.environ.get("CLKT_TEST_REQUIRE_CHROMIUM") == "1"


@pytest.fixture
def chromium() -> str:
    exe = chromium_path()
    if exe is None:
        why = ("headless Chromium is not installed (`make test` installs Debian's chromium when it runs as root or "
               "with password-less sudo; else `apt-get install -y chromium fonts-wqy-microhei`)")
        if _REQUIRED:
            pytest.fail(why + "; CLKT_TEST_REQUIRE_CHROMIUM=1 requires it")
        pytest.skip(why)
    return exe


async def _start_daemon(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    # no observing probe of the rejected entities either: no model is loaded
    cfg = write_config(tmp_path, extra="[replay]\nenabled = true\nredate = false\n[daemon]\npoll_interval_s = 0.2\n"
                                       "[spec]\nineligible_probe_rate = 0.0\n")
    settings = settings_for(cfg)
    async with Store(url=settings.resolved_store_url) as store:
        ids = await seed(store, settings, tmp_path)
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    log = tmp_path / "daemon.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "clkt.cli", "run", "--config", str(cfg)], cwd=REPO, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
    )
    info = settings.data_dir / "daemon.json"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            return bool(json.loads(info.read_text()).get("http_port"))
        except (OSError, ValueError):
            return False

    await wait_for(up, timeout=180)
    port = json.loads(info.read_text())["http_port"]
    return proc, f"http://127.0.0.1:{port}", log


async def test_pages_in_headless_chromium_against_a_daemon(tmp_path: Path, chromium: str) -> None:
    proc, base, log = await _start_daemon(tmp_path)
    ids = json.loads((tmp_path / "ids.json").read_text())
    shots = tmp_path / "screenshots"
    try:
        async with aiohttp.ClientSession() as http:
            async def crawled() -> bool:  # the pollers have finished a cycle on the replay server
                async with http.get(base + "/") as r:
                    return r.status == 200 and 'class="result ok"' in await r.text()

            await wait_for(crawled, timeout=180, interval=0.5)
            # the daemon's endpoint has the guards too
            async with http.get(base + "/", headers={"Host": "rebind.example:80"}) as r:
                assert r.status == 421
            async with http.post(base + "/healthz") as r:
                assert r.status == 405
            async with http.get(base + "/healthz") as r:
                assert r.status == 200 and (await r.json())["ok"] is True

        pages = {
            "overview": ("/", ["Sources", "usgs", "closed", "Stage queue", "GPU jobs", "Disk", "LLM cost", "live from the daemon",
                               "missing_id: 2", "This period's snapshot"]),
            "entities": ("/entities", ["Fresh entities", HOSTILE_NAME, "sports 777", "Velmora Tide", "entities match"]),
            "entities-filtered": ("/entities?domain=music&q=%3Cscript%3E", [HOSTILE_NAME, "1 entities match"]),
            "entity-hostile": (f"/entities/{ids['hostile']}", [HOSTILE_NAME, "Documents", "[ja] Document about", "[fr] Q2 about",
                                                               "Questions (3)", "Probes"]),
            "entity-ready": (f"/entities/{ids['ready']}", [JA_TEXT, "[fr] Document about sports 777", "Evidence"]),
            "snapshots": ("/snapshots", [SNAPSHOT_ID, "sports 1/2", "movies 1/1"]),
            "snapshot": (f"/snapshots/{SNAPSHOT_ID}", ["Manifest", "1 short", "Learn (train language", "Table 2", "not interpretable",
                                                       "Language pairs", "Heatmaps", "Snapshot files", "questions/en.jsonl"]),
        }
        async with browser(chromium) as b:
            for name, (path, expected) in pages.items():
                shot = shots / f"{name}.png"
                page = await b.load(base + path, screenshot=shot)
                print(f"screenshot: {shot}")
                assert page.status == 200, (name, page.status)
                assert page.errors == [], (name, page.errors)
                assert page.dialogs == [], (name, page.dialogs)  # the crawled <script>/onerror never ran
                for text in expected:
                    assert text in page.text, (name, text)
                assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
            # the hostile name is text: no <b> or <img> element came out of it, in the table or the heading
            n = await b.evaluate(base + "/entities", "document.querySelectorAll('td.name b, td.name img, td.name script').length")
            assert n == 0
            heading = await b.evaluate(base + f"/entities/{ids['hostile']}", "document.getElementById('entity-name').textContent")
            assert heading == HOSTILE_NAME
            imgs = await b.evaluate(base + f"/snapshots/{SNAPSHOT_ID}",
                                    "[...document.images].map(i => i.complete && i.naturalWidth > 100)")
            assert imgs == [True]  # the heatmap PNG, served from the report folder
            raw = await b.evaluate(base + f"/files/snapshot/{SNAPSHOT_ID}/manifest.json", "document.contentType")
            assert raw == "text/plain"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = await asyncio.to_thread(proc.wait, 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0, log.read_text()[-3000:]


async def test_the_leaderboard_in_headless_chromium(tmp_path: Path, chromium: str) -> None:
    """`/leaderboard` of a store with a window of snapshots, served by the pages application on loopback (no daemon
    needed: the page reads the store only): no console error or CSP refusal, both PNGs drawn, the hostile target
    name shown as text, the window chosen by the two selectors' query."""
    from aiohttp.test_utils import TestServer

    from clkt.services import page_context
    from clkt.web import pages_app
    from tests.report._window_store import seed_window_store
    from tests.web.test_leaderboard_page import seed_probes

    settings = settings_for(write_config(tmp_path, extra='[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n'))
    shots = tmp_path / "screenshots"
    async with Store(url=settings.resolved_store_url) as store:
        await seed_window_store(store)
        await seed_probes(store)
        server = TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")
        await server.start_server()
        base = str(server.make_url("")).rstrip("/")
        try:
            async with browser(chromium) as b:
                for name, path, expected in (
                    ("leaderboard", "/leaderboard", ["Leaderboard", "Window 2025-01 .. 2025-03", "cpt-lora, generate", "Paired comparison",
                                                     "on the 66 questions valid for both", "into ja", "The cutoff each model really has",
                                                     HOSTILE_NAME]),
                    ("leaderboard-window", "/leaderboard?from=2025-02&to=2025-03&a=beta&b=alpha",
                     ["Window 2025-02 .. 2025-03", "beta (generate) against alpha (generate)"]),
                ):
                    shot = shots / f"{name}.png"
                    page = await b.load(base + path, screenshot=shot)
                    print(f"screenshot: {shot}")
                    assert page.status == 200, (name, page.status)
                    assert page.errors == [] and page.dialogs == [], (name, page.errors, page.dialogs)
                    for text in expected:
                        assert text in page.text, (name, text)
                    assert shot.stat().st_size > 10_000
                imgs = await b.evaluate(base + "/leaderboard", "[...document.images].map(i => [i.id, i.complete && i.naturalWidth > 300])")
                assert imgs == [["trend", True], ["known-rate", True]]
                chosen = await b.evaluate(base + "/leaderboard?from=2025-02", "document.querySelector('select[name=from]').value")
                assert chosen == "2025-02"
                n = await b.evaluate(base + "/leaderboard", "document.querySelectorAll('#cutoff-summary script, #cutoff-summary b').length")
                assert n == 0
        finally:
            await server.close()
