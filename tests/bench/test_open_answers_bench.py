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


@pytest.mark.parametrize(("strategy", "key"), [("cpt-lora", "learning_rate"), ("full-ft", "full_ft_learning_rate")])
def test_the_training_overrides_reach_the_jobs_config(tmp_path: Path, strategy: str, key: str) -> None:
    cfg = _config(tmp_path, [0], open_answers=True)
    _train_overrides(cfg, strategy=strategy, epochs=20, learning_rate=0.001)
    gpu = load_settings(cfg, environ={}).gpu
    assert (gpu.epochs, getattr(gpu, key), gpu.open_answers) == (20, 0.001, True)
    other = "full_ft_learning_rate" if key == "learning_rate" else "learning_rate"
    assert getattr(gpu, other) != 0.001  # only the strategy's own rate moves


def test_no_override_leaves_the_demos_training(tmp_path: Path) -> None:
    cfg = _config(tmp_path, [0], open_answers=True)
    before = load_settings(cfg, environ={}).gpu
    _train_overrides(cfg, strategy="cpt-lora", epochs=None, learning_rate=None)
    assert load_settings(cfg, environ={}).gpu == before
