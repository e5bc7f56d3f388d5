"""`clkt submit --reproduce K`: a submitted pack's jobs re-run on this service's engine, letter against letter.

The jobs are the very ones `clkt evaluate` runs (`clkt.packs.runner.run_evaluate`: the GPU queue's job spec, one
job per train language) on this store's export of the pack's snapshot, with the pack's model, strategy, train
languages and job settings (the pack's `strategy.settings` over this service's `[gpu]`; where jobs run stays this
service's). They run on this service's GPU engine, `[gpu] engine` (or `--engine`, `clkt.packs.runner.engine_settings`):
the local one (a child process on `devices[0]`) or the Ray cluster at `ray_address`, opened as the GPU queue opens
it (`open_plan_engine`: `clkt.packs.runner.open_engine`) and checked to be ready before anything is stored. Injection trains on the whole documents of each
train language, whatever K is: K only limits the questions whose letters are compared. They are drawn once the
jobs are done, from a fresh random nonce stored with the result (`clkt.packs.verdict`: nothing the submitter knows
decides which); `None` compares every test question. The verdict is by cell: each (train language, scorer, variant,
language) of the pack must agree with the re-run's letters, and Learn, Overall and Transfer recomputed from both
must lie within a stated tolerance; the first cell or figure that fails is named and the pack is not reproduced.

A pack with open answers (`open_answers.jsonl`) has them re-generated too: its jobs re-run with their open pass
(`clkt.inject.open_pass`: greedy, through `clkt.openqa.generate.generate_answers` and the prompt of
`clkt.openqa.prompts`), which must be the prompt the pack declares (`PackManifest.open_prompt_version`; a pack of
another version is refused before anything runs, naming both; one that declares none is re-run for its letters only,
its open rows left unverified). K of its open questions are drawn by the same nonce, and the normaliser's verdicts
of the pack's answers and of the re-generated ones (both scored here against this snapshot's open questions, never
the raw strings) are compared cell by cell at the letters' threshold (`clkt.packs.verdict.judge_open`); their
agreement, n and cells are the result's `open`. The pack is reproduced only when its letters and its open verdicts
both hold; its open rows then rank on the board's open section (`clkt.report.submitted`).

The result (`Reproduction`: the nonce, each cell, the figures' differences, the first failure, agreed / checked in
all, reproduced or not, the engine that ran the jobs, its cluster's address and where each job ran) is stored on
the pack's row (`storage.submissions.set_reproduction`): a later re-run replaces an earlier one, whatever either
found. Everything that can be refused (the snapshot, the settings, the model) is checked before anything runs
or is stored (`plan_reproduction`); the re-run's work folder (`<data_dir>/reproduce/<pack sha256[:16]>/`) resumes
an interrupted re-run and is removed once the result is stored.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from clkt.config import GpuSettings
from clkt.errors import UserError
from clkt.inject.engine import JobEngine
from clkt.openqa.prompts import ANSWER_PROMPT_VERSION
from clkt.openqa.results import OPEN_SCORER
from clkt.packs.format import OpenAnswerRow, PackManifest, PredictionRow
from clkt.packs.intake import pack_target
from clkt.packs.open_answers import OpenKey, decode_scored, rescore, snapshot_open_key
from clkt.packs.pack import read_pack
from clkt.packs.runner import EvaluateRequest, job_settings, model_identity, open_engine, run_evaluate, run_key
from clkt.packs.verdict import CELL_AGREEMENT, METRIC_TOLERANCE, AnswerKey, Verdict, draw, judge, judge_open, new_nonce
from clkt.report.leaderboard_data import OpenReproduction, Reproduction
from clkt.snapshots.layout import load_snapshot_dir
from clkt.targets.loader import resolve_target
from storage.engine import Store
from storage.snapshots import find_snapshot
from storage.submissions import set_reproduction

__all__ = [
    "Plan", "answers_of", "answers_of_rows", "open_answers_of", "open_plan_engine", "plan_reproduction",
    "run_reproduction", "save_reproduction",
]



@dataclass(frozen=True, kw_only=True)
class Plan:
    """A checked re-run: what runs (`request`) and which questions are compared (`questions`)."""

    pack_sha256: str
    request: EvaluateRequest
    qids: list[int]  # the pack's test questions: `k` of them are drawn once the jobs are done
    k: int | None
    work: Path
    notes: list[str]  # where the model here is not the pack's (its weights' sha256 or revision differ)
    open_qids: list[int]  # the pack's open questions, re-generated and `k` of them drawn ([]: none compared)

    @property
    def compared(self) -> int:
        """How many questions will be compared."""
        return len(self.qids) if self.k is None else min(self.k, len(self.qids))


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


def open_answers_of(blob: bytes | None) -> list[OpenAnswerRow]:
    """A stored pack's open answers (`storage.submissions.submissions_open_answers`: as scored at intake) as the
    pack's rows, their text only: a re-run scores them again beside the re-generated ones."""
    return [OpenAnswerRow(train_lang=i.train_lang, variant=i.variant.value, split=i.split, lang=i.lang, qid=i.qid,
                          entity_id=i.entity_id, answer=i.answer) for i in decode_scored(blob)]


