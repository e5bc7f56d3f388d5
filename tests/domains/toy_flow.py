"""The toy domain's flow (run by `test_toy_domain.py` in a process where `CLKT_DOMAIN_PACKAGES` names
`tests.domains.toy`, so the registry has it before the product's modules build their types): crawled by its own
poller from the replay server's recorded list, probed, given questions by the offline template engine, verified,
translated, frozen in a snapshot whose documents, questions, control split and card hold it, then injected (a
cpt-lora job on a tiny random model, on the CPU, in this process) and reported: the report's Table 2 and learn.csv
have the toy domain's own rows."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from sqlalchemy import select

from clkt.config import GpuSettings, Settings, TargetSettings
from clkt.context import ServiceContext
from clkt.domains import DOMAINS
from clkt.evaluate.results import Variant
from clkt.facts import Domain
from clkt.inject.contract import JobSpec, write_json_atomic
from clkt.inject.job import InjectionJob, check_spec
from clkt.layout import OUTCOME_FILE
from clkt.report.writer import ReportPaths, write_report
from clkt.services import agent_backend, snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.layout import load_snapshot_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, enqueue_gpu_jobs
from storage.models import Entity, EntityStatus, QuestionResult
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.inject._fixtures import make_consumer
from tests.pipeline._harness import answers, crawl_replayed, pipeline_settings, running, settle

LANGS = ("en", "ja", "zh", "fr", "es")


async def test_the_toy_domain_flows_to_a_frozen_snapshot(store: Store, tmp_path: Path) -> None:
    assert "lighthouses" in DOMAINS and Domain("lighthouses").value == "lighthouses"
    n = await crawl_replayed(store, pipeline_settings(tmp_path, langs=LANGS), ("beaconapi",))
    assert n == 4  # every recorded lighthouse
    settings = pipeline_settings(tmp_path, langs=LANGS)
    async with running(settings, store, agent_backend(settings, store=store), answers()):
        final = await settle(store, n, timeout=240)
    async with store.session() as s:
        ready = [e for e in (await s.execute(select(Entity))).scalars() if e.status == EntityStatus.ready]
    async with store.session() as s:
        why = {e.id: e.status_reason for e in (await s.execute(select(Entity))).scalars()}
    assert {(e.domain, e.source) for e in ready} == {("lighthouses", "beaconapi")}, (final, why)
    assert len(ready) >= 2, final
    quotas = {d: 2 if d.value == "lighthouses" else 0 for d in Domain}
    frozen = settings.model_copy(update={"snapshot": settings.snapshot.model_copy(update={
        "quotas": quotas, "out_dir": tmp_path / "snapshots", "cadence": "monthly", "control_entities": 1})})
    res = await build_snapshot(store, snapshot_config(frozen), period="2026-02", now=datetime(2026, 3, 2, tzinfo=UTC))
    assert res.path is not None, res
    data = load_snapshot_dir(res.path)
    for lang in LANGS:
        docs = data.docs_for(lang)
        assert {d.domain for d in docs} == {"lighthouses"} and len(docs) == 2
    assert data.manifest.control is not None and "lighthouses" in data.manifest.control.domains
    assert "The toy lighthouse API (tests only)" in (res.path / "README.md").read_text(encoding="utf-8")
    assert res.snapshot_id is not None
    paths = await _inject_and_report(store, frozen, res.snapshot_id, res.path, tmp_path)
    for csv_path in (paths.table_csv, paths.learn_csv):
        assert csv_path is not None
        with csv_path.open(encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if r["strategy"] == "cpt-lora" and r["model"] == "tiny"]
        assert {r["domain"] for r in rows} >= {"lighthouses", "all"}, (csv_path.name, rows)
    with paths.learn_csv.open(encoding="utf-8") as fh:  # type: ignore[union-attr]
        counts = {(r["split"], r["domain"]): int(r["n"]) for r in csv.DictReader(fh) if r["model"] == "tiny"}
    # its real entities per domain; its fictional ones (the control split, all domains pooled: the toy's only)
    assert counts.get(("real", "lighthouses"), 0) > 0 and counts.get(("control", "all"), 0) > 0, counts


def _tiny_target(tmp_path: Path) -> TargetSettings:
    """A tiny random Llama and its word-level tokenizer as a local target (no download)."""
    folder = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return TargetSettings(name="tiny", model=str(folder))


async def _inject_and_report(
    store: Store, settings: Settings, snapshot_id: str, snapshot_dir: Path, tmp_path: Path,
) -> ReportPaths:
    """One cpt-lora job of the frozen snapshot (queued, claimed, run here on the CPU, its outcome committed by the
    consumer as the daemon does), then the snapshot's report."""
    gpu = GpuSettings(devices=["cpu"], epochs=1, torch_threads=1, max_seq_len=64, scorers=["letter-logprob"])
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=snapshot_id, targets=["tiny"], strategies=["cpt-lora"], train_langs=["en"],
                               config=gpu, max_attempts=1)
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=120))
    spec = JobSpec(job_id=job.id, snapshot_id=snapshot_id, snapshot_dir=snapshot_dir, target=_tiny_target(tmp_path),
                   strategy=job.strategy, train_lang=job.train_lang, gpu=gpu, data_dir=settings.data_dir,
                   artifacts_dir=settings.data_dir / "jobs" / str(job.id), device="cpu")
    spec.artifacts_dir.mkdir(parents=True)
    check_spec(spec)
    write_json_atomic(spec.artifacts_dir / OUTCOME_FILE, InjectionJob(spec).run())
    consumer = make_consumer(settings.model_copy(update={"gpu": gpu}))
    async with aiohttp.ClientSession() as http:
        run = await consumer._store_outcome(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()), job.id,
                                            spec, "job")
    assert run.status is not None and run.status.value == "done", run
    async with store.session() as s:
        injected = [r for r in (await s.execute(select(QuestionResult))).scalars() if r.variant == Variant.injected]
    assert injected and len({r.lang for r in injected}) == len(LANGS)  # every language's test questions answered
    return await write_report(store, snapshot_id, tmp_path / "report")
