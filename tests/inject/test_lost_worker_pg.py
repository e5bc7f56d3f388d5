"""A worker lost mid-job (issue 11, item 8): two `clkt worker` processes and the daemon on one PostgreSQL
store; worker A is killed with -9 in the middle of a job. Worker B finishes every job (A's after its lease
expires), no job runs twice to completion (each has exactly its results, A's orphaned job process died
with A), and the report is complete. Runs when CLKT_TEST_PG_URL is set (`.ci/run` starts a server)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from clkt.config.sections import GpuSettings
from clkt.inject.contract import JobProgress
from clkt.layout import PROGRESS_FILE
from storage.engine import Store
from storage.gpu_jobs import GpuJobRecord, enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus, QuestionResult
from tests.conftest import REPO, wait_until
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot

PG_URL = os.environ.get("CLKT_TEST_PG_URL")
pytestmark = [
    pytest.mark.skipif(not PG_URL, reason="CLKT_TEST_PG_URL not set (no PostgreSQL server for this run)"),
    pytest.mark.slow,
]
SOURCES = ("tmdb", "musicbrainz", "deezer", "thesportsdb", "usgs", "gdacs")
RESULTS_PER_JOB = 8  # 2 test questions x 2 languages x 1 scorer x (base, injected)
JOB_CONFIG = GpuSettings(devices=["cpu"], epochs=1, max_new_tokens=4, max_seq_len=128, torch_threads=1,
                         scorers=["letter-logprob"])


def _config(path: Path, data_dir: Path, *, gpu: bool) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    shared = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or "/tmp/clkt-test-data") / "models"
    shared.mkdir(parents=True, exist_ok=True)
    if not (data_dir / "models").exists():
        (data_dir / "models").symlink_to(shared, target_is_directory=True)
    sources = "".join(f"[sources.{s}]\nenabled = false\n" for s in SOURCES)
    path.write_text(
        f'store_url = "{PG_URL}"\ndata_dir = "{data_dir}"\n[http]\nport = 0\n'
        '[spec]\nlanguages = ["en", "fr"]\n[[spec.targets]]\nname = "gemma-3-270m"\nmodel = "embedded:gemma-3-270m"\n'
        'cutoff = 2024-08-01\nkind = "base"\n'
        f'[gpu]\nenabled = {"true" if gpu else "false"}\ndevices = ["cpu"]\nepochs = 1\nmax_new_tokens = 4\n'
        'max_seq_len = 128\ntorch_threads = 1\ncpu_jobs = 1\nscorers = ["letter-logprob"]\n'  # one job at a time: the one it kills
        "[daemon]\nlease_s = 6\npoll_interval_s = 0.2\ngrace_period_s = 5\n" + sources,
        encoding="utf-8",
    )
    return path


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, *args], stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"})


async def _reset_and_seed(tmp_path: Path) -> None:
    assert PG_URL
    engine = create_async_engine(PG_URL)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    snap = write_tiny_snapshot(tmp_path / "snapshot")
    async with Store(url=PG_URL) as store:
        await seed_store(store, snap)
        async with store.transaction() as s:
            n = await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                                       train_langs=["en", "fr"], config=JOB_CONFIG, max_attempts=3)
    assert n == 2


async def _jobs() -> list[GpuJobRecord]:
    assert PG_URL
    async with Store(url=PG_URL, migrate=False) as store, store.session() as s:
        return list(await jobs_for_snapshot(s, SNAPSHOT_ID))


async def _results_per_job() -> dict[int, int]:
    assert PG_URL
    async with Store(url=PG_URL, migrate=False) as store, store.session() as s:
        rows = (await s.execute(select(QuestionResult.job_id, func.count()).group_by(QuestionResult.job_id))).all()
    return {int(j): int(n) for j, n in rows}


def _phase(job_dir: Path) -> str | None:
    """The phase a job process reports in its `progress.json` (None before its first report)."""
    try:
        return JobProgress.model_validate_json((job_dir / PROGRESS_FILE).read_text()).phase
    except (OSError, ValueError):
        return None


def _running(spec: Path) -> bool:
    """Whether a live process runs the job of `spec` (`python -m clkt.inject.run_job <spec>`)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(spec).encode() in cmdline.read_bytes().split(b"\0"):
                return True
        except OSError:  # the process ended meanwhile
            continue
    return False


def test_a_worker_killed_mid_job_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    asyncio.run(_reset_and_seed(tmp_path))
    daemon_cfg = _config(tmp_path / "daemon.toml", tmp_path / "daemon-data", gpu=False)
    a_cfg = _config(tmp_path / "a.toml", tmp_path / "a-data", gpu=True)
    b_cfg = _config(tmp_path / "b.toml", tmp_path / "b-data", gpu=True)
    daemon = _spawn(["run_daemon.py", "--config", str(daemon_cfg)], tmp_path / "daemon.log")
    procs = [daemon]
    try:
        wait_until(lambda: (tmp_path / "daemon-data" / "daemon.json").exists(), timeout=90, interval=0.5,
                   what="the daemon to be up")
        a = _spawn(["-m", "clkt.cli", "worker", "--config", str(a_cfg)], tmp_path / "a.log")
        procs.append(a)
        # A is in the middle of a job: its job process is training (the job log has grown)
        # A is in the middle of a job: its job process has loaded the model and reports a working phase
        # (base answers, training, validation, test) in progress.json
        wait_until(lambda: any(_phase(p.parent) not in (None, "loading")
                               for p in (tmp_path / "a-data" / "jobs").glob("*/job.log")),
                   timeout=120, interval=0.5, what="worker A's job to be past loading")
        (a_job_dir,) = [p.parent for p in (tmp_path / "a-data" / "jobs").glob("*/job.log")]
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=10)
        b = _spawn(["-m", "clkt.cli", "worker", "--config", str(b_cfg)], tmp_path / "b.log")
        procs.append(b)
        wait_until(lambda: all(j.status == LeaseStatus.done for j in asyncio.run(_jobs())), timeout=720, interval=0.5,
                   what="worker B to finish every job")
        b.send_signal(signal.SIGTERM)
        assert b.wait(timeout=60) == 0, (tmp_path / "b.log").read_text()[-2000:]
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0, (tmp_path / "daemon.log").read_text()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    jobs = asyncio.run(_jobs())
    results = asyncio.run(_results_per_job())
    assert [j.status for j in jobs] == [LeaseStatus.done, LeaseStatus.done]
    # none ran twice to completion: every job has exactly one job's results
    assert all(results.get(j.id or 0) == RESULTS_PER_JOB for j in jobs), results
    killed = next(j for j in jobs if str(j.id) == a_job_dir.name)
    assert killed.attempts == 2  # A's interrupted attempt, then B's
    # A's orphaned job process died with A: no process runs its job any more, and it never wrote an outcome
    wait_until(lambda: not _running(a_job_dir / "spec.json"), timeout=30, interval=0.2,
               what="A's orphaned job process to be gone")
    assert not (a_job_dir / "outcome.json").exists()
    # the report is complete: both train languages
    report = tmp_path / "b-data" / "reports" / SNAPSHOT_ID / "report.md"
    assert report.is_file(), (tmp_path / "b.log").read_text()[-2000:]
    assert "Traceback" not in (tmp_path / "b.log").read_text()
