"""The spec a claimed GPU job runs with (`JobSpec`), built from its typed record.

A job's stored config is a `GpuSettings` (`GpuJobRecord.config`; None: the consumer's own `[gpu]`): what the
job computes is its own, where it runs (`ENGINE_FIELDS`) always the consumer's. Its target comes from the
spec's targets by name; its snapshot's export folder and the target's exclusions on the snapshot from the store.
A job that cannot run as configured raises `JobSetupError`: it fails for good at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from clkt.config import GpuSettings, TargetSettings
from clkt.config.spec import Strategy, training_seed
from clkt.errors import JobError, SnapshotError
from clkt.inject.contract import JobSpec
from clkt.layout import base_cache_dir, job_dir
from clkt.roster.exclusions import excluded_public_ids
from storage.engine import Store
from storage.gpu_jobs import GpuJobRecord
from storage.snapshots import find_snapshot

__all__ = ["ENGINE_FIELDS", "JobSetupError", "SpecBuilder", "job_gpu"]

# the `[gpu]` keys that say where jobs run: always the consumer's own, whatever a job's stored config says
ENGINE_FIELDS = ("engine", "ray_address", "ray_namespace", "num_gpus", "num_cpus", "resources", "ray_max_jobs", "ray_worker_dir")


class JobSetupError(JobError):
    """The job cannot run as configured (unknown target, no snapshot export, invalid job config): it fails
    for good at once, without spending its retries."""


def job_gpu(job: GpuJobRecord, gpu: GpuSettings) -> GpuSettings:
    """The job's GPU settings: its stored config with the consumer's engine (`gpu`), or `gpu` when it has none;
    its `seed` the job's training seed (`training_seed`: the settings' seed + the job's seed of `spec.seeds`)."""
    if job.config_error is not None:
        raise JobSetupError(f"job config is invalid: {job.config_error}")
    if job.config is not None:
        try:
            gpu = GpuSettings.model_validate({**job.config.model_dump(), **{k: getattr(gpu, k) for k in ENGINE_FIELDS}})
        except ValidationError as e:
            raise JobSetupError(f"job config is invalid: {e.errors()[0]['msg']}") from e
    return gpu.model_copy(update={"seed": training_seed(gpu.seed, job.seed)}) if job.seed else gpu


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecBuilder:
    """Builds the `JobSpec` of a claimed job (see the module docstring)."""

    gpu: GpuSettings  # the consumer's: the default job config and the engine
    targets: Sequence[TargetSettings]
    data_dir: Path

    def target(self, job: GpuJobRecord) -> TargetSettings:
        target = next((t for t in self.targets if t.name == job.target_model), None)
        if target is None:
            names = [t.name for t in self.targets]
            raise JobSetupError(f"target model {job.target_model!r} is not in the spec (targets: {names})")
        return target

    async def build(self, store: Store, job: GpuJobRecord, *, device: str) -> JobSpec:
        """The job's spec; `JobSetupError` when it cannot run, `ValidationError` when the spec is invalid (a
        stored strategy the contract does not know)."""
        target = self.target(job)
        async with store.session() as s:
            snap = await find_snapshot(s, job.snapshot_id)
            try:  # the target's exclusions on the snapshot: the job runs on the rest
                exclude = await excluded_public_ids(s, job.snapshot_id, job.target_model) if snap is not None else []
            except SnapshotError as e:
                raise JobSetupError(str(e)) from e
        if snap is None or not snap.export_path:
            raise JobSetupError(f"snapshot {job.snapshot_id} has no export directory")
        gpu = job_gpu(job, self.gpu)
        data_dir = self.data_dir.resolve()
        return JobSpec(
            job_id=job.id, snapshot_id=job.snapshot_id, snapshot_dir=Path(snap.export_path).resolve(), target=target,  # noqa: ASYNC240 - once per job
            # a stored name (str); JobSpec validates it against the Literal (else ValidationError: a permanent failure)
            strategy=cast(Strategy, job.strategy), train_lang=job.train_lang, gpu=gpu, data_dir=data_dir,
            artifacts_dir=job_dir(data_dir, job.id), device=device,
            base_cache_dir=base_cache_dir(data_dir, job.snapshot_id), exclude_entities=exclude,
        )
