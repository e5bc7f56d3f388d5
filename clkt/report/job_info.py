"""A snapshot's GPU jobs as the report reads them (`JobInfo`): identity, status, the epochs each track answered
with, the target's family and size, the control and locality counts and the cost, from the stored summary.

A job whose stored summary cannot be read is reported without it, with a note saying so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from clkt.evaluate.summary import JobSummary
from clkt.report.data import JobInfo
from storage.gpu_jobs import GpuJobRecord

__all__ = ["job_infos"]


def job_infos(jobs: Sequence[GpuJobRecord]) -> tuple[list[JobInfo], list[str]]:
    """Each job's `JobInfo`, and a note per job whose summary is unreadable."""
    infos: list[JobInfo] = []
    unreadable: list[str] = []
    for j in jobs:
        try:
            summary = JobSummary.from_stored(j.summary)
        except ValidationError as e:
            summary = None
            unreadable.append(f"job {j.id}: its stored summary is unreadable ({e.errors()[0]['msg']}); reported without it")
        infos.append(JobInfo(
            job_id=j.id, model=j.target_model, strategy=j.strategy, train_lang=j.train_lang, status=j.status.value,
            best_epoch=j.best_epoch, open_epoch=summary.open_epoch if summary else None, error=j.last_error,
            family=summary.target_family if summary else None,
            size_b=summary.target_size_b if summary else None, parse=summary.generate_parse if summary else None,
            control=(summary.control or None) if summary else None,
            **(_cost(summary) if summary else {}),
            locality=(summary.locality or None) if summary else None,
        ))
    return infos, unreadable


def _cost(summary: JobSummary) -> dict[str, Any]:
    """What a job cost, from its summary (`JobInfo`'s cost fields)."""
    return dict(wall_s=summary.wall_s, inject_s=summary.inject_s, peak_memory_bytes=summary.peak_memory_bytes,
                peak_memory_kind=summary.peak_memory_kind)
