"""`clkt serve` as a real process on a seeded store: it serves the pages (saying no daemon runs), guards
them, and a port in use is one line naming the cause."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp

from storage.engine import Store
from tests.conftest import REPO
from tests.web.seed import HOSTILE_NAME, seed, settings_for, write_config

ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


async def test_serve_pages_from_a_store(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    settings = settings_for(cfg)
    async with Store(url=settings.resolved_store_url) as store:
        ids = await seed(store, settings, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "clkt.cli", "serve", "--config", str(cfg), "--port", "0"], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        base = f"http://127.0.0.1:{m.group(1)}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/") as r:
                html = await r.text()
                assert r.status == 200 and "no daemon in this process" in html and "missing_id: 2" in html
            async with http.get(base + f"/entities/{ids['hostile']}") as r:
                html = await r.text()
                assert r.status == 200 and HOSTILE_NAME not in html and "&lt;script&gt;" in html
            async with http.get(base + "/", headers={"Host": "attacker.example"}) as r:
                assert r.status == 421
            async with http.delete(base + "/snapshots") as r:
                assert r.status == 405
    finally:
        proc.terminate()
        proc.wait(30)


async def test_serve_port_in_use_is_one_line(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    async with Store(url=settings_for(cfg).resolved_store_url):
        pass  # an empty store (serve refuses a missing one)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run([sys.executable, "-m", "clkt.cli", "serve", "--config", str(cfg), "--port", str(port)], cwd=REPO,
                             env=ENV, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot listen" in lines[0] and str(port) in lines[0], res.stderr
