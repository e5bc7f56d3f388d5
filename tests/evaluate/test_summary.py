"""A job's typed summary: both stored shapes (the previous version's flat dict, this one), through a real store."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from clkt.evaluate.results import EpochRecord, Variant
from clkt.evaluate.summary import ControlCounts, JobSummary, LearnSummary, ScorerScore
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, complete_gpu_job, enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import GpuJob
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot
from tests.report._store import old_summary


async def _stored(tmp_path: Path, summary: dict[str, object] | JobSummary) -> Mapping[str, object]:
    """`summary` written into a real SQLite store (typed: by the consumer's repository call; a dict: as a row of an
    earlier version held it), and read back."""
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                                   max_attempts=1)
        async with store.transaction() as s:
            (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
            typed = summary if isinstance(summary, JobSummary) else None
            await complete_gpu_job(s, job.id, owner="o", best_epoch=2, device="cpu", artifacts_dir="/a", summary=typed)
            if typed is None:
                row = await s.get(GpuJob, job.id)
                assert row is not None
                row.summary = dict(summary)
        async with store.session() as s:
            (done,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    return done.summary


async def test_an_old_flat_row_reads_as_the_typed_summary(tmp_path: Path) -> None:
    raw = await _stored(tmp_path, old_summary("large", "en", control=True))
    assert "learn:generate:p_value" in raw  # really the old shape, as the previous version stored it
    s = JobSummary.from_stored(raw)
    assert s is not None
    assert (s.selection_scorer, s.scorers, s.generate_parse) == ("option-loglik", ["generate", "option-loglik"], "reference")
    assert (s.val_questions, s.test_questions, s.control_questions, s.train_examples) == (6, 24, 4, 9)
    assert (s.train_tokens_per_s, s.resumed_after_epoch) == (812.5, 0)
    assert s.scores == [
        ScorerScore(variant=Variant.base, scorer="generate", accuracy=0.25, parse_failure_rate=0.125),
        ScorerScore(variant=Variant.base, scorer="option-loglik", accuracy=0.2916666666666667),
        ScorerScore(variant=Variant.injected, scorer="generate", accuracy=0.5, parse_failure_rate=0.0),
        ScorerScore(variant=Variant.injected, scorer="option-loglik", accuracy=0.625),
    ]
    assert s.score(Variant.injected, "option-loglik") == s.scores[3] and s.score(Variant.base, "nope") is None
    learn = LearnSummary(n=8, base_accuracy=0.25, injected_accuracy=0.75, gain=0.5, gained=4, lost=0, p_value=0.125, learned=False)
    assert s.learn == {"generate": learn, "option-loglik": learn} and s.learn_control == s.learn
    assert s.epochs == [EpochRecord(epoch=1, loss=2.5, tokens=4000, seconds=5.0, val_accuracy=0.5, val_margin=0.25),
                        EpochRecord(epoch=2, loss=1.25, tokens=4000, seconds=4.5, val_accuracy=0.5)]
    assert (s.target_family, s.target_size_b, s.target_model_id) == ("fam", 1.0, "org/large")
    assert s.control["generate"]["en"] == ControlCounts(n=4, base_correct=1, injected_correct=4, gained=3, lost=0)
    assert set(s.control["generate"]) == {"en", "fr", "ja"}


async def test_the_typed_summary_round_trips_through_the_store(tmp_path: Path) -> None:
    typed = JobSummary.model_validate(old_summary("small", "fr", control=False))
    raw = await _stored(tmp_path, typed)
    assert "scores" in raw and not any(":" in k for k in raw)
    assert JobSummary.from_stored(raw) == typed
    assert typed.control == {} and typed.learn_control == {}


def test_the_empty_summary_of_an_unfinished_job_is_none() -> None:
    assert JobSummary.from_stored({}) is None and JobSummary.from_stored(None) is None


def test_an_old_row_without_the_later_keys_still_reads() -> None:
    s = JobSummary.from_stored({"selection_scorer": "generate", "scorers": "generate", "val_questions": 2, "test_questions": 4,
                                "train_examples": 3, "base:generate:accuracy": None, "injected:generate:accuracy": 0.5})
    assert s is not None and s.control_questions == 0 and s.generate_parse is None and s.learn == {}
    assert [x.accuracy for x in s.scores] == [None, 0.5]


@pytest.mark.parametrize("bad", [
    {"selection_scorer": "generate", "scores": [], "surprise": 1},  # a new-shape summary with an unknown field
    {"selection_scorer": "generate", "learn:generate:n": "many"},  # an old one whose Learn is not a number
    {"scores": [{"variant": "neither", "scorer": "g", "accuracy": 0.5}], "selection_scorer": "g", "scorers": []},
])
def test_an_unreadable_summary_is_one_clear_error(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        JobSummary.from_stored(bad)
