"""`clkt submit`: a verified pack (`clkt.packs.pack.read_pack`) checked against this store, then stored once.

Before anything is written the pack must answer one of this store's frozen snapshots with its content hash; every
test question of it exactly once per train language, scorer, variant and language (`coverage_error`), and no
question it does not have; it must declare its target's knowledge cutoff, and the snapshot must lie in that
target's window (`clkt.roster.window.in_window`, the spec's temporal buffer). Correctness is read again from each
letter against this store's answer key, and the metrics are recomputed from that (`clkt.packs.metrics`): the
pack's own `metrics.json` is only compared (a difference is reported) and never stored. A refusal is one line
(`UserError`) and leaves the store as it was; the same pack submitted again changes nothing.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from clkt.config import TargetSettings
from clkt.cutoff import first_eligible_day
from clkt.errors import UserError
from clkt.packs.format import PredictionRow
from clkt.packs.metrics import PackMetrics, compute_metrics, first_difference
from clkt.packs.pack import Pack, canonical, sort_key
from clkt.roster.window import in_window
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.select import ItemRef
from clkt.snapshots.stored import stored_manifest
from storage.engine import Store
from storage.enums import SnapshotStatus
from storage.snapshots import find_snapshot
from storage.submissions import NewSubmission, add_submission, find_submission

__all__ = ["VARIANTS", "Intake", "coverage_error", "rescored", "submit_pack"]

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
    metrics: PackMetrics | None


def coverage_error(
    rows: Sequence[PredictionRow], *, test: dict[int, ItemRef], known: set[int], languages: Sequence[str],
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


def _window(pack: Pack, period_start: date, buffer_days: int) -> None:
    model = pack.manifest.model
    if model.cutoff is None:
        raise UserError(f"pack {pack.source}: its target {model.name} declares no knowledge cutoff "
                        "(clkt evaluate --cutoff YYYY-MM-DD); without one the snapshot's window cannot be checked")
    target = TargetSettings(name=model.name, model=model.model, cutoff=model.cutoff, kind=model.kind)
    if not in_window(period_start, target, buffer_days):
        first = first_eligible_day(model.cutoff, buffer_days)
        raise UserError(
            f"pack {pack.source}: snapshot {pack.manifest.snapshot.id} (period from {period_start}) is outside the window "
            f"of {model.name} (cutoff {model.cutoff} + {buffer_days} days: periods from {first}); refused"
        )


async def _snapshot(store: Store, pack: Pack) -> tuple[list[str], date, list[ItemRef]]:
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
    return list(manifest.languages), date.fromisoformat(manifest.period_start), items


async def submit_pack(store: Store, pack: Pack, *, buffer_days: int) -> Intake:
    """Verify `pack` against the store and store it (see the module docstring)."""
    m = pack.manifest
    async with store.session() as s:
        if await find_submission(s, pack.sha256) is not None:
            return Intake(pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target=m.model.name, stored=False,
                          claims_match=True, claims_note="", flags_fixed=0, metrics=None)
    languages, period_start, items = await _snapshot(store, pack)
    test = {it.qid: it for it in items if it.split == "test"}
    error = coverage_error(pack.predictions, test=test, known={it.qid for it in items}, languages=languages,
                           train_langs=m.strategy.train_languages, scorers=m.scorers, snapshot_id=m.snapshot.id)
    if error:
        raise UserError(f"pack {pack.source}: {error}")
    _window(pack, period_start, buffer_days)
    rows, fixed = rescored(pack.predictions, test)
    metrics = compute_metrics(rows, languages, format_version=m.format_version)
    note = first_difference(pack.claimed_metrics, metrics.model_dump(mode="json")) or ""
    answers = gzip.compress("".join(canonical(r.model_dump(mode="json")) + "\n" for r in sorted(pack.predictions, key=sort_key)).encode(), mtime=0)
    new = NewSubmission(
        pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target_name=m.model.name, model=m.model.model,
        model_revision=m.model.revision, weights_sha256=m.model.weights_sha256, kind=m.model.kind,
        cutoff=m.model.cutoff or period_start, strategy=m.strategy.name, train_langs=list(m.strategy.train_languages),
        scorers=list(m.scorers), format_version=m.format_version, clkt_version=m.clkt_version,
        predictions=len(rows), claims_match=not note, claims_note=note, metrics=metrics.model_dump(mode="json"),
        manifest=m.model_dump(mode="json"), answers=answers,
    )
    async with store.transaction() as s:
        stored = await add_submission(s, new)
    return Intake(pack_sha256=pack.sha256, snapshot_id=m.snapshot.id, target=m.model.name, stored=stored,
                  claims_match=not note, claims_note=note, flags_fixed=fixed, metrics=metrics)
