"""The stage workers the daemon runs: one per step of the flow (`clkt.pipeline.flow.FLOW`), in its order,
plus the `llm-batches` service when a stage runs in batch mode.

`stage_services()` builds every worker from its step (`StageWorker.from_config`: the gate resolves the
targets' cutoffs, an unknown one fails the start), then checks the agent backend's configuration (a missing
API key for a configured hosted model is a `ConfigError` at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clkt.pipeline.backends import check_backend_config, uses_batches
from clkt.pipeline.batches import BatchService
from clkt.pipeline.flow import FLOW
from clkt.pipeline.stage_worker import StageConfig

if TYPE_CHECKING:
    from clkt.context import Service

__all__ = ["stage_services"]


def stage_services(config: StageConfig) -> list[Service]:
    services: list[Service] = [step.worker.from_config(step, config) for step in FLOW]
    check_backend_config(config.agents, secret=config.secret)
    if uses_batches(config.agents):
        services.append(BatchService())
    return services
