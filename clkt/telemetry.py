"""Telemetry: the daemon's Prometheus metrics (prometheus-client), one registry per daemon so tests can run
several. (The paper's benchmark metrics are `clkt.report.metrics`.)
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.http_requests = Counter(
            "clkt_source_requests", "HTTP requests to domain APIs", ["source", "status"], registry=r
        )
        self.entities_ingested = Counter(
            "clkt_entities_ingested", "Entities inserted or updated", ["source", "outcome"], registry=r
        )
        self.records_skipped = Counter(
            "clkt_records_skipped", "Records skipped by reason", ["source", "reason"], registry=r
        )
        self.stage_tasks = Counter("clkt_stage_tasks", "Stage tasks finished", ["stage", "outcome"], registry=r)
        self.llm_calls = Counter("clkt_llm_calls", "LLM calls", ["model", "cached"], registry=r)
        self.llm_tokens = Counter("clkt_llm_tokens", "LLM tokens", ["model", "kind"], registry=r)
        self.llm_cost = Counter("clkt_llm_cost_usd", "LLM cost in USD", ["stage"], registry=r)
        self.gpu_jobs = Counter("clkt_gpu_jobs", "GPU jobs finished", ["outcome"], registry=r)
        self.snapshots = Counter("clkt_snapshots", "Snapshots built", ["outcome"], registry=r)
        self.service_restarts = Counter("clkt_service_restarts", "Service restarts", ["service"], registry=r)
        self.breaker_open = Gauge("clkt_source_breaker_open", "Circuit breaker open (1) per source", ["source"], registry=r)
        self.queue = Gauge("clkt_queue", "Rows by stage and status", ["stage", "status"], registry=r)
        self.entities = Gauge("clkt_entities", "Entities by status", ["status"], registry=r)
        self.paused = Gauge("clkt_claiming_paused", "1 while claiming is paused (disk full, stopping)", registry=r)
        self.stage_seconds = Histogram("clkt_stage_seconds", "Stage task duration", ["stage"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
