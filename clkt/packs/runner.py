"""`clkt evaluate`: a snapshot folder and a model in, a result pack out, with no daemon and no store.

One GPU job per train language, each the very job the queue runs: a `JobSpec` (`clkt.inject.contract`) in a job
folder under `<out>.work/<key>/` (`clkt.layout`: `jobs/<n>/`, the base answers shared through
`jobs/base/<snapshot>/`), run by the engine `gpu.engine` names, built as the GPU queue builds it
(`clkt.inject.consumer.build_engine`): the local one (`python -m clkt.inject.run_job`, a child process per job on
`device`), or Ray work on the cluster at `gpu.ray_address` (`clkt.inject.ray_engine`: the job's inputs shipped, its
files brought back into its folder). `open_engine` has it connected and ready before the first job, else says why
in one line; the runs on a cluster are named by the work folder (`run_key`) and the Ray driver's log is written
there; `engine_settings` applies `--engine` and `--ray-address`. The key hashes what the answers depend on
(snapshot, model, strategy, settings; not where they run), so an interrupted run started again with the same
arguments resumes (a finished job is read back, a local training resumes after its last finished epoch), and other
arguments never reuse its files. The work folder is removed once the pack is written (`keep_work` keeps it).

The locality split's answers (the questions about entities the target knew, when the snapshot has them for its
name: `manifest.locality.known_by`) are read from each job's `predictions.jsonl` (split `locality`; the outcome
carries them only as counts) into the pack's `locality.jsonl`, and metrics.json's kept % is computed from them.
With `probe` the model also answers the recognition probe about every real entity (`clkt.packs.probe_ask`, after
the jobs, in this process on `device`) into the pack's `probe.jsonl`; the taker judges them.

Where the snapshot has an open track and `[gpu] open_answers` is on (the default, as for the queue's jobs), each job
also runs its open pass (`clkt.inject.open_pass`: the short-answer questions answered greedily by the base and the
injected model); the answers are read from each job's outcome (`open_results`) into the pack's `open_answers.jsonl`
(text only, `clkt.packs.open_answers`), and metrics.json's `open` is computed from them as scored here by the
normaliser (the taker scores them again itself); the manifest records the prompt they were generated with
(`open_prompt_version`: `clkt submit --reproduce` re-generates them with it). The flag is part of the work folder's
key, never a setting of the pack's: `open_answers.jsonl` is there or not.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata as md
import platform
import shutil
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from clkt import __version__
from clkt.config import GpuSettings, TargetSettings
from clkt.errors import JobError, SnapshotError, UserError
from clkt.evaluate.results import LOCALITY_SPLIT, ResultItem
from clkt.inject.consumer import build_engine
from clkt.inject.contract import JobFailure, JobOutcome, JobProgress, JobSpec, write_json_atomic
from clkt.inject.engine import EndKind, EngineState, JobEnd, JobEngine, RunningJob
from clkt.inject.job import check_spec
from clkt.inject.ray_engine import DRIVER_LOG
from clkt.inject.spec_builder import ENGINE_FIELDS
from clkt.layout import (
    FAILURE_FILE,
    LOG_FILE,
    OUTCOME_FILE,
    PREDICTIONS_FILE,
    PROGRESS_FILE,
    SPEC_FILE,
    base_cache_dir,
    job_dir,
)
from clkt.openqa.prompts import ANSWER_PROMPT_VERSION
from clkt.packs.archive import ARCHIVE_SUFFIXES
from clkt.packs.format import (
    FORMAT_VERSION,
    EnvironmentInfo,
    LocalityRow,
    ModelIdentity,
    PackManifest,
    PredictionRow,
    SnapshotRef,
    StrategyInfo,
)
from clkt.packs.metrics import compute_metrics
from clkt.packs.open_answers import evaluated_open
from clkt.packs.open_metrics import open_metrics
from clkt.packs.pack import canonical, write_pack
from clkt.packs.probe_ask import ask_probe
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir
from clkt.targets.embedded import EMBEDDED_PREFIX, embedded_model
from clkt.targets.loader import resolve_target

__all__ = [
    "ENGINES", "EvaluateRequest", "Evaluated", "JobFailed", "engine_settings", "job_settings", "open_engine", "run_evaluate",
    "run_key", "work_dir_for",
]

Progress = Callable[[str], None]
# not what a pack's answers are computed with: where the jobs run, and whether the open track is asked (the pack's
# `open_answers.jsonl` says it; the flag is in the work folder's key)
_NOT_SETTINGS = (*ENGINE_FIELDS, "enabled", "devices", "probe_device", "probe_cache_size", "probe_cache_gb",
                 "open_answers")
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
POLL_S = 1.0  # how often a running job's progress is read
ENGINES = ("local", "ray")  # `[gpu] engine`'s values, `--engine`'s choices
READY_TIMEOUT_S = 180.0  # an engine still connecting after this long is refused (the Ray driver gives up after 60 s)


class JobFailed(JobError):
    """A job of the evaluation failed (its reason, and where its log is)."""


@dataclass(frozen=True, kw_only=True)
class EvaluateRequest:
    snapshot_dir: Path
    target: TargetSettings
    strategy: str
    train_langs: list[str]
    gpu: GpuSettings  # the settings the jobs run with (the config's, with the overrides)
    overridden: dict[str, object] = field(default_factory=dict)  # setting -> {"config": ..., "used": ...}
    out: Path
    data_dir: Path  # where embedded models are converted (the config's data_dir)
    device: str = "auto"
    keep_work: bool = False
    probe: bool = False  # ask the probe too (`probe.jsonl`)
    probe_max_new_tokens: int = 96  # `[agents] probe_max_new_tokens`, as the daemon's probe stage


@dataclass(frozen=True, kw_only=True)
class Evaluated:
    out: Path
    pack_sha256: str
    predictions: int
    resumed: list[str]  # train languages whose finished job was read back
    locality: int = 0  # locality answers (locality.jsonl)
    probed: int = 0  # probe answers (probe.jsonl)
    open_answers: int = 0  # open answers (open_answers.jsonl)
    engine: str = "local"  # the engine the jobs ran on (`gpu.engine`)
    ran_on: list[str] = field(default_factory=list)  # where the jobs run now ran ("local", "ray:<node>"), in order


def work_dir_for(out: Path) -> Path:
    """`<out>.work` next to `out` (`pack.tar.gz` -> `pack.work`)."""
    name = out.name
    for suffix in ARCHIVE_SUFFIXES:
        name = name.removesuffix(suffix)
    return out.with_name(f"{name}.work")


def job_settings(gpu: GpuSettings) -> dict[str, object]:
    """What a job computes with: `[gpu]` without where it runs (`ENGINE_FIELDS`, the devices, the probe's)."""
    return {k: v for k, v in gpu.model_dump(mode="json").items() if k not in _NOT_SETTINGS}


def _key(req: EvaluateRequest, snap: SnapshotData) -> str:
    body = [snap.manifest.snapshot_id, snap.manifest.content_sha256, req.target.model_dump(mode="json"), req.strategy,
            job_settings(req.gpu), {"open_answers": req.gpu.open_answers}]
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:16]


