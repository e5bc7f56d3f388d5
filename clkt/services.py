"""Which services the daemon runs for a given configuration.

Each area registers its services here (source pollers, stage workers, snapshot builder, GPU consumer, report
writer).
What a service is: `clkt.context.Service`. Registering one name twice raises.
"""

from __future__ import annotations

from clkt.config import Settings
from clkt.context import Service
from clkt.inject.consumer import GpuConsumer
from clkt.pipeline.gate import GateWorker
from clkt.pipeline.stages import stage_services
from clkt.report.service import ReportService
from clkt.snapshots.service import SnapshotBuilder
from clkt.sources.poller import source_services

__all__ = ["build_services"]


def build_services(settings: Settings) -> list[Service]:
    services: list[Service] = []
    # --- sources (clkt.sources) ---
    services.extend(source_services(settings))
    services.append(GateWorker(settings=settings))
    # --- pipeline stages (clkt.pipeline) ---
    services.extend(stage_services(settings))
    # --- snapshot builder (clkt.snapshots) ---
    services.append(SnapshotBuilder(settings=settings))
    # --- GPU consumer (clkt.inject / clkt.evaluate), and the report of each snapshot once its jobs finished ---
    if settings.gpu.enabled:
        services.append(GpuConsumer(gpu=settings.gpu, daemon=settings.daemon, targets=settings.spec.targets,
                                    data_dir=settings.data_dir))
        services.append(ReportService(data_dir=settings.data_dir, daemon=settings.daemon))
    names = [s.name for s in services]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"services registered twice: {sorted(dup)}")
    return services
