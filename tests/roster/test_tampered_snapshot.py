"""A late target's GPU job on a snapshot whose files no longer match their hashes fails once, for good, naming the
file (the job process checks the hashes when it loads the snapshot: `load_snapshot_dir(verify_hashes=True)`)."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from clkt.config import EMBEDDED_TARGET
from clkt.context import ServiceContext
from clkt.inject.consumer import GpuConsumer
from clkt.roster import LateTargetService, prepare_targets
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import jobs_for_snapshot
from tests.roster._flow import LATE, Answers, build_june, probe_running, with_targets


async def test_a_late_targets_job_on_a_changed_snapshot_fails_once_naming_the_file(store: Store, tmp_path: Path) -> None:
    settings, res = await build_june(store, tmp_path)
    assert res.snapshot_id is not None and res.path is not None
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    restarted = restarted.model_copy(update={"spec": restarted.spec.model_copy(update={"train_languages": ["en"]})})
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    async with probe_running(restarted, store, Answers()) as ctx:
        await LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu).finish_ready(ctx)
    with (res.path / "docs" / "en.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("\n")  # after the freeze, someone edited the snapshot's files
    consumer = GpuConsumer(gpu=restarted.gpu, daemon=restarted.daemon, targets=restarted.spec.targets,
                           data_dir=restarted.data_dir, burst=True)
    async with aiohttp.ClientSession() as http:
        await consumer.run(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()))
    async with store.session() as s:
        (job,) = await jobs_for_snapshot(s, res.snapshot_id)
    assert job.target_model == "late-chat"
    assert job.status is LeaseStatus.failed and job.attempts == 1  # once, for good: retrying cannot help
    assert "bad-input" in (job.last_error or "") and "docs/en.jsonl does not match its sha256" in (job.last_error or "")
