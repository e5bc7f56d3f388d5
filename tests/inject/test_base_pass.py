"""One base answer set per (snapshot, target, scorer), whatever dtype a job's strategy loads its weights in: the base
pass runs in `base_weights_dtype` (the strategy's model is loaded after it, in its own dtype), so a bf16 strategy's
job and an fp32 one's read one cached set. Before, the cache was keyed by the strategy's dtype: full-ft's fp32 jobs
and the others' bf16 ones answered the base questions twice, and not always alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clkt.config import GpuSettings, TargetSettings
from clkt.config.strategies import STRATEGY_NAMES, StrategyName
from clkt.evaluate.results import Variant
from clkt.inject.contract import InjectorSpec, JobSpec
from clkt.inject.injector import Injection, InjectionContext, WeightsDtype, base_weights_dtype
from clkt.inject.job import InjectionJob
from clkt.inject.strategies import INJECTORS
from clkt.snapshots.layout import DocRow, QuestionRow


class Unchanged:
    """An injector that leaves the model as it is, loaded in `dtype` on every device; it records what it got."""

    def __init__(self, name: str, dtype: WeightsDtype) -> None:
        self.name, self.dtype = name, dtype
        self.got: list[str] = []  # the dtype of each model it was handed

    def check(self, spec: InjectorSpec) -> None:
        return None

    def weights_dtype(self, device: str) -> WeightsDtype:
        return self.dtype

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        self.got.append(str(next(model.parameters()).dtype))
        return Injection(model=model.eval(), examples=len(docs), best_epoch=0)

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        return []


@pytest.fixture()
def two_dtypes() -> Iterator[dict[str, Unchanged]]:
    made = {"toy-bf16": Unchanged("toy-bf16", "bfloat16"), "toy-fp32": Unchanged("toy-fp32", "float32")}
    for name, injector in made.items():
        STRATEGY_NAMES.register(StrategyName(name=name, label=name, family="test"))
        INJECTORS.register(injector)
    try:
        yield made
    finally:
        for name in made:
            INJECTORS.unregister(name)
            STRATEGY_NAMES.unregister(name)


def _run(tmp_path: Path, snapshot: Path, model: Path, *, strategy: str, job_id: int, base_dir: Path) -> tuple[InjectionJob, Any]:
    spec = JobSpec(job_id=job_id, snapshot_id="tiny", snapshot_dir=snapshot, target=TargetSettings(name="tiny", model=str(model)),
                   strategy=strategy, train_lang="en", device="cpu", data_dir=tmp_path / "data",
                   gpu=GpuSettings(devices=["cpu"], torch_threads=1, scorers=["letter-logprob", "option-loglik"]),
                   artifacts_dir=tmp_path / f"job{job_id}", base_cache_dir=base_dir)
    spec.artifacts_dir.mkdir(parents=True)
    job = InjectionJob(spec)
    return job, job.run()


def _base(outcome: Any) -> list[str]:
    return [r.model_dump_json() for r in outcome.results if r.variant is Variant.base]


def test_jobs_of_two_dtypes_share_one_base_set_answered_in_the_base_dtype(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, two_dtypes: dict[str, Unchanged],
) -> None:
    assert base_weights_dtype("cpu") == "float32" and base_weights_dtype("cuda:0") == "bfloat16"
    shared = tmp_path / "base"
    bf16_job, bf16 = _run(tmp_path, tiny_snapshot, tiny_target, strategy="toy-bf16", job_id=1, base_dir=shared)
    fp32_job, fp32 = _run(tmp_path, tiny_snapshot, tiny_target, strategy="toy-fp32", job_id=2, base_dir=shared)
    assert not bf16_job.base_from_cache and fp32_job.base_from_cache  # the second job read the first one's set
    assert len(list(shared.glob("*.jsonl"))) == 1  # one base set, not one per dtype
    assert _base(bf16) == _base(fp32) and len(_base(bf16)) > 0
    # each injector still got its own dtype: the bf16 strategy's model was loaded again after the base pass
    assert two_dtypes["toy-bf16"].got == ["torch.bfloat16"] and two_dtypes["toy-fp32"].got == ["torch.float32"]
    # and the set is the base dtype's (float32 on the CPU): what an fp32 job answers on its own, without a cache
    alone_job, alone = _run(tmp_path, tiny_snapshot, tiny_target, strategy="toy-fp32", job_id=3, base_dir=tmp_path / "b3")
    assert not alone_job.base_from_cache and _base(alone) == _base(bf16)
