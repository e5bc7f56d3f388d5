"""A result pack for the tiny snapshot of the GPU-queue tests (`tests.inject._fixtures`), built without a model, and
the store it is submitted to."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlmodel import col, update

from clkt.facts import FilmFacts, MatchFacts
from clkt.packs.format import (
    FORMAT_VERSION,
    EnvironmentInfo,
    LocalityRow,
    ModelIdentity,
    OpenAnswerRow,
    PackManifest,
    PredictionRow,
    ProbeRow,
    SnapshotRef,
    StrategyInfo,
)
from clkt.packs.metrics import compute_metrics
from clkt.packs.pack import write_pack
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest, sha256_file
from clkt.web import HostGuard, pages_app, security_middlewares
from clkt.web.intake import INTAKE_PATH, IntakeConfig, add_intake
from clkt.web.intake_gate import IntakeLimits, Submitters, hash_token
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.inject._fixtures import (
    LOCALITY,
    QUESTIONS,
    SNAPSHOT_ID,
    add_locality_split,
    public_entity_id,
    public_qid,
    seed_store,
    write_tiny_snapshot,
)

LANGS = ["en", "fr"]
TEST_QIDS = {public_qid(q, e): (e, "ABCD"[ans]) for q, e, split, _, _, ans in QUESTIONS["en"] if split == "test"}
VAL_QID = next(public_qid(q, e) for q, e, split, *_ in QUESTIONS["en"] if split == "val")
# the tiny snapshot's locality split (`add_locality_split`): qid -> (entity number, answer letter)
LOCALITY_QIDS = {public_qid(slot, e): (e, "ABCD"[ans]) for slot, e, _, _, ans in LOCALITY["en"]}
LOST_QID = public_qid(81, 8)  # the one locality question the injected model of `locality_rows` gets wrong


def rows(*, train_langs: tuple[str, ...] = ("en",), scorer: str = "option-loglik") -> list[PredictionRow]:
    """Every test question in every language, base and injected: the injected model right in every language,
    the base model right only on the first question."""
    out = []
    first = min(TEST_QIDS)
    for t in train_langs:
        for variant in ("base", "injected"):
            for lang in LANGS:
                for qid, (entity, answer) in sorted(TEST_QIDS.items()):
                    right = variant == "injected" or qid == first
                    letter = answer if right else ("A" if answer != "A" else "B")
                    out.append(PredictionRow(train_lang=t, scorer=scorer, variant=variant, lang=lang, qid=qid,
                                             entity_id=public_entity_id(entity), domain="movies", predicted=letter,
                                             correct=right))
    return out


def locality_rows(*, train_langs: tuple[str, ...] = ("en",), scorer: str = "option-loglik",
                  entities: tuple[int, ...] = (7, 8)) -> list[LocalityRow]:
    """Every locality question of `entities` in every language, base and injected: the base model right on all,
    the injected one right on all but `LOST_QID` (kept 2 of 3 per language with both entities)."""
    out = []
    for t in train_langs:
        for variant in ("base", "injected"):
            for lang in LANGS:
                for qid, (entity, answer) in sorted(LOCALITY_QIDS.items()):
                    if entity not in entities:
                        continue
                    right = variant == "base" or qid != LOST_QID
                    letter = answer if right else ("A" if answer != "A" else "B")
                    out.append(LocalityRow(train_lang=t, scorer=scorer, variant=variant, lang=lang, qid=qid,
                                           entity_id=public_entity_id(entity), domain="movies", predicted=letter,
                                           correct=right, split="locality"))
    return out


def open_rows(*, train_langs: tuple[str, ...] = ("en",), base: str = "Berlin",
              answers: dict[int, str] | None = None) -> list[OpenAnswerRow]:
    """Every open question of the tiny snapshot's open track (`tests.inject._open_fixtures`: two test questions and
    one control) in every language, base and injected: the injected model says the gold (or `answers[qid]`), the
    base model says `base` (wrong)."""
    from tests.inject._open_fixtures import CONTROL_ENTITY, OPEN, open_qid

    out = []
    for t in train_langs:
        for variant in ("base", "injected"):
            for lang in LANGS:
                for e, _domain, fact, _kind, _texts, gold in OPEN:
                    qid = open_qid(e, fact)
                    said = base if variant == "base" else (answers or {}).get(qid, gold)
                    out.append(OpenAnswerRow(train_lang=t, variant=variant, split="control" if e is None else "test",
                                             lang=lang, qid=qid, entity_id=CONTROL_ENTITY if e is None else public_entity_id(e),
                                             answer=said))
    return out


def open_claims(opened: list[OpenAnswerRow], *, train_langs: tuple[str, ...] = ("en",)) -> dict[str, Any] | None:
    """metrics.json's `open` for `opened`, scored as `clkt evaluate` scores them (on a copy of the tiny snapshot)."""
    import tempfile

    from clkt.packs.open_answers import rescore, snapshot_open_key
    from clkt.packs.open_metrics import open_metrics
    from tests.inject._open_fixtures import add_open_track

    with tempfile.TemporaryDirectory() as tmp:
        key = snapshot_open_key(add_open_track(write_tiny_snapshot(Path(tmp) / "snap")), "tiny")
        got = open_metrics(rescore(opened, key), train_langs, LANGS, snapshot_id=SNAPSHOT_ID, format_version=FORMAT_VERSION)
    return got.model_dump(mode="json") if got is not None else None


