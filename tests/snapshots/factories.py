"""Insert `ready` entities the way the pipeline leaves them: documents in every language, translated
questions, a Translation per language (including the source language) and clean probes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from clkt.config import Settings, load_settings
from storage.engine import Store
from storage.models import Document, Entity, EntityStatus, Probe, Question, QuestionStatus, Translation

__all__ = ["LANGS", "add_ready_entity", "fill_period", "make_settings", "state_numbers"]

LANGS = ("en", "ja", "fr")
SOURCES = {"movies": ("tmdb",), "music": ("musicbrainz", "deezer"), "sports": ("thesportsdb",), "disasters": ("usgs", "gdacs")}


def make_settings(tmp_path: Path, **snapshot: Any) -> Settings:
    """The offline demo config with 3 languages, monthly cadence, quotas of 2 per domain, exports under
    tmp_path; keyword arguments override `snapshot` fields."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    toml = tmp_path / "clkt.toml"
    # the domains these factories fill; the demo's own quotas of the others (science, spaceflight) are set to 0
    quotas = snapshot.pop("quotas", {"movies": 2, "music": 2, "sports": 2, "disasters": 2})
    quotas = {"science": 0, "spaceflight": 0, **quotas}
    lines = [
        "offline_demo = true",
        f'data_dir = "{tmp_path / "data"}"',
        "[spec]",
        'name = "demo"',
        f"languages = {list(LANGS)!r}".replace("'", '"'),
        "[snapshot]",
        'cadence = "monthly"',
        f'out_dir = "{tmp_path / "snapshots"}"',
        "[snapshot.quotas]",
        *[f"{k} = {v}" for k, v in quotas.items()],
    ]
    toml.write_text("\n".join(lines) + "\n")
    s = load_settings(toml, environ={})
    if snapshot:
        s = s.model_copy(update={"snapshot": s.snapshot.model_copy(update=snapshot)})
    return s


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def add_ready_entity(
    store: Store,
    *,
    domain: str,
    source: str,
    external_id: str,
    occurred_at: datetime,
    langs: Sequence[str] = LANGS,
    targets: Sequence[str] = ("gemma-3-270m",),
    n_questions: int = 3,
    known_by: Sequence[str] = (),
    redated: bool = False,
    status: EntityStatus = EntityStatus.ready,
) -> int:
    async with store.transaction() as s:
        e = Entity(
            source=source, external_id=external_id, domain=domain, name=f"{domain} {external_id}",
            occurred_at=occurred_at, payload={}, facts={}, content_hash=_h(external_id), status=status,
            redated_from=datetime(2024, 1, 1, tzinfo=UTC) if redated else None,
        )
        s.add(e)
        await s.flush()
        assert e.id is not None
        for lang in langs:
            text = f"[{lang}] Document about {e.name}. Fact one. Fact two."
            s.add(Document(
                entity_id=e.id, lang=lang, origin="source" if lang == "en" else "translation", text=text,
                text_hash=_h(text), producer="template", prompt_version="t1", content_hash=e.content_hash,
            ))
        for t in targets:
            s.add(Probe(
                entity_id=e.id, target_model=t, lang="en", prompt="p", response="r", known=t in known_by,
                judge="fact-matcher", prompt_version="p1",
            ))
        for k in range(n_questions):
            opts = [f"{external_id}-right-{k}", f"{external_id}-w1-{k}", f"{external_id}-w2-{k}", f"{external_id}-w3-{k}"]
            q = Question(
                entity_id=e.id, slot=f"slot{k}", lang="en", question=f"Q{k} about {e.name}?", options=opts,
                answer_index=0, evidence="Fact one.", generator="template", prompt_version="g1",
                status=QuestionStatus.translated,
            )
            s.add(q)
            await s.flush()
            assert q.id is not None
            for lang in langs:
                s.add(Translation(
                    question_id=q.id, lang=lang, question=f"[{lang}] Q{k} about {e.name}?",
                    options=[f"[{lang}] {o}" for o in opts], answer_index=0, translator="template",
                    prompt_version="tr1",
                ))
        return e.id


async def fill_period(
    store: Store, *, month_start: datetime, per_domain: int = 3, n_questions: int = 3, prefix: str = "x"
) -> list[int]:
    """`per_domain` ready entities for each domain, spread over its sources, on consecutive days from
    `month_start`."""
    ids: list[int] = []
    for domain, sources in SOURCES.items():
        for i in range(per_domain):
            src = sources[i % len(sources)]
            ids.append(await add_ready_entity(
                store, domain=domain, source=src, external_id=f"{prefix}{domain}{i}",
                occurred_at=month_start + timedelta(days=i), n_questions=n_questions,
            ))
    return ids



async def state_numbers(store: Store) -> None:
    """Each English document states one number (the fake LLM's writer asks about it: `tests.fakes.llm_responder`)."""
    async with store.session() as s:
        for d in (await s.execute(select(Document).where(Document.lang == "en"))).scalars():
            d.text = f"{d.text} The attendance was {2000 + (d.entity_id or 0)} spectators."
            d.text_hash = _h(d.text)
        await s.commit()
