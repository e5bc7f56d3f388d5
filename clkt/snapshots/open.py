"""The open track's frozen files: the short-answer questions of a snapshot's entities (issue 47).

When a snapshot freezes, the offline generator (`clkt.openqa.from_facts.generate_questions`) asks every selected
entity's typed facts (`facts.jsonl`'s rows) and every control entity's (regenerated from the seed, as the control
split is) in every language of the spec; the rows (`OpenRow`) go to
`open/<lang>.jsonl` and `control/open/<lang>.jsonl`, are part of the content hash and listed in the manifest
(`manifest.open`: the generator's version and the counts). An entity whose facts give no question (none stored, a
kind the generator does not know yet, every slot empty) still freezes, counted in `entities_without`; a question
whose gold cannot be scored (an empty one) is refused at generation, counted in `refused`, never frozen.

A spec with a language the generator has no templates for gets no open track (`manifest.open` absent, a note
says why): the track is asked in every language of the spec or not at all. A snapshot frozen before the track
existed has no `manifest.open` and no open files, and loads as before; `read_open` returns nothing for it.

A real entity's open question that asks a fact one of its validation MCQs asks (`clkt.openqa.same_fact.mcq_slot`)
is in the `val` split with it (`split_open`): the facts held out for validation are held out in both formats, the
open track chooses its checkpoint on them (`clkt.inject.open_val`) and never scores them; every other open
question, the control split's and the locality split's are `test`. A snapshot frozen before the split
(`OpenInfo.val_questions` 0) has every open question in `test`.

The locality split's entities (entities a target already knew, `clkt.snapshots.locality`) get short-answer
questions too, from their facts by the same generator (`locality_open`): `locality/open/<lang>.jsonl`, counted in
`manifest.locality.open_questions` (0, or a snapshot without a locality split: none; never an error). Like the
locality split they are read from the store at build time, not part of the content hash.
The typed reader of the rows as `ShortAnswerQuestion`s is `clkt.openqa.frozen`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from clkt.errors import SnapshotError
from clkt.facts import EntityFacts
from clkt.openqa.from_facts import GENERATOR_VERSION, LANGS, asks, generate_questions
from clkt.openqa.same_fact import mcq_slot
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.control import CONTROL_DIR, CONTROL_SOURCE, control_entities
from clkt.snapshots.ids import stable_open_qid
from clkt.snapshots.layout import (
    LOCALITY_DIR,
    OPEN_DIR,
    DocRow,
    OpenInfo,
    OpenRow,
    QuestionRow,
    SnapshotManifest,
    dumps_row,
    read_jsonl,
)

__all__ = ["attach_open", "check_open_engine", "has_open", "locality_open", "open_path", "open_unsupported", "read_open",
           "split_open", "write_open"]

log = logging.getLogger(__name__)
_FACTS: TypeAdapter[EntityFacts] = TypeAdapter(EntityFacts)


def open_path(root: Path, lang: str, *, control: bool = False, locality: bool = False) -> Path:
    if locality:
        return root / LOCALITY_DIR / OPEN_DIR / f"{lang}.jsonl"
    return (root / CONTROL_DIR / OPEN_DIR if control else root / OPEN_DIR) / f"{lang}.jsonl"


def open_unsupported(languages: Sequence[str]) -> list[str]:
    """The languages of `languages` the generator has no templates for (any: no open track)."""
    return [lang for lang in languages if lang not in LANGS]


@dataclasses.dataclass
class _Tally:
    rows: list[OpenRow] = dataclasses.field(default_factory=list)
    entities: int = 0
    without: int = 0
    refused: int = 0


def _ask(tally: _Tally, *, entity_id: int, domain: str, source: str, facts: EntityFacts | None,
         langs: Sequence[str]) -> None:
    """Add the entity's rows to `tally` (or count it without questions)."""
    if facts is None or not asks(facts):
        tally.without += 1
        return
    gen = generate_questions(facts, entity_id=str(entity_id), langs=langs)
    tally.refused += len(gen.refused)
    for slot, why in gen.refused:
        log.warning("open track: entity %s, %s refused: %s", entity_id, slot, why)
    if not gen.questions:
        tally.without += 1
        return
    tally.entities += 1
    for q in gen.questions:
        qid = stable_open_qid(entity_id, q.fact)
        for lang in langs:
            gold = q.gold(lang)
            tally.rows.append(OpenRow(
                qid=qid, entity_id=entity_id, domain=domain, source=source, lang=lang, split="test", fact=q.fact,
                kind=q.kind.value, question=q.questions[lang], answer=gold.answer, aliases=list(gold.aliases),
            ))


def split_open(rows: Iterable[OpenRow], content: SnapshotContent) -> list[OpenRow]:
    """`rows` (a real entity's open questions) with those asking a fact one of the entity's validation MCQs asks
    in the `val` split, the others in `test`."""
    held_out = {(q.entity_id, q.slot) for q in content.questions if q.split == "val"}
    return [r.model_copy(update={"split": "val" if (r.entity_id, mcq_slot(r.fact)) in held_out else "test"})
            for r in rows]


def _parsed(entity_id: int, facts: dict[str, object]) -> EntityFacts | None:
    try:
        return _FACTS.validate_python(facts)
    except ValidationError as e:  # stored facts of an older shape: no question, counted
        log.warning("open track: entity %s has facts that do not validate: %s", entity_id, e.errors()[0]["msg"])
        return None


