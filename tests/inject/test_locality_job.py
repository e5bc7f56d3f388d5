"""The locality split in a GPU job, on a tiny random model: answered by the base and the injected model, only
for the entities the job's target knew, kept as paired counts in the summary (never as results, never trained
on), and shown as kept % in the report."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from clkt.config import load_settings
from clkt.config.strategies import STRATEGY_NAMES, StrategyName
from clkt.context import ServiceContext
from clkt.evaluate.summary import JobSummary
from clkt.inject.contract import InjectorSpec, JobOutcome, JobSpec, write_json_atomic
from clkt.inject.injector import Injection, InjectionContext, WeightsDtype
from clkt.inject.job import InjectionJob
from clkt.inject.strategies import INJECTORS
from clkt.layout import OUTCOME_FILE, PREDICTIONS_FILE
from clkt.report.writer import write_report
from clkt.snapshots.layout import DocRow, QuestionRow
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, enqueue_gpu_jobs, jobs_for_snapshot
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.inject._fixtures import (
    SNAPSHOT_ID,
    add_locality_split,
    make_consumer,
    public_qid,
    seed_store,
    write_tiny_snapshot,
)
from tests.inject.test_toy_strategy import AlwaysB

KEEP = "toy-keep"


class KeepAll:
    """An injector that changes nothing: the injected model answers as the base model did."""

    name = KEEP

    def __init__(self) -> None:
        self.docs: list[DocRow] = []

    def check(self, spec: InjectorSpec) -> None:
        return None

    def weights_dtype(self, device: str) -> WeightsDtype:
        return "float32"

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        self.docs = list(docs)
        return Injection(model=model.eval(), examples=len(docs), best_epoch=0)

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        return []


@pytest.fixture()
def toys() -> Iterator[tuple[KeepAll, AlwaysB]]:
    keep, always_b = KeepAll(), AlwaysB()
    for inj in (keep, always_b):
        STRATEGY_NAMES.register(StrategyName(name=inj.name, label=inj.name, family="test"))
        INJECTORS.register(inj)
    try:
        yield keep, always_b
    finally:
        for inj in (keep, always_b):
            INJECTORS.unregister(inj.name)
            STRATEGY_NAMES.unregister(inj.name)


def _config(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["{KEEP}", "{AlwaysB.name}"]\n'
        f'[[spec.targets]]\nname = "tiny"\nmodel = "{folder}"\ncutoff = "2024-01-01"\nscorers = ["letter-logprob"]\n'
        '[gpu]\ndevices = ["cpu"]\nepochs = 1\ntorch_threads = 1\n',
        encoding="utf-8",
    )
    return cfg


def _spec(settings: Any, job: Any, snap: Path) -> JobSpec:
    spec = JobSpec(
        job_id=job.id, snapshot_id=SNAPSHOT_ID, snapshot_dir=snap, target=settings.spec.targets[0], strategy=job.strategy,
        train_lang=job.train_lang, gpu=settings.gpu, data_dir=settings.data_dir,
        artifacts_dir=settings.data_dir / "jobs" / str(job.id), device="cpu",
    )
    spec.artifacts_dir.mkdir(parents=True)
    return spec


def _predictions(spec: JobSpec) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (spec.artifacts_dir / PREDICTIONS_FILE).read_text().splitlines()]


async def _run_jobs(tmp_path: Path, snap: Path) -> tuple[Any, dict[str, tuple[JobSpec, JobOutcome]], Store]:
    settings = load_settings(_config(tmp_path), environ={})
    store = Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db")
    await store.__aenter__()
    await seed_store(store, snap)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["tiny"], strategies=list(settings.spec.strategies),
                               train_langs=["en"], config=settings.gpu, max_attempts=1)
    async with store.transaction() as s:
        jobs = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60), limit=2)
    ran: dict[str, tuple[JobSpec, JobOutcome]] = {}
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        for job in jobs:
            spec = _spec(settings, job, snap)
            outcome = InjectionJob(spec).run()
            write_json_atomic(spec.artifacts_dir / OUTCOME_FILE, outcome)
            await make_consumer(settings)._store_outcome(ctx, job.id, spec, "job")
            ran[job.strategy] = (spec, outcome)
    return settings, ran, store


async def test_a_job_reports_what_it_kept_of_the_entities_its_target_knew(tmp_path: Path, toys: tuple[KeepAll, AlwaysB]) -> None:
    snap = add_locality_split(write_tiny_snapshot(tmp_path / "snapshot"), known_by={"tiny": [7, 8], "other": [7]})
    locality_qids = {public_qid(71, 7), public_qid(72, 7), public_qid(81, 8)}
    _, ran, store = await _run_jobs(tmp_path, snap)
    try:
        async with store.session() as s:
            stored = {j.strategy: JobSummary.from_stored(j.summary) for j in await jobs_for_snapshot(s, SNAPSHOT_ID)}
        paths = await write_report(store, SNAPSHOT_ID, tmp_path / "report")
    finally:
        await store.__aexit__(None, None, None)
    keep, _ = toys
    assert set(ran) == {KEEP, AlwaysB.name}
    assert [d.lang for d in keep.docs] == ["en", "en"]  # never trained on: no locality document exists
    for strategy, (spec, outcome) in ran.items():
        assert not {r.qid for r in outcome.results} & locality_qids  # never a result, never scored as transfer
        preds = [p for p in _predictions(spec) if p["qid"] in locality_qids]
        assert len(preds) == 2 * 2 * 3 and {p["split"] for p in preds} == {"locality"}  # base+injected x en,fr x 3
        summary = stored[strategy]
        assert summary is not None and summary.locality_questions == 6 and summary.locality == outcome.summary.locality
        for lang in ("en", "fr"):
            c = summary.locality["letter-logprob"][lang]
            got = {(p["qid"], p["variant"]): p["correct"] for p in preds if p["lang"] == lang}
            right_before = [q for q in locality_qids if got[(q, "base")]]
            assert c.n == 3 and c.base_right == len(right_before)  # the counts recomputed from the predictions
            assert c.kept == sum(got[(q, "injected")] for q in right_before)
            assert sum(e.base_right for e in c.entities) == c.base_right
            if strategy == KEEP:  # the model unchanged: everything right before stays right
                assert c.lost == 0 and c.gained == 0
            else:  # always "B": right after only on the question whose answer is B (slot 72)
                assert {q for (q, v), ok in got.items() if v == "injected" and ok} == {public_qid(72, 7)}
    rows = list(csv.DictReader((paths.directory / "locality.csv").open()))
    assert {(r["strategy"], r["test"]) for r in rows} == {(s, lang) for s in ran for lang in ("en", "fr")}
    assert all(r["too_few"] == "True" for r in rows)  # 3 questions: under the minimum, never a bare percentage
    assert "## Locality: what each job kept" in paths.markdown.read_text()


def test_a_target_the_split_does_not_list_answers_no_locality_question(tmp_path: Path, toys: tuple[KeepAll, AlwaysB]) -> None:
    snap = add_locality_split(write_tiny_snapshot(tmp_path / "snapshot"), known_by={"other": [7, 8]})
    settings = load_settings(_config(tmp_path), environ={})
    job = type("J", (), {"id": 1, "strategy": KEEP, "train_lang": "en"})()
    spec = _spec(settings, job, snap)
    outcome = InjectionJob(spec).run()
    assert outcome.summary.locality == {} and "locality" not in outcome.summary.model_dump(mode="json")
    assert len(_predictions(spec)) == 2 * 2 * 2  # the real test questions only: 2 x 2 languages x base/injected
