"""The native export layout of a frozen snapshot, as typed models, and its loader.

A snapshot directory (`<out_dir>/<spec>/<YYYY-MM>/`) holds:

```
manifest.json              SnapshotManifest (deterministic: no build time, hashes of every other file)
build.json                 BuildInfo (build time, clkt version): the only file that changes between
                           two builds of the same period; it is not listed in the manifest's hashes
README.md                  the dataset card (provenance and licences of the sources)
docs/<lang>.jsonl          DocRow, one per selected entity, for every spec language
questions/<lang>.jsonl     QuestionRow, every qid in every language, options already shuffled
control/docs|questions/<lang>.jsonl   the control split: fictional entities (see `control`), never in the
                           real files or the reference / hf / lm_eval exports
facts.jsonl                FactsRow, one per selected entity: its typed facts (`clkt.facts`), the source of a
                           knowledge-editing job's requests (optional: older snapshots have none). Never exported,
                           never published (a held snapshot states nothing about its entities); not in the content hash
locality/questions/<lang>.jsonl       the locality split (optional): questions about entities a target already
                           knew (the probe's "known" verdicts; `manifest.locality.known_by` says which target
                           knew which entity), answered before and after injection to measure what it kept
                           ("kept %"); never trained on, never scored as transfer, never in the exports
locality/open/<lang>.jsonl           OpenRow: the open track's short-answer questions about those entities
                           (optional: `manifest.locality.open_questions` 0 or absent means none)
open/<lang>.jsonl          OpenRow: the open track's short-answer questions (`clkt.openqa`), per entity and fact
control/open/<lang>.jsonl  the control split's (optional: snapshots frozen before issue 47 have none, and
                           `manifest.open` is then absent; the typed reader is `clkt.openqa.frozen`)
reference/<train_lang>/    the reference implementation's layout (see `formats`)
hf/, lm_eval/              a `datasets` folder and lm-evaluation-harness tasks (see `formats`)
```

`qid` and `entity_id` are public ids derived from content (`clkt.snapshots.ids`: sha256 of the entity's
source and external id, and the question's slot; ints below 2**52), never a store's row ids, so the same
items give the same files in any store; results map back to `QuestionResult.question_id` through the
snapshot's `SnapshotItem` rows (`clkt.snapshots.content.question_rows_by_qid`). The options are in the
snapshot's shuffled order (the same permutation in every language) and `answer` is the letter of
`options[answer_index]`. This contract is fixed: fields may be added, never renamed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clkt.errors import SnapshotError

__all__ = [
    "BUILD_FILE",
    "CARD_FILE",
    "CONTROL_DIR",
    "FACTS_FILE",
    "LAYOUT_VERSION",
    "LETTERS",
    "LOCALITY_DIR",
    "MANIFEST_FILE",
    "OPEN_DIR",
    "AgentInfo",
    "BuildInfo",
    "CarriedEntity",
    "ControlInfo",
    "DocRow",
    "DomainCounts",
    "FactsRow",
    "Letter",
    "LocalityInfo",
    "OpenInfo",
    "OpenRow",
    "QuestionRow",
    "SnapshotData",
    "SnapshotManifest",
    "Split",
    "SplitName",
    "TargetInfo",
    "docs_path",
    "dumps_row",
    "load_snapshot_dir",
    "questions_path",
    "read_jsonl",
    "sha256_file",
]

LAYOUT_VERSION = 1  # manifest.json's `layout_version`
MANIFEST_FILE = "manifest.json"  # SnapshotManifest: deterministic, the hashes of every other file
BUILD_FILE = "build.json"  # BuildInfo: the build's time and clkt version, in no hash
CARD_FILE = "README.md"  # the dataset card: provenance and licences of the sources
Letter = Literal["A", "B", "C", "D"]
SplitName = Literal["val", "test"]
LETTERS: tuple[Letter, Letter, Letter, Letter] = ("A", "B", "C", "D")  # the answer letters, in option order
CONTROL_DIR = "control"  # the control split's files: control/docs/<lang>.jsonl, control/questions/<lang>.jsonl
FACTS_FILE = "facts.jsonl"  # FactsRow per selected entity (optional; never exported or published)
OPEN_DIR = "open"  # the open track's files: open/<lang>.jsonl, control/open/<lang>.jsonl (optional)
LOCALITY_DIR = "locality"  # the locality split's files: locality/questions/<lang>.jsonl (no documents: never trained on)


class Split(str, Enum):
    val = "val"
    test = "test"


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_R = TypeVar("_R", bound=_Row)


class DocRow(_Row):
    """One training document of one entity in one language."""

    entity_id: int  # public (stable_entity_id)
    domain: str
    source: str
    lang: str
    name: str
    text: str


class FactsRow(_Row):
    """One entity's typed facts (`clkt.facts.EntityFacts` as JSON) under its public id."""

    entity_id: int  # public (stable_entity_id)
    facts: dict[str, Any]