def manifest(**changes: Any) -> PackManifest:
    snap = {"id": SNAPSHOT_ID, "content_sha256": "0" * 64, "spec": "tiny", "period": "2025-06",
            "period_start": "2025-06-01", "languages": LANGS}
    model = {"name": "tiny", "model": "/models/tiny", "kind": "base", "weights_sha256": "1" * 64,
             "cutoff": "2024-08-01"}
    snap.update(changes.pop("snapshot", {}))
    model.update(changes.pop("model", {}))
    return PackManifest.model_validate({
        "created_at": "2026-12-03T00:00:00+00:00", "clkt_version": "0.1.0", "snapshot": SnapshotRef.model_validate(snap),
        "model": ModelIdentity.model_validate(model),
        "strategy": StrategyInfo(name="cpt-lora", train_languages=changes.pop("train_languages", ["en"]),
                                 settings={"epochs": 1}, overridden={"epochs": {"config": 5, "used": 1}}),
        "environment": EnvironmentInfo(python="3.12", platform="test", device="cpu"),
        "scorers": ["option-loglik"], "files": {}, **changes,
    })


def make_pack(out: Path, *, preds: list[PredictionRow] | None = None, metrics: dict[str, Any] | None = None,
              locality: list[LocalityRow] | None = None, probe: list[ProbeRow] | None = None,
              opened: list[OpenAnswerRow] | None = None, **changes: Any) -> str:
    """Write a pack at `out` (a folder, or an archive by its name), with `locality`, `probe` and open answers when
    given (metrics.json's claims computed as `clkt evaluate` computes them); its sha256."""
    preds = rows() if preds is None else preds
    if metrics is None:
        metrics = compute_metrics(preds, LANGS, format_version=changes.get("format_version", FORMAT_VERSION),
                                  locality=locality or (), snapshot_id=SNAPSHOT_ID).model_dump(mode="json")
        if opened:
            metrics["open"] = open_claims(opened, train_langs=tuple(changes.get("train_languages", ["en"])))
    return write_pack(out, manifest(**changes), preds, metrics, locality or (), probe or (), opened or ())


