"""Probe answers in result packs (`probe.jsonl`, `clkt evaluate --probe`): judged by this service on intake, never
trusted; the entities the model knew are excluded from the stored figures and from its board row, which is labelled
"probed here (k of n excluded)"; a pack without them keeps "not probed here"; bad probe files are refused with one
line and the store unchanged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from clkt.packs.format import FORMAT_VERSION, MANIFEST_FILE, PROBE_FILE, PROBE_MAX_BYTES, ProbeRow
from clkt.packs.metrics import compute_metrics
from clkt.packs.pack import read_pack
from tests.cli._in_process import clkt
from tests.inject._fixtures import SNAPSHOT_ID, public_entity_id
from tests.packs._packs import (
    LANGS,
    assert_refused,
    leaderboard_page,
    make_pack,
    make_store,
    rows,
    store_facts,
    submitted,
)

pytestmark = pytest.mark.usefixtures("wide_console")

KNOWN = "Velmora Tide is a film directed by Osric Palandri."  # states a fact of entity 1's document


def probe_rows(*, known: str = KNOWN) -> list[ProbeRow]:
    """Every real entity of the tiny snapshot in each language: entity 1's en answer `known`, the rest knowing nothing."""
    return [ProbeRow(entity_id=public_entity_id(e), lang=lang,
                     summary=known if (e, lang) == (1, "en") else "I have no information about this.")
            for e in (1, 2) for lang in LANGS]


async def _store_with_facts(tmp_path: Path) -> Path:
    """The tiny snapshot's store, its two entities with the facts their documents state."""
    cfg = await make_store(tmp_path)
    store_facts(tmp_path)
    return cfg


def _board_row(cfg: Path) -> dict[str, object]:
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--unverified", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["rows"]
    return dict(row)


