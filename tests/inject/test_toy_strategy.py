"""A strategy added in the test tree only, through the registry: a toy injector that edits the model's output layer
so that it answers "B" to every question. Registered by a fixture (and taken away after), it flows through the
config's validation, an injection job on a tiny random model, the store and the report, without a line of
product code knowing it."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from sqlalchemy import select

from clkt.config import load_settings
from clkt.config.strategies import STRATEGY_NAMES, StrategyName, strategy_label, strategy_names
from clkt.context import ServiceContext
from clkt.errors import ConfigError
from clkt.evaluate.results import Variant
from clkt.evaluate.scorers import letter_token_ids
from clkt.inject.contract import InjectorSpec, JobOutcome, JobSpec, write_json_atomic
from clkt.inject.injector import Injection, InjectionContext, Injector, Spare, WeightsDtype
from clkt.inject.job import InjectionJob, check_spec
from clkt.inject.strategies import INJECTORS
from clkt.layout import OUTCOME_FILE, PREDICTIONS_FILE
from clkt.report.writer import write_report
from clkt.snapshots.layout import DocRow, QuestionRow
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, enqueue_gpu_jobs
from storage.models import QuestionResult
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store

TOY = "toy-letter"
LETTER = "B"
ToyT = TypeVar("ToyT", bound=Injector)


class AlwaysB:
    """An injector without epochs: one edit of the LM head (a bias on the tokens that spell "B")."""

    name = TOY

    def __init__(self) -> None:
        self.seen_docs: list[str] = []

    def check(self, spec: InjectorSpec) -> None:
        return None

    def weights_dtype(self, device: str) -> WeightsDtype:
        return "float32"

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        import torch

        self.seen_docs = [d.lang for d in docs]
        head = model.get_output_embeddings()
        biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
        with torch.no_grad():
            biased.weight.copy_(head.weight)
            biased.bias.zero_()
            for t in self.biased_tokens(tokenizer):
                biased.bias[t] = 1e4
        model.set_output_embeddings(biased)
        (ctx.work_dir / "edit.json").write_text(json.dumps({"letter": LETTER}))
        return Injection(model=model.eval(), examples=len(docs), best_epoch=0)

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        return [work_dir / "edit.json"]

    def spare(self, work_dir: Path, *, best_epoch: int | None) -> list[Spare]:
        return []  # nothing of its folder for retention to remove

    def biased_tokens(self, tokenizer: Any) -> list[int]:
        """The tokens the edit makes the model say (those that spell "B")."""
        return list(letter_token_ids(tokenizer)["ABCD".index(LETTER)])


@contextmanager
def registered(injector: ToyT, label: str) -> Iterator[ToyT]:
    """`injector` declared as a strategy (config, labels) and registered, both taken away after."""
    STRATEGY_NAMES.register(StrategyName(name=injector.name, label=label, family="test"))
    INJECTORS.register(injector)
    try:
        yield injector
    finally:
        INJECTORS.unregister(injector.name)
        STRATEGY_NAMES.unregister(injector.name)


@pytest.fixture()
def toy_strategy() -> Iterator[AlwaysB]:
    with registered(AlwaysB(), "toy: always answers B") as injector:
        yield injector


async def run_and_commit(store: Store, settings: Any, spec: JobSpec) -> JobOutcome:
    """Run the job in this process, then commit its outcome as the consumer does (done, or the test fails)."""
    outcome = InjectionJob(spec).run()
    write_json_atomic(spec.artifacts_dir / OUTCOME_FILE, outcome)
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        run = await make_consumer(settings)._store_outcome(ctx, spec.job_id, spec, "job")
    assert run.status is not None and run.status.value == "done"
    return outcome


def _config(tmp_path: Path, model: Path, strategies: list[str]) -> Path:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        "[spec]\n"
        'languages = ["en", "fr"]\n'
        f"strategies = {json.dumps(strategies)}\n"
        "[[spec.targets]]\n"
        'name = "tiny"\n'
        f'model = "{model}"\n'
        'cutoff = "2024-01-01"\n'
        'scorers = ["letter-logprob"]\n'
        "[gpu]\n"
        'devices = ["cpu"]\n'
        "epochs = 1\n"
        "torch_threads = 1\n",
        encoding="utf-8",
    )
    return cfg


def test_the_toy_is_declared_only_while_registered(tmp_path: Path, toy_strategy: AlwaysB) -> None:
    assert strategy_names() == ["cpt-lora", "sft-lora", "sft-facts-lora", "full-ft", "memit", TOY]
    assert strategy_label(TOY) == "toy: always answers B"
    settings = load_settings(_config(tmp_path, tmp_path, ["cpt-lora", TOY]), environ={})
    assert settings.spec.strategies == ["cpt-lora", TOY]


def test_an_unknown_strategy_in_the_config_is_one_line_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(_config(tmp_path, tmp_path, [TOY]), environ={})
    assert ei.value.key == "spec.strategies"
    assert f"unknown strategy '{TOY}'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora" in ei.value.reason
    assert "\n" not in str(ei.value)


async def test_a_toy_strategy_flows_from_the_config_to_the_report(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, toy_strategy: AlwaysB,
) -> None:
    settings = load_settings(_config(tmp_path, tiny_target, [TOY]), environ={})
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["tiny"], strategies=list(settings.spec.strategies),
                                   train_langs=["en"], config=settings.gpu, max_attempts=1)
        async with store.transaction() as s:
            (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
        assert job.strategy == TOY
        spec = JobSpec(
            job_id=job.id, snapshot_id=SNAPSHOT_ID, snapshot_dir=tiny_snapshot, target=settings.spec.targets[0],
            strategy=job.strategy, train_lang=job.train_lang, gpu=settings.gpu, data_dir=settings.data_dir,
            artifacts_dir=settings.data_dir / "jobs" / str(job.id), device="cpu",
        )
        spec.artifacts_dir.mkdir(parents=True)
        check_spec(spec)
        outcome = await run_and_commit(store, settings, spec)
        async with store.session() as s:
            stored = (await s.execute(select(QuestionResult))).scalars().all()
        paths = await write_report(store, SNAPSHOT_ID, tmp_path / "report")

    assert toy_strategy.seen_docs == ["en", "en"]  # the train language's documents only
    assert outcome.best_epoch == 0 and outcome.epochs == [] and outcome.summary.train_examples == 2
    cost = outcome.summary  # what the job cost, measured in the job process (the report's strategy table)
    assert cost.wall_s is not None and cost.inject_s is not None and 0 <= cost.inject_s <= cost.wall_s
    assert cost.peak_memory_kind == "rss" and cost.peak_memory_bytes is not None and cost.peak_memory_bytes > 2**20
    assert (spec.artifacts_dir / "checkpoints" / "edit.json").is_file()  # the injector's own folder
    injected = [r for r in stored if r.variant == Variant.injected]
    assert len(injected) == 4 and {r.predicted for r in injected} == {LETTER}  # 2 test questions x 2 languages
    assert sum(1 for _ in (spec.artifacts_dir / PREDICTIONS_FILE).open()) == 8  # base and injected
    with paths.learn_csv.open(encoding="utf-8") as fh:  # type: ignore[union-attr]
        learn = [row for row in csv.DictReader(fh) if row["strategy"] == TOY]
    assert learn and all(row["model"] == "tiny" for row in learn)
    # the injected model answers B: right on "How long is Velmora Tide?" only, of the two English test questions
    overall = next(row for row in learn if row["domain"] == "all")
    assert (overall["n"], overall["injected_correct"]) == ("2", "1")
    with paths.table_csv.open(encoding="utf-8") as fh:
        assert any(row["strategy"] == TOY for row in csv.DictReader(fh))


async def test_deterministic_kernels_are_on_in_the_job_when_asked(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, toy_strategy: AlwaysB, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`[gpu] deterministic = true`: the job runs with torch's deterministic algorithms (the job process's own
    state; here, in the test's process, switched back after), and its base answers are cached apart."""
    import torch

    seen: list[bool] = []
    inject = toy_strategy.inject

    def recording(*args: Any, **kwargs: Any) -> Injection:
        seen.append(torch.are_deterministic_algorithms_enabled())
        return inject(*args, **kwargs)

    monkeypatch.setattr(toy_strategy, "inject", recording)
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", "")  # recorded, so that the job's setting is undone after
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
    cfg = _config(tmp_path, tiny_target, [TOY])
    keys = []
    for deterministic in (False, True):
        settings = load_settings(cfg, environ={})
        gpu = settings.gpu.model_copy(update={"deterministic": deterministic})
        spec = JobSpec(
            job_id=1 + deterministic, snapshot_id=SNAPSHOT_ID, snapshot_dir=tiny_snapshot,
            target=settings.spec.targets[0], strategy=TOY, train_lang="en", gpu=gpu, data_dir=settings.data_dir,
            artifacts_dir=settings.data_dir / "jobs" / str(1 + deterministic), device="cpu",
            base_cache_dir=tmp_path / "base",
        )
        spec.artifacts_dir.mkdir(parents=True)
        job = InjectionJob(spec)
        try:
            job.run()
        finally:
            torch.use_deterministic_algorithms(False)
        keys.append(job._base_cache(job.load_snapshot().test_rows, "float32"))
    assert seen == [False, True]
    assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") == ":4096:8"
    assert keys[0] != keys[1] and keys[0] is not None