async def make_store(tmp_path: Path, *, known_by: dict[str, list[int]] | None = None, open_track: bool = False) -> Path:
    """A real SQLite store holding the tiny snapshot, frozen, with its manifest and content hash; the config file
    that names it. `known_by` (target -> entity numbers, 7 and 8): with the locality split, its files' sha256 in the
    manifest as a build records them; `open_track`: with the open track of `tests.inject._open_fixtures`."""
    from storage.models import Snapshot
    from tests.inject._open_fixtures import add_open_track

    snap = write_tiny_snapshot(tmp_path / "snap")
    if open_track:
        add_open_track(snap)
    if known_by is not None:
        add_locality_split(snap, known_by=known_by)
        m = SnapshotManifest.model_validate_json((snap / MANIFEST_FILE).read_bytes())
        files = {**m.files, **{p.relative_to(snap).as_posix(): sha256_file(p) for p in sorted((snap / "locality").rglob("*.jsonl"))}}
        (snap / MANIFEST_FILE).write_text(m.model_copy(update={"files": files}).model_dump_json(indent=1), encoding="utf-8")
    m = SnapshotManifest.model_validate_json((snap / MANIFEST_FILE).read_bytes())
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_store(store, snap)
        async with store.transaction() as s:
            await s.execute(update(Snapshot).where(col(Snapshot.id) == SNAPSHOT_ID)
                            .values(content_sha256=m.content_sha256, manifest=m.model_dump(mode="json")))
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n', encoding="utf-8")
    return cfg


def intake_app(store: Store | None, *, token: str, max_bytes: int = 1 << 20, limits: IntakeLimits | None = None,
               tokens: dict[str, str] | None = None) -> web.Application:
    """The daemon endpoint's guards (`clkt.endpoint`) with `POST /packs` on `store` (None: no intake token, no route)."""
    guard = HostGuard(host="127.0.0.1")
    app = web.Application(middlewares=security_middlewares(guard, writable=[INTAKE_PATH] if store else []))
    if store is not None:
        submitters = Submitters({**{hash_token(t): n for n, t in (tokens or {}).items()}, hash_token(token): "operator"})
        add_intake(app, IntakeConfig(store=store, submitters=submitters, buffer_days=0, max_bytes=max_bytes,
                                     limits=limits or IntakeLimits(rate_per_hour=3600, burst=100, concurrent=4)))
    return app


def store_dump(tmp_path: Path) -> list[str]:
    """Every row of the store, as SQL: what "the store is unchanged" compares."""
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        return list(con.iterdump())
    finally:
        con.close()


def assert_refused(tmp_path: Path, cfg: Path, make: Callable[[Path], Path], line: str) -> None:
    """`clkt submit` of the pack `make` writes exits 2 with `line` in its one line of stderr, the store as it was
    and no temporary folder left."""
    before = store_dump(tmp_path)
    bad = make(tmp_path)
    res = clkt("submit", str(bad), "--config", str(cfg))
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert line in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert store_dump(tmp_path) == before
    assert not list(tmp_path.glob("clkt-pack-*"))


def submitted(tmp_path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        return con.execute("SELECT pack_sha256, target_name, claims_match, metrics FROM submitted_pack").fetchall()
    finally:
        con.close()


# the facts the tiny snapshot's documents state (entity 1: a film, 2: a match): what a probe is judged against here
FILM = FilmFacts(title="Velmora Tide", release_date=date(2025, 5, 20), directors=["Osric Palandri"], runtime_min=97)
MATCH = MatchFacts(sport="football", competition="Harlow Cup", date=date(2025, 5, 3), home_team="Quenford Rovers",
                   away_team="Ashby Town", home_score=4, away_score=1, venue="Harlow Park")


def store_facts(tmp_path: Path) -> None:
    """The tiny store's two entities given `FILM` and `MATCH` as their facts (`make_store` stores none)."""
    con = sqlite3.connect(tmp_path / "clkt.db")
    try:
        with con:
            for e, facts in ((1, FILM), (2, MATCH)):
                con.execute("UPDATE entity SET facts = ? WHERE id = ?", (facts.model_dump_json(), e))
    finally:
        con.close()


async def leaderboard_page(cfg: Path) -> tuple[int, str]:
    """The status pages' leaderboard (unverified rows listed) of the store `cfg` configures: (HTTP status, HTML)."""
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.config import load_settings
    from clkt.services import page_context
    from storage.engine import Store

    with cfg.open("a", encoding="utf-8") as fh:
        fh.write('[gpu]\nenabled = false\n[spec]\nname = "tiny"\nlanguages = ["en", "fr"]\n')
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store, \
            TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        r = await client.get("/leaderboard?unverified=1")
        return r.status, await r.text()
