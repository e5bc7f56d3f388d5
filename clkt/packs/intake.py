"""`clkt submit`: a verified pack (`clkt.packs.pack.read_pack`) checked against this store, then stored once.

Before anything is written the pack must answer one of this store's frozen snapshots with its content hash; every
test question of it exactly once per train language, scorer, variant and language (`coverage_error`), and no
question it does not have; it must declare its target's knowledge cutoff, and the snapshot must lie in that
target's window (`clkt.roster.window.in_window`, the spec's temporal buffer). Correctness is read again from each
letter against this store's answer key, and the metrics are recomputed from that (`clkt.packs.metrics`): the
pack's own `metrics.json` is only compared (a difference is reported) and never stored. A refusal is one line
(`UserError`) and leaves the store as it was; the same pack submitted again changes nothing.

A pack with locality answers (`locality.jsonl`) is checked against the snapshot's locality split as frozen here:
its question files in the snapshot's export folder, each matching its sha256 in the stored manifest (the store
keeps no item rows for that split: it is not part of the content hash). Every locality answer must name a question
of that split about an entity the pack's target knew (`known_by`), and every such question must be answered exactly
once per train language, scorer, variant and language; its letters are scored against that key and kept % is
recomputed from them (`clkt.packs.metrics.kept_cells`). A pack without locality answers never reads the folder.

A pack with probe answers (`probe.jsonl`) must answer the probe for every real entity of the snapshot in every
language, once (`clkt.packs.probe.probe_error`); the answers are judged here (`clkt.packs.probe.judge_probe`), the
entities its model knew are excluded, and the stored metrics are recomputed without them and carry the verdicts
(`PackMetrics.probe`); the pack's own metrics.json (computed by the lab, which cannot judge) is compared with the
figures of every answer. A pack without probe answers is stored unprobed.

A pack with open answers (`open_answers.jsonl`, format version 2) is checked against the snapshot's open questions
as frozen here (its export folder's open files, each matching its sha256 in the stored manifest: `stored_open_key`):
every question of the test, control and locality (the target's `known_by`) splits answered exactly once per train
language, variant and language it is asked in, and nothing else (`open_error`). The answers are scored here by the
normaliser (`clkt.packs.open_answers.rescore`: the pack carries no verdict, and its metrics.json's `open` is only
compared), stored with the pack (`open_answers`, gzip'd) and their figures computed (`PackMetrics.open`; with probe
verdicts, the test split's without the excluded entities). A pack without them (every version-1 pack) has no open
track and never reads the folder.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from clkt.config import TargetSettings
from clkt.cutoff import first_eligible_day
from clkt.errors import UserError
from clkt.packs._export import check_export_file
from clkt.packs.format import LOCALITY_FILE, LocalityRow, ModelIdentity, PredictionRow
from clkt.packs.metrics import PackMetrics, ProbeVerdicts, compute_metrics, first_difference
from clkt.packs.open_answers import ScoredOpenAnswer, encode_scored, open_error, rescore, stored_open_key
from clkt.packs.open_metrics import open_metrics
from clkt.packs.pack import Pack, rows_jsonl, sort_key
from clkt.packs.probe import judge_probe, probe_error, probed_entities
from clkt.report.kept_figures import SCORED
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.submitted import prime
from clkt.roster.window import in_window
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.layout import QuestionRow, SnapshotManifest
from clkt.snapshots.locality import locality_path
from clkt.snapshots.select import ItemRef
from clkt.snapshots.stored import stored_manifest
from storage.engine import Store
from storage.enums import SnapshotStatus
from storage.figure_cache import write_figure_cache
from storage.snapshots import find_snapshot
from storage.submissions import NewSubmission, add_submission, find_submission

__all__ = [
    "VARIANTS",
    "Intake",
    "LocalityKey",
    "coverage_error",
    "locality_error",
    "locality_key",
    "pack_target",
    "rescored",
    "rescored_locality",
    "submit_pack",
]

VARIANTS = ("base", "injected")


@dataclass(frozen=True, kw_only=True)
class Intake:
    pack_sha256: str
    snapshot_id: str
    target: str
    stored: bool  # False: this pack was stored already (nothing changed)
    claims_match: bool
    claims_note: str  # where the pack's metrics first differ from the recomputed ones ("" when they agree)
    flags_fixed: int  # answers whose `correct` disagreed with their letter against this store's key
    metrics: PackMetrics | None  # with the probe's verdicts, computed without the entities they exclude
    open_answers: int = 0  # open answers scored here (open_answers.jsonl)


@dataclass(frozen=True, kw_only=True)
class LocalityKey:
    """The snapshot's locality split as frozen here: per question its public entity id and answer letter, and which
    target knew which entity."""

    answers: dict[int, tuple[int, str]] = field(default_factory=dict)  # qid -> (entity id, letter)
    known_by: dict[str, set[int]] = field(default_factory=dict)


def coverage_error(
    rows: Sequence[PredictionRow], *, test: Mapping[int, Any], known: set[int], languages: Sequence[str],
    train_langs: Sequence[str], scorers: Sequence[str], snapshot_id: str,
) -> str | None:
    """Why `rows` do not answer every test question exactly once per (train language, scorer, variant, language),
    or None when they do."""
    seen: set[tuple[str, str, str, str, int]] = set()
    for r in rows:
        if r.qid not in known:
            return f"question {r.qid} is not in snapshot {snapshot_id}"
        if r.qid not in test:
            return f"question {r.qid} is not a test question of snapshot {snapshot_id} (a validation one)"
        for what, value, allowed in (("language", r.lang, languages), ("train language", r.train_lang, train_langs),
                                     ("scorer", r.scorer, scorers)):
            if value not in allowed:
                return f"question {r.qid} is answered in {what} {value!r}, not one of the pack's {list(allowed)}"
        key = sort_key(r)
        if key in seen:
            return f"question {r.qid} is answered twice ({r.train_lang}, {r.scorer}, {r.variant}, {r.lang})"
        seen.add(key)
    expected = len(train_langs) * len(scorers) * len(VARIANTS) * len(languages) * len(test)
    if len(seen) != expected:
        for t in train_langs:
            for s in scorers:
                for v in VARIANTS:
                    for lang in languages:
                        missing = [q for q in sorted(test) if (t, s, v, lang, q) not in seen]
                        if missing:
                            return (f"question {missing[0]} is not answered ({t}, {s}, {v}, {lang}); "
                                    f"{expected - len(seen)} answers are missing in all")
    return None


def rescored(rows: Sequence[PredictionRow], test: dict[int, ItemRef]) -> tuple[list[PredictionRow], int]:
    """The rows with `correct` and `entity_id` as this store's answer key says; how many `correct` flags changed."""
    out: list[PredictionRow] = []
    fixed = 0
    for r in rows:
        item = test[r.qid]
        correct = r.predicted == item.answer_letter
        fixed += correct != r.correct
        out.append(r.model_copy(update={"correct": correct, "entity_id": item.entity_id}))
    return out, fixed