def _progress_line(lang: str, p: JobProgress) -> str:
    parts = [f"train {lang}: {p.phase}"]
    if p.total:
        parts.append(f"{p.done}/{p.total}")
    if p.epoch is not None:
        parts.append(f"epoch {p.epoch}")
    if p.loss is not None:
        parts.append(f"loss {p.loss:.3f}")
    return " ".join(parts)


def engine_settings(gpu: GpuSettings, engine: str | None = None, address: str | None = None) -> GpuSettings:
    """`gpu` with where the jobs run: `engine` (`ENGINES`; None: the config's `gpu.engine`) and the Ray cluster's
    `address` (None: the config's `gpu.ray_address`); `UserError` for another engine, an address on the local engine,
    or Ray without an address or without its package (`GpuSettings`' own checks)."""
    if engine is not None and engine not in ENGINES:
        raise UserError(f"--engine {engine!r}: one of {', '.join(ENGINES)}")
    update: dict[str, object] = {}
    if engine is not None:
        update["engine"] = engine
    if address is not None:
        update["ray_address"] = address
    used = update.get("engine", gpu.engine)
    if address is not None and used != "ray":
        raise UserError("--ray-address names the cluster of the Ray engine, and the jobs run on the local one "
                        "(--engine ray, or [gpu] engine = \"ray\")")
    if not update:
        return gpu
    try:
        return GpuSettings.model_validate({**gpu.model_dump(), **update})
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"--engine {used}: {str(err['msg']).removeprefix('Value error, ')}") from e


def run_key(folder: Path) -> str:
    """What names a run's jobs on a Ray cluster (`job-<key>-<n>`): its work folder's, so that a run started again
    finds its jobs still on the cluster, and no other run (nor a daemon's store) uses the same names."""
    return "evaluate-" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:10]


