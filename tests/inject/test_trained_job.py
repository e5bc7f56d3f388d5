"""The shared training injector through a real job on a tiny random model (fast): every epoch checkpointed and
validated, the best one chosen and answered with, a rerun resuming after the last finished epoch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clkt.config import GpuSettings, TargetSettings
from clkt.evaluate.results import Variant
from clkt.inject.contract import JobSpec
from clkt.inject.job import InjectionJob
from clkt.inject.trainer import TrainLoop
from tests.evaluate._tiny import tiny_model, tiny_tokenizer


@pytest.fixture()
def tiny_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-model"
    tiny_model("llama", seed=5).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def _spec(tmp_path: Path, model: Path, snapshot: Path, strategy: str) -> JobSpec:
    gpu = GpuSettings(devices=["cpu"], epochs=3, learning_rate=5e-3, full_ft_learning_rate=1e-3, max_seq_len=64,
                      torch_threads=1, scorers=["letter-logprob"])
    return JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=snapshot, target=TargetSettings(name="tiny", model=str(model)),
                   strategy=strategy, train_lang="en", gpu=gpu, data_dir=tmp_path, artifacts_dir=tmp_path / strategy,
                   device="cpu")


class _Killed(Exception):
    pass


@pytest.mark.parametrize("strategy", ["cpt-lora", "full-ft"])
def test_a_training_strategy_trains_validates_picks_and_resumes(
    tmp_path: Path, tiny_folder: Path, tiny_snapshot: Path, strategy: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = _spec(tmp_path, tiny_folder, tiny_snapshot, strategy)
    spec.artifacts_dir.mkdir()
    first = InjectionJob(spec).run()
    ckpts = spec.artifacts_dir / "checkpoints"
    assert [e.epoch for e in first.epochs] == [1, 2, 3] and all(e.val_accuracy is not None for e in first.epochs)
    assert first.best_epoch in (1, 2, 3) and first.summary.resumed_after_epoch == 0
    assert first.summary.train_examples == 2 and (first.summary.train_tokens_per_s or 0) > 0
    assert json.loads((ckpts / "epoch-1" / "val.json").read_text())["scorer"] == "letter-logprob"
    assert {r.variant for r in first.results} == {Variant.base, Variant.injected}
    weights = {p.parent.name for p in ckpts.glob("epoch-*/*.safetensors")}
    kept = {1, 2, 3} if strategy == "cpt-lora" else {first.best_epoch, 3}  # full-ft: the best and the last only
    assert weights == {f"epoch-{e}" for e in kept}

    epoch = TrainLoop._epoch

    def killed_in_epoch_3(self: TrainLoop, n: int, *args: Any) -> Any:
        if n == 3:
            raise _Killed
        return epoch(self, n, *args)

    other = spec.model_copy(update={"artifacts_dir": tmp_path / f"{strategy}-killed"})
    other.artifacts_dir.mkdir()
    with monkeypatch.context() as m:
        m.setattr(TrainLoop, "_epoch", killed_in_epoch_3)
        with pytest.raises(_Killed):
            InjectionJob(other).run()
    again = InjectionJob(other).run()  # resumes after epoch 2
    assert again.summary.resumed_after_epoch == 2 and [e.epoch for e in again.epochs] == [1, 2, 3]
    assert [e.loss for e in again.epochs[:2]] == [e.loss for e in first.epochs[:2]]
    assert [e.val_accuracy for e in again.epochs[:2]] == [e.val_accuracy for e in first.epochs[:2]]
    # the same data order, optimizer state and schedule (dropout's random state is not restored: close, not equal)
    assert again.epochs[2].loss == pytest.approx(first.epochs[2].loss, rel=1e-2)
