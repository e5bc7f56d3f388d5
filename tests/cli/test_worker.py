"""`clkt worker --burst` through the real CLI process: consumes GPU jobs only, exits when none is left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus
from tests.conftest import REPO
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


async def test_worker_burst_fails_a_job_of_an_unknown_target_and_exits(tmp_path: Path) -> None:
    snap = write_tiny_snapshot(tmp_path / "snap")
    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    async with Store(url=url) as store:
        await seed_store(store, snap)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["not-in-spec"], strategies=["cpt-lora"],
                                   train_langs=["en"], max_attempts=3)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n[gpu]\ndevices = ["cpu"]\n')
    res = subprocess.run([sys.executable, "-m", "clkt.cli", "worker", "--config", str(cfg), "--burst"], capture_output=True,
                         text=True, cwd=REPO, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "1 job(s) run, 0 done" in res.stdout
    async with Store(url=url) as store, store.session() as s:
        (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert job.status == LeaseStatus.failed and "not-in-spec" in (job.last_error or "") and "not in the spec" in (job.last_error or "")
    assert (tmp_path / "reports" / SNAPSHOT_ID / "report.md").is_file()  # its snapshot's jobs are all finished
