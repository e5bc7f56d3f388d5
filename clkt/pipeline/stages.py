"""The generator stage workers the daemon runs (probe, generate, verify, translate).

`stage_services()` checks the agent backend's configuration first (a missing API key for a configured
hosted model is a `ConfigError` at start-up). The temporal gate's worker is registered by the sources area.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clkt.config import Settings
from clkt.pipeline.backends import check_backend_config, uses_batches
from clkt.pipeline.batches import BatchService
from clkt.pipeline.generate import GenerateWorker
from clkt.pipeline.probe import ProbeWorker
from clkt.pipeline.translate import TranslateWorker
from clkt.pipeline.verify import VerifyWorker

if TYPE_CHECKING:
    from clkt.context import Service

__all__ = ["stage_services"]


def stage_services(settings: Settings) -> list[Service]:
    check_backend_config(settings)
    n = settings.agents.concurrency
    services: list[Service] = [
        ProbeWorker(),  # several entities at once: their prompts share one local generation
        GenerateWorker(concurrency=n),
        VerifyWorker(concurrency=n),
        TranslateWorker(concurrency=n),
    ]
    if uses_batches(settings):
        services.append(BatchService())
    return services