class QuestionRow(_Row):
    """One multiple-choice question in one language (options shuffled for the snapshot)."""

    qid: int  # public (stable_qid)
    entity_id: int  # public (stable_entity_id)
    domain: str
    lang: str
    split: SplitName
    question: str
    options: list[str] = Field(min_length=4, max_length=4)
    answer: Letter
    answer_index: int = Field(ge=0, le=3)
    slot: str
    source: str = ""

    @model_validator(mode="after")
    def _letter(self) -> QuestionRow:
        if LETTERS[self.answer_index] != self.answer:
            raise ValueError(f"qid {self.qid}: answer {self.answer!r} does not match answer_index {self.answer_index}")
        return self

    @property
    def text_answer(self) -> str:
        return self.options[self.answer_index]


class OpenRow(_Row):
    """One short-answer question (the open track, `clkt.openqa`) in one language: the gold and its aliases."""

    qid: int  # public (`stable_open_qid`: entity and fact), never an MCQ's
    entity_id: int  # public (stable_entity_id)
    domain: str
    source: str
    lang: str
    split: SplitName  # `val`: asks a validation MCQ's fact (`clkt.snapshots.open.split_open`); else `test`
    fact: str  # the fact slot asked (`clkt.openqa.from_facts.questions()`), e.g. "film.director"
    kind: str  # `clkt.openqa.question.AnswerKind`: name, number, date, phrase
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)


class OpenInfo(_Row):
    """The open track of a snapshot: which generator wrote it and what it holds (per language)."""

    # `clkt.openqa.from_facts.GENERATOR_VERSION`: regenerating gives the same rows only under it; or the LLM roles'
    # `clkt.openqa.from_llm.LLM_GENERATOR_VERSION` (never regenerated: read back from the frozen files)
    engine: str
    questions: int = 0  # real entities' questions, per language
    # of them, in the `val` split (asking a validation MCQ's fact: `clkt.snapshots.open.split_open`); 0 in a
    # snapshot frozen before the split, whose open questions are all `test`
    val_questions: int = Field(default=0, exclude_if=lambda v: not v)
    control_questions: int = 0  # the control split's, per language
    entities: int = 0  # real entities with at least one question
    entities_without: int = 0  # real entities whose facts gave none (no facts, a kind the generator lacks)
    refused: int = 0  # questions refused at generation (a gold that cannot be scored): never frozen
    dropped: int = Field(default=0, exclude_if=lambda v: not v)  # LLM roles only: drafts dropped (rejected, or stating their answer)
    failed: int = Field(default=0, exclude_if=lambda v: not v)  # LLM roles only: calls without a valid output


class DomainCounts(_Row):
    """The paper's Table 3 columns for one domain."""

    entities: int = 0
    fact_qas: int = 0  # questions before the split (per language)
    val: int = 0
    test: int = 0


class TargetInfo(_Row):
    name: str
    model: str
    cutoff: date | None = None


class AgentInfo(_Row):
    backend: str  # "template" or "llm"
    models: dict[str, str] = Field(default_factory=dict)  # role -> model id (llm backend)
    producers: list[str] = Field(default_factory=list)  # generator / translator ids seen in the rows
    prompt_versions: dict[str, list[str]] = Field(default_factory=dict)  # kind -> versions seen


