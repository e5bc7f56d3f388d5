"""`clkt submit --reproduce K`: a submitted pack's jobs re-run on this service's engine, letter against letter.

The jobs are the very ones `clkt evaluate` runs (`clkt.packs.runner.run_evaluate`: the GPU queue's job spec, one
job per train language) on this store's export of the pack's snapshot, with the pack's model, strategy, train
languages and job settings (the pack's `strategy.settings` over this service's `[gpu]`; where jobs run stays this
service's). They run on this service's GPU engine, `[gpu] engine` (or `--engine`, `clkt.packs.runner.engine_settings`):
the local one (a child process on `devices[0]`) or the Ray cluster at `ray_address`, opened as the GPU queue opens
it (`open_plan_engine`: `clkt.packs.runner.open_engine`) and checked to be ready before anything is stored. Injection trains on the whole documents of each
train language, whatever K is: K only limits the questions whose letters are compared. They are drawn by a seeded
rule (`sample_questions`: the pack's sha256 seeds the draw, so the same pack and K compare the same questions);
`None` compares every test question. Every answer of a drawn question (each train language, scorer, variant and
language of the pack) is compared with the re-run's; an answer the re-run does not have counts as a disagreement.

The result (`Reproduction`: agreed / checked, the threshold `REPRODUCED_AT`, reproduced or flagged, the engine that
ran the jobs, its cluster's address and where each job ran) is stored on
the pack's row (`storage.submissions.set_reproduction`): a later re-run replaces an earlier one, whatever either
found. Everything that can be refused (the snapshot, the settings, the model) is checked before anything runs
or is stored (`plan_reproduction`); the re-run's work folder (`<data_dir>/reproduce/<pack sha256[:16]>/`) resumes
an interrupted re-run and is removed once the result is stored.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import shutil
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from clkt.config import GpuSettings
from clkt.errors import UserError
from clkt.inject.engine import JobEngine
from clkt.packs.format import PackManifest, PredictionRow
from clkt.packs.intake import pack_target
from clkt.packs.pack import read_pack
from clkt.packs.runner import EvaluateRequest, job_settings, model_identity, open_engine, run_evaluate, run_key
from clkt.report.leaderboard_data import Reproduction
from clkt.report.submitted import REPRODUCED_AT
from clkt.snapshots.layout import load_snapshot_dir
from clkt.targets.loader import resolve_target
from storage.engine import Store
from storage.snapshots import find_snapshot
from storage.submissions import set_reproduction

__all__ = [
    "Plan", "agreement", "answers_of", "answers_of_rows", "open_plan_engine", "plan_reproduction", "run_reproduction",
    "sample_questions", "save_reproduction",
]

AnswerKey = tuple[str, str, str, str, int]  # train language, scorer, variant, language, question


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A checked re-run: what runs (`request`) and which questions are compared (`questions`)."""

    pack_sha256: str
    request: EvaluateRequest
    questions: list[int]
    work: Path
    notes: list[str]  # where the model here is not the pack's (its weights' sha256 or revision differ)


def sample_questions(qids: Iterable[int], k: int | None, *, seed: str) -> list[int]:
    """`k` of the questions (every one when `k` is None or not below their number), drawn by `random.Random(seed)`
    from their sorted ids, sorted."""
    if k is not None and k <= 0:
        raise UserError(f"--reproduce {k}: a number of questions above 0, or all")
    pool = sorted(set(qids))
    if k is None or k >= len(pool):
        return pool
    return sorted(random.Random(seed).sample(pool, k))


def _key(r: PredictionRow | dict[str, object]) -> AnswerKey:
    d = r if isinstance(r, dict) else r.model_dump()
    return (str(d["train_lang"]), str(d["scorer"]), str(d["variant"]), str(d["lang"]), int(str(d["qid"])))


def answers_of(blob: bytes) -> dict[AnswerKey, str | None]:
    """A stored pack's answers (`storage.submissions.submission_answers`: its predictions.jsonl, gzip'd): letter by
    answer."""
    out: dict[AnswerKey, str | None] = {}
    for line in gzip.decompress(blob).splitlines():
        if line.strip():
            row = json.loads(line)
            out[_key(row)] = row.get("predicted")
    return out


def answers_of_rows(rows: Iterable[PredictionRow]) -> dict[AnswerKey, str | None]:
    """A pack's answers as read (`clkt.packs.pack.read_pack`): letter by answer."""
    return {_key(r): r.predicted for r in rows}


def agreement(pack: dict[AnswerKey, str | None], rerun: Sequence[PredictionRow], questions: Sequence[int]) -> tuple[int, int]:
    """(agreed, checked): the pack's answers to `questions` whose letter the re-run gave too."""
    wanted = set(questions)
    again = {_key(r): r.predicted for r in rerun if r.qid in wanted}
    mine = {k: v for k, v in pack.items() if k[4] in wanted}
    agreed = sum(1 for k, letter in mine.items() if k in again and again[k] == letter)
    return agreed, len(mine)


