"""The bundled replay server of recorded real API responses (tests, the offline demo, the crawl bench)."""

from __future__ import annotations

from clkt.replay.faults import FaultKind, FaultPlan, FaultRule
from clkt.replay.routes import ORIGINALS_HEADER, REDATED_HEADER, REPLAY_HEADER
from clkt.replay.server import ReplayServer, RequestStats, start_replay

__all__ = [
    "ORIGINALS_HEADER",
    "REDATED_HEADER",
    "REPLAY_HEADER",
    "FaultKind",
    "FaultPlan",
    "FaultRule",
    "ReplayServer",
    "RequestStats",
    "start_replay",
]
