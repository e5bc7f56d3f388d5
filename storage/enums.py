"""The statuses and stage names of the pipeline: `str` enums, readable in SQL and in `clkt status`.

They are the vocabulary every layer shares, so they live apart from the tables: code above `storage/`
imports them from here and never imports `storage.models`.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["EntityStatus", "LeaseStatus", "LlmBatchRequestState", "LlmBatchState", "QuestionStatus", "SnapshotStatus", "SnapshotTargetStatus", "Stage"]


class EntityStatus(str, Enum):
    discovered = "discovered"  # crawled, document rendered, waiting for the gate
    ineligible = "ineligible"  # failed the temporal gate for some target model
    probing = "probing"  # probe + judge in progress
    known = "known"  # some target model already knows it: dropped
    generating = "generating"  # qa-gen / verify / translate in progress
    ready = "ready"  # verified, translated questions exist
    rejected = "rejected"  # no question survived verification
    failed = "failed"  # a stage gave up on it (see Task.last_error)
    expired = "expired"  # ready, but in no snapshot `snapshot.carry_max_periods` periods after its own: dropped


class LeaseStatus(str, Enum):
    pending = "pending"
    leased = "leased"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


class Stage(str, Enum):
    gate = "gate"
    probe = "probe"
    generate = "generate"
    verify = "verify"
    translate = "translate"  # type: ignore[assignment]  # the member shadows str.translate; the stage keeps its name


class QuestionStatus(str, Enum):
    generated = "generated"
    verified = "verified"
    rejected = "rejected"
    translated = "translated"
    dropped = "dropped"  # translation failed its checks


class SnapshotStatus(str, Enum):
    building = "building"
    frozen = "frozen"
    failed = "failed"
    superseded = "superseded"


class SnapshotTargetStatus(str, Enum):
    probing = "probing"  # a target added after the freeze is being asked about the snapshot's entities
    ready = "ready"  # valid for the target (minus its exclusions): its GPU jobs may run
    out_of_window = "out_of_window"  # the period is before the target's cutoff + buffer: never valid for it


class LlmBatchState(str, Enum):
    pending = "pending"  # our row exists; the provider may or may not have the batch yet (reconcile on restart)
    submitted = "submitted"  # the provider's batch id is known; polled until it ends
    ended = "ended"  # results collected into the requests


class LlmBatchRequestState(str, Enum):
    queued = "queued"  # waiting for the next batch
    submitted = "submitted"  # in batch `batch_id`
    done = "done"  # a result arrived (succeeded or errored): `result_status`, `result_body`
