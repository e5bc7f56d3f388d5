"""The tiny snapshot of the GPU-queue tests: 2 invented entities, 2 languages, 3 questions.

The files carry public ids (`clkt.snapshots.ids`), like a built snapshot; `seed_store` adds the rows they map
back to (question row ids 11, 12, 21 and the snapshot's `SnapshotItem` rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import (
    MANIFEST_FILE,
    AgentInfo,
    DocRow,
    DomainCounts,
    Letter,
    OpenRow,
    QuestionRow,
    SnapshotManifest,
    SplitName,
    TargetInfo,
    docs_path,
    dumps_row,
    questions_path,
    sha256_file,
)

SNAPSHOT_ID = "tiny-2025-06-000000000000"
SOURCE = "fixture"
LETTERS: tuple[Letter, ...] = ("A", "B", "C", "D")


def public_qid(row: int, entity: int) -> int:
    """The public qid of the fixture question stored as row `row` (its slot is f"s{row}")."""
    return stable_qid(SOURCE, str(entity), f"s{row}")


def public_entity_id(entity: int) -> int:
    return stable_entity_id(SOURCE, str(entity))


# Two invented entities: the base model cannot know them.
DOCS: dict[str, list[tuple[int, str, str]]] = {
    "en": [
        (1, "Velmora Tide", "Velmora Tide is a 2025 film directed by Osric Palandri. It runs 97 minutes."),
        (2, "Quenford Derby", "The Quenford Derby on 3 May 2025 ended 4-1 at Harlow Park."),
    ],
    "fr": [
        (1, "Velmora Tide", "Velmora Tide est un film de 2025 réalisé par Osric Palandri. Il dure 97 minutes."),
        (2, "Quenford Derby", "Le Quenford Derby du 3 mai 2025 s'est terminé 4-1 à Harlow Park."),
    ],
}
QUESTIONS: dict[str, list[tuple[int, int, SplitName, str, list[str], int]]] = {
    # question row id, entity row id, split, question, options, answer index
    "en": [
        (11, 1, "val", "Who directed Velmora Tide?", ["Osric Palandri", "Mara Lenz", "Ivo Tesk", "Ana Roe"], 0),
        (12, 1, "test", "How long is Velmora Tide?", ["81 minutes", "97 minutes", "104 minutes", "90 minutes"], 1),
        (21, 2, "test", "What was the final score of the Quenford Derby?", ["2-2", "0-1", "4-1", "3-1"], 2),
    ],
    "fr": [
        (11, 1, "val", "Qui a réalisé Velmora Tide ?", ["Osric Palandri", "Mara Lenz", "Ivo Tesk", "Ana Roe"], 0),
        (12, 1, "test", "Quelle est la durée de Velmora Tide ?", ["81 minutes", "97 minutes", "104 minutes", "90 minutes"], 1),
        (21, 2, "test", "Quel a été le score final du Quenford Derby ?", ["2-2", "0-1", "4-1", "3-1"], 2),
    ],
}


def write_tiny_snapshot(root: Path, *, langs: tuple[str, ...] = ("en", "fr"), control_domains: tuple[str, ...] = ()) -> Path:
    """The tiny snapshot; `control_domains`: one fictional control entity per domain named (`control/`)."""
    for lang in langs:
        p = docs_path(root, lang)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(
            "".join(
                dumps_row(DocRow(entity_id=public_entity_id(e), domain="movies" if e == 1 else "sports", source=SOURCE, lang=lang, name=n, text=t)) + "\n"
                for e, n, t in DOCS[lang]
            ),
            encoding="utf-8",
        )
        q = questions_path(root, lang)
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_text(
            "".join(
                dumps_row(
                    QuestionRow(
                        qid=public_qid(qid, e), entity_id=public_entity_id(e), domain="movies" if e == 1 else "sports",
                        lang=lang, split=split,
                        question=text, options=opts, answer=LETTERS[ans], answer_index=ans, slot=f"s{qid}",
                    )
                ) + "\n"
                for qid, e, split, text, opts, ans in QUESTIONS[lang]
            ),
            encoding="utf-8",
        )
    control = None
    if control_domains:
        from datetime import date

        from agents.template import PROMPT_VERSION
        from clkt.snapshots.control import build_control
        from clkt.snapshots.layout import ControlInfo

        ctl = build_control(
            spec="tiny", period="2025-06", seed=0, start=date(2025, 6, 1), end=date(2025, 7, 1), languages=langs,
            domains=control_domains, per_domain=1,
        )
        for lang in langs:
            for sub, rows in (("docs", ctl.docs_in(lang)), ("questions", ctl.questions_in(lang))):
                f = root / "control" / sub / f"{lang}.jsonl"
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text("".join(dumps_row(r) + "\n" for r in rows), encoding="utf-8")
        control = ControlInfo(
            per_domain=1, domains=list(control_domains), entities=len(ctl.entities), questions=len(ctl.questions_in(langs[0])),
            engine=PROMPT_VERSION,
        )
    manifest = SnapshotManifest(
        snapshot_id=SNAPSHOT_ID, spec="tiny", period="2025-06", period_start="2025-06-01", period_end="2025-07-01",
        cadence="monthly", seed=0, val_ratio=0.3, content_sha256="0" * 64, languages=list(langs),
        domains=["movies", "sports"], targets=[TargetInfo(name="gemma-3-270m", model="embedded:gemma-3-270m")],
        agents=AgentInfo(backend="template"), counts={"total": DomainCounts(entities=2, fact_qas=3, val=1, test=2)},
        control=control,
    )
    (root / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
    return root


async def seed_store(store: Any, export_path: Path) -> None:
    """The store rows the results point at (snapshot, entities, questions, snapshot items)."""
    from storage.models import Entity, Question, Snapshot, SnapshotItem, SnapshotStatus

    now = datetime(2025, 6, 1, tzinfo=UTC)
    async with store.transaction() as s:
        s.add(Snapshot(id=SNAPSHOT_ID, spec="tiny", period="2025-06", status=SnapshotStatus.frozen, export_path=str(export_path)))
        for e, name, _ in DOCS["en"]:
            s.add(Entity(id=e, source=SOURCE, external_id=str(e), domain="movies" if e == 1 else "sports", name=name, occurred_at=now, content_hash="x"))
        await s.flush()
        for qid, e, _, text, opts, ans in QUESTIONS["en"]:
            s.add(Question(id=qid, entity_id=e, slot=f"s{qid}", lang="en", question=text, options=opts, answer_index=ans,
                           evidence="x", generator="fixture", prompt_version="v1"))
        await s.flush()
        for qid, e, split, _, _, ans in QUESTIONS["en"]:
            s.add(SnapshotItem(snapshot_id=SNAPSHOT_ID, question_id=qid, entity_id=e, split=split,
                               option_order=[0, 1, 2, 3], answer_letter="ABCD"[ans]))


def make_consumer(settings: Any, **kw: Any) -> Any:
    """A `GpuConsumer` wired from `settings` the way the daemon wires it (its sections, the spec's targets, the
    commit hook: what retention keeps of a committed job)."""
    from clkt.inject.consumer import GpuConsumer
    from clkt.services import commit_hook

    kw.setdefault("on_commit", commit_hook(settings))
    return GpuConsumer(gpu=settings.gpu, daemon=settings.daemon, targets=settings.spec.targets, data_dir=settings.data_dir, **kw)


# Locality questions about two "known" entities (invented here too: what matters is the pairing, not the facts)
LOCALITY: dict[str, list[tuple[int, int, str, list[str], int]]] = {
    # slot number, entity number, question, options, answer index
    "en": [
        (71, 7, "Where is the Orlan Bridge?", ["Kest", "Vail", "Moro", "Tarn"], 0),
        (72, 7, "When did the Orlan Bridge open?", ["1901", "1920", "1955", "1988"], 1),
        (81, 8, "Who founded Halden Works?", ["Ada Voss", "Ben Olt", "Cy Rane", "Dee Ulm"], 2),
    ],
    "fr": [
        (71, 7, "Où se trouve le pont Orlan ?", ["Kest", "Vail", "Moro", "Tarn"], 0),
        (72, 7, "Quand le pont Orlan a-t-il ouvert ?", ["1901", "1920", "1955", "1988"], 1),
        (81, 8, "Qui a fondé Halden Works ?", ["Ada Voss", "Ben Olt", "Cy Rane", "Dee Ulm"], 2),
    ],
}


def add_locality_split(
    root: Path, *, known_by: dict[str, list[int]], langs: tuple[str, ...] = ("en", "fr"), open_rows: Sequence[OpenRow] = (),
) -> Path:
    """The tiny snapshot's locality split (`clkt.snapshots.locality.write_locality`), recorded in its manifest;
    `known_by`: target name -> entity numbers (7, 8) it knew; `open_rows`: its short-answer questions (hashed in the
    manifest, as a build lists them)."""
    from clkt.snapshots.locality import write_locality

    questions = {
        lang: [
            QuestionRow(qid=public_qid(slot, e), entity_id=public_entity_id(e), domain="movies", lang=lang, split="test",
                        question=q, options=opts, answer=LETTERS[ans], answer_index=ans, slot=f"s{slot}")
            for slot, e, q, opts, ans in LOCALITY[lang]
        ]
        for lang in langs
    }
    files, info = write_locality(root, questions, known_by={t: [public_entity_id(e) for e in es] for t, es in known_by.items()},
                                 open_rows=open_rows)
    manifest = SnapshotManifest.model_validate_json((root / MANIFEST_FILE).read_bytes())
    hashed = {**manifest.files, **{f: sha256_file(root / f) for f in files if "/open/" in f}}
    (root / MANIFEST_FILE).write_text(manifest.model_copy(update={"locality": info, "files": hashed}).model_dump_json(indent=1),
                                      encoding="utf-8")
    return root
