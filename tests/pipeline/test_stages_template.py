"""The four stages end to end with the offline template engine (the embedded default backend)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from agents.template import TemplateBackend
from clkt.documents import render_document
from clkt.services import agent_backend
from storage.engine import Store
from storage.models import Document, EntityStatus, LlmCall, Probe, Question, QuestionStatus, Translation
from tests.documents.samples import ALL, ENTITY_NAMES, LIVERPOOL_SWANSEA
from tests.pipeline._harness import add_entity, answers, pipeline_settings, running, settle

LANGS = ("en", "ja", "zh", "fr", "es")


async def count(store: Store, table: type, *where: object) -> int:
    async with store.session() as s:
        return int((await s.execute(select(func.count()).select_from(table).where(*where))).scalar() or 0)


async def test_every_domain_becomes_ready_in_five_languages(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    ids = []
    for i, (key, facts) in enumerate(ALL.items()):
        domain = {"match": "sports", "film": "movies", "release": "music"}.get(facts.kind, "disasters")
        ids.append(await add_entity(store, facts, ENTITY_NAMES[key], domain=domain, external_id=f"e{i}"))
    backend = agent_backend(settings, store=store)
    assert isinstance(backend, TemplateBackend)
    async with running(settings, store, backend, answers()) as _:
        final = await settle(store, len(ids))
    assert set(final.values()) == {EntityStatus.ready}, final
    translated = await count(store, Question, Question.status == QuestionStatus.translated)
    assert translated >= len(ids)
    assert await count(store, Translation) == translated * len(LANGS)
    assert await count(store, Document) == len(ids) * len(LANGS)
    assert await count(store, LlmCall) == 0  # the template engine costs nothing
    async with store.session() as s:
        for d in (await s.execute(select(Document).where(Document.origin == "translation"))).scalars():
            assert d.producer == backend.producer("translate") and d.prompt_version


async def test_the_fact_matcher_drops_an_entity_the_target_knows(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    doc = render_document(LIVERPOOL_SWANSEA, "en").text
    assert "44,621" in doc
    knows = "Liverpool beat Swansea 4–1 at Anfield in front of 44,621 spectators."
    backend = agent_backend(settings, store=store)
    async with running(settings, store, backend, answers(knows)) as _:
        final = await settle(store, 1)
    assert list(final.values()) == [EntityStatus.known]
    async with store.session() as s:
        probes = (await s.execute(select(Probe))).scalars().all()
    assert len(probes) == 1 and probes[0].known and probes[0].judge == backend.producer("judge")
    assert probes[0].matched_facts