def locality_key(manifest: SnapshotManifest, export_path: str | None, *, shown: str) -> LocalityKey:
    """The locality split's key from the snapshot's export folder, each file checked against the stored manifest's
    sha256 (`shown` names the pack in a refusal)."""
    sid, info = manifest.snapshot_id, manifest.locality
    if info is None or not info.questions:
        raise UserError(f"pack {shown}: it holds {LOCALITY_FILE}, and snapshot {sid} has no locality split here")
    root = Path(export_path or "")
    answers: dict[int, tuple[int, str]] = {}
    for lang in manifest.languages:
        path = locality_path(root, lang)
        check_export_file(manifest, export_path, path, part="locality split", pack_file=LOCALITY_FILE, shown=shown)
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = QuestionRow.model_validate_json(line)
                answers[q.qid] = (q.entity_id, q.answer)
    return LocalityKey(answers=answers, known_by={t: set(es) for t, es in info.known_by.items()})


def locality_error(
    rows: Sequence[LocalityRow], *, key: LocalityKey, target: str, languages: Sequence[str], train_langs: Sequence[str],
    scorers: Sequence[str], snapshot_id: str,
) -> str | None:
    """Why the locality answers `rows` do not answer, exactly once per (train language, scorer, variant, language),
    every question of the locality split about an entity `target` knew (and nothing else), or None when they do."""
    known = key.known_by.get(target, set())
    mine = {q: a for q, a in key.answers.items() if a[0] in known}
    for r in rows:
        if r.qid not in key.answers:
            return f"{LOCALITY_FILE}: question {r.qid} is not in snapshot {snapshot_id}'s locality split"
        if r.qid not in mine:
            return (f"{LOCALITY_FILE}: question {r.qid} is about entity {key.answers[r.qid][0]}, which the locality split "
                    f"does not list as known by {target}")
    error = coverage_error(rows, test=mine, known=set(mine), languages=languages, train_langs=train_langs,
                           scorers=scorers, snapshot_id=snapshot_id)
    return f"{LOCALITY_FILE}: {error}" if error else None


