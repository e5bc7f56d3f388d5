"""`clkt demo --strategies A,B`: the demo's GPU jobs run the strategies named instead of the config's, so the
report compares them (cpt-lora beside memit). Unknown, repeated or missing names are refused in one line before
anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

import clkt.cli as cli
from clkt.cli.demo import runs_incontext, with_strategies
from clkt.config import Settings
from clkt.snapshots.service import enqueue_spec_jobs
from storage.engine import Store
from storage.gpu_jobs import jobs_for_snapshot
from storage.models import Snapshot


def _settings(tmp_path: Path) -> Settings:
    return Settings.model_validate({"data_dir": str(tmp_path / "data"), "offline_demo": True})


async def test_the_strategies_named_replace_the_configs_and_each_gets_its_job(tmp_path: Path, store: Store) -> None:
    s = _settings(tmp_path)
    assert s.spec.strategies == ["cpt-lora"]
    got = with_strategies(s, " cpt-lora, memit ")
    assert got.spec.strategies == ["cpt-lora", "memit"]
    assert s.spec.strategies == ["cpt-lora"]  # the loaded settings are not changed in place
    assert got.spec.targets == s.spec.targets and got.data_dir == s.data_dir  # nothing else moves
    assert with_strategies(s, None) is s
    # the in-context track runs after one strategy's jobs, not beside several (the demo's time)
    assert runs_incontext(s) and not runs_incontext(got)
    assert not runs_incontext(s.model_copy(update={"gpu": s.gpu.model_copy(update={"enabled": False})}))
    async with store.transaction() as tx:  # what a frozen snapshot's jobs are made of: one job per strategy
        tx.add(Snapshot(id="s1", spec="demo", period="2026-11"))
        await tx.flush()
        assert await enqueue_spec_jobs(tx, "s1", spec=got.spec, gpu=got.gpu) == 2 * len(got.spec.train_langs)
    async with store.session() as tx:
        jobs = await jobs_for_snapshot(tx, "s1")
    assert sorted((j.strategy, j.train_lang) for j in jobs) == sorted(
        (x, lang) for x in ("cpt-lora", "memit") for lang in got.spec.train_langs)


@pytest.mark.parametrize("bad, says", [
    ("cpt-lora,rome", "unknown strategy 'rome'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"),
    ("memit,memit", "names memit more than once"),
    (" , ", "names no strategy"),
])
def test_a_bad_strategy_list_is_one_line_and_starts_nothing(bad: str, says: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--strategies", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--strategies" in err and says in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no store, no data directory


def test_open_answers_turns_the_open_pass_on_and_off_leaves_the_config(tmp_path: Path) -> None:
    from clkt.cli.demo import with_open_answers

    off = _settings(tmp_path).model_copy(update={"gpu": _settings(tmp_path).gpu.model_copy(update={"open_answers": False})})
    on = with_open_answers(off, True)
    assert on.gpu.open_answers and not off.gpu.open_answers  # a copy: the loaded settings are not changed in place
    assert on.gpu.model_dump(exclude={"open_answers"}) == off.gpu.model_dump(exclude={"open_answers"})
    assert with_open_answers(off, False) is off
    kept = off.model_copy(update={"gpu": off.gpu.model_copy(update={"open_answers": True})})
    assert with_open_answers(kept, False).gpu.open_answers  # a config that turns it on keeps it