def test_a_pack_with_probe_answers_reads_back_hashed_in_the_manifest(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack", probe=probe_rows())
    pack = read_pack(tmp_path / "pack")
    assert pack.probe == sorted(probe_rows(), key=lambda r: (r.entity_id, r.lang))
    manifest = json.loads((tmp_path / "pack" / MANIFEST_FILE).read_text())
    assert PROBE_FILE in manifest["files"] and manifest["format_version"] == FORMAT_VERSION
    make_pack(tmp_path / "pack.tar.gz", probe=probe_rows())
    assert read_pack(tmp_path / "pack.tar.gz").sha256 == pack.sha256  # one identity, folder or archive
    make_pack(tmp_path / "plain")
    assert read_pack(tmp_path / "plain").probe == []


async def test_intake_excludes_the_entity_the_model_knew_and_recomputes_the_figures_without_it(tmp_path: Path) -> None:
    cfg = await _store_with_facts(tmp_path)
    make_pack(tmp_path / "pack", probe=probe_rows())
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    (row,) = submitted(tmp_path)
    assert row[2] == 1  # metrics.json (every answer, as the lab computed it) agrees with the same recomputation
    stored = json.loads(row[3])
    assert stored["probe"] == {"judge": "template", "entities": 2, "languages": LANGS,
                               "excluded": [public_entity_id(1)]}
    kept = [r for r in rows() if r.entity_id != public_entity_id(1)]
    expected = compute_metrics(kept, LANGS, format_version=FORMAT_VERSION, snapshot_id=SNAPSHOT_ID).model_dump(mode="json")
    assert {k: v for k, v in stored.items() if k != "probe"} == expected
    assert {c["n"] for c in stored["scorers"]["option-loglik"]["accuracy"]} == {1}  # 2 test questions, 1 left
    assert "  probe: probed here (1 of 2 excluded), judged here (template judge)" in res.stdout
    board = _board_row(cfg)
    assert board["probe"] == "probed here (1 of 2 excluded)"
    assert board["overall"]["n"] == 1 and board["overall"]["value"] == 1.0  # type: ignore[index]
    assert board["submissions"][0]["probe"]["excluded"] == [public_entity_id(1)]  # type: ignore[index]


async def test_the_verdicts_are_this_services_not_the_packs(tmp_path: Path) -> None:
    cfg = await _store_with_facts(tmp_path)
    make_pack(tmp_path / "pack", probe=probe_rows(known="A film, I think. Nothing more is known."))
    assert clkt("submit", str(tmp_path / "pack"), "--config", str(cfg)).returncode == 0
    assert json.loads(submitted(tmp_path)[0][3])["probe"]["excluded"] == []
    board = _board_row(cfg)
    assert board["probe"] == "probed here (0 of 2 excluded)" and board["overall"]["n"] == 2  # type: ignore[index]


async def test_a_pack_without_probe_answers_keeps_not_probed_here(tmp_path: Path) -> None:
    cfg = await _store_with_facts(tmp_path)
    make_pack(tmp_path / "pack")
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0 and "  probe: not probed here\n" in res.stdout
    assert "probe" not in json.loads(submitted(tmp_path)[0][3])
    board = _board_row(cfg)
    assert board["probe"] == "not probed here" and board["overall"]["n"] == 2  # type: ignore[index]


def _with(tmp_path: Path, probe: list[ProbeRow]) -> Path:
    make_pack(tmp_path / "pack", probe=probe)
    return tmp_path / "pack"


def _oversize(tmp_path: Path) -> Path:
    big = "x" * 3900
    many = [ProbeRow(entity_id=i, lang="en", summary=big) for i in range(PROBE_MAX_BYTES // 3900 + 1)]
    return _with(tmp_path, many)


def _malformed(tmp_path: Path) -> Path:
    pack = _with(tmp_path, probe_rows())
    path = pack / PROBE_FILE
    path.write_text(path.read_text().replace('"summary"', '"summry"', 1))
    manifest = json.loads((pack / MANIFEST_FILE).read_text())
    data = path.read_bytes()
    manifest["files"][PROBE_FILE] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (pack / MANIFEST_FILE).write_text(json.dumps(manifest))
    return pack


UNKNOWN = 4242
BAD: list[tuple[str, Callable[[Path], Path], str]] = [
    ("an entity not in the snapshot", lambda t: _with(t, [*probe_rows()[:-1], probe_rows()[-1].model_copy(update={"entity_id": UNKNOWN})]),
     f"probe.jsonl: entity {UNKNOWN} is not a real entity of snapshot {SNAPSHOT_ID}"),
    ("an answer twice", lambda t: _with(t, [*probe_rows(), probe_rows()[0]]),
     f"probe.jsonl: entity {public_entity_id(1)} is probed twice in en"),
    ("an answer missing (the entity it knew left out)", lambda t: _with(t, probe_rows()[1:]),
     f"probe.jsonl: entity {public_entity_id(1)} is not probed in en; 1 answers are missing in all"),
    ("a language not the snapshot's", lambda t: _with(t, [*probe_rows()[:-1], probe_rows()[-1].model_copy(update={"lang": "de"})]),
     "is probed in language 'de', not one of ['en', 'fr']"),
    ("oversize", _oversize, f"bytes, more than the {PROBE_MAX_BYTES:,} a pack's probe answers may be"),
    ("a malformed line", _malformed, "probe.jsonl:1: not a probe answer (summary: Field required)"),
]


@pytest.mark.parametrize(("make", "line"), [(m, line) for _, m, line in BAD], ids=[n for n, *_ in BAD])
async def test_bad_probe_answers_are_refused_with_one_line_and_the_store_unchanged(
    tmp_path: Path, make: Callable[[Path], Path], line: str,
) -> None:
    assert_refused(tmp_path, await _store_with_facts(tmp_path), make, line)


async def test_an_entity_without_readable_facts_here_is_one_line(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)  # its entities' facts: {} (none stored)
    assert_refused(tmp_path, cfg, lambda t: _with(t, probe_rows()),
                   f"entity {public_entity_id(1)} of the snapshot has no readable facts here: its probe cannot be judged")


def test_the_lab_asks_the_daemons_prompt_about_every_real_entity_in_every_language(tmp_path: Path) -> None:
    """`clkt evaluate --probe`'s answers: the daemon's prompts (`build_probe_prompt`) and greedy decoding
    (`probe_texts`), one per real entity and language, the control split's entities not asked."""
    import asyncio

    from clkt.config import TargetSettings
    from clkt.packs.probe_ask import ask_probe
    from clkt.snapshots.layout import load_snapshot_dir
    from clkt.targets.summary import build_probe_prompt, probe_texts
    from tests.evaluate._tiny import tiny_model, tiny_tokenizer
    from tests.inject._fixtures import DOCS, write_tiny_snapshot

    folder = tmp_path / "model"
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    target = TargetSettings(name="tiny", model=str(folder), kind="base")
    snap = load_snapshot_dir(write_tiny_snapshot(tmp_path / "snap", control_domains=("movies",)))
    lines: list[str] = []
    got = asyncio.run(ask_probe(snap, target, data_dir=tmp_path, device="cpu", max_new_tokens=8, progress=lines.append))
    asked = [(public_entity_id(e), name, lang) for e, name, _ in DOCS["en"] for lang in LANGS]
    assert [(r.entity_id, r.lang) for r in got] == sorted((e, lang) for e, _, lang in asked)
    by = {(e, lang): name for e, name, lang in asked}
    prompts = [build_probe_prompt(target, by[(r.entity_id, r.lang)], r.lang) for r in got]
    assert "Provide a brief factual summary of 'Velmora Tide'.\nSummary:" in prompts  # a base model's cue
    assert [r.summary for r in got] == probe_texts(target, prompts, data_dir=tmp_path, device="cpu", max_new_tokens=8)
    assert lines == ["probe: 2 entities x 2 languages (4 prompts)"]


async def test_post_packs_intake_judges_the_probe_and_refuses_a_bad_one_with_one_line(tmp_path: Path) -> None:
    """`POST /packs`: the verified upload's probe answers judged in the service (the limited child only reads
    them), the known entity excluded; an upload naming an entity not in the snapshot is a 400 and stores nothing."""
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.web.intake import INTAKE_PATH
    from storage.engine import Store
    from tests.packs._packs import intake_app, store_dump

    await _store_with_facts(tmp_path)
    make_pack(tmp_path / "bad.tar.gz", probe=[*probe_rows()[:-1], probe_rows()[-1].model_copy(update={"entity_id": UNKNOWN})])
    make_pack(tmp_path / "good.tar.gz", probe=probe_rows())
    auth = {"Authorization": "Bearer intake-secret-0123456789"}
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        app = intake_app(store, token="intake-secret-0123456789")
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            before = store_dump(tmp_path)
            r = await client.post(INTAKE_PATH, data=(tmp_path / "bad.tar.gz").read_bytes(), headers=auth)
            got = await r.json()
            assert r.status == 400, got
            err = got["error"]
            assert r.status == 400 and f"probe.jsonl: entity {UNKNOWN} is not a real entity" in err and "\n" not in err
            assert store_dump(tmp_path) == before
            r = await client.post(INTAKE_PATH, data=(tmp_path / "good.tar.gz").read_bytes(), headers=auth)
            got = await r.json()
            assert r.status == 200, got
            assert got["metrics"]["probe"]["excluded"] == [public_entity_id(1)]
            assert {c["n"] for c in got["metrics"]["scorers"]["option-loglik"]["accuracy"]} == {1}


async def test_the_page_shows_the_probe_of_the_row_and_of_its_pack(tmp_path: Path) -> None:
    cfg = await _store_with_facts(tmp_path)
    make_pack(tmp_path / "pack", probe=probe_rows())
    assert clkt("submit", str(tmp_path / "pack"), "--config", str(cfg)).returncode == 0
    status, html = await leaderboard_page(cfg)
    assert status == 200
    assert '<span class="muted">probed here (1 of 2 excluded)</span>' in html
    assert "<th>probed here</th>" in html and "1 of 2 excluded <span class=\"muted\">(template judge, en, fr)</span>" in html
