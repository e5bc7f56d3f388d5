"""The pure parts of `bench/open_answers.py`: its figures are the report's open-track figures (the hand-checked
case of `tests/report/test_open_track.py`), its goal is the Learn p, and a folder without a demo is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.open_answers import _train_overrides, goals_met, learn_figures, main, other_language_figures, per_second
from bench.seeds import _config
from clkt.config import load_settings
from clkt.report.open_track import open_track
from tests.report.test_open_track import _rows


def test_the_figures_are_the_open_tracks() -> None:
    track = open_track(_rows(), languages=["en", "fr"], snapshot_id="snap", samples=0)
    figures = learn_figures(track, "en")
    assert (figures["open_learn_n"], figures["open_learn_gained"], figures["open_learn_lost"]) == (12, 10, 0)
    assert figures["open_learn_p"] == pytest.approx(2 / 2**10) and figures["open_learned"]
    assert goals_met(figures)
    other = other_language_figures(track)
    assert other["injected"]["fr"] == {"n": 12, "other": 1, "share": round(1 / 12, 4)}
    assert other["base"]["en"]["other"] == 0


def test_no_learn_no_goal() -> None:
    assert learn_figures(None, "en") == {"open_learn_n": 0, "open_learn_p": None, "open_learned": False}
    assert not goals_met(learn_figures(None, "en"))
    assert not goals_met({"open_learn_n": 12, "open_learn_p": 0.02})
    assert learn_figures(open_track(_rows(), languages=["en", "fr"], snapshot_id="s", samples=0), "fr")["open_learn_n"] == 0


def test_per_second() -> None:
    assert per_second(10, 4.0) == 2.5 and per_second(10, 0.0) is None


def test_a_folder_without_a_finished_demo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="holds no finished demo"):
        main(["--from", str(tmp_path)])


@pytest.mark.parametrize("strategy", ["cpt-lora", "full-ft", "sft-facts-lora"])
def test_the_training_overrides_reach_the_jobs_config(tmp_path: Path, strategy: str) -> None:
    from clkt.inject.strategies import get_recipe

    cfg = _config(tmp_path, [0], open_answers=True)
    before = load_settings(cfg, environ={}).gpu
    _train_overrides(cfg, strategy=strategy, epochs=20, learning_rate=0.001)
    gpu = load_settings(cfg, environ={}).gpu
    assert (gpu.epochs, get_recipe(strategy).learning_rate(gpu), gpu.open_answers) == (20, 0.001, True)
    for other in {"cpt-lora", "full-ft", "sft-facts-lora"} - {strategy}:  # only the strategy's own rate moves
        assert get_recipe(other).learning_rate(gpu) == get_recipe(other).learning_rate(before) != 0.001


def test_no_override_leaves_the_demos_training(tmp_path: Path) -> None:
    cfg = _config(tmp_path, [0], open_answers=True)
    before = load_settings(cfg, environ={}).gpu
    _train_overrides(cfg, strategy="cpt-lora", epochs=None, learning_rate=None)
    assert load_settings(cfg, environ={}).gpu == before


async def test_reset_removes_the_strategys_jobs_and_cancels_the_copys_unfinished_others(tmp_path: Path) -> None:
    """A demo stopped mid-job leaves its job pending; in the bench's copy it is cancelled, or the bench's worker
    would run it first (and the bench would read its answers)."""
    from sqlalchemy import update
    from sqlmodel import col

    from bench.seeds import _reset
    from clkt.config import GpuSettings
    from storage.engine import Store
    from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
    from storage.models import GpuJob, LeaseStatus
    from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot

    tiny_snapshot = write_tiny_snapshot(tmp_path / "snapshot")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[spec]\nname = "tiny"\n', encoding="utf-8")
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["t"], strategies=["cpt-lora", "sft-facts-lora"],
                                   train_langs=["en", "fr"], config=GpuSettings(), max_attempts=1)
        async with store.transaction() as s:
            done = next(j for j in await jobs_for_snapshot(s, SNAPSHOT_ID) if j.train_lang == "fr" and j.strategy == "cpt-lora")
            await s.execute(update(GpuJob).where(col(GpuJob.id) == done.id).values(status=LeaseStatus.done))
    assert (await _reset(cfg, "sft-facts-lora"))[0] == SNAPSHOT_ID
    async with Store(url=settings.resolved_store_url) as store, store.session() as s:
        left = {(j.strategy, j.train_lang): j.status for j in await jobs_for_snapshot(s, SNAPSHOT_ID)}
    assert left == {("cpt-lora", "en"): LeaseStatus.cancelled, ("cpt-lora", "fr"): LeaseStatus.done}


async def test_the_seed_option_reaches_the_jobs_training_seed(tmp_path: Path) -> None:
    """`--seed N` enqueues the job as seed N of `spec.seeds`: it trains with its own seed, not the demo's."""
    from bench.seeds import _enqueue
    from clkt.config.spec import training_seed
    from clkt.inject.spec_builder import job_gpu
    from storage.engine import Store
    from storage.gpu_jobs import jobs_for_snapshot
    from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot

    cfg = _config(tmp_path, [3], open_answers=True)
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store:
        await seed_store(store, write_tiny_snapshot(tmp_path / "snapshot"))
    await _enqueue(cfg, SNAPSHOT_ID, "t", "en", 3, "sft-facts-lora")
    async with Store(url=settings.resolved_store_url) as store, store.session() as s:
        (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert job.seed == 3
    assert job_gpu(job, settings.gpu).seed == training_seed(settings.gpu.seed, 3) != settings.gpu.seed