def rescored_locality(rows: Sequence[LocalityRow], key: LocalityKey) -> tuple[list[LocalityRow], int]:
    """The locality answers with `correct` and `entity_id` as the split's key says; how many `correct` flags changed."""
    out: list[LocalityRow] = []
    fixed = 0
    for r in rows:
        entity, letter = key.answers[r.qid]
        correct = r.predicted == letter
        fixed += correct != r.correct
        out.append(r.model_copy(update={"correct": correct, "entity_id": entity}))
    return out, fixed


def pack_target(model: ModelIdentity, *, source: str, path: str | None = None) -> TargetSettings:
    """The target a pack's model identity names (`path`: another copy of its weights, where this service holds
    them); a model string no local target can be (`<provider>:<model>`) is a `UserError` naming the pack."""
    try:
        return TargetSettings(name=model.name, model=path or model.model, cutoff=model.cutoff, kind=model.kind)
    except ValueError as e:  # pydantic's ValidationError: the model string or the name
        raise UserError(f"pack {source}: its model {(path or model.model)!r} is not a model clkt can load "
                        f"({str(e).splitlines()[-1].strip()})") from None


def _window(pack: Pack, period_start: date, buffer_days: int) -> None:
    model = pack.manifest.model
    if model.cutoff is None:
        raise UserError(f"pack {pack.source}: its target {model.name} declares no knowledge cutoff "
                        "(clkt evaluate --cutoff YYYY-MM-DD); without one the snapshot's window cannot be checked")
    target = pack_target(model, source=str(pack.source))
    if not in_window(period_start, target, buffer_days):
        first = first_eligible_day(model.cutoff, buffer_days)
        raise UserError(
            f"pack {pack.source}: snapshot {pack.manifest.snapshot.id} (period from {period_start}) is outside the window "
            f"of {model.name} (cutoff {model.cutoff} + {buffer_days} days: periods from {first}); refused"
        )


@dataclass(frozen=True, kw_only=True)
class _Stored:
    manifest: SnapshotManifest
    export_path: str | None
    items: list[ItemRef]

    @property
    def languages(self) -> list[str]:
        return list(self.manifest.languages)

    @property
    def period_start(self) -> date:
        """The earliest own date the snapshot holds (its period's start, or a carried entity's): the window's rule."""
        return date.fromisoformat(self.manifest.earliest_day)


async def _snapshot(store: Store, pack: Pack) -> _Stored:
    ref = pack.manifest.snapshot
    async with store.session() as s:
        row = await find_snapshot(s, ref.id)
        if row is None:
            raise UserError(f"pack {pack.source}: snapshot {ref.id} is not one of this store's")
        if row.status is not SnapshotStatus.frozen:
            raise UserError(f"pack {pack.source}: snapshot {ref.id} is not frozen here ({row.status.value})")
        if row.content_sha256 != ref.content_sha256:
            raise UserError(f"pack {pack.source}: snapshot {ref.id}'s content sha256 is {row.content_sha256[:12]}… here, "
                            f"the pack names {ref.content_sha256[:12]}…")
        manifest = stored_manifest(row.manifest)
        if manifest is None:
            raise UserError(f"pack {pack.source}: snapshot {ref.id} has no stored manifest")
        items = await load_item_refs(s, row.id)
    return _Stored(manifest=manifest, export_path=row.export_path, items=items)


async def _locality(pack: Pack, stored: _Stored) -> tuple[list[LocalityRow], int]:
    """The pack's locality answers checked against the split's key and rescored (none: nothing read)."""
    if not pack.locality:
        return [], 0
    m = pack.manifest
    key = await asyncio.to_thread(locality_key, stored.manifest, stored.export_path, shown=str(pack.source))
    error = locality_error(pack.locality, key=key, target=m.model.name, languages=stored.languages,
                           train_langs=m.strategy.train_languages, scorers=m.scorers, snapshot_id=m.snapshot.id)
    if error:
        raise UserError(f"pack {pack.source}: {error}")
    return rescored_locality(pack.locality, key)


async def _probe(store: Store, pack: Pack, stored: _Stored) -> ProbeVerdicts | None:
    """The pack's probe answers checked and judged here (none: None, nothing read)."""
    if not pack.probe:
        return None
    entities = {it.entity_id: it.entity_row for it in stored.items}
    error = probe_error(pack.probe, entities=entities, languages=stored.languages, snapshot_id=pack.manifest.snapshot.id)
    if error:
        raise UserError(f"pack {pack.source}: {error}")
    return judge_probe(pack.probe, await probed_entities(store, stored.items), stored.languages)


