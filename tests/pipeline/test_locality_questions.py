"""Known entities get locality questions: after the probe's "known", up to `locality_entities` of a month go on
through generate, verify and translate (tasks keyed `locality`) and stay `known`, never `ready`."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from clkt.config import TargetSettings
from clkt.context import ServiceContext
from clkt.documents import render_document
from clkt.pipeline.stage_worker import LOCALITY_KEY
from clkt.services import agent_backend, stage_config
from storage.engine import Store
from storage.models import EntityStatus, LeaseStatus, Question, QuestionStatus, Task, Translation
from tests.documents.samples import FIGHT_CLUB, LIVERPOOL_SWANSEA, PLUS
from tests.pipeline._harness import add_entity, pipeline_settings, running, settle
from tests.waiting import wait_for

LANGS = ("en", "fr")
KNOWN = {"Liverpool vs Swansea": LIVERPOOL_SWANSEA, "Fight Club": FIGHT_CLUB}  # the targets know these two


async def knows_two(target: TargetSettings, prompts: list[str], ctx: ServiceContext) -> list[str]:
    """The entity's own document for the two known entities (the fact matcher says known); else no idea."""
    out = []
    for p in prompts:
        name = next((n for n in KNOWN if n in p), None)
        out.append(render_document(KNOWN[name], "en").text if name else "I am not sure what this is.")
    return out


async def _count(store: Store, table: type, *where: object) -> int:
    async with store.session() as s:
        return int((await s.execute(select(func.count()).select_from(table).where(*where))).scalar() or 0)


async def test_one_known_entity_of_the_month_gets_locality_questions_and_stays_known(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    match = await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    film = await add_entity(store, FIGHT_CLUB, "Fight Club", domain="movies", external_id="f1")
    fresh = await add_entity(store, PLUS, "+", domain="music", external_id="r1")

    async def translated() -> bool:
        return await _count(store, Task, Task.stage == "translate", Task.key == LOCALITY_KEY, Task.status == LeaseStatus.done) == 1

    async with running(settings, store, agent_backend(settings, store=store), knows_two, locality_entities=1) as _:
        final = await settle(store, 3)
        await wait_for(translated, timeout=60)
    assert final == {match: EntityStatus.known, film: EntityStatus.known, fresh: EntityStatus.ready}
    # the bound: one known entity of the month (2025-09) went on, the other was only dropped
    assert await _count(store, Task, Task.stage == "generate", Task.key == LOCALITY_KEY) == 1
    async with store.session() as s:
        [(with_questions,)] = (await s.execute(
            select(Question.entity_id).where(Question.entity_id.in_([match, film])).distinct())).all()
        [loc] = (await s.execute(select(Task).where(Task.stage == "generate", Task.key == LOCALITY_KEY))).scalars().all()
    assert loc.entity_id == with_questions  # its questions: generated, verified, translated into every language
    n = await _count(store, Question, Question.entity_id == with_questions, Question.status == QuestionStatus.translated)
    assert n >= 1
    assert await _count(store, Translation, Translation.question_id.in_(  # type: ignore[attr-defined]
        select(Question.id).where(Question.entity_id == with_questions, Question.status == QuestionStatus.translated))) == n * len(LANGS)
    assert (await settle(store, 3))[with_questions] is EntityStatus.known  # still known after translate: never `ready`


def test_the_daemon_wires_the_snapshot_setting_into_the_probe(tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path)
    assert settings.snapshot.locality_entities == 20 and stage_config(settings).locality_entities == 20
    off = settings.model_copy(update={"snapshot": settings.snapshot.model_copy(update={"locality_entities": 0})})
    assert stage_config(off).locality_entities == 0
