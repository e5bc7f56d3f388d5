"""The runtime sections: `[snapshot]`, `[gpu]`, `[daemon]`, `[http]` and `[replay]`."""

from __future__ import annotations

import importlib.util
import ipaddress
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from clkt.config._base import Section
from clkt.config.spec import ScorerLiteral
from clkt.domains import DOMAINS
from clkt.facts import Domain

__all__ = ["DaemonSettings", "GpuSettings", "HttpSettings", "ReplaySettings", "SnapshotSettings"]

def _default_quotas() -> dict[Domain, int]:
    """Entities per period of every registered domain, from its spec, in the registry's order."""
    return {Domain(name): spec.quota for name, spec in DOMAINS.items()}


class SnapshotSettings(Section):
    """When snapshots are built and what each holds (`clkt.snapshots`)."""

    # monthly/weekly/daily: calendar periods (UTC), built when they close or when the quotas fill early;
    # rolling: non-overlapping windows of `rolling_days` complete days, built as soon as the quotas fill
    cadence: Literal["monthly", "weekly", "daily", "rolling"] = "monthly"
    rolling_days: int = Field(default=30, ge=1, le=366)  # the window of cadence "rolling"
    quotas: dict[Domain, int] = Field(default_factory=_default_quotas)  # entities per domain and period (each domain's own)
    seed: int = Field(default=0, ge=0, le=2**32 - 1)  # of the selection, the option shuffles and the validation split
    val_ratio: float = Field(default=0.2, gt=0, lt=1)  # the share of facts (qids) held out for validation, in every language
    # fictional entities per spec domain in every snapshot's control split (0: none); see clkt.snapshots.control
    control_entities: int = Field(default=2, ge=0, le=100)
    # entities a target already knew (the probe's "known") that get questions for the locality split, at most per
    # snapshot (and per month of occurrence in the probe); 0: no locality split. See clkt.snapshots.locality
    locality_entities: int = Field(default=20, ge=0, le=1000)
    allow_partial: bool = False  # freeze a closed period under its quotas (else it waits, and its entities are carried)
    # a ready entity in no snapshot once its own period froze (late, over quota, or of a period that never filled)
    # is carried into the next snapshot that freezes while that snapshot's period starts within this many days of
    # the entity's own date; past it the entity is dropped as `expired` (0: nothing is carried). clkt.snapshots.carry
    carry_max_days: int = Field(default=92, ge=0, le=3660)
    out_dir: Path = Path("snapshots")  # where frozen snapshots are written: <out_dir>/<spec>/<period>/
    webhook_url: str | None = None  # a JSON notice is POSTed here when a snapshot freezes (None: none)
    check_interval_s: float = Field(default=60.0, gt=0, le=86400)  # how often the builder looks at the periods

    @field_validator("quotas")
    @classmethod
    def _quotas(cls, v: dict[Domain, int]) -> dict[Domain, int]:
        if any(n < 0 for n in v.values()):
            raise ValueError("quotas must be >= 0")
        return v