async def _ready(engine: JobEngine) -> None:
    started = time.monotonic()
    while True:
        st = engine.status()
        if st.state is EngineState.ready:
            return
        if st.state is not EngineState.connecting or time.monotonic() - started > READY_TIMEOUT_S:
            where = f" at {st.address}" if st.address else ""
            raise UserError(f"GPU engine {engine.name}{where}: {st.state.value}: {st.detail or 'no reason given'}; "
                            "nothing was run")
        await asyncio.sleep(0.1)


@asynccontextmanager
async def open_engine(gpu: GpuSettings, *, device: str, key: str, log_dir: Path, data_dir: Path) -> AsyncIterator[JobEngine]:
    """The engine `gpu.engine` names, started and ready (as the GPU queue's: `build_engine`): the local one on
    `device`, or Ray (its runs named `job-<key>-<n>`, its driver's log in `log_dir`); `UserError` when the cluster
    cannot be reached or no node offers what a job asks for (`log_dir` then removed when this made it, unless the
    reason names the driver's log). Closed on leaving (runs still going are stopped first by their callers)."""
    had = log_dir.exists()  # noqa: ASYNC240 - once per run
    engine = build_engine(gpu, data_dir=data_dir.resolve(), devices=[device], store_key=key, log_dir=log_dir)  # noqa: ASYNC240 - once per run
    await engine.start()
    try:
        await _ready(engine)
    except BaseException as e:
        await engine.close()
        if not had and DRIVER_LOG not in str(e):  # refused before anything ran: nothing left behind but a log it names
            shutil.rmtree(log_dir, ignore_errors=True)
        raise
    try:
        yield engine
    finally:
        await engine.close()


async def _watch(run: RunningJob, spec: JobSpec, progress: Progress) -> JobEnd:
    """Wait for the job's run, showing its progress; stop it on a timeout or an interruption."""
    shown = ""
    started = time.monotonic()
    try:
        while (end := await run.wait(POLL_S)) is None:
            if time.monotonic() - started > spec.gpu.job_timeout_s:
                raise JobFailed(f"train {spec.train_lang}: still running after {spec.gpu.job_timeout_s:.0f} s (gpu.job_timeout_s); stopped")
            path = spec.artifacts_dir / PROGRESS_FILE
            try:
                line = _progress_line(spec.train_lang, JobProgress.model_validate_json(path.read_bytes()))
            except (OSError, ValueError):
                continue
            if line != shown:
                shown = line
                progress(line)
    except BaseException:
        await run.stop()  # interrupted: the next run resumes from the job's files
        raise
    return end


def _failure(art: Path) -> JobFailure | None:
    fail = art / FAILURE_FILE
    return JobFailure.model_validate_json(fail.read_bytes()) if fail.is_file() else None


async def _run_job(engine: JobEngine, spec: JobSpec, progress: Progress) -> tuple[JobOutcome, bool, str]:
    """The job's outcome (read back when a finished one is there for the same spec), whether it was, and where it
    ran ("" when read back). A run whose cluster node was lost runs again (an attempt spent); one whose engine went
    away fails, and the command started again resumes it."""
    art = spec.artifacts_dir
    art.mkdir(parents=True, exist_ok=True)
    spec_path, outcome_path = art / SPEC_FILE, art / OUTCOME_FILE
    if outcome_path.is_file() and spec_path.is_file() and JobSpec.model_validate_json(spec_path.read_bytes()) == spec:
        return JobOutcome.model_validate_json(outcome_path.read_bytes()), True, ""
    slot = engine.slots()[0]
    for attempt in range(1, spec.gpu.max_attempts + 1):
        for stale in (outcome_path, art / FAILURE_FILE):
            stale.unlink(missing_ok=True)
        write_json_atomic(spec_path, spec)
        progress(f"train {spec.train_lang}: job starts on the {engine.name} engine (attempt {attempt}; log: {art / LOG_FILE})")
        end = await _watch(await engine.submit(spec, spec_path, slot=slot), spec, progress)
        if end.kind is EndKind.unavailable:
            raise JobFailed(f"train {spec.train_lang}: {end.detail or 'the GPU engine went away'}; the same command "
                            "started again resumes")
        if outcome_path.is_file():
            return JobOutcome.model_validate_json(outcome_path.read_bytes()), False, end.where or engine.name
        failure = _failure(art)
        if end.kind is EndKind.lost and attempt < spec.gpu.max_attempts:
            progress(f"train {spec.train_lang}: {end.detail or 'the node running it was lost'}; it runs again")
            continue
        if failure is None or failure.permanent or attempt == spec.gpu.max_attempts:
            why = failure.message if failure else end.detail or "the job process ended without an outcome"
            raise JobFailed(f"train {spec.train_lang}: {why} (log: {art / LOG_FILE})")
        if failure.retry_with is not None:
            smaller = {k: v for k, v in failure.retry_with.model_dump().items() if v is not None}
            spec = spec.model_copy(update={"gpu": spec.gpu.model_copy(update=smaller)})
    raise AssertionError("unreachable")


