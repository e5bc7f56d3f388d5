"""One vocabulary across the commands (`clkt.cli.vocabulary`): the help grouped by task with no markup eaten, the new
spellings beside their deprecated old ones, lists as comma lists, `--json` and unwrapped output for a program,
`clkt snapshot latest`, and a snapshot named by a unique prefix in `clkt incontext` too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from pydantic_ai.models import override_allow_model_requests
from rich.table import Table

import clkt.cli as cli
from clkt.cli import common
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.conftest import REPO
from tests.fakes.openai_server import FakeOpenAI
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


def _help(*argv: str) -> str:
    res = subprocess.run([sys.executable, "-m", "clkt.cli", *argv, "--help"], capture_output=True, text=True, cwd=REPO,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "220"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_every_command_is_in_one_panel_of_the_help() -> None:
    cli._register_areas()
    infos = [*cli.app.registered_commands, *cli.app.registered_groups]
    assert {i.name for i in infos} == {n for names in cli.PANELS.values() for n in names}
    assert all(i.rich_help_panel in cli.PANELS for i in infos)
    out = _help()
    at = [out.index(f"─ {panel} ") for panel in cli.PANELS]
    assert at == sorted(at), out  # start, data, results, your model, operations
    assert out.index("demo") < out.index("─ Data ")  # the first thing to try is the first command


@pytest.mark.parametrize("command", ["evaluate", "submit"])
def test_help_keeps_its_brackets(command: str) -> None:
    out = _help(command)
    assert "[gpu]" in out and "default: [gpu] engine" in " ".join(out.split()), out
    if command == "evaluate":
        assert "hf://owner/name[/snapshot-id][@revision]" in out and "\\[" not in out


def test_old_spellings_are_hidden() -> None:
    out = _help("evaluate")
    assert "--model-path" in out and "--name " not in out
    assert "--compare-targets" in _help("leaderboard") and "--compare " not in _help("leaderboard")
    assert "--model-path" in _help("submit") and "--model " not in _help("submit")


def test_evaluate_takes_the_model_by_model_path_and_the_old_target_with_a_notice(capsys: pytest.CaptureFixture[str]) -> None:
    from clkt.cli.evaluate import _model_and_name

    assert _model_and_name("m/p", "t", None) == ("m/p", "t")
    assert capsys.readouterr().err == ""
    assert _model_and_name(None, "m/p", "t") == ("m/p", "t")  # the old call: --target MODEL --name NAME
    err = capsys.readouterr().err.splitlines()
    assert err == ["clkt: warning: --target MODEL (the model) is deprecated; use --model-path MODEL (--target is the "
                   "target's name)", "clkt: warning: --name is deprecated; use --target"]


def test_submit_model_still_works_with_a_notice(tmp_path: Path) -> None:
    ran = clkt("submit", str(tmp_path / "pack"), "--model", "/m", "--config", str(tmp_path / "none.toml"))
    assert ran.returncode == 2
    assert ran.stderr.splitlines() == ["clkt: warning: --model is deprecated; use --model-path",
                                       "clkt: --model-path is an option of --reproduce (the model re-run here)"]
    both = clkt("submit", "p", "--model", "/m", "--model-path", "/m", "--reproduce", "1")
    assert both.returncode == 2 and "give --model-path only" in both.stderr


def test_lists_are_comma_lists(capsys: pytest.CaptureFixture[str]) -> None:
    from clkt.cli.vocabulary import comma_list, name_pair

    assert comma_list(["a,b", " c ", "d,"]) == ["a", "b", "c", "d"]
    assert comma_list(None) is None
    assert name_pair("a, b", "--compare-targets") == ("a", "b")
    for bad in ("a", "a,a", "a,b,c"):
        with pytest.raises(typer.Exit):  # after the one line
            name_pair(bad, "--compare-targets")
        assert "--compare-targets" in capsys.readouterr().err
    with pytest.raises(typer.Exit):
        comma_list([","])
    assert "names nothing" in capsys.readouterr().err


def test_snapshot_list_json_and_latest(tiny_store: Path) -> None:
    ran = clkt("snapshot", "list", "--json", "--config", str(tiny_store))
    rows = [json.loads(line) for line in ran.stdout.splitlines()]
    assert ran.returncode == 0 and [r["id"] for r in rows] == [SNAPSHOT_ID]
    assert rows[0]["status"] == "frozen" and rows[0]["spec"] == "tiny" and rows[0]["period"] == "2025-06"
    ran = clkt("snapshot", "latest", "--spec", "tiny", "--config", str(tiny_store), columns=10)
    assert (ran.returncode, ran.stdout) == (0, SNAPSHOT_ID + "\n")  # never wrapped, whatever the width
    assert json.loads(clkt("snapshot", "latest", "--spec", "tiny", "--json", "--config", str(tiny_store)).stdout)["id"] == SNAPSHOT_ID
    none = clkt("snapshot", "latest", "--config", str(tiny_store))  # the configured spec has none
    assert none.returncode == 1 and "no frozen snapshot of spec" in none.stderr and none.stdout == ""


def test_into_a_pipe_a_table_is_never_folded(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """stdout not a terminal and no width given (no COLUMNS): every row on one line, however wide."""
    monkeypatch.setattr(common.console, "_width", None)
    t = Table("snapshot", "a long header of a column", "another long header of a column", "a third one", "and more")
    ident = "demo-2025-06-r1-" + "0123456789abcdef" * 4
    t.add_row(ident, "x" * 40, "y" * 40, "z" * 30, "w" * 30)
    capsys.readouterr()
    common.print_table(t)
    lines = capsys.readouterr().out.splitlines()
    assert any(ident in line and "w" * 30 in line for line in lines), lines
    assert max(len(line) for line in lines) > 200


async def test_incontext_takes_a_unique_prefix(store: Store, tmp_path: Path) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    async with FakeOpenAI() as server:
        server.script = [{"text": "A"}] * 12
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'data_dir = "{tmp_path}"\n[spec]\nlanguages = ["en", "fr"]\n'
                       f'[agents.providers.fake]\nbase_url = "{server.base_url}"\n'
                       '[[spec.targets]]\nname = "api-t"\nmodel = "fake:tiny-chat"\nbackend = "api"\nkind = "instruct"\n'
                       'cutoff = 2024-01-01\n')
        with override_allow_model_requests(True):  # the fake server on loopback (tests/agents/conftest.py forbids)
            ran = await asyncio.to_thread(clkt, "incontext", SNAPSHOT_ID[:9], "--config", str(cfg))
    assert ran.returncode == 0, ran.stderr
    assert f"then: clkt report {SNAPSHOT_ID}" in ran.stdout and "api-t: 12 answered now" in ran.stdout


def test_snapshot_show_json(tiny_store: Path) -> None:
    ran = clkt("snapshot", "show", SNAPSHOT_ID[:8], "--json", "--config", str(tiny_store))
    d = json.loads(ran.stdout)
    assert ran.returncode == 0 and (d["id"], d["status"], d["period"]) == (SNAPSHOT_ID, "frozen", "2025-06")


def test_snapshot_diff_json(tiny_store: Path) -> None:
    ran = clkt("snapshot", "diff", SNAPSHOT_ID[:6], SNAPSHOT_ID, "--json", "--config", str(tiny_store))
    d = json.loads(ran.stdout)
    assert ran.returncode == 0 and d["a"] == d["b"] == SNAPSHOT_ID and d["questions_added"] == []


def test_leaderboard_compare_still_works_with_a_notice(tiny_store: Path) -> None:
    old = clkt("leaderboard", "--compare", "alpha", "beta", "--json", "--config", str(tiny_store))
    new = clkt("leaderboard", "--compare-targets", "alpha,beta", "--json", "--config", str(tiny_store))
    assert old.stderr.splitlines()[0] == "clkt: warning: --compare A B is deprecated; use --compare-targets A,B"
    assert old.stderr.splitlines()[1:] == new.stderr.splitlines() and old.returncode == new.returncode
    assert old.stdout == new.stdout
