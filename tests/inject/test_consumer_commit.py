"""The consumer's three parts apart: the spec built from a job's typed config, the commit, and the commit hook the
wiring passes in (the consumer imports no retention; `clkt.services` hands it the hook)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest

from clkt.config import EMBEDDED_TARGET, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.evaluate.results import EpochRecord, ResultItem, Variant
from clkt.evaluate.summary import JobSummary
from clkt.inject.contract import JobOutcome, write_json_atomic
from clkt.inject.spec_builder import JobSetupError, SpecBuilder, job_gpu
from clkt.layout import OUTCOME_FILE, base_cache_dir, job_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import GpuJobRecord, claim_gpu_jobs, enqueue_gpu_jobs, get_job
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, public_qid, seed_store


class RecordingHook:
    """A commit hook that notes which jobs it was called for."""

    def __init__(self) -> None:
        self.calls: list[tuple[Store, int]] = []

    async def __call__(self, store: Store, *, job_id: int) -> None:
        self.calls.append((store, job_id))


def _settings(tmp_path: Path, **gpu: object) -> Settings:
    return Settings(data_dir=tmp_path / "data", spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
                    gpu=GpuSettings.model_validate({"devices": ["cpu"], **gpu}))


def _outcome(job_id: int, qids: list[int]) -> JobOutcome:
    return JobOutcome(
        job_id=job_id, best_epoch=1, epochs=[EpochRecord(epoch=1, loss=1.0, tokens=10, seconds=1.0)], device="cpu",
        results=[ResultItem(qid=q, lang="en", variant=Variant.injected, scorer="generate", split="test", predicted="A",
                            correct=True) for q in qids],
        summary=JobSummary(selection_scorer="generate", scorers=["generate"], test_questions=len(qids)),
    )


async def _claimed(store: Store, tiny_snapshot: Path, config: GpuSettings | None) -> GpuJobRecord:
    await seed_store(store, tiny_snapshot)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                               train_langs=["en"], config=config, max_attempts=3)
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
    return job


@pytest.mark.parametrize("known", [True, False])
async def test_the_hook_runs_after_a_commit_and_only_then(tmp_path: Path, tiny_snapshot: Path, known: bool) -> None:
    settings = _settings(tmp_path)
    hook = RecordingHook()
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        job = await _claimed(store, tiny_snapshot, settings.gpu)
        consumer = make_consumer(settings, on_commit=hook)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
            spec = await consumer._job_spec(ctx, job, "cpu")
            spec.artifacts_dir.mkdir(parents=True)
            write_json_atomic(spec.artifacts_dir / OUTCOME_FILE, _outcome(job.id, [public_qid(12, 1) if known else 4242]))
            run = await consumer._store_outcome(ctx, job.id, spec, "job")
        async with store.session() as s:
            after = await get_job(s, job.id)
    assert after is not None
    if known:
        assert run.status is LeaseStatus.done and hook.calls == [(store, job.id)]
        summary = JobSummary.from_stored(after.summary)
        assert summary is not None and summary.target_model_id == EMBEDDED_TARGET.model and summary.epochs[0].epoch == 1
    else:  # the commit failed for good: nothing was committed, no hook
        assert run.status is LeaseStatus.failed and hook.calls == [] and after.summary == {}


async def test_the_spec_is_built_from_the_jobs_typed_config_and_the_layout(tmp_path: Path, tiny_snapshot: Path) -> None:
    consumer_gpu = GpuSettings(devices=["cpu"], epochs=5, ray_max_jobs=3, ray_namespace="here")
    own = GpuSettings(epochs=2, lora_r=4, ray_max_jobs=9, ray_namespace="elsewhere")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        job = await _claimed(store, tiny_snapshot, own)
        builder = SpecBuilder(gpu=consumer_gpu, targets=[EMBEDDED_TARGET], data_dir=tmp_path / "data")
        spec = await builder.build(store, job, device="cpu")
    data = (tmp_path / "data").resolve()
    assert (spec.artifacts_dir, spec.base_cache_dir) == (job_dir(data, job.id), base_cache_dir(data, SNAPSHOT_ID))
    # what the job computes is its own; where it runs is the consumer's
    assert (spec.gpu.epochs, spec.gpu.lora_r) == (2, 4)
    assert (spec.gpu.ray_namespace, spec.gpu.ray_max_jobs) == ("here", 3)


def _record(**kw: object) -> GpuJobRecord:
    from datetime import UTC, datetime

    now = datetime(2025, 6, 1, tzinfo=UTC)
    base: dict[str, object] = dict(
        id=1, snapshot_id="s", target_model="nope", strategy="cpt-lora", train_lang="en", config=None,
        status=LeaseStatus.leased, lease_owner="o", lease_expires_at=None, attempts=1, max_attempts=3, not_before=now,
        last_error=None, device=None, best_epoch=None, artifacts_dir=None, summary={}, created_at=now, updated_at=now,
    )
    return GpuJobRecord(**{**base, **kw})  # type: ignore[arg-type]


def test_a_job_that_cannot_run_as_configured_is_a_setup_error() -> None:
    gpu = GpuSettings()
    assert job_gpu(_record(), gpu) is gpu  # no config of its own: the consumer's
    with pytest.raises(JobSetupError, match="job config is invalid: epochs: "):
        job_gpu(_record(config_error="epochs: Input should be greater than or equal to 1"), gpu)
    with pytest.raises(JobSetupError, match=r"target model 'nope' is not in the spec"):
        SpecBuilder(gpu=gpu, targets=[EMBEDDED_TARGET], data_dir=Path("/d")).target(_record())
