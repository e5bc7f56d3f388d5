"""`clkt submit --reproduce` on a pack's open answers (`clkt.packs.reproduce`, `clkt.packs.verdict.judge_open`): the
jobs re-run with their open pass, the answers re-generated with the pack's prompt version and compared by the
normaliser's verdicts; a pack of another prompt version is refused before anything runs, naming both; a pack whose
open answers reproduced has its open row ranked on the board, one whose re-run compared the letters only does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clkt.openqa.prompts import ANSWER_PROMPT_VERSION
from clkt.packs.format import OpenAnswerRow
from clkt.packs.pack import read_pack, write_pack
from clkt.report.leaderboard_data import CellCheck, OpenReproduction, Reproduction
from tests.cli._in_process import clkt
from tests.packs._packs import make_pack, make_store, open_rows, store_dump
from tests.packs.test_reproduce import _GPU, _evaluated

pytestmark = pytest.mark.usefixtures("wide_console")


async def _open_store(tmp_path: Path) -> Path:
    cfg = await make_store(tmp_path, open_track=True)
    cfg.write_text(cfg.read_text(encoding="utf-8") + _GPU, encoding="utf-8")
    return cfg


async def test_a_pack_of_another_prompt_version_is_refused_naming_both_and_nothing_changes(tmp_path: Path) -> None:
    cfg = await _open_store(tmp_path)
    make_pack(tmp_path / "pack", opened=open_rows(), open_prompt_version="open-v0")
    sha = read_pack(tmp_path / "pack").sha256
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "all", str(tmp_path / "pack"), "--config", str(cfg))  # refused before intake
    want = (f"pack {sha[:12]}: its open answers were generated with prompt version open-v0, this service's is "
            f"{ANSWER_PROMPT_VERSION}")
    assert res.returncode == 2 and want in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before
    assert clkt("submit", str(tmp_path / "pack"), "--config", str(cfg)).returncode == 0  # taken in, then re-run
    before = store_dump(tmp_path)
    res = clkt("submit", "--reproduce", "3", sha[:10], "--config", str(cfg))
    assert res.returncode == 2 and want in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before


async def test_a_pack_without_a_prompt_version_is_planned_for_its_letters_only(tmp_path: Path) -> None:
    from clkt.config import GpuSettings
    from clkt.packs.format import PackManifest
    from clkt.packs.reproduce import plan_reproduction
    from storage.engine import Store
    from tests.evaluate._tiny import tiny_model, tiny_tokenizer
    from tests.packs._packs import TEST_QIDS

    await make_store(tmp_path, open_track=True)
    model = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    plans = []
    for name, version in (("old", None), ("new", ANSWER_PROMPT_VERSION)):
        extra: dict[str, Any] = {"open_prompt_version": version} if version else {}
        make_pack(tmp_path / name, opened=open_rows(), **extra)
        pack = read_pack(tmp_path / name)
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
            plans.append(await plan_reproduction(
                store, pack.sha256, PackManifest.model_validate(pack.manifest.model_dump()), TEST_QIDS, k=1,
                gpu=GpuSettings(devices=["cpu"]), data_dir=tmp_path / "data", model=str(model),
                open_qids={r.qid for r in pack.open_answers}))
    old, new = plans
    assert old.open_qids == [] and not old.request.gpu.open_answers  # no open pass: its open rows stay unverified
    assert any("declares no prompt version for its open answers" in n for n in old.notes)
    assert new.open_qids == sorted({r.qid for r in open_rows()}) and new.request.gpu.open_answers


def _open_row(cfg: Path) -> dict[str, Any]:
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg), "--unverified")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["open_rows"]
    return dict(row)


async def _page(cfg: Path) -> str:
    """The leaderboard page's HTML (its provenance table says what each re-run compared)."""
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.config import load_settings
    from clkt.services import page_context
    from clkt.web import pages_app
    from storage.engine import Store

    page_cfg = cfg.with_name("page.toml")
    page_cfg.write_text(cfg.read_text(encoding="utf-8").split("[gpu]")[0]
                        + '[gpu]\nenabled = false\n[spec]\nname = "tiny"\nlanguages = ["en", "fr"]\n', encoding="utf-8")
    settings = load_settings(page_cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store, \
            TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        r = await client.get("/leaderboard?unverified=1")
        assert r.status == 200
        return await r.text()


async def test_a_pack_whose_open_answers_reproduced_ranks_in_the_open_section(tmp_path: Path) -> None:
    from storage.engine import Store
    from storage.submissions import set_reproduction

    cfg = await make_store(tmp_path, open_track=True)
    sha = make_pack(tmp_path / "pack", opened=open_rows(), open_prompt_version=ANSWER_PROMPT_VERSION)
    assert clkt("submit", str(tmp_path / "pack"), "--config", str(cfg)).returncode == 0
    letters = Reproduction(checked=8, agreed=8, questions=2, rate=1.0, threshold=0.95, reproduced=True, engine="local",
                           at="2026-12-07T00:00:00+00:00", nonce="ab" * 16)
    cells = [CellCheck(train_lang="en", scorer="open-normaliser", variant=v, lang=lang, agreed=3, checked=3, passed=True)
             for v in ("base", "injected") for lang in ("en", "fr")]
    opened = OpenReproduction(prompt_version=ANSWER_PROMPT_VERSION, checked=12, agreed=12, questions=3, rate=1.0, cells=cells)

    async def stored(rep: Reproduction) -> None:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.transaction() as s:
            assert await set_reproduction(s, sha, rep.model_dump(mode="json"))

    await stored(letters)  # a re-run that compared the letters only: the open row is still not verified
    row = _open_row(cfg)
    assert (row["verified"], row["agreement"], row["rank"]) == ("not reproduced", None, None)
    await stored(letters.model_copy(update={"open": opened}))
    row = _open_row(cfg)
    assert (row["track"], row["verified"], row["agreement"], row["rank"]) == ("submitted", "reproduced", 1.0, 1)
    assert row["submissions"][0]["reproduction"]["open"]["checked"] == 12
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg))
    assert [r["rank"] for r in json.loads(res.stdout)["open_rows"]] == [1]  # ranked without --unverified
    assert f"(open answers: 12/12 verdicts agree, prompt {ANSWER_PROMPT_VERSION})" in await _page(cfg)
    failed = opened.model_copy(update={"agreed": 9, "rate": 0.75, "failed": "cell (en, open-normaliser, injected, fr): 0/3"})
    await stored(letters.model_copy(update={"reproduced": False, "open": failed, "failed": failed.failed}))
    row = _open_row(cfg)
    assert (row["verified"], row["agreement"], row["rank"]) == ("flagged", 0.75, None)


