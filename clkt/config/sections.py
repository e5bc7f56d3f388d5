"""The runtime sections: `[snapshot]`, `[gpu]`, `[daemon]`, `[http]` and `[replay]`."""

from __future__ import annotations

import ipaddress
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from clkt.config._base import Section
from clkt.config.spec import ScorerLiteral
from clkt.facts import Domain

__all__ = ["DaemonSettings", "GpuSettings", "HttpSettings", "ReplaySettings", "SnapshotSettings"]


class SnapshotSettings(Section):
    # monthly/weekly/daily: calendar periods (UTC), built when they close or when the quotas fill early;
    # rolling: non-overlapping windows of `rolling_days` complete days, built as soon as the quotas fill
    cadence: Literal["monthly", "weekly", "daily", "rolling"] = "monthly"
    rolling_days: int = Field(default=30, ge=1, le=366)
    quotas: dict[Domain, int] = Field(
        default_factory=lambda: {Domain.movies: 30, Domain.music: 30, Domain.sports: 20, Domain.disasters: 20}
    )
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    val_ratio: float = Field(default=0.2, gt=0, lt=1)
    # fictional entities per spec domain in every snapshot's control split (0: none); see clkt.snapshots.control
    control_entities: int = Field(default=2, ge=0, le=100)
    allow_partial: bool = False
    out_dir: Path = Path("snapshots")
    webhook_url: str | None = None
    check_interval_s: float = Field(default=60.0, gt=0, le=86400)

    @field_validator("quotas")
    @classmethod
    def _quotas(cls, v: dict[Domain, int]) -> dict[Domain, int]:
        if any(n < 0 for n in v.values()):
            raise ValueError("quotas must be >= 0")
        return v


class GpuSettings(Section):
    enabled: bool = True
    devices: list[str] = Field(default_factory=lambda: ["auto"], min_length=1)  # "auto", "cpu", "cuda:0"
    lora_r: int = Field(default=16, ge=1, le=4096)
    lora_alpha: int = Field(default=32, ge=1, le=65536)
    lora_dropout: float = Field(default=0.1, ge=0, lt=1)
    learning_rate: float = Field(default=5e-4, gt=0, le=1)
    full_ft_learning_rate: float = Field(default=2e-5, gt=0, le=1)  # strategy full-ft: every weight trains
    max_grad_norm: float = Field(default=1.0, ge=0, le=1e6)  # 0: no clipping
    batch_size: int = Field(default=1, ge=1, le=4096)
    epochs: int = Field(default=5, ge=1, le=1000)
    # None: the attention projections; "all-linear": every linear layer but the output head (peft's rule)
    target_modules: list[str] | Literal["all-linear"] | None = None
    max_seq_len: int = Field(default=1024, ge=16, le=1_048_576)
    packing: bool = False
    # None: each target's own `scorers`, else by its kind (base: option-loglik; instruct: generate)
    scorers: list[ScorerLiteral] | None = Field(default=None, min_length=1)
    parse: Literal["strict", "reference"] = "strict"  # how `generate` reads the answer letter
    # CircularEval beside the plain letter scorers (generate, letter-logprob): each test question under the four
    # rotations of its options, right only if right under all, stored as `<scorer>-circular` (clkt.evaluate.circular)
    circular: bool = False
    max_new_tokens: int = Field(default=64, ge=1, le=65536)
    eval_batch_size: int = Field(default=8, ge=1, le=4096)
    job_timeout_s: float = Field(default=6 * 3600, gt=0, le=30 * 86400)
    max_attempts: int = Field(default=3, ge=1, le=100)
    torch_threads: int | None = Field(default=None, ge=1, le=1024)
    seed: int = Field(default=0, ge=0, le=2**32 - 1)

    @field_validator("target_modules", mode="before")
    @classmethod
    def _modules(cls, v: Any) -> Any:
        if v is None or v == "all-linear":
            return v
        if not isinstance(v, list) or not v or not all(isinstance(m, str) and m.strip() for m in v):
            raise ValueError('must be "all-linear" or a non-empty list of module names (e.g. ["q_proj", "v_proj"])')
        return v


class DaemonSettings(Section):
    grace_period_s: float = Field(default=30.0, ge=0, le=3600)
    lease_s: float = Field(default=300.0, gt=0, le=7 * 86400)
    poll_interval_s: float = Field(default=2.0, gt=0, le=3600)
    restart_backoff_max_s: float = Field(default=60.0, gt=0, le=86400)
    min_free_disk_mb: int = Field(default=200, ge=0, le=100_000_000)
    # tries of every stage task (gate, probe, generate, verify, translate) before it is `failed`
    max_attempts: int = Field(default=5, ge=1, le=100)
    # one try of a stage task runs at most this long; past it the try fails ("timed out") and is retried
    task_timeout_s: float = Field(default=1800.0, gt=0, le=86400)


HostName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.\-]+$|^\[[0-9A-Fa-f:.]+\]$")]


class HttpSettings(Section):
    enabled: bool = True
    host: str = Field(default="127.0.0.1", min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\-\[\]]+$")
    port: int = Field(default=8765, ge=0, le=65535)  # 0: a free port
    # the status pages (`/`, `/entities`, `/snapshots`) beside /healthz /status /metrics
    pages: bool = True
    # Host header names accepted besides the loopback names and `host` itself (DNS rebinding: others get 421)
    allowed_hosts: list[HostName] = Field(default_factory=list, max_length=32)
    page_size: int = Field(default=50, ge=5, le=500)  # rows per page of the entity table
    refresh_s: int = Field(default=15, ge=0, le=3600)  # the overview reloads itself every refresh_s (0: never)

    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False


class ReplaySettings(Section):
    """The bundled replay server of recorded real API responses (tests and the offline demo)."""

    enabled: bool = False
    redate: bool = True  # move recorded items into a recent window so they pass the temporal gate
    redate_end: date | None = None  # None: today
    redate_days: int = Field(default=28, ge=1, le=3650)
    faults: dict[str, Any] = Field(default_factory=dict)