class ControlInfo(_Row):
    """The control split of a snapshot (`clkt.snapshots.control`): what regenerates it, and its size."""

    per_domain: int  # fictional entities per domain of `domains`
    domains: list[str]
    entities: int = 0
    questions: int = 0  # per language, all in the test split
    # the template engine version that wrote it (`agents.template.PROMPT_VERSION`); regenerating it from the
    # seed gives the same questions only under that version. None: written before this was recorded (tmpl-1)
    engine: str | None = None


class LocalityInfo(_Row):
    """The locality split of a snapshot: questions about entities a target already knew, asked before and after
    injection (what the injection kept), never trained on and never scored as transfer."""

    entities: int = 0
    questions: int = 0  # per language, all in the test split
    # target name -> the entity ids (public) it knew: a job of that target answers only those entities' questions
    known_by: dict[str, list[int]] = Field(default_factory=dict)
    # the open track's short-answer questions about these entities, per language (locality/open/<lang>.jsonl);
    # 0 (left out of manifest.json): none, as in every snapshot frozen before they existed
    open_questions: int = Field(default=0, exclude_if=lambda v: not v)


class CarriedEntity(_Row):
    """An entity of an earlier period carried into this snapshot (`clkt.snapshots.carry`): its own date and period,
    which every reader of "the period" of an entity uses, never the snapshot's."""

    entity_id: int  # public (stable_entity_id)
    domain: str
    occurred_on: str  # ISO date of the entity's own date (UTC)
    period: str  # its own period's label


class SnapshotManifest(_Row):
    layout_version: int = LAYOUT_VERSION
    snapshot_id: str
    spec: str
    period: str  # YYYY-MM (monthly), YYYY-Www (weekly), YYYY-MM-DD (daily)
    period_start: str  # ISO date, inclusive
    period_end: str  # ISO date, exclusive
    cadence: str
    seed: int
    revision: int = 0  # 0 for the first build of the period; +1 for each forced rebuild
    val_ratio: float
    partial: bool = False
    content_sha256: str
    languages: list[str]
    domains: list[str]
    targets: list[TargetInfo]
    agents: AgentInfo
    quotas: dict[str, int] = Field(default_factory=dict)
    counts: dict[str, DomainCounts]  # per domain, plus "total"
    missing: dict[str, int] = Field(default_factory=dict)  # domain -> entities short of the quota
    redated: bool = False  # the replay server moved some items' dates (offline demo)
    notes: list[str] = Field(default_factory=list)
    control: ControlInfo | None = None  # None: no control split (control/ absent)
    # None: no locality split (locality/ absent); left out of manifest.json then, so older manifests are unchanged
    locality: LocalityInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    # None: no open track (frozen before it existed); left out of manifest.json then, so older manifests are unchanged
    open: OpenInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    # the entities carried in from earlier periods, by public id; left out when none, so every manifest of a snapshot
    # without any (all those frozen before carry-over existed) keeps its bytes
    carried: list[CarriedEntity] = Field(default_factory=list, exclude_if=lambda v: not v)
    files: dict[str, str] = Field(default_factory=dict)  # relative path -> sha256 (every file but these two)

    @property
    def earliest_day(self) -> str:
        """The ISO date of the earliest entity's own date the snapshot may hold: its period's start, or the own date
        of the earliest entity carried in (what a target's window is checked against, `clkt.roster.window`)."""
        return min([self.period_start, *(c.occurred_on for c in self.carried)])


class BuildInfo(_Row):
    """Non-deterministic facts of one build; excluded from every hash."""

    snapshot_id: str
    built_at: str
    clkt_version: str


def docs_path(root: Path, lang: str) -> Path:
    return root / "docs" / f"{lang}.jsonl"