def _weights_sha256(folder: Path) -> str | None:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(_WEIGHTS))
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        f = hashlib.sha256()
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                f.update(chunk)
        h.update(f"{p.relative_to(folder).as_posix()}\0{f.hexdigest()}\n".encode())
    return h.hexdigest()


def model_identity(target: TargetSettings, data_dir: Path) -> ModelIdentity:
    """The model as given, with its revision (a Hub cache's commit, a bundled package's version) and the sha256 of
    its weights' files when they are on this machine."""
    revision: str | None = None
    if target.model.startswith(EMBEDDED_PREFIX):
        dist = embedded_model(target.model).dist
        revision = f"{dist}=={md.version(dist)}"
    where = resolve_target(target, data_dir)
    weights = None
    if isinstance(where, Path):
        weights = _weights_sha256(where)
        if where.parent.name == "snapshots" and len(where.name) == 40:  # a Hub cache folder: <repo>/snapshots/<commit>
            revision = where.name
    return ModelIdentity(name=target.name, model=target.model, kind=target.kind, revision=revision,
                         weights_sha256=weights, cutoff=target.cutoff)


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _predictions(snap: SnapshotData, outcomes: Sequence[tuple[str, JobOutcome]]) -> list[PredictionRow]:
    rows = {(r.qid, r.lang): r for lang in snap.languages for r in snap.questions_for(lang, "test")}
    out: list[PredictionRow] = []
    for train, outcome in outcomes:
        for r in outcome.results:
            if r.split != "test" or (r.qid, r.lang) not in rows:
                continue
            q = rows[(r.qid, r.lang)]
            out.append(PredictionRow(train_lang=train, scorer=r.scorer, variant=r.variant.value, lang=r.lang, qid=r.qid,
                                     entity_id=q.entity_id, domain=q.domain, predicted=r.predicted, correct=r.correct,
                                     raw=r.raw))
    return out


def _locality(snap: SnapshotData, jobs: Sequence[tuple[str, Path]]) -> list[LocalityRow]:
    """The locality split's answers of each (train language, job folder): its `predictions.jsonl`'s split
    `locality` rows, for questions the snapshot's locality split holds (none without one)."""
    rows = {(r.qid, r.lang): r for lang in snap.languages for r in snap.locality_questions_for(lang)}
    out: list[LocalityRow] = []
    for train, folder in jobs:
        path = folder / PREDICTIONS_FILE  # the job's every answer (`clkt.inject.job`)
        if not rows or not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or f'"{LOCALITY_SPLIT}"' not in line:
                continue
            r = ResultItem.model_validate_json(line)
            q = rows.get((r.qid, r.lang))
            if r.split != LOCALITY_SPLIT or q is None:
                continue
            out.append(LocalityRow(train_lang=train, scorer=r.scorer, variant=r.variant.value, lang=r.lang, qid=r.qid,
                                   entity_id=q.entity_id, domain=q.domain, predicted=r.predicted, correct=r.correct,
                                   raw=r.raw, split="locality"))
    return out


def _manifest(req: EvaluateRequest, snap: SnapshotData, rows: list[PredictionRow], device: str) -> PackManifest:
    m = snap.manifest
    return PackManifest(
        created_at=datetime.now(UTC).replace(microsecond=0).isoformat(), clkt_version=__version__,
        snapshot=SnapshotRef(id=m.snapshot_id, content_sha256=m.content_sha256, spec=m.spec, period=m.period,
                             period_start=m.period_start, languages=list(m.languages)),
        model=model_identity(req.target, req.data_dir),
        strategy=StrategyInfo(name=req.strategy, train_languages=list(req.train_langs), settings=job_settings(req.gpu),
                              overridden=dict(req.overridden)),
        environment=EnvironmentInfo(python=platform.python_version(), platform=platform.platform(), torch=_version("torch"),
                                    transformers=_version("transformers"), peft=_version("peft"), device=device),
        scorers=sorted({r.scorer for r in rows}), files={},
    )


