"""The typed contract between the GPU consumer (parent) and the job process (child).

The parent writes `JobSpec` as `<artifacts>/spec.json` and starts `python -m clkt.inject.run_job`; the child
writes `JobOutcome` to `<artifacts>/outcome.json` (atomically) on success, or `JobFailure` to
`<artifacts>/failure.json` before exiting with a non-zero status. The records an outcome carries (results,
epochs, the typed summary) are evaluation records, below this module: `clkt.evaluate.results` and
`clkt.evaluate.summary`. The files' names, and the folder's, are `clkt.layout`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clkt.config import GpuSettings, TargetSettings
from clkt.config.strategies import check_strategy
from clkt.evaluate.results import EpochRecord, ResultItem
from clkt.evaluate.summary import JobSummary
from clkt.openqa.results import OpenResultItem

__all__ = [
    "FailureKind",
    "InjectorSpec",
    "JobFailure",
    "JobOutcome",
    "JobProgress",
    "JobSpec",
    "RetryWith",
    "RunEnded",
    "run_fingerprint",
    "write_json_atomic",
]

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FailureKind(str, Enum):
    nan_loss = "nan-loss"
    out_of_memory = "out-of-memory"
    model_unavailable = "model-unavailable"
    bad_input = "bad-input"
    crashed = "crashed"


class InjectorSpec(_Model):
    """What a job tells its strategy's injector about itself: the job, the target, the train language and the GPU
    settings; never where the snapshot lies (its questions, which facts they ask, their answers). The injector's
    documents and the typed facts of their entities come from the job (`clkt.inject.injector.InjectionContext`)."""

    job_id: int
    snapshot_id: str
    target: TargetSettings
    strategy: str
    train_lang: str
    gpu: GpuSettings
    data_dir: Path  # the data directory (what an injector caches across jobs: `memit`'s key statistics)


class JobSpec(_Model):
    job_id: int
    snapshot_id: str
    snapshot_dir: Path
    target: TargetSettings
    strategy: str  # a declared strategy (`clkt.config.strategies`); its injector is `clkt.inject.strategies`
    train_lang: str
    gpu: GpuSettings
    data_dir: Path
    artifacts_dir: Path
    device: str = "auto"
    base_cache_dir: Path | None = None  # base-model answers shared by the jobs of one (snapshot, target)
    # public entity ids (as the snapshot's files name them) whose documents and questions this job leaves out:
    # the target's exclusions on the snapshot (a target added after the freeze recognised them; clkt.roster)
    exclude_entities: list[int] = Field(default_factory=list)
    @field_validator("strategy")
    @classmethod
    def _strategy(cls, v: str) -> str:
        return check_strategy(v)

    def for_injector(self) -> InjectorSpec:
        """The part of the spec a strategy may see (no snapshot folder: an injector cannot read the questions)."""
        return InjectorSpec(job_id=self.job_id, snapshot_id=self.snapshot_id, target=self.target, strategy=self.strategy,
                            train_lang=self.train_lang, gpu=self.gpu, data_dir=self.data_dir)


class JobOutcome(_Model):
    job_id: int
    best_epoch: int
    epochs: list[EpochRecord]
    device: str
    results: list[ResultItem]
    summary: JobSummary  # what the job measured; the consumer completes it (epochs, target, control counts)
    # the control split's answers (split "control"): never stored as question results, never in the real scores
    control_results: list[ResultItem] = Field(default_factory=list)
    # the open track's scored answers, both splits (`clkt.inject.open_pass`); [] without it
    open_results: list[OpenResultItem] = Field(default_factory=list)


class RetryWith(_Model):
    """The smaller sizes an out-of-memory failure asks the next attempt to run with (stored in the job's config)."""

    eval_batch_size: int | None = Field(default=None, ge=1)
    micro_batch_size: int | None = Field(default=None, ge=1)


class JobFailure(_Model):
    kind: FailureKind
    message: str
    permanent: bool  # True: retrying cannot help (NaN, a model that is not there, OOM at the smallest sizes)
    retry_with: RetryWith | None = None  # out of memory: what the next attempt changes


class JobProgress(_Model):
    phase: str
    done: int = 0
    total: int = 0
    epoch: int | None = None
    loss: float | None = None


class RunEnded(_Model):
    """A run that ended and whose files are in the job's folder (`ENDED_FILE`, written by the Ray driver once it
    brought them back): a daemon that restarts before committing them commits that outcome (results or failure)
    instead of running the job again, when the run was of the same spec (`fingerprint`)."""

    fingerprint: str  # run_fingerprint of the spec it ran
    returncode: int
    where: str = ""  # "ray:<node>"


def run_fingerprint(spec: JobSpec) -> str:
    """What identifies a run of `spec`: the spec without this daemon's paths (a run on a cluster is found again by
    it, and an ended run's files are taken by it)."""
    data = spec.model_dump(mode="json", exclude={"snapshot_dir", "data_dir", "artifacts_dir", "base_cache_dir", "device"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def write_text_atomic(path: Path, text: str) -> None:
    """`text` in `path`, whole or not at all: written beside it, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json_atomic(path: Path, model: BaseModel) -> None:
    write_text_atomic(path, json.dumps(model.model_dump(mode="json"), ensure_ascii=False, indent=1))
