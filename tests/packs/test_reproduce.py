"""`clkt submit --reproduce K` through the real CLI on a real SQLite store, with a tiny random-weight model: a pack
made by `clkt evaluate` is re-run here (the same job, a child process) and marked reproduced on the board; a pack
whose letters were changed is flagged; a later re-run replaces an earlier one; bad inputs are one line, a non-zero
exit and the store as it was."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clkt.packs.pack import read_pack, write_pack
from tests.cli._in_process import clkt
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.packs._packs import TEST_QIDS, make_pack, make_store, store_dump

pytestmark = pytest.mark.usefixtures("wide_console")

_GPU = '[gpu]\ndevices = ["cpu"]\nepochs = 1\ntorch_threads = 1\neval_batch_size = 4\n'


async def _store(tmp_path: Path) -> Path:
    cfg = await make_store(tmp_path)
    cfg.write_text(cfg.read_text(encoding="utf-8") + _GPU, encoding="utf-8")
    return cfg


def _evaluated(tmp_path: Path) -> Path:
    """`clkt evaluate`'s pack of a tiny random-weight llama on the tiny snapshot (the store's export)."""
    model = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    cfg = tmp_path / "eval.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "elsewhere"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["cpt-lora"]\n'
                   + _GPU, encoding="utf-8")
    out = tmp_path / "pack"
    res = clkt("evaluate", str(tmp_path / "snap"), "--model-path", str(model), "--out", str(out), "--cutoff", "2024-08-01",
               "--train-languages", "en", "--config", str(cfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    return out


def _board_row(cfg: Path) -> dict[str, Any]:
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg),
               "--scorer", "option-loglik", "--unverified")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["rows"]
    return dict(row)


@pytest.mark.slow
async def test_a_pack_is_reproduced_flagged_and_the_latest_rerun_counts(tmp_path: Path) -> None:
    cfg = await _store(tmp_path)
    out = _evaluated(tmp_path)
    sha = read_pack(out).sha256

    res = clkt("submit", "--reproduce", "all", str(out), "--config", str(cfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert f"submitted pack {sha[:12]}" in res.stdout  # a pack file: taken in first, then re-run
    n = 2 * 2 * 2 * len(TEST_QIDS)  # 2 scorers x 2 variants x 2 languages x the test questions
    assert f"pack {sha[:12]}: reproduced: {n}/{n} letters agree in 8 cells (each needs 95 %" in res.stdout
    row = _board_row(cfg)
    assert (row["track"], row["verified"], row["agreement"]) == ("submitted", "reproduced", 1.0)
    rep = row["submissions"][0]["reproduction"]
    assert (rep["checked"], rep["agreed"], rep["threshold"], rep["reproduced"], rep["engine"]) == (n, n, 0.95, True, "local")
    assert len(rep["nonce"]) == 32 and rep["failed"] is None and all(c["passed"] for c in rep["cells"])
    assert not (tmp_path / "reproduce").exists()  # the re-run's work folder is removed once stored

    # the same model's pack with every injected letter changed: the re-run disagrees, the row is flagged
    pack = read_pack(out)
    lie = [r.model_copy(update={"predicted": "D" if r.predicted != "D" else "C"}) if r.variant == "injected" else r
           for r in pack.predictions]
    claimed = json.loads((out / "metrics.json").read_text())
    bad_sha = write_pack(tmp_path / "changed", pack.manifest.model_copy(update={"created_at": "2027-01-01T00:00:00+00:00"}),
                         lie, claimed)
    assert clkt("submit", str(tmp_path / "changed"), "--config", str(cfg)).returncode == 0
    res = clkt("submit", "--reproduce", "1", bad_sha[:10], "--config", str(cfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert f"pack {bad_sha[:12]}: NOT REPRODUCED (cell (en, " in res.stdout and ", injected, " in res.stdout
    assert ": 4/8 letters agree in 8 cells" in res.stdout
    row = _board_row(cfg)  # the later pack of the identity is the one on the board
    assert (row["verified"], row["agreement"]) == ("flagged", 0.5)

    # the first pack again, on one question, its model where this service keeps it: the latest re-run replaces the
    # earlier one on its row
    shutil.copytree(tmp_path / "tiny-model", tmp_path / "here" / "tiny-model")
    res = clkt("submit", "--reproduce", "1", sha, "--model-path", str(tmp_path / "here" / "tiny-model"), "--config", str(cfg),
               timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr  # the same weights (sha256) as the pack's
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        (raw,) = con.execute("SELECT reproduction FROM submitted_pack WHERE pack_sha256 = ?", (sha,)).fetchone()
    finally:
        con.close()
    stored = json.loads(raw)
    assert (stored["questions"], stored["checked"], stored["agreed"], stored["reproduced"]) == (1, 8, 8, True)


@pytest.mark.parametrize(
    ("args", "line"),
    [(["--reproduce", "0", "ffffff"], "--reproduce '0': a number of questions above 0, or all"),
     (["--reproduce", "some", "ffffff"], "--reproduce 'some': a number of questions above 0, or all"),
     (["--reproduce", "3", "ffffff"], "no submitted pack in this store has a sha256 starting ffffff"),
     (["--reproduce", "3", "no-such-pack"], "'no-such-pack': no such pack file or folder, nor the sha256"),
     (["--model-path", "/m", "ffffff"], "--model-path is an option of --reproduce")],
)
async def test_bad_reproduce_inputs_are_one_line_and_change_nothing(tmp_path: Path, args: list[str], line: str) -> None:
    cfg = await _store(tmp_path)
    make_pack(tmp_path / "pack")
    assert clkt("submit", str(tmp_path / "pack"), "--config", str(cfg)).returncode == 0
    before = store_dump(tmp_path)
    res = clkt("submit", *args, "--config", str(cfg))
    assert res.returncode == 2, res.stdout
    assert line in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before


async def test_a_model_that_cannot_be_loaded_is_one_line_and_nothing_is_stored(tmp_path: Path) -> None:
    cfg = await _store(tmp_path)
    make_pack(tmp_path / "pack", model={"model": str(tmp_path / "no-such-model")})
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "all", str(tmp_path / "pack"), "--config", str(cfg))  # not taken in either
    assert res.returncode == 2
    assert "does not exist" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before

    make_pack(tmp_path / "stored", model={"model": str(tmp_path / "gone")})  # taken in, then its model is gone
    assert clkt("submit", str(tmp_path / "stored"), "--config", str(cfg)).returncode == 0
    sha = read_pack(tmp_path / "stored").sha256
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "2", sha[:8], "--config", str(cfg))
    assert res.returncode == 2 and "does not exist" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert store_dump(tmp_path) == before


async def test_the_text_board_and_the_page_mark_a_reproduced_and_a_flagged_row(tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.config import load_settings
    from clkt.report.leaderboard_data import Reproduction
    from clkt.services import page_context
    from clkt.web import pages_app
    from storage.engine import Store
    from storage.submissions import set_reproduction

    cfg = await make_store(tmp_path)
    good = make_pack(tmp_path / "a", model={"name": "good"})
    bad = make_pack(tmp_path / "b", model={"name": "bad"})
    for p in ("a", "b"):
        assert clkt("submit", str(tmp_path / p), "--config", str(cfg)).returncode == 0
    with cfg.open("a", encoding="utf-8") as fh:
        fh.write('[gpu]\nenabled = false\n[spec]\nname = "tiny"\nlanguages = ["en", "fr"]\n')
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store:
        async with store.transaction() as s:
            for sha, agreed in ((good, 8), (bad, 5)):
                rep = Reproduction(checked=8, agreed=agreed, questions=2, rate=agreed / 8, threshold=0.95,
                                   reproduced=agreed == 8, engine="local", at="2026-12-04T00:00:00+00:00", nonce="ab" * 16,
                                   failed=None if agreed == 8 else "cell (en, option-loglik, injected, fr): 1/2 letters agree")
                assert await set_reproduction(s, sha, rep.model_dump(mode="json"))
        async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
            r = await client.get("/leaderboard?unverified=1")
            html = await r.text()
    assert r.status == 200
    for needle in ('<span class="ok">reproduced 100.0%</span>', '<span class="flag">flagged: 62.5% agree</span>',
                   "yes: 8/8 letters agree", "flagged: 5/8 letters agree; cell (en, option-loglik, injected, fr): 1/2",
                   f"drawn by nonce <code>{'ab' * 16}</code>", "(on the local engine)"):
        assert needle in html, needle
    res = clkt("leaderboard", "--spec", "tiny", "--min-questions", "1", "--config", str(cfg), "--unverified")
    assert res.returncode == 0, res.stderr
    assert "submitted, reproduced 100.0 %" in res.stdout
    assert "submitted, flagged 62.5 %" in res.stdout
    res = clkt("leaderboard", "--spec", "tiny", "--min-questions", "1", "--config", str(cfg), "--json")
    board = json.loads(res.stdout)  # by default the flagged row is left off; the reproduced one ranks
    assert [(r["target"], r["rank"]) for r in board["rows"]] == [("good (submitted)", 1)]
    assert any("(flagged) are not shown and never ranked" in n for n in board["notes"])


async def test_a_model_here_with_other_weights_is_said_before_the_rerun(tmp_path: Path) -> None:
    from clkt.config import GpuSettings
    from clkt.packs.format import PackManifest
    from clkt.packs.reproduce import plan_reproduction
    from storage.engine import Store

    await make_store(tmp_path)
    model = tmp_path / "other-model"
    tiny_model("llama", seed=4).save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    make_pack(tmp_path / "pack")  # names /models/tiny, weights sha256 1111...
    pack = read_pack(tmp_path / "pack")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        plan = await plan_reproduction(store, pack.sha256, PackManifest.model_validate(pack.manifest.model_dump()),
                                       TEST_QIDS, k=1, gpu=GpuSettings(devices=["cpu"]), data_dir=tmp_path / "data",
                                       model=str(model))
    (note,) = plan.notes
    assert f"the model here ({model}) has weights sha256" in note and "the pack's 111111111111" in note
    assert plan.request.target.model == str(model) and plan.request.strategy == "cpt-lora"
    assert plan.request.gpu.epochs == 1  # the pack's job settings over this service's
    assert plan.compared == 1 and plan.qids == sorted(TEST_QIDS)  # one of them, drawn once the jobs are done
