"""What a publish revision of a snapshot is built from, and whether two revisions are the same.

A **publish revision** of a snapshot on a repo and branch is one Hub commit. It is not a rebuild of the snapshot:
the frozen folder (and its id and hashes) never changes. What a revision is built from is its `PublishState`:

- the frozen snapshot (id, content sha256);
- whether it is held back (`Hold`: it is among the newest `publish.hold_back_periods` frozen snapshots of its spec):
  a held snapshot publishes nothing that names one of its entities or states one of its facts (no questions of
  either split, no documents, no predictions, no adapters; layout 2, issue 35), so `hold_documents` is its `held`;
- its retractions (the retracted qids);
- its report: the fingerprint of the finished GPU jobs of its current report (`storage.reports.current_report`),
  None while its jobs run;
- what is included (report, predictions, job configs, adapters).

`state_key` is the sha256 of that state. A publish whose state key is the one of the revision the Hub already
has is a no-op; any other state is the next revision (n + 1). The key and the revision number travel in the
commit's message (`marker`), so the Hub's own history says which revision it holds (`parse_marker`), whatever
the local store remembers; the marker also names the folder's layout (`parse_layouts`; a marker without one is of
layout 1, whose held revisions published their validation questions and, by `publish.hold_documents`, documents).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, timedelta

from pydantic import BaseModel, ConfigDict, ValidationError

from clkt.config import PublishSettings
from clkt.errors import ClktError
from clkt.snapshots.content import canonical_json
from clkt.snapshots.period import Cadence, Period, parse_period, period_of
from clkt.snapshots.stored import stored_manifest
from storage.engine import Session
from storage.enums import SnapshotStatus
from storage.reports import ReportRecord, current_report
from storage.retractions import RetractionRecord, retractions_of
from storage.snapshots import SnapshotRecord, list_snapshots

__all__ = [
    "LAYOUT",
    "Hold",
    "Included",
    "PublishState",
    "SnapshotPlan",
    "hold_of",
    "marker",
    "parse_layouts",
    "parse_marker",
    "plan_snapshot",
]

LAYOUT = 2  # the layout of a published snapshot's folder; part of the state (a new layout is a new revision)
# 1: a held snapshot published its validation questions (and, by publish.hold_documents, its documents); 2: nothing
LEAKY_LAYOUT = 1
_CADENCES: dict[str, Cadence] = {"monthly": "monthly", "weekly": "weekly", "daily": "daily", "rolling": "rolling"}
_MARKER = re.compile(r"^clkt-publish: snapshot=(?P<sid>\S+) revision=(?P<rev>\d+) state=(?P<key>[0-9a-f]{64})"
                     r"(?: layout=(?P<layout>\d+))?$", re.M)


class Included(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    report: bool
    predictions: bool
    configs: bool
    adapters: bool

    @classmethod
    def of(cls, publish: PublishSettings) -> Included:
        return cls(report=publish.include_report, predictions=publish.include_predictions,
                   configs=publish.include_configs, adapters=publish.include_adapters)


class PublishState(BaseModel):
    """What one publish revision of a snapshot is built from (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    layout: int = LAYOUT
    snapshot_id: str
    content_sha256: str
    held: bool
    hold_documents: bool  # layout 2: the same as `held` (a held snapshot's documents are always held)
    retracted: list[int]  # sorted public qids
    report_fingerprint: str | None
    include: Included

    @property
    def key(self) -> str:
        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Hold:
    """Whether a snapshot's test questions are held back, and until when."""

    periods: int  # publish.hold_back_periods
    newer: int  # frozen snapshots of the spec with a later period
    until_period: str | None  # the period whose snapshot's freezing releases it (held only)
    expected: date | None  # when that snapshot is expected to freeze: its period's end (held only)

    @property
    def held(self) -> bool:
        return self.newer < self.periods

    def describe(self) -> str:
        if not self.held:
            return "released" if self.periods else "not held"
        when = f" (expected by {self.expected.isoformat()})" if self.expected else ""
        return f"held until the snapshot of {self.until_period} is frozen{when}"


@dataclass(frozen=True, kw_only=True)
class SnapshotPlan:
    """A frozen snapshot as a publish revision would see it now."""

    record: SnapshotRecord
    hold: Hold
    retractions: list[RetractionRecord]
    report: ReportRecord | None
    state: PublishState


def _period_key(r: SnapshotRecord) -> tuple[str, str]:
    m = r.manifest or {}
    return (str(m.get("period_start") or r.period), r.period)


def _advance(p: Period, n: int, *, rolling_days: int) -> Period:
    for _ in range(n):
        if p.cadence == "rolling":
            p = Period(cadence="rolling", label=(p.end + timedelta(days=rolling_days - 1)).date().isoformat(),
                       start=p.end, end=p.end + timedelta(days=rolling_days))
        else:
            p = period_of(p.end, p.cadence)
    return p


async def hold_of(session: Session, record: SnapshotRecord, *, periods: int) -> Hold:
    """The hold of a frozen snapshot: held while fewer than `periods` frozen snapshots of its spec are newer."""
    mine = _period_key(record)
    frozen = [r for r in await list_snapshots(session, spec=record.spec) if r.status is SnapshotStatus.frozen]
    newer = sum(1 for r in frozen if _period_key(r) > mine)
    if newer >= periods:
        return Hold(periods=periods, newer=newer, until_period=None, expected=None)
    try:
        manifest = stored_manifest(record.manifest)
    except ValidationError:
        manifest = None
    until: Period | None = None
    cadence = _CADENCES.get(manifest.cadence) if manifest is not None else None
    if manifest is not None and cadence is not None:
        try:
            days = max(1, (date.fromisoformat(manifest.period_end) - date.fromisoformat(manifest.period_start)).days)
            until = _advance(parse_period(record.period, cadence, rolling_days=days), periods, rolling_days=days)
        except (ValueError, ClktError):
            until = None
    return Hold(periods=periods, newer=newer, until_period=until.label if until else None,
                expected=until.end.date() if until else None)


async def plan_snapshot(session: Session, record: SnapshotRecord, *, publish: PublishSettings) -> SnapshotPlan:
    """The state a publish revision of `record` (a frozen snapshot) would have now."""
    hold = await hold_of(session, record, periods=publish.hold_back_periods)
    retractions = await retractions_of(session, [record.id])
    report = await current_report(session, record.id) if (publish.include_report or publish.include_predictions
                                                          or publish.include_configs or publish.include_adapters) else None
    state = PublishState(
        snapshot_id=record.id, content_sha256=record.content_sha256, held=hold.held,
        hold_documents=hold.held, retracted=sorted(r.qid for r in retractions),
        report_fingerprint=report.fingerprint if report is not None else None, include=Included.of(publish),
    )
    return SnapshotPlan(record=record, hold=hold, retractions=retractions, report=report, state=state)


def marker(snapshot_id: str, revision: int, state_key: str) -> str:
    """The line of a commit message that names the snapshot, the publish revision and its state."""
    return f"clkt-publish: snapshot={snapshot_id} revision={revision} state={state_key} layout={LAYOUT}"


def parse_marker(text: str) -> list[tuple[str, int, str]]:
    """Every (snapshot id, revision, state key) a commit message names."""
    return [(m["sid"], int(m["rev"]), m["key"]) for m in _MARKER.finditer(text)]



def parse_layouts(text: str) -> dict[tuple[str, int], int]:
    """The folder layout of every (snapshot id, revision) a commit message names (1 when its marker names none)."""
    return {(m["sid"], int(m["rev"])): int(m["layout"] or LEAKY_LAYOUT) for m in _MARKER.finditer(text)}