def _open_scored(pack: Pack, stored: _Stored) -> list[ScoredOpenAnswer]:
    """The pack's open answers checked against the snapshot's open questions here and scored by this service's
    normaliser (none: [], nothing read)."""
    if not pack.open_answers:
        return []
    m = pack.manifest
    key = stored_open_key(stored.manifest, stored.export_path, target=m.model.name, shown=str(pack.source))
    error = open_error(pack.open_answers, key, train_langs=m.strategy.train_languages, snapshot_id=m.snapshot.id)
    if error:
        raise UserError(f"pack {pack.source}: {error}")
    return rescore(pack.open_answers, key)


def _with_open(metrics: PackMetrics, scored: Sequence[ScoredOpenAnswer], pack: Pack, languages: Sequence[str],
               excluded: Collection[int] = ()) -> PackMetrics:
    """`metrics` with the open figures of `scored` (the test split's answers about `excluded` entities left out)."""
    m = pack.manifest
    kept = [i for i in scored if not (i.split == "test" and i.entity_id in excluded)]
    return metrics.model_copy(update={"open": open_metrics(kept, m.strategy.train_languages, languages,
                                                           snapshot_id=m.snapshot.id, format_version=m.format_version)})


async def submit_pack(store: Store, pack: Pack, *, buffer_days: int, board: LeaderboardQuery | None = None) -> Intake:
    """Verify `pack` against the store and store it (see the module docstring); with `board` (the default
    leaderboard's query), its rows on that board are computed and kept now (`clkt.report.window.keep_rows_of`)."""
    m = pack.manifest
    async with store.session() as s:
        if await find_submission(s, pack.sha256) is not None:
            return Intake(pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target=m.model.name, stored=False,
                          claims_match=True, claims_note="", flags_fixed=0, metrics=None)
    snap = await _snapshot(store, pack)
    languages = snap.languages
    test = {it.qid: it for it in snap.items if it.split == "test"}
    error = coverage_error(pack.predictions, test=test, known={it.qid for it in snap.items}, languages=languages,
                           train_langs=m.strategy.train_languages, scorers=m.scorers, snapshot_id=m.snapshot.id)
    if error:
        raise UserError(f"pack {pack.source}: {error}")
    _window(pack, snap.period_start, buffer_days)
    locality, fixed_locality = await _locality(pack, snap)
    probe = await _probe(store, pack, snap)
    scored_open = await asyncio.to_thread(_open_scored, pack, snap)
    rows, fixed = rescored(pack.predictions, test)
    fixed += fixed_locality
    metrics = _with_open(compute_metrics(rows, languages, format_version=m.format_version, locality=locality,
                                         snapshot_id=m.snapshot.id), scored_open, pack, languages)
    note = first_difference(pack.claimed_metrics, metrics.model_dump(mode="json")) or ""
    if probe is not None:  # the figures without the entities the model knew, with the verdicts
        excluded = set(probe.excluded)
        kept = [r for r in rows if r.entity_id not in excluded]
        metrics = _with_open(compute_metrics(kept, languages, format_version=m.format_version, locality=locality,
                                             snapshot_id=m.snapshot.id), scored_open, pack, languages, excluded)
        metrics = metrics.model_copy(update={"probe": probe})
    answers = gzip.compress(rows_jsonl(pack.predictions), mtime=0)
    new = NewSubmission(
        pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target_name=m.model.name, model=m.model.model,
        model_revision=m.model.revision, weights_sha256=m.model.weights_sha256, kind=m.model.kind,
        cutoff=m.model.cutoff or snap.period_start, strategy=m.strategy.name, train_langs=list(m.strategy.train_languages),
        scorers=list(m.scorers), format_version=m.format_version, clkt_version=m.clkt_version,
        predictions=len(rows), claims_match=not note, claims_note=note, metrics=metrics.model_dump(mode="json"),
        manifest=m.model_dump(mode="json"), answers=answers, open_answers=encode_scored(scored_open) or None,
    )
    key, scored = prime(answers, snap.items)  # scored for the board now, while the key is at hand
    async with store.transaction() as s:
        stored = await add_submission(s, new)
        if stored:  # kept with the pack: any process's board reads it (`clkt.report.kept_figures`)
            await write_figure_cache(s, SCORED, {key: scored})
    if stored and board is not None:
        from clkt.report.window import keep_rows_of  # the board's machinery, only when asked for

        await keep_rows_of(store, board, m.model.name)
    return Intake(pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target=m.model.name, stored=stored,
                  claims_match=not note, claims_note=note, flags_fixed=fixed, metrics=metrics, open_answers=len(scored_open))
