"""The pure parts of `bench/open_answers.py`: its figures are the report's open-track figures (the hand-checked
case of `tests/report/test_open_track.py`), its goal is the Learn p, and a folder without a demo is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.open_answers import goals_met, learn_figures, main, other_language_figures, per_second
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
