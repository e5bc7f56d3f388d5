"""The open track's checkpoint (issue 47): chosen on the open validation questions (those asking a validation
MCQ's fact), apart from the MCQ track's epoch; the open pass answered by its weights; both checkpoints kept; a
snapshot without open validation questions answered by the MCQ track's epoch, as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import clkt.inject.strategies._trained as trained
from clkt.config import GpuSettings, TargetSettings
from clkt.evaluate.results import Variant
from clkt.inject.contract import JobSpec
from clkt.inject.job import InjectionJob
from clkt.inject.open_val import OpenValScore, best_open_epoch, open_val_scores
from clkt.inject.strategies import injector_for
from clkt.layout import VAL_FILE, epoch_dir
from tests.inject._open_fixtures import add_open_track, open_qid


def test_the_open_epoch_is_the_best_accuracy_then_the_likelier_gold_then_the_earliest() -> None:
    assert best_open_epoch({}) is None
    assert best_open_epoch({1: OpenValScore(0.2, -1.0, 5), 2: OpenValScore(0.4, -3.0, 5)}) == 2
    assert best_open_epoch({1: OpenValScore(0.0, -3.0, 5), 2: OpenValScore(0.0, -1.5, 5), 3: OpenValScore(0.0, -2.0, 5)}) == 2
    assert best_open_epoch({3: OpenValScore(0.2, -1.0, 5), 1: OpenValScore(0.2, -1.0, 5)}) == 1


def test_the_scores_are_read_back_from_each_epochs_val_file_and_a_bad_one_is_skipped(tmp_path: Path) -> None:
    for epoch, body in ((1, {"epoch": 1, "accuracy": 0.5, "open": {"accuracy": 0.2, "loglik": -1.5, "n": 5}}),
                        (2, {"epoch": 2, "accuracy": 0.5}),  # an epoch validated without the open pass
                        (3, {"epoch": 3, "open": {"accuracy": "x", "n": 5}}),  # malformed
                        (4, {"epoch": 5, "open": {"accuracy": 1.0, "loglik": 0.0, "n": 5}})):  # another epoch's file
        epoch_dir(tmp_path, epoch).mkdir(parents=True)
        (epoch_dir(tmp_path, epoch) / VAL_FILE).write_text(json.dumps(body))
    epoch_dir(tmp_path, 6).mkdir()
    (epoch_dir(tmp_path, 6) / VAL_FILE).write_text("{not json")
    assert open_val_scores(tmp_path) == {1: OpenValScore(0.2, -1.5, 5)}
    assert open_val_scores(tmp_path / "absent") == {}


def _spec(tmp_path: Path, model: Path, snapshot: Path, *, open_answers: bool = True) -> JobSpec:
    gpu = GpuSettings(devices=["cpu"], epochs=3, learning_rate=5e-3, max_seq_len=64, torch_threads=1,
                      scorers=["letter-logprob"], open_answers=open_answers)
    spec = JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=snapshot, target=TargetSettings(name="tiny", model=str(model)),
                   strategy="cpt-lora", train_lang="en", gpu=gpu, data_dir=tmp_path, artifacts_dir=tmp_path / "job",
                   device="cpu")
    spec.artifacts_dir.mkdir()
    return spec


@pytest.fixture()
def open_epoch_1(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The MCQ track keeps the last epoch and the open track the first (the tiny model's own choices are noise),
    and the epochs whose weights are loaded, in order."""
    loads: list[int] = []
    monkeypatch.setattr(trained, "best_epoch", lambda vals, last: last)
    monkeypatch.setattr(trained, "best_open_epoch", lambda vals: min(vals) if vals else None)
    recipe = injector_for("cpt-lora").recipe  # type: ignore[attr-defined]
    load = type(recipe).load

    def spy(self: Any, model: Any, path: Path) -> None:
        loads.append(int(path.name.rsplit("-", 1)[1]))
        load(self, model, path)

    monkeypatch.setattr(type(recipe), "load", spy)
    return loads


def test_the_open_pass_answers_with_the_epoch_its_validation_chose_and_both_are_kept(
    tmp_path: Path, tiny_target: Path, tiny_snapshot: Path, open_epoch_1: list[int],
) -> None:
    spec = _spec(tmp_path, tiny_target, add_open_track(tiny_snapshot, val=True))
    out = InjectionJob(spec).run()
    ckpts = spec.artifacts_dir / "checkpoints"
    # every epoch answered the one open validation question in en, its score beside the MCQ one
    for e in (1, 2, 3):
        record = json.loads((epoch_dir(ckpts, e) / VAL_FILE).read_text())
        assert record["open"]["n"] == 1 and 0.0 <= record["open"]["accuracy"] <= 1.0 and record["open"]["loglik"] < 0
    assert all(r.open_val_accuracy is not None and r.open_val_loglik is not None for r in out.epochs)
    assert (out.best_epoch, out.summary.open_epoch, out.summary.open_val_questions) == (3, 1, 1)
    assert open_epoch_1 == [1, 3]  # the open epoch's weights first (the open pass), then the MCQ epoch's
    # the validation question is never answered as a test one; the test and control ones before and after
    asked = {(i.qid, i.variant) for i in out.open_results}
    assert open_qid(1, "film.director") not in {q for q, _ in asked}
    assert asked == {(q, v) for q in (open_qid(2, "match.venue"), open_qid(None, "film.director"))
                     for v in (Variant.base, Variant.injected)}
    assert len(out.open_results) == 8 and out.summary.open_questions == 4
    # retention keeps both epochs' weights; the third epoch's are spare
    spare = {s.path.name for s in injector_for("cpt-lora").spare(ckpts, best_epoch=3) if s.path.is_dir()}
    assert spare == {"epoch-2"}
    returned = {p.parent.name for p in injector_for("cpt-lora").returned_files(ckpts, best_epoch=3)
                if p.suffix == ".safetensors"}
    assert returned == {"epoch-1", "epoch-3"}


def test_without_open_validation_questions_the_open_pass_answers_with_the_mcq_epoch(
    tmp_path: Path, tiny_target: Path, tiny_snapshot: Path, open_epoch_1: list[int],
) -> None:
    spec = _spec(tmp_path, tiny_target, add_open_track(tiny_snapshot))  # frozen before the split: all test
    out = InjectionJob(spec).run()
    assert out.summary.open_epoch is None and out.summary.open_val_questions == 0 and open_epoch_1 == [3]
    assert "open" not in json.loads((epoch_dir(spec.artifacts_dir / "checkpoints", 1) / VAL_FILE).read_text())
    assert all(r.open_val_accuracy is None for r in out.epochs)
    assert "open_epoch" not in out.summary.model_dump(mode="json")  # the stored summary as before
    assert len(out.open_results) == 12


def test_with_the_open_pass_off_nothing_open_is_validated(
    tmp_path: Path, tiny_target: Path, tiny_snapshot: Path, open_epoch_1: list[int],
) -> None:
    spec = _spec(tmp_path, tiny_target, add_open_track(tiny_snapshot, val=True), open_answers=False)
    out = InjectionJob(spec).run()
    assert out.summary.open_epoch is None and out.open_results == [] and open_epoch_1 == [3]