def _gpu(own: GpuSettings, manifest: PackManifest, *, open_answers: bool) -> GpuSettings:
    """This service's `[gpu]` with the pack's job settings (the ones a job computes with) over it, with the open
    pass only where the pack's open answers are compared (`open_answers`)."""
    theirs = {k: v for k, v in manifest.strategy.settings.items() if k in job_settings(own)}
    try:
        return GpuSettings.model_validate({**own.model_dump(), **theirs, "open_answers": open_answers})
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"pack {manifest.snapshot.id}/{manifest.model.name}: its setting "
                        f"{'.'.join(str(x) for x in err['loc'])} cannot be used here ({err['msg']})") from e


def _open_pool(sha256: str, manifest: PackManifest, open_qids: Iterable[int], notes: list[str]) -> list[int]:
    """The open questions to re-generate: the pack's, where it declares this code's prompt version (another is
    refused, naming both; none: a note, and none re-generated)."""
    pool = sorted(set(open_qids))
    declared = manifest.open_prompt_version
    if not pool:
        return []
    if declared is None:
        notes.append("the pack declares no prompt version for its open answers (made before packs recorded it): "
                     "its letters are re-run, its open rows stay unverified")
        return []
    if declared != ANSWER_PROMPT_VERSION:
        raise UserError(f"pack {sha256[:12]}: its open answers were generated with prompt version {declared}, this "
                        f"service's is {ANSWER_PROMPT_VERSION}: they cannot be re-generated here to compare (re-run "
                        f"the pack with a clkt of prompt version {declared}, or make it again with this one)")
    return pool


async def plan_reproduction(
    store: Store, sha256: str, manifest: PackManifest, qids: Iterable[int], *, k: int | None, gpu: GpuSettings,
    data_dir: Path, model: str | None = None, open_qids: Iterable[int] = (),
) -> Plan:
    """The re-run of the pack `sha256` (its manifest, its answers' questions `qids`, its open answers' `open_qids`),
    checked: its snapshot's export here, its settings, its open prompt version, its model readable (`model` in place
    of the pack's: where this service holds the same weights; `UserError` otherwise); nothing runs, nothing is stored."""
    pool = sorted(set(qids))
    draw(pool, k, nonce="")  # a bad K: one line, before anything runs
    notes: list[str] = []
    opened = _open_pool(sha256, manifest, open_qids, notes)
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
    notes += [f"the model here ({target.model}) has {what} {mine[:12]}, the pack's {theirs[:12]}: its letters may differ"
              for what, mine, theirs in (("weights sha256", here.weights_sha256, m.weights_sha256),
                                         ("revision", here.revision, m.revision))
              if mine and theirs and mine != theirs]
    work = data_dir / "reproduce" / sha256[:16]
    req = EvaluateRequest(snapshot_dir=folder, target=target, strategy=manifest.strategy.name,
                          train_langs=list(manifest.strategy.train_languages),
                          gpu=_gpu(gpu, manifest, open_answers=bool(opened)),
                          out=work / "pack", data_dir=data_dir, device=gpu.devices[0], keep_work=True)
    load_snapshot_dir(folder)  # its files match its manifest (SnapshotError otherwise)
    return Plan(pack_sha256=sha256, request=req, qids=pool, k=k, work=work, notes=notes, open_qids=opened)


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


