"""The wiring: which services the daemon runs for a given configuration, and which section(s) of it each gets.

This module and `clkt.daemon` (with the entry points: `run_daemon.py`, `clkt.process`, the CLI commands) are
the only readers of the whole `Settings`; every service, worker and page receives its own section(s) in
its constructor. Each area registers its services here (source pollers, the stage workers of the flow,
snapshot builder, GPU consumer, report writer, the open track's jury, publisher), and the hooks that join areas without one importing
the other (the GPU consumer's commit hook: the retention of a committed job's folder). What a service is:
`clkt.context.Service`. Registering one name twice raises.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.backend import AgentBackend
from clkt.config import Settings
from clkt.context import Service
from clkt.incontext.service import InContextService
from clkt.inject.commit import CommitHook
from clkt.inject.consumer import GpuConsumer
from clkt.openqa.jury_stage import JuryStage, OnGraded
from clkt.pipeline.backends import build_backend
from clkt.pipeline.stage_worker import StageConfig
from clkt.pipeline.stages import stage_services
from clkt.preflight import publish_token
from clkt.publish.service import PublishService, freeze_hook
from clkt.report.service import ReportService, write_report_files
from clkt.report.window import default_query
from clkt.retention.apply import after_job_commit
from clkt.roster.service import LateTargetService
from clkt.snapshots.builder import BuildConfig
from clkt.snapshots.service import SnapshotBuilder
from clkt.sources.board import SourceBoard
from clkt.sources.poller import source_services
from clkt.targets.loader import MODEL_CACHE, probe_device
from clkt.telemetry import Metrics
from clkt.web.intake import IntakeConfig
from clkt.web.intake_gate import IntakeLimits, Submitters
from clkt.web.pages import PageContext
from storage.engine import Store
from storage.gpu_jobs import snapshot_jobs_finished

__all__ = [
    "agent_backend", "build_services", "commit_hook", "gpu_consumer", "intake_config", "jury_report_hook", "jury_stage",
    "page_context", "publish_service",
    "snapshot_config",
    "stage_config",
]


def stage_config(settings: Settings) -> StageConfig:
    """What the stage workers of the flow receive."""
    return StageConfig(
        daemon=settings.daemon, spec=settings.spec, agents=settings.agents, data_dir=settings.data_dir,
        device=probe_device(settings.gpu), secret=settings.secret, locality_entities=settings.snapshot.locality_entities,
    )


def snapshot_config(settings: Settings) -> BuildConfig:
    """What building a snapshot reads (the builder service and `clkt snapshot build`)."""
    return BuildConfig(spec=settings.spec, snapshot=settings.snapshot, agents=settings.agents,
                       offline_demo=settings.offline_demo)


def page_context(
    settings: Settings, *, store: Store, board: SourceBoard | None = None,
    paused: Callable[[], str | None] = lambda: None, owner: str | None = None, restarts: dict[str, int] | None = None,
) -> PageContext:
    """The status pages' context: the daemon passes its source board, `clkt serve` none."""
    return PageContext(
        store=store, http=settings.http, spec=settings.spec, snapshot=settings.snapshot, sources=settings.sources,
        agents=settings.agents, daemon=settings.daemon, data_dir=settings.data_dir, offline_demo=settings.offline_demo,
        board=board, paused=paused, owner=owner, restarts=restarts if restarts is not None else {},
    )


def commit_hook(settings: Settings) -> CommitHook:
    """What the GPU consumer does after each job's commit: the retention of the job's folder (`[retention]`)."""
    data_dir, retention = settings.data_dir, settings.retention

    async def after_commit(store: Store, *, job_id: int) -> None:
        await after_job_commit(store, job_id=job_id, data_dir=data_dir, retention=retention)

    return after_commit


def gpu_consumer(settings: Settings, *, devices: list[str] | None = None, burst: bool = False) -> GpuConsumer:
    """The GPU consumer (the daemon's `gpu-consumer`, `clkt worker`): its sections, the spec's targets, and the
    commit hook."""
    return GpuConsumer(gpu=settings.gpu, daemon=settings.daemon, targets=settings.spec.targets, data_dir=settings.data_dir,
                       devices=devices, burst=burst, on_commit=commit_hook(settings))


def jury_report_hook(settings: Settings) -> OnGraded:
    """What the jury's stage does once a snapshot's answers are all graded: its report written again (with the jury's
    figure), when every GPU job of the snapshot has finished (else the report writer writes it after them)."""
    data_dir, spec = settings.data_dir, settings.spec

    async def rewrite(store: Store, snapshot_id: str) -> None:
        async with store.session() as s:
            if not await snapshot_jobs_finished(s, snapshot_id):
                return
        await write_report_files(store, snapshot_id, data_dir=data_dir, spec=spec)

    return rewrite