def _ask_entities(content: SnapshotContent, rows: Iterable[DocRow | QuestionRow]) -> _Tally:
    """Ask the facts of each entity of `rows` (once each, in their order) in every language of `content`."""
    facts = {r.entity_id: r.facts for r in content.facts}
    tally = _Tally()
    seen: set[int] = set()
    for r in rows:
        if r.entity_id in seen:
            continue
        seen.add(r.entity_id)
        raw = facts.get(r.entity_id)
        _ask(tally, entity_id=r.entity_id, domain=r.domain, source=r.source, langs=content.languages,
             facts=_parsed(r.entity_id, raw) if raw else None)
    return tally


def attach_open(
    content: SnapshotContent, *, start: date, end: date, control_domains: Sequence[str], per_domain: int,
    split: bool = True,
) -> SnapshotContent:
    """`content` with its open track (unchanged when a language has no templates: `open_unsupported`); the control
    entities are regenerated from the seed with the arguments the control split was built with. `split` False: every
    question in `test`, as a snapshot frozen before the validation split has them (regenerating one: its manifest's
    `open.val_questions` is 0)."""
    langs = content.languages
    if open_unsupported(langs):
        return content
    real = _ask_entities(content, content.docs)
    if split:
        real.rows = split_open(real.rows, content)
    ctl = _Tally()
    if per_domain > 0:
        for e in control_entities(spec=content.spec, period=content.period, seed=content.seed, start=start, end=end,
                                  domains=control_domains, per_domain=per_domain):
            _ask(ctl, entity_id=e.entity_id, domain=e.domain, source=CONTROL_SOURCE, facts=e.facts, langs=langs)
    rank = {lang: i for i, lang in enumerate(langs)}
    info = OpenInfo(
        engine=GENERATOR_VERSION, questions=len(real.rows) // len(langs), control_questions=len(ctl.rows) // len(langs),
        val_questions=sum(r.split == "val" for r in real.rows) // len(langs),
        entities=real.entities, entities_without=real.without, refused=real.refused + ctl.refused,
    )
    return dataclasses.replace(
        content, open_questions=tuple(sorted(real.rows, key=lambda r: (rank[r.lang], r.qid))),
        control_open=tuple(sorted(ctl.rows, key=lambda r: (rank[r.lang], r.qid))), open_info=info,
    )


def locality_open(content: SnapshotContent) -> list[OpenRow]:
    """The open questions of the locality split's entities (`content`: the split as `assemble_content` gives it,
    with the entities' facts), every language, sorted by language then qid; [] when a language has no templates
    or no entity's facts give a question."""
    langs = content.languages
    if open_unsupported(langs) or not langs:
        return []
    tally = _ask_entities(content, content.questions_in(langs[0]))
    rank = {lang: i for i, lang in enumerate(langs)}
    return sorted(tally.rows, key=lambda r: (rank[r.lang], r.qid))


def check_open_engine(info: OpenInfo, snapshot_id: str) -> None:
    """Refuse to regenerate an open track another generator version wrote (its rows, and the hash, would differ)."""
    if info.engine != GENERATOR_VERSION:
        raise SnapshotError(
            f"snapshot {snapshot_id}: its open track was written by generator {info.engine}, this code writes "
            f"{GENERATOR_VERSION}, so it cannot be regenerated; use its exported folder, or rebuild the snapshot"
        )


def write_open(content: SnapshotContent, root: Path) -> list[str]:
    """Write the open files (none without an open track); their paths relative to `root`."""
    if content.open_info is None:
        return []
    out: list[str] = []
    for control in (False, True):
        if control and not content.control_open:
            continue
        for lang in content.languages:
            path = open_path(root, lang, control=control)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(dumps_row(r) + "\n" for r in content.open_in(lang, control=control)))
            out.append(path.relative_to(root).as_posix())
    return out


def _read_rows(root: Path, rel: str, snapshot_id: str) -> list[OpenRow]:
    if not (root / rel).is_file():
        raise SnapshotError(f"snapshot {snapshot_id}: open-track file {rel} is missing")
    return read_jsonl(root / rel, OpenRow)


def has_open(manifest: SnapshotManifest, *, control: bool = False, locality: bool = False) -> bool:
    """Whether the snapshot has open questions in that split (the locality split's: `manifest.locality.open_questions`)."""
    if locality:
        return manifest.locality is not None and manifest.locality.open_questions > 0
    return manifest.open is not None and (not control or manifest.open.control_questions > 0)


def read_open(
    root: Path, manifest: SnapshotManifest, *, control: bool = False, locality: bool = False,
) -> dict[str, list[OpenRow]]:
    """The open rows per language of the snapshot folder `root` ({} without an open track, a control one, or the
    locality split's with `locality`): the same qids in every language, each file's language its rows'. A bad file
    raises `SnapshotError` naming it."""
    if not has_open(manifest, control=control, locality=locality):
        return {}
    out: dict[str, list[OpenRow]] = {}
    ref: set[int] | None = None
    for lang in manifest.languages:
        rel = open_path(root, lang, control=control, locality=locality).relative_to(root).as_posix()
        rows = _read_rows(root, rel, manifest.snapshot_id)
        qids = {r.qid for r in rows}
        if len(qids) != len(rows) or any(r.lang != lang for r in rows):
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: {rel} repeats a qid or holds another language's rows")
        if ref is not None and qids != ref:
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: {rel} does not hold the same qids as the "
                                f"{manifest.languages[0]} file")
        ref = qids
        out[lang] = rows
    return out
