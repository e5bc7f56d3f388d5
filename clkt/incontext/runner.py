"""Run the in-context track of a frozen snapshot for the spec's targets (`clkt incontext SNAPSHOT`).

API targets answer through the agents' model stack (their keys are checked first: a missing one stops the run
before anything is asked); local targets are loaded in process and scored by the scorer their parametric jobs are
headlined with (`clkt.incontext.askers.incontext_scorer`: option-loglik-norm for a base model, else the generate
scorer with `[gpu] max_new_tokens` and `parse`), on the probe's device. The context languages are the spec's train
languages present in the snapshot. Each target's track resumes where its answers stop. Where the snapshot has an
open track, each target then answers its short-answer questions the same way (`clkt.incontext.open_track`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clkt.errors import UserError
from clkt.incontext.askers import ApiAsker, Asker, LocalAsker, incontext_scorer
from clkt.incontext.open_answerers import ApiOpenAnswerer, LocalOpenAnswerer, OpenAnswerer
from clkt.incontext.open_track import InContextOpenTrack, OpenTrackCounts, OpenTrackStopped
from clkt.incontext.track import InContextTrack, TrackCounts, TrackStopped
from clkt.targets.api import ApiTargets, check_api_targets, is_api_target

if TYPE_CHECKING:
    from clkt.config import AgentSettings, GpuSettings, SecretLookup, SpecSettings, TargetSettings
    from clkt.openqa.frozen import FrozenOpenQuestion
    from clkt.snapshots.layout import SnapshotData
    from storage.engine import Store

__all__ = ["TrackRun", "load_frozen_snapshot", "run_incontext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackRun:
    target: str
    counts: TrackCounts
    error: str | None = None  # the run stopped (a provider failed): a rerun resumes
    # the short answers (`clkt.incontext.open_track`): None where not asked (no open track, a local target, or the
    # multiple-choice track stopped first)
    open_counts: OpenTrackCounts | None = None
    open_error: str | None = None


async def load_frozen_snapshot(store: Store, snapshot_id: str) -> SnapshotData:
    """The snapshot's exported directory, loaded (a `UserError` when it is unknown or has no export)."""
    import asyncio

    from clkt.snapshots.layout import load_snapshot_dir
    from storage.snapshots import find_snapshot

    async with store.session() as s:
        snap = await find_snapshot(s, snapshot_id)
    if snap is None:
        raise UserError(f"no snapshot {snapshot_id!r} in the store")
    if not snap.export_path:
        raise UserError(f"snapshot {snapshot_id!r} has no exported directory (is it frozen?)")
    return await asyncio.to_thread(load_snapshot_dir, Path(snap.export_path))


def _local_asker(target: TargetSettings, *, gpu: GpuSettings, data_dir: Path) -> Asker:
    from clkt.targets.loader import cached_target, probe_device

    model, tok = cached_target(target, data_dir=data_dir, device=probe_device(gpu))
    return LocalAsker(model=model, tokenizer=tok, target=target, max_new_tokens=gpu.max_new_tokens, parse=gpu.parse,
                      batch_size=gpu.eval_batch_size or 8, scorer=incontext_scorer(target, gpu))


async def _open_questions(snapshot: SnapshotData) -> list[FrozenOpenQuestion]:
    """The snapshot's open questions ([] without an open track: no short answer is asked)."""
    import asyncio

    from clkt.openqa.frozen import load_open_questions

    return await asyncio.to_thread(load_open_questions, snapshot.path)


