"""`clkt status` (and `--json`) say why GPU jobs wait when the Ray engine is not ready."""

from __future__ import annotations

import json
from pathlib import Path

from storage.engine import Store
from storage.gpu_engines import record_engine_status
from tests.cli._in_process import Ran, clkt


def _clkt(*args: str) -> Ran:
    return clkt(*args, columns=250)


async def test_status_says_why_gpu_jobs_wait(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.transaction() as s:
        await record_engine_status(s, owner="host:1:a", engine="ray", state="unreachable", address="10.1.2.3:6379",
                                   detail="cannot reach the Ray cluster at 10.1.2.3:6379: ConnectionRefusedError")
    res = _clkt("status", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "GPU engine ray (10.1.2.3:6379): unreachable — GPU jobs wait: cannot reach the Ray cluster" in res.stdout
    res = _clkt("status", "--config", str(cfg), "--json")
    engine = json.loads(res.stdout)["gpu_engine"]
    assert engine["state"] == "unreachable" and "ConnectionRefusedError" in engine["detail"]
