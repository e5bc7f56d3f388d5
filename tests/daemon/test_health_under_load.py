"""While the daemon works, `clkt status` and `clkt entities --fresh` answer (concurrent WAL readers) and
`/metrics` reflects progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

from tests import chaos_harness as ch
from tests.conftest import REPO, wait_until


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


def test_cli_and_metrics_answer_while_the_daemon_works(tmp_path: Path) -> None:
    fake, url = ch.start_fake_llm(tmp_path / "fake.log")
    cfg = ch.write_config(tmp_path / "run", url, languages=["en", "fr"])
    proc = ch.start_daemon(cfg, tmp_path / "daemon.log")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        info_path = tmp_path / "run" / "data" / "daemon.json"
        db = tmp_path / "run" / "data" / "clkt.db"
        deadline = time.monotonic() + 60

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            return info_path.exists()

        wait_until(up, timeout=60, interval=0.1, what="the daemon's daemon.json")
        port = json.loads(info_path.read_text())["http_port"]
        wait_until(lambda: ch.progress(db)[0] > 0, timeout=deadline - time.monotonic(), interval=0.2,
                   what="a first entity in the store")
        # readers while the writers are busy
        for _ in range(3):
            t0 = time.monotonic()
            st = subprocess.run([sys.executable, "-m", "clkt.cli", "status", "--json", "--config", str(cfg)],
                                capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
            assert st.returncode == 0, st.stderr
            assert json.loads(st.stdout)["entities"]
            ents = subprocess.run([sys.executable, "-m", "clkt.cli", "entities", "--fresh", "--json", "--config", str(cfg)],
                                  capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
            assert ents.returncode == 0, ents.stderr
            assert ents.stdout.strip()
            assert time.monotonic() - t0 < 30
        with urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            early = r.read().decode()
        ch.wait_drained(db, proc, timeout=480, stable_s=4.0)  # a loaded 2-core machine needs the margin
        with urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            late = r.read().decode()
        with urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as r:
            status = json.loads(r.read())
        with urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert json.loads(r.read())["ok"] is True
    finally:
        rc = ch.stop(proc) if proc.poll() is None else proc.returncode
        fake.kill()
    assert rc == 0
    ingested = _metric(late, "clkt_entities_ingested_total")
    assert ingested > 0
    assert _metric(late, "clkt_source_requests_total") > _metric(early, "clkt_source_requests_total") or ingested
    assert _metric(late, "clkt_stage_tasks_total", stage="translate", outcome="done") > 0
    assert _metric(late, "clkt_entities", status="ready") > 0
    assert _metric(late, "clkt_llm_calls_total") > 0
    assert status["stages"]["translate"]["done"] > 0