def _specs(req: EvaluateRequest, snap: SnapshotData, root: Path, *, device: str) -> list[JobSpec]:
    bad = [x for x in req.train_langs if x not in snap.languages]
    if bad or not req.train_langs:
        raise UserError(f"train language(s) {bad} are not among snapshot {snap.manifest.snapshot_id}'s {snap.languages}")
    sid = snap.manifest.snapshot_id
    return [
        JobSpec(job_id=n, snapshot_id=sid, snapshot_dir=snap.path.resolve(), target=req.target, strategy=req.strategy,
                train_lang=lang, gpu=req.gpu, data_dir=req.data_dir.resolve(),
                artifacts_dir=job_dir(root, n).resolve(),
                device=device, base_cache_dir=base_cache_dir(root, sid).resolve())
        for n, lang in enumerate(req.train_langs, start=1)
    ]


async def run_evaluate(req: EvaluateRequest, *, progress: Progress, engine: JobEngine | None = None) -> Evaluated:
    """Run the jobs (resuming what a killed run left) and write the pack (see the module docstring). `engine`: one
    the caller opened (`open_engine` with `req.gpu`; `clkt submit --reproduce` checks it before storing anything),
    else the one `req.gpu` names is opened here."""
    if req.out.exists():
        raise UserError(f"{req.out} exists (choose another --out, or remove it)")
    if not req.snapshot_dir.is_dir():
        raise SnapshotError(f"{req.snapshot_dir} is not a snapshot folder")
    snap = load_snapshot_dir(req.snapshot_dir)
    work = work_dir_for(req.out)
    root = work / _key(req, snap)
    # on Ray a job takes the GPUs Ray gives it (device `auto`), as the queue's jobs do
    specs = _specs(req, snap, root, device=req.device if req.gpu.engine == "local" else "auto")
    check_spec(specs[0])  # the strategy's own checks, before any model is loaded
    resolve_target(req.target, req.data_dir)  # a model that cannot be read: one line now, not after a job starts
    if engine is None:
        async with open_engine(req.gpu, device=req.device, key=run_key(root), log_dir=work, data_dir=req.data_dir) as opened:
            return await _evaluate(req, snap, root, specs, opened, progress)
    return await _evaluate(req, snap, root, specs, engine, progress)


async def _evaluate(req: EvaluateRequest, snap: SnapshotData, root: Path, specs: list[JobSpec], engine: JobEngine,
                    progress: Progress) -> Evaluated:
    outcomes: list[tuple[str, JobOutcome]] = []
    resumed: list[str] = []
    ran_on: list[str] = []
    for spec in specs:
        outcome, was_done, where = await _run_job(engine, spec, progress)
        outcomes.append((spec.train_lang, outcome))
        if was_done:
            resumed.append(spec.train_lang)
            progress(f"train {spec.train_lang}: finished before, read back from {spec.artifacts_dir}")
        else:
            ran_on.append(where)
    rows = _predictions(snap, outcomes)
    locality = _locality(snap, [(spec.train_lang, spec.artifacts_dir) for spec in specs])
    manifest = _manifest(req, snap, rows, outcomes[-1][1].device)
    metrics = compute_metrics(rows, snap.languages, format_version=FORMAT_VERSION, locality=locality,
                              snapshot_id=snap.manifest.snapshot_id)
    opened, scored = evaluated_open(snap.path, req.target.name, [(t, o.open_results) for t, o in outcomes],
                                    train_langs=req.train_langs, snapshot_id=snap.manifest.snapshot_id)
    metrics = metrics.model_copy(update={"open": open_metrics(
        scored, req.train_langs, snap.languages, snapshot_id=snap.manifest.snapshot_id, format_version=FORMAT_VERSION)})
    if opened:  # the prompt they were generated with: what a re-run re-generates them with (`clkt.packs.reproduce`)
        manifest = manifest.model_copy(update={"open_prompt_version": ANSWER_PROMPT_VERSION})
    probe = await ask_probe(snap, req.target, data_dir=req.data_dir, device=req.device,
                            max_new_tokens=req.probe_max_new_tokens, progress=progress) if req.probe else []
    sha = write_pack(req.out, manifest, rows, metrics.model_dump(mode="json"), locality, probe, opened)
    if not req.keep_work:
        shutil.rmtree(root, ignore_errors=True)
        work = root.parent
        (work / DRIVER_LOG).unlink(missing_ok=True)  # the Ray driver's, when run_evaluate opened the engine
        if work.is_dir() and not any(work.iterdir()):
            work.rmdir()
    return Evaluated(out=req.out, pack_sha256=sha, predictions=len(rows), resumed=resumed, engine=engine.name,
                     ran_on=ran_on, locality=len(locality), probed=len(probe), open_answers=len(opened))
