"""`clkt leaderboard --compare-strategies A,B`: two strategies of one target side by side (text and JSON), and one
clear line with exit 2 for every bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import clkt.cli as cli
from storage.engine import Store
from tests.report._strategy_store import seed_strategy_store


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lbs")

    async def seed() -> None:
        async with Store(url=f"sqlite+aiosqlite:///{root / 'clkt.db'}") as store:
            await seed_strategy_store(store)

    asyncio.run(seed())
    path = root / "c.toml"
    path.write_text(f'data_dir = "{root}"\n[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n', encoding="utf-8")
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli.main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--compare-strategies", "cpt-lora"], "--compare-strategies: expected two strategies as A,B, got 'cpt-lora'"),
        (["--compare-strategies", "cpt-lora,magic", "--target", "alpha"],
         "unknown strategy 'magic'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"),
        (["--compare-strategies", "memit,memit"], "--compare-strategies needs two different strategies, got 'memit' twice"),
        (["--compare-strategies", "cpt-lora,sft-lora", "--target", "alpha"], "cpt-lora and sft-lora share no question for target alpha"),
        (["--compare-strategies", "cpt-lora,memit", "--target", "beta"], "target beta has results of cpt-lora only, not of memit"),
        (["--compare-strategies", "cpt-lora,memit"], "several targets have results of cpt-lora or memit (alpha, beta); name one with --target"),
        (["--compare-strategies", "cpt-lora,memit", "--by", "domain"], "--by with --compare-strategies: choose one"),
        (["--compare-strategies", "cpt-lora,memit", "--compare-targets", "alpha,beta"], "--compare-targets with --compare-strategies: choose one"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cfg: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    code, out, err = _run(["leaderboard", "--config", str(cfg), "--no-cache", *args], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("clkt: ") and says in lines[0], err
    assert out == ""


@pytest.mark.usefixtures("wide_console")
def test_text_and_json_show_both_strategies_side_by_side(cfg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["leaderboard", "--config", str(cfg), "--compare-strategies", "cpt-lora,memit", "--target", "alpha",
            "--min-questions", "10", "--bootstrap", "200"]
    code, out, err = _run([*args, "--json"], capsys)
    assert code == 0, err
    c = json.loads(out)["strategy_comparison"]
    assert (c["target"], c["strategy_a"], c["strategy_b"], c["scorer"]) == ("alpha", "cpt-lora", "memit", "generate")
    assert [le["n"] for le in c["learn"]] == [c["learn"][0]["n"]] * 2 and c["learn"][0]["n"] > 100
    assert {ln["metric"] for ln in c["lines"]} == {"Learn", "Overall", "Transfer"}
    code, out, err = _run(args, capsys)
    assert code == 0, err
    assert "cpt-lora vs memit on alpha (generate)" in out and "base -> injected" in out
    assert f"on the {c['questions']} questions" in out and "McNemar" in out