def _answer_key(folder: Path) -> dict[tuple[int, str], str]:
    data = load_snapshot_dir(folder)
    return {(q.qid, lang): q.answer for lang, rows in data.questions.items() for q in rows}


def _verdicts(rows: Iterable[OpenAnswerRow], plan: Plan, key: OpenKey) -> dict[AnswerKey, str]:
    """The normaliser's verdict of each open answer (of the plan's open questions), scored here against the
    snapshot's open questions (`key`) as the intake scores them."""
    wanted = set(plan.open_qids)
    mine = [r for r in rows if r.qid in wanted and r.qid in key.splits.get(r.split, {})]
    return {(i.train_lang, OPEN_SCORER, i.variant.value, i.lang, i.qid): str(i.verdict) for i in rescore(mine, key)}


def _open_result(v: Verdict) -> OpenReproduction:
    return OpenReproduction(prompt_version=ANSWER_PROMPT_VERSION, checked=v.checked, agreed=v.agreed,
                            questions=len(v.questions), rate=v.agreed / v.checked if v.checked else 0.0, cells=v.cells,
                            failed=v.failed)


async def run_reproduction(plan: Plan, answers: dict[AnswerKey, str | None], *, engine: JobEngine,
                           progress: Callable[[str], None], opened: Iterable[OpenAnswerRow] = ()) -> Reproduction:
    """Run the plan's jobs on `engine` (`open_plan_engine`; resuming an interrupted re-run), then draw the questions
    from a fresh nonce and judge the pack by cell (`clkt.packs.verdict.judge`), and its open answers `opened` by the
    verdicts of the re-generated ones where the plan compares them (`judge_open`)."""
    shutil.rmtree(plan.request.out, ignore_errors=True)  # a pack an interrupted re-run wrote: its jobs are read back
    done = await run_evaluate(plan.request, progress=progress, engine=engine)
    rerun = read_pack(plan.request.out)
    key = _answer_key(plan.request.snapshot_dir)
    languages = sorted({lang for (_, lang) in key})
    v = judge(answers, rerun.predictions, plan.qids, plan.k, nonce=new_nonce(), key=key, languages=languages)
    o = None
    if plan.open_qids:
        okey = snapshot_open_key(plan.request.snapshot_dir, plan.request.target.name)
        o = judge_open(_verdicts(opened, plan, okey), _verdicts(rerun.open_answers, plan, okey), plan.open_qids,
                       plan.k, nonce=v.nonce)
    gpu = plan.request.gpu
    return Reproduction(checked=v.checked, agreed=v.agreed, questions=len(v.questions),
                        rate=v.agreed / v.checked if v.checked else 0.0, threshold=CELL_AGREEMENT,
                        reproduced=v.reproduced and (o is None or o.reproduced), engine=done.engine,
                        engine_address=gpu.ray_address if done.engine == "ray" else None, ran_on=done.ran_on,
                        at=datetime.now(UTC).replace(microsecond=0).isoformat(), nonce=v.nonce, cells=v.cells,
                        deltas=v.deltas, tolerance=METRIC_TOLERANCE, failed=v.failed or (o.failed if o else None),
                        open=_open_result(o) if o is not None else None)


async def save_reproduction(store: Store, plan: Plan, result: Reproduction) -> None:
    """Store the result on the pack's row (replacing an earlier re-run's) and remove the re-run's work folder."""
    async with store.transaction() as s:
        if not await set_reproduction(s, plan.pack_sha256, result.model_dump(mode="json")):
            raise UserError(f"pack {plan.pack_sha256[:12]} is not submitted in this store")
    shutil.rmtree(plan.work, ignore_errors=True)
    with contextlib.suppress(OSError):
        plan.work.parent.rmdir()  # `<data_dir>/reproduce` once no other re-run is under way
