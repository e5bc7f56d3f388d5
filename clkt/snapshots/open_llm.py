"""The open track written by the LLM agent roles (`agents.backend = "llm"`), at freeze time (issue 47).

With the template engine (the default) a snapshot's open track is generated from the entities' typed facts
(`clkt.snapshots.open.attach_open`), and regenerated from them whenever the snapshot is loaded. With the LLM
backend, `attach_open_llm` asks the roles of `clkt.openqa.from_llm` (writer, verifier, translator: paced, cached
and budgeted as every agent call) about each selected entity's source document (its English one where the spec has
English, else its first language's), with the entity's facts as hints; the questions per entity are
`agents.question_cap(domain)`, as for the MCQs. The control split's fictional entities keep the template questions
of their facts (their documents are rendered from those facts), so the control stays an exact positive control;
the locality split's questions (`clkt.snapshots.locality`) are the templates' too.
What the roles dropped (the verifier's rejections), refused (a gold that cannot be scored) and failed (no valid
output after the repairs) is counted in `manifest.open` (`dropped`, `refused`, `failed`) and logged, never frozen.

An LLM's questions cannot be regenerated: the manifest names the engine (`LLM_GENERATOR_VERSION`), and
`stored_open` reads the rows back from the snapshot's frozen files when the snapshot is loaded (the content hash
then checks them, as it checks every row).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

from agents.open_roles import OPEN_AGENTS
from clkt.openqa.from_llm import LLM_GENERATOR_VERSION, LlmGenerated, OpenRoles, llm_questions
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.ids import stable_open_qid
from clkt.snapshots.layout import DocRow, OpenRow, SnapshotManifest
from clkt.snapshots.open import attach_open, read_open, split_open

__all__ = ["LLM_GENERATOR_VERSION", "attach_open_llm", "is_llm_open", "stored_open"]


def is_llm_open(manifest: SnapshotManifest) -> bool:
    """Whether the snapshot's open track was written by the LLM roles (read back from its files, never regenerated)."""
    return manifest.open is not None and manifest.open.engine == LLM_GENERATOR_VERSION


def _source_docs(content: SnapshotContent) -> list[DocRow]:
    """One document per entity, in the order of `content.docs`: the English one, else the first language's."""
    lang = "en" if "en" in content.languages else content.languages[0]
    return content.docs_in(lang)


def _rows(doc: DocRow, gen: LlmGenerated, langs: Sequence[str]) -> list[OpenRow]:
    out: list[OpenRow] = []
    for q in gen.questions:
        qid = stable_open_qid(doc.entity_id, q.fact)
        for lang in langs:
            gold = q.gold(lang)
            out.append(OpenRow(
                qid=qid, entity_id=doc.entity_id, domain=doc.domain, source=doc.source, lang=lang, split="test",
                fact=q.fact, kind=q.kind.value, question=q.questions[lang], answer=gold.answer, aliases=list(gold.aliases),
            ))
    return out


async def _ask_all(
    content: SnapshotContent, roles: OpenRoles, *, questions_for: Callable[[str], int], concurrency: int,
) -> list[tuple[DocRow, LlmGenerated]]:
    """Every entity's questions, `concurrency` entities at a time, in the order of `_source_docs`. Every entity runs
    to its end before a spent budget or any other error is raised, so no call is left running behind the build."""
    facts = {r.entity_id: r.facts for r in content.facts}
    gate = asyncio.Semaphore(concurrency)

    async def one(doc: DocRow) -> LlmGenerated:
        raw = facts.get(doc.entity_id)
        async with gate:
            return await llm_questions(
                roles, entity_id=str(doc.entity_id), entity_name=doc.name, document=doc.text, doc_lang=doc.lang,
                langs=content.languages, n=questions_for(doc.domain),
                facts_json=json.dumps(raw, ensure_ascii=False, sort_keys=True) if raw else None,
            )

    docs = _source_docs(content)
    outcomes = await asyncio.gather(*(one(d) for d in docs), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return [(d, o) for d, o in zip(docs, outcomes, strict=True) if isinstance(o, LlmGenerated)]


async def attach_open_llm(
    content: SnapshotContent, *, roles: OpenRoles, start: date, end: date, control_domains: Sequence[str],
    per_domain: int, questions_for: Callable[[str], int], concurrency: int = 4,
) -> SnapshotContent:
    """`content` with its open track written by `roles` (the control split's from its facts); unchanged when a
    language has no templates (`clkt.snapshots.open.open_unsupported`: the track is asked in every language or
    none). `questions_for(domain)`: the questions asked per entity of that domain; `concurrency`: the entities
    asked at once (`agents.concurrency`; the provider's limiter paces the calls)."""
    control = attach_open(dataclasses.replace(content, docs=()), start=start, end=end, control_domains=control_domains,
                          per_domain=per_domain)
    if control.open_info is None:
        return content
    langs = content.languages
    rows: list[OpenRow] = []
    gens = await _ask_all(content, roles, questions_for=questions_for, concurrency=concurrency)
    for doc, gen in gens:
        rows.extend(_rows(doc, gen, langs))
    rows = split_open(rows, content)
    entities = sum(bool(g.questions) for _, g in gens)
    rank = {lang: i for i, lang in enumerate(langs)}
    info = control.open_info.model_copy(update={
        "engine": LLM_GENERATOR_VERSION, "questions": len(rows) // len(langs), "entities": entities,
        "val_questions": sum(r.split == "val" for r in rows) // len(langs),
        "entities_without": len(gens) - entities, "refused": control.open_info.refused + sum(len(g.refused) for _, g in gens),
        "dropped": sum(len(g.dropped) for _, g in gens), "failed": sum(len(g.failed) for _, g in gens),
    })
    versions = {**content.prompt_versions, **{agent: (roles.prompt_version(agent),) for agent in OPEN_AGENTS}}
    return dataclasses.replace(content, open_questions=tuple(sorted(rows, key=lambda r: (rank[r.lang], r.qid))),
                               control_open=control.control_open, open_info=info, prompt_versions=versions)


def stored_open(content: SnapshotContent, manifest: SnapshotManifest, root: Path) -> SnapshotContent:
    """`content` with the open track an LLM wrote, read from the frozen folder `root` (`read_open`: a missing or bad
    file raises `SnapshotError` naming it)."""
    real = read_open(root, manifest)
    ctl = read_open(root, manifest, control=True)
    return dataclasses.replace(
        content, open_questions=tuple(r for lang in manifest.languages for r in real.get(lang, [])),
        control_open=tuple(r for lang in manifest.languages for r in ctl.get(lang, [])), open_info=manifest.open,
    )
