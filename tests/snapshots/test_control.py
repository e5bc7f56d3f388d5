"""The control split: fictional entities generated from the snapshot's seed, kept apart from the real items."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from agents.template import PROMPT_VERSION
from clkt.config import load_settings
from clkt.domains.movies.pools import ACTORS, COMPANIES, DIRECTORS
from clkt.domains.music.pools import ARTISTS, LABELS
from clkt.domains.sports.pools import TEAMS
from clkt.errors import ConfigError, SnapshotError
from clkt.facts import FilmFacts, QuakeFacts, ReleaseFacts
from clkt.services import snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.control import CONTROL_SOURCE, build_control, control_entities
from clkt.snapshots.layout import load_snapshot_dir
from clkt.snapshots.stored import load_snapshot
from storage.engine import Store
from storage.models import Snapshot
from tests.snapshots.factories import LANGS, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)
DOMAINS = ("movies", "music", "sports", "disasters")
ALL_LANGS = ("en", "ja", "zh", "fr", "es")


def _control(seed: int = 0, per_domain: int = 2, period: str = "2025-06"):
    return build_control(
        spec="demo", period=period, seed=seed, start=date(2025, 6, 1), end=date(2025, 7, 1), languages=ALL_LANGS,
        domains=DOMAINS, per_domain=per_domain,
    )


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("\u202f", " ").replace("\xa0", " ")).strip().casefold()


def test_deterministic_from_the_seed_and_different_across_seeds() -> None:
    a, b, c = _control(0), _control(0), _control(1)
    assert a == b
    assert {e.name for e in a.entities}.isdisjoint({e.name for e in c.entities})
    assert {q.qid for q in a.questions}.isdisjoint({q.qid for q in c.questions})
    # another period of the same spec and seed gets other entities too
    d = _control(0, period="2025-07")
    assert {e.name for e in a.entities}.isdisjoint({e.name for e in d.entities})


def test_every_domain_every_language_every_question_the_engine_can_ask() -> None:
    ctl = _control(per_domain=3)
    assert Counter(e.domain for e in ctl.entities) == {d: 3 for d in DOMAINS}
    en = ctl.questions_in("en")
    # about 7 questions per entity (the engine's slots that every fictional entity fills)
    assert len(en) >= 6 * len(ctl.entities), Counter(q.domain for q in en)
    qids = [q.qid for q in en]
    assert len(set(qids)) == len(qids)
    for lang in ALL_LANGS:
        rows = ctl.questions_in(lang)
        assert [q.qid for q in rows] == qids
        docs = {d.entity_id: _norm(d.text) for d in ctl.docs_in(lang)}
        assert len(docs) == len(ctl.entities)
        for q in rows:
            assert q.source == CONTROL_SOURCE and q.split == "test"
            assert len(set(q.options)) == 4
            assert _norm(q.text_answer) in docs[q.entity_id], (lang, q.question, q.options)
    # the same option order and letter in every language
    ja = {q.qid: q for q in ctl.questions_in("ja")}
    assert all(ja[q.qid].answer == q.answer for q in en)
    letters = Counter(q.answer for q in en)
    assert max(letters.values()) - min(letters.values()) <= 1, letters
    # plausible, multilingual documents: the Japanese document is not the English one
    assert ctl.docs_in("ja")[0].text != ctl.docs_in("en")[0].text


def test_names_are_invented_and_distractors_too() -> None:
    real = {n.casefold() for pool in (*TEAMS.values(), DIRECTORS, ACTORS, COMPANIES, ARTISTS, LABELS) for n in pool}
    ctl = _control(per_domain=4)
    for q in ctl.questions_in("en"):
        if q.slot in ("director", "lead_actor", "production_company", "artist", "label", "home_team", "away_team", "winner", "venue", "competition"):
            assert not {o.casefold() for o in q.options} & real, q.options  # fictional answer among fictional options
    for e in control_entities(spec="demo", period="2025-06", seed=0, start=date(2025, 6, 1), end=date(2025, 7, 1), domains=DOMAINS, per_domain=4):
        assert e.name.casefold() not in real
        # dated inside the period
        f = e.facts
        day = f.time_utc.date() if isinstance(f, QuakeFacts) else f.release_date if isinstance(f, FilmFacts | ReleaseFacts) else f.date
        assert date(2025, 6, 1) <= day < date(2025, 7, 1), (e.name, day)


def test_fictional_quakes_have_a_plausible_intensity_and_are_asked_it_and_their_latitude() -> None:
    ents = [e for e in control_entities(spec="demo", period="2025-06", seed=3, start=date(2025, 6, 1), end=date(2025, 7, 1),
                                        domains=("disasters",), per_domain=8) if e.facts.kind == "quake"]
    assert len(ents) == 4
    for e in ents:
        f = e.facts
        assert isinstance(f, QuakeFacts)
        assert f.mmi is not None and 2.0 <= f.mmi <= 9.6, (e.name, f.mmi)
    # deeper at the same magnitude: a lower intensity (the intensity is derived, not drawn)
    from clkt.snapshots.fiction.disasters import fictional_mmi
    assert fictional_mmi(6.7, 18.0) > fictional_mmi(6.7, 150.0) and fictional_mmi(7.4, 10.0) > fictional_mmi(5.0, 10.0)
    ctl = build_control(spec="demo", period="2025-06", seed=3, start=date(2025, 6, 1), end=date(2025, 7, 1),
                        languages=ALL_LANGS, domains=("disasters",), per_domain=8)
    for lang in ALL_LANGS:
        docs = {d.entity_id: _norm(d.text) for d in ctl.docs_in(lang)}
        asked = [q for q in ctl.questions_in(lang) if q.slot in ("intensity", "latitude")]
        assert Counter(q.slot for q in asked) == {"intensity": 4, "latitude": 4}, lang
        for q in asked:
            assert _norm(q.text_answer) in docs[q.entity_id] and len(set(q.options)) == 4, (lang, q.options)


async def test_snapshot_carries_the_control_split_apart_from_the_real_items(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, control_entities=1)
    await fill_period(store, month_start=JUNE, per_domain=2)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None
    data = load_snapshot_dir(res.path)
    ctl = data.manifest.control
    spec_domains = [d.value for d in settings.spec.domains]  # every domain of the spec, science and spaceflight too
    assert ctl is not None and ctl.per_domain == 1 and ctl.entities == len(spec_domains) == 6 and ctl.questions >= 20
    assert sorted(ctl.domains) == sorted(spec_domains)
    for lang in LANGS:
        assert len(data.control_questions_for(lang)) == ctl.questions
        assert f"control/questions/{lang}.jsonl" in data.manifest.files
        assert f"control/docs/{lang}.jsonl" in data.manifest.files
    control_qids = {q.qid for q in data.control_questions_for("en")}
    control_names = {d.name for d in data.control_docs_for("en")}
    assert not control_qids & set(data.qids())
    # the real counts, the real files and every other export hold no control item
    assert data.manifest.counts["total"].fact_qas == len(data.qids())
    for f in res.path.rglob("*"):
        if f.is_file() and "control" not in f.relative_to(res.path).parts and f.suffix in (".jsonl", ".json"):
            text = f.read_text(encoding="utf-8")
            assert not any(str(q) in text for q in control_qids), f
            assert not any(json.dumps(n, ensure_ascii=False)[1:-1] in text for n in control_names), f
    # re-assembled from the store: the same content hash (the control split is regenerated from the seed)
    async with store.session() as s:
        loaded = await load_snapshot(s, res.snapshot_id or "")
    assert loaded.content.control_questions == tuple(
        q for lang in LANGS for q in data.control_questions_for(lang)
    )
    assert ctl.engine == PROMPT_VERSION
    # a control split written by another engine version is not regenerated silently into other questions
    async with store.transaction() as s:
        row = await s.get(Snapshot, res.snapshot_id)
        assert row is not None
        row.manifest = {**row.manifest, "control": {**row.manifest["control"], "engine": None}}  # before tmpl-2
    async with store.session() as s:
        with pytest.raises(SnapshotError, match="written by template engine tmpl-1, this code writes tmpl-2"):
            await load_snapshot(s, res.snapshot_id or "")


async def test_control_size_zero_means_no_control_split_and_the_size_changes_the_id(store: Store, tmp_path: Path) -> None:
    await fill_period(store, month_start=JUNE, per_domain=2)
    none = await build_snapshot(store, snapshot_config(make_settings(tmp_path / "a", control_entities=0)), period="2025-06", now=NOW)
    assert none.path is not None
    data = load_snapshot_dir(none.path)
    assert data.manifest.control is None and not (none.path / "control").exists()
    assert data.control_questions_for("en") == []
    two = await build_snapshot(store, snapshot_config(make_settings(tmp_path / "b", control_entities=2)), period="2025-06", now=NOW, force=True)
    assert two.snapshot_id != none.snapshot_id


async def test_a_control_file_that_disagrees_across_languages_is_refused(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, control_entities=1)
    await fill_period(store, month_start=JUNE, per_domain=1)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW, allow_partial=True)
    assert res.path is not None
    f = res.path / "control" / "questions" / "fr.jsonl"
    lines = f.read_text(encoding="utf-8").splitlines()
    f.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(SnapshotError, match="sha256"):
        load_snapshot_dir(res.path)
    with pytest.raises(SnapshotError, match=r"control/questions/fr\.jsonl"):
        load_snapshot_dir(res.path, verify_hashes=False)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("[snapshot]\ncontrol_entities = -1\n", "snapshot.control_entities"),
        ("[snapshot]\ncontrol_entities = 1000\n", "snapshot.control_entities"),
        ("[agents.questions_per_domain]\nsports = 0\n", "agents.questions_per_domain"),
        ("[agents.questions_per_domain]\nbooks = 3\n", "agents.questions_per_domain"),
        ('[spec]\nlanguages = ["en", "fr"]\ntrain_languages = ["ja"]\n', "spec"),
        ('[spec]\ntrain_languages = []\n', "spec.train_languages"),
    ],
)
def test_bad_sizes_name_the_key(tmp_path: Path, toml: str, key: str) -> None:
    p = tmp_path / "clkt.toml"
    p.write_text("offline_demo = true\n" + toml)
    with pytest.raises(ConfigError) as ei:
        load_settings(p, environ={})
    assert str(ei.value).startswith(key) or key in str(ei.value), str(ei.value)


def test_question_cap_per_domain(tmp_path: Path) -> None:
    p = tmp_path / "clkt.toml"
    p.write_text("offline_demo = true\n[agents]\nquestions_per_entity = 5\n[agents.questions_per_domain]\nsports = 2\n")
    agents = load_settings(p, environ={}).agents
    assert agents.question_cap("sports") == 2 and agents.question_cap("music") == 5


def test_train_languages_subset_keeps_the_spec_order(tmp_path: Path) -> None:
    p = tmp_path / "clkt.toml"
    p.write_text('offline_demo = true\n[spec]\nlanguages = ["en", "ja", "fr"]\ntrain_languages = ["fr", "en"]\n')
    spec = load_settings(p, environ={}).spec
    assert spec.train_langs == ["en", "fr"]
    p.write_text('offline_demo = true\n[spec]\nlanguages = ["en", "ja", "fr"]\n')
    assert load_settings(p, environ={}).spec.train_langs == ["en", "ja", "fr"]


async def test_gpu_jobs_only_for_the_train_languages(store: Store, tmp_path: Path) -> None:
    from sqlalchemy import select

    from clkt.snapshots.service import enqueue_spec_jobs
    from storage.models import GpuJob

    settings = make_settings(tmp_path)
    settings = settings.model_copy(update={"spec": settings.spec.model_copy(update={"train_languages": ["fr"]})})
    await fill_period(store, month_start=JUNE, per_domain=2)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    async with store.transaction() as s:
        await enqueue_spec_jobs(s, res.snapshot_id or "", spec=settings.spec, gpu=settings.gpu)
    async with store.session() as s:
        jobs = (await s.execute(select(GpuJob))).scalars().all()
    assert [j.train_lang for j in jobs] == ["fr"]


def test_the_demo_trains_in_a_subset_of_its_own_languages_only(tmp_path: Path) -> None:
    assert load_settings(None, environ={}).spec.train_langs == ["en"]
    p = tmp_path / "clkt.toml"
    p.write_text('offline_demo = true\n[spec]\nlanguages = ["en", "ja", "fr"]\n')
    assert load_settings(p, environ={}).spec.train_langs == ["en", "ja", "fr"]
    p.write_text('offline_demo = true\n[gpu]\nepochs = 1\n')
    assert load_settings(p, environ={}).spec.train_langs == ["en"]