def questions_path(root: Path, lang: str) -> Path:
    return root / "questions" / f"{lang}.jsonl"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class SnapshotData(BaseModel):
    """A loaded snapshot directory."""

    model_config = ConfigDict(frozen=True)

    path: Path
    manifest: SnapshotManifest
    docs: dict[str, list[DocRow]]
    questions: dict[str, list[QuestionRow]]
    control_docs: dict[str, list[DocRow]] = Field(default_factory=dict)  # the control split, per language
    control_questions: dict[str, list[QuestionRow]] = Field(default_factory=dict)
    locality_questions: dict[str, list[QuestionRow]] = Field(default_factory=dict)  # the locality split, per language
    facts: dict[int, dict[str, Any]] = Field(default_factory=dict)  # public entity id -> its facts (facts.jsonl)

    @property
    def languages(self) -> list[str]:
        return list(self.manifest.languages)

    def questions_for(self, lang: str, split: Split | str | None = None) -> list[QuestionRow]:
        if lang not in self.questions:
            raise SnapshotError(f"snapshot {self.manifest.snapshot_id} has no language {lang!r}")
        rows = self.questions[lang]
        if split is None:
            return list(rows)
        s = Split(split).value
        return [r for r in rows if r.split == s]

    def docs_for(self, lang: str) -> list[DocRow]:
        if lang not in self.docs:
            raise SnapshotError(f"snapshot {self.manifest.snapshot_id} has no language {lang!r}")
        return list(self.docs[lang])

    def control_docs_for(self, lang: str) -> list[DocRow]:
        """The control split's documents in `lang` (empty without a control split)."""
        return list(self.control_docs.get(lang, []))

    def control_questions_for(self, lang: str) -> list[QuestionRow]:
        """The control split's questions in `lang` (all `test`; empty without a control split)."""
        return list(self.control_questions.get(lang, []))

    def locality_questions_for(self, lang: str, target: str | None = None) -> list[QuestionRow]:
        """The locality split's questions in `lang` (empty without one); `target`: only the entities it knew
        (`manifest.locality.known_by`; none for a target it does not list)."""
        rows = list(self.locality_questions.get(lang, []))
        if target is None:
            return rows
        info = self.manifest.locality
        known = set(info.known_by.get(target, [])) if info is not None else set()
        return [r for r in rows if r.entity_id in known]

    def qids(self, split: Split | str | None = None) -> list[int]:
        first = self.manifest.languages[0]
        return [r.qid for r in self.questions_for(first, split)]