@pytest.mark.slow
async def test_open_answers_are_regenerated_and_a_pack_with_flipped_verdicts_is_not_reproduced(tmp_path: Path) -> None:
    """A tiny random-weight llama's pack with open answers: re-run here, its open answers re-generated agree with its
    own by verdict and the pack is reproduced; the same pack with its injected test answers made the gold (verdicts
    flipped to CORRECT, its letters untouched) fails on an open cell."""
    from tests.inject._open_fixtures import OPEN, open_qid

    cfg = await _open_store(tmp_path)
    out = _evaluated(tmp_path)
    pack = read_pack(out)
    assert pack.manifest.open_prompt_version == ANSWER_PROMPT_VERSION and len(pack.open_answers) == 12
    res = clkt("submit", "--reproduce", "all", str(out), "--config", str(cfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert f"pack {pack.sha256[:12]}: reproduced:" in res.stdout
    assert (f"open answers (prompt {ANSWER_PROMPT_VERSION}, greedy): 12/12 normaliser verdicts agree in 4 cells on 3 "
            "open questions") in res.stdout
    assert _open_row(cfg)["verified"] == "reproduced"

    gold = {open_qid(e, fact): g for e, _d, fact, _k, _t, g in OPEN if e is not None}
    lie: list[OpenAnswerRow] = [r.model_copy(update={"answer": gold[r.qid]})
                                if r.variant == "injected" and r.split == "test" else r for r in pack.open_answers]
    claimed = json.loads((out / "metrics.json").read_text())
    bad = write_pack(tmp_path / "changed", pack.manifest.model_copy(update={"created_at": "2027-01-01T00:00:00+00:00"}),
                     pack.predictions, claimed, pack.locality, pack.probe, lie)
    res = clkt("submit", "--reproduce", "all", str(tmp_path / "changed"), "--config", str(cfg), timeout_s=600)
    assert res.returncode == 0, res.stderr
    assert f"pack {bad[:12]}: NOT REPRODUCED (cell (en, open-normaliser, injected, " in res.stdout
    assert "open verdicts agree (at least 95% needed)" in res.stdout
    assert _open_row(cfg)["verified"] == "flagged"  # the identity's later pack is the one on the board
