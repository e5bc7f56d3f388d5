"""Submitted packs on the leaderboard, through the real CLI on a real SQLite store: a verified pack becomes a row
marked submitted, scored from its letters against this store's key (never its claims), with its provenance in the
JSON; the kept board is read afresh after a submission, and the same pack submitted twice leaves it unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clkt.packs.format import FORMAT_VERSION
from tests.cli._in_process import clkt
from tests.packs._packs import leaderboard_page, make_pack, make_store, rows

pytestmark = pytest.mark.usefixtures("wide_console")


def _board(cfg: Path, *args: str, unverified: bool = True) -> dict[str, Any]:
    """The board as JSON; with `unverified`, the submitted rows not reproduced here listed apart (`--unverified`)."""
    more = ["--unverified"] if unverified else []
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg), *more, *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _submit(cfg: Path, pack: Path) -> None:
    res = clkt("submit", str(pack), "--config", str(cfg))
    assert res.returncode == 0, res.stderr


async def test_a_submitted_pack_joins_the_board_with_its_provenance(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    assert _board(cfg)["rows"] == []  # kept in the cache: a submission must change what is read
    sha = make_pack(tmp_path / "pack")
    _submit(cfg, tmp_path / "pack")
    default = _board(cfg, unverified=False)  # not reproduced here: never ranked, left off unless asked for
    assert default["rows"] == [] and any("1 submitted row(s) not verified here (not reproduced) are not shown and never "
                                         "ranked (--unverified lists them apart)" in n for n in default["notes"])
    board = _board(cfg)
    (row,) = board["rows"]
    assert (row["target"], row["track"], row["strategy"], row["scorer"]) == ("tiny (submitted)", "submitted", "cpt-lora", "option-loglik")
    assert row["verified"] == "not reproduced" and row["agreement"] is None
    assert row["rank"] is None and row["probe"] == "not probed here"
    assert row["overall"]["value"] == 1.0 and row["overall"]["n"] == 2  # en -> fr: both test questions right in both
    assert row["learn"]["base"] == 0.5 and row["learn"]["injected"]["value"] == 1.0
    assert row["overall"]["ci"] is not None  # the entity bootstrap, as for the rows run here
    (info,) = row["submissions"]
    assert info["pack_sha256"] == sha and info["model"] == "/models/tiny" and info["weights_sha256"] == "1" * 64
    assert (info["clkt_version"], info["environment"]["device"], info["format_version"]) == ("0.1.0", "cpu", FORMAT_VERSION)
    assert info["overridden"] == {"epochs": {"config": 5, "used": 1}} and info["submitted_at"]
    assert info["cutoff"] == "2024-08-01" and info["claims_match"] is True and info["reproduction"] is None
    (col,) = row["per_snapshot"]
    assert col["status"] == "ok" and col["questions"] == 2
    _submit(cfg, tmp_path / "pack")  # the same pack again: the board is the same
    assert _board(cfg) == board
    assert _board(cfg, "--no-cache") == board


async def test_the_board_scores_the_letters_not_the_claims(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    lie = [r.model_copy(update={"correct": True}) for r in rows()]  # every base answer claimed right, metrics to match
    make_pack(tmp_path / "pack", preds=lie)
    _submit(cfg, tmp_path / "pack")
    (row,) = _board(cfg)["rows"]
    assert row["learn"]["base"] == 0.5 and row["learn"]["gain"]["value"] == 0.5  # the letters against the key
    assert row["submissions"][0]["claims_match"] is False


async def test_packs_of_one_model_pool_and_a_later_pack_replaces_an_earlier_one(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    make_pack(tmp_path / "a", model={"name": "tiny"})
    later = make_pack(tmp_path / "b", model={"name": "tiny"}, created_at="2026-12-04T00:00:00+00:00",
                      preds=[r.model_copy(update={"predicted": "D", "correct": False}) if r.variant == "injected" else r
                             for r in rows()])
    other = make_pack(tmp_path / "c", model={"name": "tiny", "weights_sha256": "2" * 64})
    for p in ("a", "b", "c"):
        _submit(cfg, tmp_path / p)
    board = _board(cfg)
    by = {r["target"]: r for r in board["rows"]}
    assert set(by) == {"tiny (submitted, 11111111)", "tiny (submitted, 22222222)"}
    assert [p["pack_sha256"] for p in by["tiny (submitted, 11111111)"]["submissions"]] == [later]
    assert by["tiny (submitted, 22222222)"]["submissions"][0]["pack_sha256"] == other
    assert any(f"pack {later[:12]} replaces the earlier pack" in n for n in board["notes"])
    assert _board(cfg, "--target", "tiny")["rows"] == board["rows"]  # the pack's name selects its rows


async def test_the_text_board_marks_the_submitted_row(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    sha = make_pack(tmp_path / "pack")
    _submit(cfg, tmp_path / "pack")
    res = clkt("leaderboard", "--spec", "tiny", "--min-questions", "1", "--config", str(cfg), "--unverified")
    assert res.returncode == 0, res.stderr
    assert "tiny (submitted)" in res.stdout and "submitted, not reproduced, not probed here" in res.stdout
    assert sha[:12] in res.stdout and "/models/tiny" in res.stdout


async def test_the_page_shows_the_submitted_row_and_its_provenance(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    sha = make_pack(tmp_path / "pack")
    _submit(cfg, tmp_path / "pack")
    status, html = await leaderboard_page(cfg)
    assert status == 200
    for needle in ("<td>tiny (submitted)</td>", '<a href="#submitted">submitted</a>', "not reproduced", "not probed here", 'id="submitted-packs"',
                   f'title="{sha}"', "<td>/models/tiny</td>", f"<code>{'1' * 64}</code>", "<td>0.1.0</td>", "device cpu"):
        assert needle in html, needle