def _gpu(own: GpuSettings, manifest: PackManifest) -> GpuSettings:
    """This service's `[gpu]` with the pack's job settings (the ones a job computes with) over it."""
    theirs = {k: v for k, v in manifest.strategy.settings.items() if k in job_settings(own)}
    try:
        return GpuSettings.model_validate({**own.model_dump(), **theirs})
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"pack {manifest.snapshot.id}/{manifest.model.name}: its setting "
                        f"{'.'.join(str(x) for x in err['loc'])} cannot be used here ({err['msg']})") from e


async def plan_reproduction(
    store: Store, sha256: str, manifest: PackManifest, qids: Iterable[int], *, k: int | None, gpu: GpuSettings,
    data_dir: Path, model: str | None = None,
) -> Plan:
    """The re-run of the pack `sha256` (its manifest, its answers' questions `qids`), checked: its snapshot's export
    here, its settings, its model readable (`model` in place of the pack's: where this service holds the same
    weights; `UserError` otherwise); nothing runs and nothing is stored."""
    questions = sample_questions(qids, k, seed=sha256)
    async with store.session() as s:
        snap = await find_snapshot(s, manifest.snapshot.id)
    if snap is None or not snap.export_path:
        raise UserError(f"pack {sha256[:12]}: snapshot {manifest.snapshot.id} has no export in this store to re-run on")
    folder = Path(snap.export_path)
    if not folder.is_dir():  # noqa: ASYNC240 - once per re-run
        raise UserError(f"pack {sha256[:12]}: snapshot {manifest.snapshot.id}'s export {folder} is not there")
    m = manifest.model
    target = pack_target(m, source=sha256[:12], path=model)
    resolve_target(target, data_dir)  # a model that cannot be read: one line, before anything runs
    here = model_identity(target, data_dir)
    notes = [f"the model here ({target.model}) has {what} {mine[:12]}, the pack's {theirs[:12]}: its letters may differ"
             for what, mine, theirs in (("weights sha256", here.weights_sha256, m.weights_sha256),
                                        ("revision", here.revision, m.revision))
             if mine and theirs and mine != theirs]
    work = data_dir / "reproduce" / sha256[:16]
    req = EvaluateRequest(snapshot_dir=folder, target=target, strategy=manifest.strategy.name,
                          train_langs=list(manifest.strategy.train_languages), gpu=_gpu(gpu, manifest),
                          out=work / "pack", data_dir=data_dir, device=gpu.devices[0], keep_work=True)
    load_snapshot_dir(folder)  # its files match its manifest (SnapshotError otherwise)
    return Plan(pack_sha256=sha256, request=req, questions=questions, work=work, notes=notes)


@contextlib.asynccontextmanager
async def open_plan_engine(plan: Plan) -> AsyncIterator[JobEngine]:
    """The engine the plan's jobs run on (`[gpu] engine`), started and ready (`clkt.packs.runner.open_engine`: its
    runs on a cluster named by the re-run's work folder, the Ray driver's log in it); `UserError` when it cannot
    run them (a cluster that cannot be reached), the work folder then left as it was."""
    req = plan.request
    try:
        async with open_engine(req.gpu, device=req.device, key=run_key(plan.work), log_dir=plan.work,
                               data_dir=req.data_dir) as engine:
            yield engine
    finally:
        with contextlib.suppress(OSError):
            plan.work.parent.rmdir()  # `<data_dir>/reproduce` when nothing is under way (a refusal left nothing)


async def run_reproduction(plan: Plan, answers: dict[AnswerKey, str | None], *, engine: JobEngine,
                           progress: Callable[[str], None]) -> Reproduction:
    """Run the plan's jobs on `engine` (`open_plan_engine`; resuming an interrupted re-run) and compare the letters
    of its questions."""
    shutil.rmtree(plan.request.out, ignore_errors=True)  # a pack an interrupted re-run wrote: its jobs are read back
    done = await run_evaluate(plan.request, progress=progress, engine=engine)
    rerun = read_pack(plan.request.out).predictions
    agreed, checked = agreement(answers, rerun, plan.questions)
    rate = agreed / checked if checked else 0.0
    gpu = plan.request.gpu
    return Reproduction(checked=checked, agreed=agreed, questions=len(plan.questions), rate=rate,
                        threshold=REPRODUCED_AT, reproduced=bool(checked) and rate >= REPRODUCED_AT, engine=done.engine,
                        engine_address=gpu.ray_address if done.engine == "ray" else None, ran_on=done.ran_on,
                        at=datetime.now(UTC).replace(microsecond=0).isoformat())


async def save_reproduction(store: Store, plan: Plan, result: Reproduction) -> None:
    """Store the result on the pack's row (replacing an earlier re-run's) and remove the re-run's work folder."""
    async with store.transaction() as s:
        if not await set_reproduction(s, plan.pack_sha256, result.model_dump(mode="json")):
            raise UserError(f"pack {plan.pack_sha256[:12]} is not submitted in this store")
    shutil.rmtree(plan.work, ignore_errors=True)
    with contextlib.suppress(OSError):
        plan.work.parent.rmdir()  # `<data_dir>/reproduce` once no other re-run is under way