def jury_stage(settings: Settings, *, burst: bool = False) -> JuryStage:
    """The daemon's `open-jury` stage (`[agents.jury]`), its report hook wired."""
    return JuryStage(agents=settings.agents, daemon=settings.daemon, secret=settings.secret, burst=burst,
                     on_graded=jury_report_hook(settings))


def agent_backend(settings: Settings, *, store: Store, metrics: Metrics | None = None) -> AgentBackend:
    """The stages' one agent backend, from `[agents]` (its LLM calls cached in `store`)."""
    return build_backend(settings.agents, languages=settings.spec.languages, secret=settings.secret, store=store,
                         metrics=metrics)


def publish_service(settings: Settings, *, burst: bool = False) -> PublishService:
    """The daemon's `publisher`; a `ConfigError` (nothing started) when its Hub token is not in the environment."""
    token = publish_token(settings)
    return PublishService(publish=settings.publish, daemon=settings.daemon, spec_name=settings.spec.name,
                          data_dir=settings.data_dir, token=token, burst=burst)


def build_services(settings: Settings, *, board: SourceBoard) -> list[Service]:
    """Every service of the daemon; the pollers report on `board` (the one the status pages read)."""
    services: list[Service] = []
    # --- sources (clkt.sources) ---
    services.extend(source_services(sources=settings.sources, domains=settings.spec.domains, daemon=settings.daemon,
                                    board=board, secret=settings.secret))
    # --- the pipeline's stages, gate to translate (clkt.pipeline.flow); the probe's model cache sized by [gpu] ---
    gb = settings.gpu.probe_cache_gb
    MODEL_CACHE.configure(size=settings.gpu.probe_cache_size, max_bytes=int(gb * 2**30) if gb is not None else None)
    services.extend(stage_services(stage_config(settings)))
    # --- snapshot builder (clkt.snapshots), and the publisher's tasks in its freezing transaction (clkt.publish) ---
    services.append(SnapshotBuilder(config=snapshot_config(settings), gpu=settings.gpu,
                                    on_frozen=freeze_hook(settings.publish)))
    # --- targets over time (clkt.roster): a target added after a freeze, ready on a snapshot once probed ---
    services.append(LateTargetService(spec=settings.spec, daemon=settings.daemon, gpu=settings.gpu))
    # --- GPU consumer (clkt.inject / clkt.evaluate), and the report of each snapshot once its jobs finished ---
    if settings.gpu.enabled:
        services.append(gpu_consumer(settings))
        services.append(ReportService(data_dir=settings.data_dir, daemon=settings.daemon, spec=settings.spec))
    # --- the in-context track of the API targets on each frozen snapshot (clkt.incontext) ---
    if InContextService.wanted(settings.spec):
        services.append(InContextService(spec=settings.spec, agents=settings.agents, gpu=settings.gpu,
                                         daemon=settings.daemon, data_dir=settings.data_dir, secret=settings.secret))
    # --- the open track's jury of LLM judges, grading the stored open answers ([agents.jury]; clkt.openqa) ---
    if JuryStage.wanted(settings.agents):
        services.append(jury_stage(settings))
    # --- publishing to the Hugging Face Hub by itself ([publish] repo + on_freeze / on_report) ---
    if settings.publish.automatic:
        services.append(publish_service(settings))
    names = [s.name for s in services]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"services registered twice: {sorted(dup)}")
    return services


def intake_config(settings: Settings, store: Store) -> IntakeConfig | None:
    """The result packs' upload, when `[http] intake_tokens_file` is set or `intake_token_env` names a variable that
    holds a token (else None: off)."""
    h = settings.http
    token = settings.secret(h.intake_token_env)
    operator = token.get_secret_value() if token is not None else None
    if not operator and h.intake_tokens_file is None:
        return None
    limits = IntakeLimits(rate_per_hour=h.intake_rate_per_hour, burst=h.intake_burst, concurrent=h.intake_concurrent,
                          total_concurrent=h.intake_total_concurrent, read_timeout_s=h.intake_read_timeout_s,
                          upload_timeout_s=h.intake_upload_timeout_s)
    return IntakeConfig(store=store, submitters=Submitters.of(operator_token=operator, tokens_file=h.intake_tokens_file),
                        buffer_days=settings.spec.temporal_buffer_days, max_bytes=h.intake_max_bytes, limits=limits,
                        board=default_query(settings.spec, settings.snapshot))
