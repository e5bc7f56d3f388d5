"""A run that ended, its files brought back (`ended.json`, the Ray driver), and a daemon that died before committing
them: the restarted consumer commits that outcome instead of running the job again; an end record of another spec
is not taken. Without a cluster (the Ray driver's side is in tests/inject/test_ray_ended.py)."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from clkt.config import EMBEDDED_TARGET, DaemonSettings, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.inject.contract import FailureKind, JobFailure, RunEnded, run_fingerprint, write_json_atomic
from clkt.layout import ENDED_FILE, FAILURE_FILE, LOG_FILE, job_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store


def _settings(data_dir: Path, **gpu: object) -> Settings:
    return Settings(
        data_dir=data_dir, spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
        gpu=GpuSettings.model_validate({"devices": ["cpu"], "epochs": 1, **gpu}),
        daemon=DaemonSettings(poll_interval_s=0.05, lease_s=60),
    )


async def _ended_before_restart(store: Store, settings: Settings, snapshot: Path, *, same_spec: bool) -> Path:
    """One job, and in its folder the files of a run that ended with a permanent failure (as the driver leaves them)."""
    await seed_store(store, snapshot)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                               train_langs=["en"], config=settings.gpu, max_attempts=3)
        (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    spec = await make_consumer(settings).specs.build(store, job, device="cpu")
    art = job_dir(settings.data_dir, job.id)
    art.mkdir(parents=True)
    write_json_atomic(art / FAILURE_FILE, JobFailure(kind=FailureKind.bad_input, message="no module no_such_proj", permanent=True))
    fp = run_fingerprint(spec) if same_spec else "another-spec"
    write_json_atomic(art / ENDED_FILE, RunEnded(fingerprint=fp, returncode=1, where="ray:node-a"))
    return art


async def _consume(store: Store, settings: Settings) -> None:
    async with aiohttp.ClientSession() as http:
        await make_consumer(settings, burst=True).run(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()))


async def test_a_restarted_consumer_commits_the_ended_runs_failure_without_running_it(tmp_path: Path, tiny_snapshot: Path) -> None:
    settings = _settings(tmp_path / "data")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        art = await _ended_before_restart(store, settings, tiny_snapshot, same_spec=True)
        await _consume(store, settings)
        async with store.session() as s:
            (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert job.status == LeaseStatus.failed and job.attempts == 1
    assert "bad-input" in (job.last_error or "") and "no_such_proj" in (job.last_error or "")
    assert not (art / LOG_FILE).exists()  # no job process ran here
    assert not (art / ENDED_FILE).exists()  # consumed: a retried job never takes the same end twice


async def test_an_end_record_of_another_spec_is_not_taken(tmp_path: Path, tiny_snapshot: Path) -> None:
    settings = _settings(tmp_path / "data", job_timeout_s=0.5)  # the run it starts ends fast (timed out)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        art = await _ended_before_restart(store, settings, tiny_snapshot, same_spec=False)
        await _consume(store, settings)
        async with store.session() as s:
            (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert "timed out" in (job.last_error or "") and "bad-input" not in (job.last_error or "")  # it ran
    assert not (art / ENDED_FILE).exists() and not (art / FAILURE_FILE).exists()  # the stale files were cleared