def read_jsonl(path: Path, model: type[_R]) -> list[_R]:
    """The rows of a snapshot's JSONL file; a `SnapshotError` naming the file (and line) when it is missing, not
    UTF-8, or holds a line that is not a `model`."""
    if not path.is_file():
        raise SnapshotError(f"snapshot file missing: {path}")
    rows: list[_R] = []
    try:
        with path.open("r", encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(model.model_validate_json(line))
                except ValidationError as e:
                    raise SnapshotError(f"{path}:{n}: invalid {model.__name__}: {e.errors()[0]['msg']}") from e
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{path} is not UTF-8 ({e.reason})") from e
    return rows


def load_snapshot_dir(path: Path | str, *, verify_hashes: bool = True) -> SnapshotData:
    """Load and check a native snapshot directory: manifest, hashes, every qid in every language."""
    root = Path(path)
    mpath = root / MANIFEST_FILE
    if not mpath.is_file():
        raise SnapshotError(f"{root} is not a snapshot directory (no {MANIFEST_FILE})")
    try:
        manifest = SnapshotManifest.model_validate_json(mpath.read_bytes())
    except ValidationError as e:
        raise SnapshotError(f"{mpath}: invalid manifest: {e.errors()[0]['msg']}") from e
    if verify_hashes:
        for rel, digest in manifest.files.items():
            f = root / rel
            if not f.is_file():
                raise SnapshotError(f"snapshot {manifest.snapshot_id}: file {rel} listed in the manifest is missing")
            if sha256_file(f) != digest:
                raise SnapshotError(f"snapshot {manifest.snapshot_id}: {rel} does not match its sha256 in the manifest")
    docs: dict[str, list[DocRow]] = {}
    questions: dict[str, list[QuestionRow]] = {}
    for lang in manifest.languages:
        docs[lang] = [r for r in read_jsonl(docs_path(root, lang), DocRow) if isinstance(r, DocRow)]
        questions[lang] = [r for r in read_jsonl(questions_path(root, lang), QuestionRow) if isinstance(r, QuestionRow)]
    ref: dict[int, SplitName] | None = None
    for lang, rows in questions.items():
        split_of = {r.qid: r.split for r in rows}
        if len(split_of) != len(rows):
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: duplicate qid in questions/{lang}.jsonl")
        if ref is None:
            ref = split_of
        elif split_of != ref:
            raise SnapshotError(
                f"snapshot {manifest.snapshot_id}: questions/{lang}.jsonl does not hold the same qids and splits "
                f"as questions/{manifest.languages[0]}.jsonl"
            )
    control_docs: dict[str, list[DocRow]] = {}
    control_questions: dict[str, list[QuestionRow]] = {}
    if manifest.control is not None and manifest.control.questions:
        for lang in manifest.languages:
            control_docs[lang] = [
                r for r in read_jsonl(root / CONTROL_DIR / "docs" / f"{lang}.jsonl", DocRow) if isinstance(r, DocRow)
            ]
            control_questions[lang] = [
                r for r in read_jsonl(root / CONTROL_DIR / "questions" / f"{lang}.jsonl", QuestionRow)
                if isinstance(r, QuestionRow)
            ]
        real = {r.qid for rows in questions.values() for r in rows}
        ref_c: set[int] | None = None
        for lang, rows in control_questions.items():
            got = {r.qid for r in rows}
            if len(got) != len(rows) or got & real:
                raise SnapshotError(f"snapshot {manifest.snapshot_id}: control/questions/{lang}.jsonl repeats a qid or shares one with the real questions")
            if ref_c is None:
                ref_c = got
            elif got != ref_c:
                raise SnapshotError(
                    f"snapshot {manifest.snapshot_id}: control/questions/{lang}.jsonl does not hold the same qids as "
                    f"control/questions/{manifest.languages[0]}.jsonl"
                )
    taken = {r.qid for rows in questions.values() for r in rows} | {r.qid for rows in control_questions.values() for r in rows}
    return SnapshotData(
        path=root, manifest=manifest, docs=docs, questions=questions, control_docs=control_docs,
        control_questions=control_questions, locality_questions=_locality(root, manifest, taken),
        facts=_facts(root),
    )


def _facts(root: Path) -> dict[int, dict[str, Any]]:
    """`facts.jsonl`'s rows by public entity id ({} when the snapshot has none: built before it was written)."""
    if not (root / FACTS_FILE).is_file():
        return {}
    return {r.entity_id: r.facts for r in read_jsonl(root / FACTS_FILE, FactsRow) if isinstance(r, FactsRow)}


def _locality(root: Path, manifest: SnapshotManifest, taken: set[int]) -> dict[str, list[QuestionRow]]:
    """The locality split's questions per language (empty when the manifest lists none): the same qids in every
    language, none shared with the real or the control questions (`taken`)."""
    if manifest.locality is None or not manifest.locality.questions:
        return {}
    out: dict[str, list[QuestionRow]] = {}
    ref: set[int] | None = None
    for lang in manifest.languages:
        rows = [r for r in read_jsonl(root / LOCALITY_DIR / "questions" / f"{lang}.jsonl", QuestionRow) if isinstance(r, QuestionRow)]
        got = {r.qid for r in rows}
        if len(got) != len(rows) or got & taken:
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: locality/questions/{lang}.jsonl repeats a qid or shares one with the other questions")
        if ref is None:
            ref = got
        elif got != ref:
            raise SnapshotError(
                f"snapshot {manifest.snapshot_id}: locality/questions/{lang}.jsonl does not hold the same qids as "
                f"locality/questions/{manifest.languages[0]}.jsonl"
            )
        out[lang] = rows
    return out


def dumps_row(row: BaseModel) -> str:
    """The canonical JSONL line of a row (sorted keys, UTF-8, no spaces)."""
    return json.dumps(row.model_dump(mode="json"), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
