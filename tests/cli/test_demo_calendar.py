"""`clkt demo` runs on a fixed calendar day (`--date`, default `DEMO_DAY`): the recorded data are re-dated into
the days before it, so the demo's dates, snapshot and figures are the same on any day. Bad `--date` values and
configs without a calendar of the demo's own are refused in one line before anything starts."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import typer

import clkt.cli as cli
from clkt import clock
from clkt.cli.demo import DEMO_DAY, _pin_calendar
from clkt.config import Settings


@pytest.fixture
def restore_clock():
    old = clock.current()
    yield
    clock.install(old)


def _settings(tmp_path: Path, **replay: object) -> Settings:
    return Settings.model_validate({"data_dir": str(tmp_path / "data"), "offline_demo": True,
                                    "replay": {"enabled": True, "redate": True, **replay}})


def test_the_default_day_is_pinned_at_noon_utc(tmp_path: Path, restore_clock: None) -> None:
    assert _pin_calendar(_settings(tmp_path), None) == DEMO_DAY
    now = clock.now()
    assert now.date() == DEMO_DAY and now.hour == 12 and now.tzinfo is not None
    # real speed: a second is a second (the daemon's timeouts and polls keep their meaning)
    assert isinstance(clock.current(), clock.SimulatedClock) and clock.current().speed == 1.0


def test_another_day_and_today(tmp_path: Path, restore_clock: None) -> None:
    assert _pin_calendar(_settings(tmp_path), "2027-03-15") == date(2027, 3, 15)
    assert clock.now().date() == date(2027, 3, 15)
    clock.install(clock.SystemClock())
    assert _pin_calendar(_settings(tmp_path), "today") is None
    assert isinstance(clock.current(), clock.SystemClock)
    assert abs((clock.now() - datetime.now(UTC)).total_seconds()) < 5


@pytest.mark.parametrize("replay, why", [
    ({"mode": "generator"}, "no recordings re-dated to today"),
    ({"redate": False}, "no recordings re-dated to today"),
    ({"redate_end": "2026-05-01"}, "no recordings re-dated to today"),
])
def test_configs_without_a_calendar_to_set_keep_theirs(tmp_path: Path, restore_clock: None, replay: dict[str, object],
                                                       why: str, capsys: pytest.CaptureFixture[str]) -> None:
    clock.install(clock.SystemClock())
    s = _settings(tmp_path, **replay)
    assert _pin_calendar(s, None) is None  # nothing asked: the config's own clock
    assert isinstance(clock.current(), clock.SystemClock)
    with pytest.raises(typer.Exit) as e:  # asked for a day it cannot have: refused, nothing installed
        _pin_calendar(s, "2026-12-01")
    assert e.value.exit_code == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1
    assert isinstance(clock.current(), clock.SystemClock)


@pytest.mark.parametrize("bad", ["2026-13-01", "yesterday", "12/01/2026", ""])
def test_a_bad_date_is_one_line_and_starts_nothing(bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], restore_clock: None) -> None:
    monkeypatch.chdir(tmp_path)
    clock.install(clock.SystemClock())
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--date", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--date" in err and "neither a day" in err and len(err.strip().splitlines()) == 1
    assert isinstance(clock.current(), clock.SystemClock)
    assert list(tmp_path.iterdir()) == []  # no store, no data directory