class GpuSettings(Section):
    """The GPU queue: the injection jobs (the paper's LoRA settings by default), their scoring and where they run."""

    enabled: bool = True  # false: no GPU job is queued or run by this daemon
    devices: list[str] = Field(default_factory=lambda: ["auto"], min_length=1)  # "auto", "cpu", "cuda:0"
    lora_r: int = Field(default=16, ge=1, le=4096)  # LoRA rank (the paper: 16)
    lora_alpha: int = Field(default=32, ge=1, le=65536)  # LoRA alpha (the paper: 32)
    lora_dropout: float = Field(default=0.1, ge=0, lt=1)  # LoRA dropout (the paper: 0.1)
    learning_rate: float = Field(default=5e-4, gt=0, le=1)  # of the LoRA strategies (the paper: 5e-4)
    full_ft_learning_rate: float = Field(default=2e-5, gt=0, le=1)  # strategy full-ft: every weight trains
    # per strategy, a learning rate in place of the two above, e.g. { "sft-facts-lora" = 5e-4 } beside a higher
    # `learning_rate` for cpt-lora (its hundred-odd short answers do not train at the rate a dozen documents want)
    learning_rates: dict[str, float] = Field(default_factory=dict, max_length=64, exclude_if=lambda v: not v)
    max_grad_norm: float = Field(default=1.0, ge=0, le=1e6)  # 0: no clipping
    batch_size: int = Field(default=1, ge=1, le=4096)  # documents per optimizer step (the paper: 1)
    epochs: int = Field(default=5, ge=1, le=1000)  # the best epoch is chosen on the validation questions (the paper: 5)
    # None: the attention projections; "all-linear": every linear layer but the output head (peft's rule)
    target_modules: list[str] | Literal["all-linear"] | None = None
    max_seq_len: int = Field(default=1024, ge=16, le=1_048_576)  # tokens of a training document (longer: truncated)
    packing: bool = False  # true: the documents are packed into blocks of max_seq_len tokens instead
    # None: each target's own `scorers`, else by its kind (base: option-loglik; instruct: generate)
    scorers: list[ScorerLiteral] | None = Field(default=None, min_length=1)
    parse: Literal["strict", "reference"] = "strict"  # how `generate` reads the answer letter
    # CircularEval beside the plain letter scorers (generate, letter-logprob): each test question under the four
    # rotations of its options, right only if right under all, stored as `<scorer>-circular` (clkt.evaluate.circular)
    circular: bool = False
    max_new_tokens: int = Field(default=64, ge=1, le=65536)  # of the generate scorer (it stops once the letter is decided)
    # None: found automatically (the largest that fits: `eval_batch_max` on a GPU; on a CPU 16 for generation and 8
    # for the other passes, `clkt.evaluate.memory`; halved on out-of-memory); a number: that size (an out-of-memory
    # error retries the job at half of it)
    eval_batch_size: int | None = Field(default=None, ge=1, le=4096)
    eval_batch_max: int = Field(default=64, ge=1, le=4096)  # where the automatic size starts on a GPU
    job_timeout_s: float = Field(default=6 * 3600, gt=0, le=30 * 86400)  # one try of a GPU job; past it the try fails
    max_attempts: int = Field(default=3, ge=1, le=100)  # tries of a GPU job before it is failed
    torch_threads: int | None = Field(default=None, ge=1, le=1024)  # torch's CPU threads in a job (None: torch's choice)
    # jobs at once on the "cpu" device (None: as many as the cores hold at torch_threads each and the memory at 4 GB
    # each; 1 when torch_threads is unset: `clkt.cpu_share.job_slots`)
    cpu_jobs: int | None = Field(default=None, ge=1, le=256)
    # deterministic kernels (`torch.use_deterministic_algorithms`; on CUDA also a fixed cuBLAS workspace): an op
    # without a deterministic kernel fails the job instead of running. Slower; what it changes is measured by
    # `bench/seeds.py --deterministic` (bench/results/demo-spread.json)
    deterministic: bool = False
    # the open track (issue 47): where the snapshot has short-answer questions, the local target answers them greedily
    # in every test language before and after injection (`clkt.inject.open_pass`); false: the MCQs only. What it adds
    # to a job is its summary's `open_answer_s` (the demo's is in README, Open answers)
    open_answers: bool = True
    seed: int = Field(default=0, ge=0, le=2**32 - 1)  # the training seed (plus each of spec.seeds)
    # -- where GPU jobs run (clkt.inject.engine) --
    engine: Literal["local", "ray"] = "local"  # local: a child process per device; ray: Ray work on a cluster
    # the cluster's address (`ray start --head` prints it: "<head ip>:6379"), or "auto" (the local one)
    ray_address: str | None = Field(default=None, max_length=512, validate_default=True)
    ray_namespace: str = Field(default="clkt", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")  # of the jobs' actors
    num_gpus: float = Field(default=1.0, gt=0, le=1024)  # per job; fractions share a GPU between small jobs
    num_cpus: float = Field(default=1.0, ge=0, le=1024)  # per job
    resources: dict[str, float] = Field(default_factory=dict, max_length=32)  # custom Ray resources per job
    ray_max_jobs: int = Field(default=8, ge=1, le=4096)  # jobs in flight on the cluster at once
    # on each worker node: scratch space of its jobs and the converted embedded models (None: <tmp>/clkt-ray)
    ray_worker_dir: Path | None = None
    # -- sized for 7-9B models --
    gradient_checkpointing: bool = False  # recompute activations in the backward pass: less memory, ~30 % slower
    # None: transformers' choice for the model; "flash_attention_2" needs the flash-attn package (checked at start)
    attn_implementation: Literal["sdpa", "eager", "flash_attention_2"] | None = Field(default=None, validate_default=True)
    # None: `batch_size`; smaller: each batch of `batch_size` runs in micro-batches with the gradients accumulated
    # (same update; an out-of-memory error in training retries the job at half the micro-batch)
    micro_batch_size: int | None = Field(default=None, ge=1, le=4096)
    # -- the probe stage's local targets --
    # None: a GPU that no job trains on when the machine has more than one, else the first of `devices`, shared
    # (then bounded by `probe_cache_size` models and `probe_cache_gb` of weights)
    probe_device: str | None = Field(default=None, min_length=1, max_length=64)
    probe_cache_size: int = Field(default=2, ge=1, le=16)  # targets kept loaded, least recently used evicted
    probe_cache_gb: float | None = Field(default=None, gt=0, le=100_000)  # bound of their weights (None: by count)

    @field_validator("attn_implementation")
    @classmethod
    def _attention(cls, v: str | None, info: ValidationInfo) -> str | None:
        # on the local engine the jobs run here: an implementation that is not installed is refused at start
        # (on Ray the nodes are checked by the job itself, which fails at once with the reason)
        if v == "flash_attention_2" and info.data.get("engine", "local") == "local" and not _installed("flash_attn"):
            raise ValueError('"flash_attention_2" needs the flash-attn package, which is not installed '
                             '(pip install flash-attn, on a CUDA machine), or use "sdpa"')
        return v

    @field_validator("ray_address")
    @classmethod
    def _address(cls, v: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("engine") != "ray":
            return v
        if not v or not v.strip():
            raise ValueError('engine = "ray" needs the address of a running cluster (`ray start --head` prints it, '
                             'e.g. "10.0.0.5:6379"; "auto" for the cluster of this machine)')
        if not _installed("ray"):
            raise ValueError("engine = \"ray\" needs the ray package, which is not installed (pip install 'clkt[ray]')")
        return v.strip()

    @field_validator("learning_rates")
    @classmethod
    def _rates(cls, v: dict[str, float]) -> dict[str, float]:
        from clkt.config.strategies import check_strategy  # a name no strategy declares is a typo, never ignored

        for name, rate in v.items():
            check_strategy(name)
            if not 0 < rate <= 1:
                raise ValueError(f"learning_rates: {name} = {rate} is not in (0, 1]")
        return v

    @field_validator("resources")
    @classmethod
    def _resources(cls, v: dict[str, float]) -> dict[str, float]:
        for name, amount in v.items():
            if not name.strip() or name in ("CPU", "GPU", "memory", "object_store_memory"):
                raise ValueError(f"{name!r} is not a custom resource name (use num_cpus / num_gpus for CPU and GPU)")
            if not 0 < amount <= 1e6:
                raise ValueError(f"resource {name!r}: {amount} must be > 0 and <= 1e6")
        return v

    @field_validator("target_modules", mode="before")
    @classmethod
    def _modules(cls, v: Any) -> Any:
        if v is None or v == "all-linear":
            return v
        if not isinstance(v, list) or not v or not all(isinstance(m, str) and m.strip() for m in v):
            raise ValueError('must be "all-linear" or a non-empty list of module names (e.g. ["q_proj", "v_proj"])')
        return v


MAX_CLOCK_SPEED = 100_000.0  # a simulated day in under a second of real time
CLOCK_START_MIN = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_START_MAX = datetime(2100, 1, 1, tzinfo=UTC)
def _installed(module: str) -> bool:
    """Whether `module` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class DaemonSettings(Section):
    """The daemon's stage workers: leases, polling, retries, timeouts, and how it stops."""

    grace_period_s: float = Field(default=30.0, ge=0, le=3600)  # on stop: how long work in flight may finish
    lease_s: float = Field(default=300.0, gt=0, le=7 * 86400)  # a claimed task's lease (renewed while it runs)
    poll_interval_s: float = Field(default=2.0, gt=0, le=3600)  # how often an idle stage worker looks for work
    restart_backoff_max_s: float = Field(default=60.0, gt=0, le=86400)  # a crashed service restarts after a doubling wait, up to this
    min_free_disk_mb: int = Field(default=200, ge=0, le=100_000_000)  # below it free in data_dir, every worker pauses
    # tries of every stage task (gate, probe, generate, verify, translate) before it is `failed`
    max_attempts: int = Field(default=5, ge=1, le=100)
    # one try of a stage task runs at most this long; past it the try fails ("timed out") and is retried
    task_timeout_s: float = Field(default=1800.0, gt=0, le=86400)
    # TEST SETTING, a simulated calendar: the daemon's clock starts at `clock_start` (timezone-aware) and runs
    # `clock_speed` times faster than real time (polling, periods, leases, breakers, backoffs); unset: real time
    clock_start: datetime | None = None
    clock_speed: float = Field(default=1.0, ge=1.0, le=MAX_CLOCK_SPEED)  # TEST SETTING (above)

    @field_validator("clock_start")
    @classmethod
    def _aware_start(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return None
        if v.tzinfo is None or v.utcoffset() is None:
            raise ValueError("needs a timezone (e.g. 2026-01-01T00:00:00Z): a naive time is ambiguous")
        if not CLOCK_START_MIN <= v.astimezone(UTC) <= CLOCK_START_MAX:
            raise ValueError(f"must lie between {CLOCK_START_MIN:%Y-%m-%d} and {CLOCK_START_MAX:%Y-%m-%d}")
        return v.astimezone(UTC)

    @model_validator(mode="after")
    def _speed_needs_start(self) -> DaemonSettings:
        if self.clock_speed != 1.0 and self.clock_start is None:
            raise ValueError("clock_speed needs clock_start (the simulated calendar's first moment)")
        return self

    @property
    def simulated_clock(self) -> bool:
        return self.clock_start is not None


HostName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.\-]+$|^\[[0-9A-Fa-f:.]+\]$")]


class HttpSettings(Section):
    """The daemon's HTTP endpoint: /healthz /status /metrics, the status pages and the result packs' intake."""

    enabled: bool = True  # false: no port is opened
    # beyond loopback is accepted with a warning: the endpoint has no authentication
    host: str = Field(default="127.0.0.1", min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\-\[\]]+$")
    port: int = Field(default=8765, ge=0, le=65535)  # 0: a free port
    # the status pages (`/`, `/entities`, `/snapshots`) beside /healthz /status /metrics
    pages: bool = True
    # Host header names accepted besides the loopback names and `host` itself (DNS rebinding: others get 421)
    allowed_hosts: list[HostName] = Field(default_factory=list, max_length=32)
    page_size: int = Field(default=50, ge=5, le=500)  # rows per page of the entity table
    refresh_s: int = Field(default=15, ge=0, le=3600)  # the overview reloads itself every refresh_s (0: never)
    # result packs uploaded to `POST /packs` (`clkt.web.intake`): off unless the environment variable named here holds
    # the intake token, which every upload carries as `Authorization: Bearer <token>`
    intake_token_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    intake_max_bytes: int = Field(default=64 << 20, ge=1 << 10, le=1 << 30)  # an upload's largest body (413 past it)
    # one `NAME sha256:HEX` line per submitter: each uploads with a token of their own, kept here only as its sha256
    # (`clkt intake-token NAME` prints a new token and its line); the operator's token above is one more submitter
    intake_tokens_file: Path | None = None
    intake_rate_per_hour: float = Field(default=30.0, gt=0, le=100_000)  # uploads per submitter (429 past it)
    intake_burst: int = Field(default=5, ge=1, le=1000)  # uploads a submitter may send at once before the rate applies
    intake_concurrent: int = Field(default=1, ge=1, le=64)  # uploads of one submitter in hand at once (429 past it)
    intake_total_concurrent: int = Field(default=4, ge=1, le=256)  # of all submitters (503 past it)
    intake_read_timeout_s: float = Field(default=30.0, gt=0, le=3600)  # a stalled sender is cut off (408)
    intake_upload_timeout_s: float = Field(default=600.0, gt=0, le=86_400)  # one whole body

    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False


class ReplaySettings(Section):
    """The bundled replay server of recorded real API responses (tests and the offline demo), or, with
    `mode = "generator"`, a living upstream: a stream of new fictional entities for every source."""

    enabled: bool = False  # true: the sources read from the replay server on loopback, not the real APIs
    mode: Literal["recorded", "generator"] = "recorded"  # the recorded real responses, or the generator's stream
    redate: bool = True  # move recorded items into a recent window so they pass the temporal gate
    redate_end: date | None = None  # None: today
    redate_days: int = Field(default=28, ge=1, le=3650)  # ... into the days before redate_end
    faults: dict[str, Any] = Field(default_factory=dict)  # TEST SETTING: failures the server injects (clkt.replay.faults)
    # generator mode: the stream's seed, its rate (new entities per source per week of the clock) and the
    # moment it began (nothing is published before it; unset: the stream has always been flowing)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    entities_per_week: float = Field(default=3.0, ge=0.01, le=1000.0)
    generator_start: datetime | None = None

    @field_validator("generator_start")
    @classmethod
    def _aware_generator_start(cls, v: datetime | None) -> datetime | None:
        if v is not None and (v.tzinfo is None or v.utcoffset() is None):
            raise ValueError("needs a timezone (e.g. 2026-01-01T00:00:00Z): a naive time is ambiguous")
        return v.astimezone(UTC) if v is not None else None