async def run_incontext(
    *, store: Store, snapshot_id: str, spec: SpecSettings, agents: AgentSettings, gpu: GpuSettings, data_dir: Path,
    secret: SecretLookup, targets: Sequence[str] | None = None, api: ApiTargets | None = None,
    wait_batches: bool = True, context_langs: Sequence[str] | None = None, short_answers: bool = True,
) -> list[TrackRun]:
    """The track of every target of the spec (or those named) on the snapshot; one `TrackRun` per target; the
    context languages: the spec's train languages in the snapshot (only those of `context_langs` when given). In batch
    mode (`AgentSettings.incontext_batched`) an API target's calls are queued into provider batches at the batch
    price; with `wait_batches` the run waits for them (polling every `[agents.batch] poll_interval_s`), else a
    track with calls pending ends with `counts.pending` > 0 and a later run reads their answers. With `short_answers`
    (the default) each target whose MCQ track completed then answers the snapshot's open questions, where it has
    an open track (`clkt.incontext.open_track`; never in batch mode)."""
    chosen = [t for t in spec.targets if targets is None or t.name in targets]
    unknown = sorted(set(targets or ()) - {t.name for t in spec.targets})
    if unknown:
        raise UserError(f"no target {', '.join(unknown)} in the spec (targets: {', '.join(t.name for t in spec.targets)})")
    check_api_targets(chosen, agents, secret=secret)  # before anything runs
    snapshot = await load_frozen_snapshot(store, snapshot_id)
    open_questions = await _open_questions(snapshot)
    contexts = [x for x in spec.train_langs if x in snapshot.languages and (context_langs is None or x in context_langs)]
    batch = agents.incontext_batched()
    if api is None and any(is_api_target(t) for t in chosen):
        from storage.llm_cache import SqlCallCache

        batch_store = None
        if batch:
            from storage.llm_batches import SqlBatchStore

            batch_store = SqlBatchStore(store)
        api = ApiTargets.build(agents=agents, secret=secret, cache=SqlCallCache(store), batch_store=batch_store)
    out: list[TrackRun] = []
    for t in chosen:
        if is_api_target(t):
            assert api is not None
            asker: Asker = ApiAsker(api=api, target=t, max_new_tokens=gpu.max_new_tokens, parse=gpu.parse,
                                    concurrency=agents.concurrency, batch=batch)
        else:
            import asyncio

            asker = await asyncio.to_thread(_local_asker, t, gpu=gpu, data_dir=data_dir)
        track = InContextTrack(store=store, snapshot=snapshot, target=t.name, asker=asker, context_langs=contexts,
                               max_new_tokens=gpu.max_new_tokens)
        try:
            counts = await _run_track(track, api if batch and is_api_target(t) else None,
                                      poll_s=agents.batch.poll_interval_s, wait=wait_batches)
        except TrackStopped as e:
            out.append(TrackRun(target=t.name, counts=e.counts, error=str(e)))
            continue
        run = TrackRun(target=t.name, counts=counts)
        if open_questions and short_answers:
            run = await _run_open(InContextOpenTrack(
                store=store, snapshot=snapshot, questions=open_questions, target=t.name, context_langs=contexts,
                answerer=_open_answerer(asker, t, api=api, concurrency=agents.concurrency)), run)
        out.append(run)
    return out


def _open_answerer(asker: Asker, target: TargetSettings, *, api: ApiTargets | None, concurrency: int) -> OpenAnswerer:
    """Who answers the target's short answers: the MCQ asker's loaded model (local), else the API target."""
    if isinstance(asker, LocalAsker):
        return LocalOpenAnswerer(asker=asker)
    assert api is not None
    return ApiOpenAnswerer(api=api, target=target, context_tokens=asker.context_tokens, concurrency=concurrency)


async def _run_open(track: InContextOpenTrack, run: TrackRun) -> TrackRun:
    """The target's short answers after its multiple-choice track, on the same `TrackRun`."""
    from dataclasses import replace

    try:
        return replace(run, open_counts=await track.run())
    except OpenTrackStopped as e:
        return replace(run, open_counts=e.counts, open_error=str(e))


async def _run_track(track: InContextTrack, api: ApiTargets | None, *, poll_s: float, wait: bool) -> TrackCounts:
    """The track's run; in batch mode (`api` given) with `wait`, run again after each round of the batches (the
    dispatcher ticked when `api` owns it, else the daemon's `llm-batches` service does) until none is pending.
    The counts add up the rounds (`already`: before the first)."""
    import asyncio

    total = await track.run()
    while api is not None and wait and total.pending:
        await api.tick_batches()
        await asyncio.sleep(poll_s)
        again = await track.run()
        total.asked += again.asked
        total.from_jobs += again.from_jobs
        total.truncated += again.truncated
        total.unparsed += again.unparsed
        total.pending = again.pending
    return total
