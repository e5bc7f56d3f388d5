"""Selecting and freezing one snapshot of a spec for a period.

`build_snapshot` selects the items (`select`), lays out their content (`content`), writes every export
into a staged folder (`export`), and only then commits the `Snapshot` row as frozen, with its
`SnapshotItem` references, an `Event` and whatever the `on_frozen` hook adds in the same transaction (the
service enqueues the GPU jobs there): `storage.snapshots.freeze_snapshot` writes them. A failure anywhere
leaves no folder and no row. The control split
(`control`: `snapshot.control_entities` fictional entities per domain, from the seed) is attached to the
content before anything is written, so it is part of the content hash and the id. The locality split
(`locality`: up to `snapshot.locality_entities` entities a target already knew, with their questions, from the
store) is written beside it, listed in the manifest but not hashed into the id.

The selection is also offered the ready entities of earlier periods that no snapshot holds (`carry`: taken first,
within the quotas, named in the manifest's `carried` with their own dates); the freeze records where every selected
entity landed (`storage.placements`, one snapshot per entity) and drops as `expired` the entities that waited past
`snapshot.carry_max_days`, in the same transaction. A forced rebuild never takes back what a later snapshot carried.

An under-quota period returns `BuildResult(status=under_quota)` with what is missing per domain (unless
`snapshot.allow_partial`). A frozen period is rebuilt only with `force=True`, which gives the new build the
next `revision` (part of the hashed content, so a new id) and marks the old one `superseded`.

What a build reads from the configuration is a `BuildConfig`: the spec, the `[snapshot]` section, the
`[agents]` section (named in the manifest) and whether the offline demonstration built it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path

from clkt.config import AgentSettings, SnapshotSettings, SpecSettings
from clkt.errors import SnapshotError, UserError
from clkt.openqa.from_llm import OpenRoles
from clkt.snapshots.carry import CarryOffer, carry_offer
from clkt.snapshots.content import SnapshotContent, assemble_content
from clkt.snapshots.control import attach_control, control_info
from clkt.snapshots.export import StagedDir, snapshot_dir, write_tree
from clkt.snapshots.layout import AgentInfo, CarriedEntity, DomainCounts, SnapshotManifest, TargetInfo
from clkt.snapshots.locality import plan_locality
from clkt.snapshots.open import attach_open, open_unsupported
from clkt.snapshots.open_llm import attach_open_llm
from clkt.snapshots.period import Period, parse_period
from clkt.snapshots.select import DomainShortfall, Selection, load_candidates, select_items
from storage.engine import Session, Store
from storage.placements import NewPlacement, placed_in_other_periods
from storage.snapshots import (
    FrozenHook,
    NewSnapshot,
    NewSnapshotItem,
    count_revisions,
    find_snapshot,
    freeze_snapshot,
    frozen_snapshot,
)
from storage.types import utcnow

__all__ = [
    "BuildConfig",
    "BuildResult",
    "BuildStatus",
    "SnapshotExists",
    "build_snapshot",
    "check_spec",
    "clkt_version",
    "make_counts",
    "plan_selection",
    "resolve_period",
]


@dataclass(frozen=True, kw_only=True)
class BuildConfig:
    """What building a snapshot reads from the configuration."""

    spec: SpecSettings
    snapshot: SnapshotSettings
    agents: AgentSettings  # the agent backend and its models, named in the manifest
    offline_demo: bool = False  # the manifest says the embedded offline demonstration built it


class SnapshotExists(SnapshotError):
    """The period already has a frozen snapshot (rebuild with force)."""

    def __init__(self, snapshot_id: str) -> None:
        self.snapshot_id = snapshot_id
        super().__init__(f"snapshot {snapshot_id} is frozen for this period; use --force to build a new revision")


class BuildStatus(str, Enum):
    frozen = "frozen"
    under_quota = "under_quota"


@dataclass(frozen=True, kw_only=True)
class BuildResult:
    status: BuildStatus
    spec: str
    period: str
    report: list[DomainShortfall]
    excluded: dict[str, int] = field(default_factory=dict)
    snapshot_id: str | None = None
    path: Path | None = None
    partial: bool = False
    superseded: str | None = None
    counts: dict[str, DomainCounts] = field(default_factory=dict)

    @property
    def missing(self) -> dict[str, int]:
        return {r.domain: r.missing for r in self.report if r.missing}

    def describe(self) -> str:
        if self.status is BuildStatus.frozen:
            extra = f" (partial, missing {self.missing})" if self.partial else ""
            return f"froze {self.snapshot_id} at {self.path}{extra}"
        parts = [f"{r.domain}: {r.selected}/{r.quota} (ready {r.ready_in_period}, eligible {r.eligible})" for r in self.report if r.missing]
        return f"{self.spec} {self.period} is under quota, not frozen — " + "; ".join(parts)


def clkt_version() -> str:
    """The installed clkt's version (`clkt.__version__`, from the package metadata)."""
    from clkt import __version__

    return __version__


def check_spec(spec: SpecSettings, requested: str | None) -> str:
    """The spec's name; `requested` (a name given on the command line) must be it."""
    name = spec.name
    if requested is not None and requested != name:
        raise UserError(f"unknown spec {requested!r}: this configuration defines the spec {name!r}")
    return name


def resolve_period(snap: SnapshotSettings, period: str | Period, *, now: datetime) -> Period:
    p = period if isinstance(period, Period) else parse_period(period, snap.cadence, rolling_days=snap.rolling_days)
    if p.start > now:
        raise UserError(f"period {p.label} has not started yet (it begins {p.start.date().isoformat()})")
    return p


@dataclass(frozen=True, kw_only=True)
class _Plan:
    selection: Selection
    excluded: dict[str, int]
    offer: CarryOffer


async def _plan(
    session: Session, *, spec: SpecSettings, snap: SnapshotSettings, period: Period, now: datetime, carry: bool = True
) -> _Plan:
    offer = await carry_offer(session, spec=spec, snap=snap, period=period, now=now) if carry else CarryOffer()
    elsewhere = frozenset(await placed_in_other_periods(session, spec=spec.name, period=period.label))
    pool = await load_candidates(session, spec=spec, period=period, offer=offer, placed_elsewhere=elsewhere)
    sel = select_items(
        pool, spec=spec, quotas={d.value: n for d, n in snap.quotas.items()}, period=period,
        seed=snap.seed, val_ratio=snap.val_ratio,
    )
    return _Plan(selection=sel, excluded=pool.excluded, offer=offer)


async def plan_selection(
    session: Session, *, spec: SpecSettings, snap: SnapshotSettings, period: Period, now: datetime | None = None,
    carry: bool = True,
) -> tuple[Selection, dict[str, int]]:
    """What a build of `period` at `now` would select (with the entities carried in from earlier periods unless
    not `carry`: what the period's own entities fill), and the excluded entities by reason."""
    plan = await _plan(session, spec=spec, snap=snap, period=period, now=now or utcnow(), carry=carry)
    return plan.selection, plan.excluded


def make_counts(content: SnapshotContent) -> dict[str, DomainCounts]:
    n_lang = len(content.languages)
    first = content.languages[0]
    out: dict[str, DomainCounts] = {}
    domains = sorted({d.domain for d in content.docs})
    for d in [*domains, "total"]:
        qs = [q for q in content.questions_in(first) if d in ("total", q.domain)]
        out[d] = DomainCounts(
            entities=len({q.entity_id for q in qs}),
            fact_qas=len(qs),
            val=sum(q.split == "val" for q in qs) * n_lang,
            test=sum(q.split == "test" for q in qs) * n_lang,
        )
    return out


def _manifest(
    config: BuildConfig, content: SnapshotContent, period: Period, sel: Selection, *, partial: bool
) -> SnapshotManifest:
    ag, spec, snap = config.agents, config.spec, config.snapshot
    models = (
        {k: v for k, v in {"judge": ag.judge_model, "generator": ag.generator_model, "verifier": ag.verifier_model,
                           "translator": ag.translator_model}.items() if v}
        if ag.backend == "llm" else {}
    )
    notes: list[str] = []
    if content.redated_entities:
        notes.append(
            f"{content.redated_entities} entities were re-dated by the replay server (offline demonstration): "
            "their dates are not the real event dates"
        )
    if config.offline_demo:
        notes.append("built by the embedded offline demonstration")
    if content.open_info is None:
        notes.append(f"no open track: no short-answer templates in {', '.join(open_unsupported(content.languages))}")
    return SnapshotManifest(
        snapshot_id=content.snapshot_id, spec=content.spec, period=period.label,
        period_start=period.start.date().isoformat(), period_end=period.end.date().isoformat(),
        cadence=period.cadence, seed=content.seed, revision=content.revision, val_ratio=snap.val_ratio,
        partial=partial, content_sha256=content.content_sha256, languages=list(content.languages),
        domains=[d.value for d in spec.domains],
        targets=[TargetInfo(name=t.name, model=t.model, cutoff=t.cutoff) for t in spec.targets],
        agents=AgentInfo(
            backend=ag.backend, models=models, producers=list(content.producers),
            prompt_versions={k: list(v) for k, v in content.prompt_versions.items()},
        ),
        quotas={d.value: n for d, n in snap.quotas.items() if d in spec.domains},
        counts=make_counts(content), missing=sel.missing, redated=content.redated_entities > 0, notes=notes,
        control=control_info(content, domains=_control_domains(spec), per_domain=snap.control_entities),
        open=content.open_info,
    )


def _carried(sel: Selection) -> list[CarriedEntity]:
    """The manifest's record of the entities carried in, by public id (their own dates and periods)."""
    return sorted(
        (CarriedEntity(entity_id=c.entity_id, domain=c.domain, period=c.carried_from,
                       occurred_on=c.occurred_at.date().isoformat() if c.occurred_at else "")
         for c in sel.carried if c.carried_from is not None),
        key=lambda c: c.entity_id,
    )


def _placements(sel: Selection, p: Period) -> list[NewPlacement]:
    return [NewPlacement(entity_id=c.entity_row, own_period=c.carried_from or p.label, carried=c.carried_from is not None)
            for c in sel.entities]


def _items(content: SnapshotContent) -> list[NewSnapshotItem]:
    return [
        NewSnapshotItem(
            question_id=it.question_row, entity_id=it.entity_row, split=it.split, option_order=it.option_order,
            answer_letter=it.answer_letter, qid=it.qid, public_entity_id=it.entity_id,
        )
        for it in content.items
    ]


def _control_domains(spec: SpecSettings) -> list[str]:
    return [d.value for d in spec.domains]


async def _with_open(content: SnapshotContent, config: BuildConfig, p: Period, roles: object | None) -> SnapshotContent:
    """`content` with its open track: from the facts by the template engine, or by the LLM roles of `roles` (the
    agent backend) when `agents.backend` is "llm" (`clkt.snapshots.open_llm`; a `UserError` when `roles` has none:
    never the template's questions in their place)."""
    start, end, domains = p.start.date(), p.end.date(), _control_domains(config.spec)
    per_domain = config.snapshot.control_entities
    if config.agents.backend != "llm":
        return attach_open(content, start=start, end=end, control_domains=domains, per_domain=per_domain)
    if not isinstance(roles, OpenRoles):
        raise UserError(f"agents.backend = 'llm' writes the open track with the LLM roles, but the build was given "
                        f"{type(roles).__name__}, not the LLM agent backend")
    return await attach_open_llm(content, roles=roles, start=start, end=end, control_domains=domains,
                                 per_domain=per_domain, questions_for=config.agents.question_cap,
                                 concurrency=config.agents.concurrency)


async def build_snapshot(
    store: Store,
    config: BuildConfig,
    *,
    period: str | Period,
    spec: str | None = None,
    force: bool = False,
    now: datetime | None = None,
    on_frozen: FrozenHook | None = None,
    allow_partial: bool | None = None,
    open_roles: object | None = None,
) -> BuildResult:
    """Build and freeze the spec's snapshot for `period` (see the module docstring; `open_roles`: `_with_open`'s)."""
    now = now or utcnow()
    snap = config.snapshot
    name = check_spec(config.spec, spec)
    p = resolve_period(snap, period, now=now)
    partial_ok = snap.allow_partial if allow_partial is None else allow_partial
    async with store.session() as s:
        old = await frozen_snapshot(s, name, p.label)
        if old is not None and not force:
            raise SnapshotExists(old.id)
        revision = await count_revisions(s, name, p.label)
        plan = await _plan(s, spec=config.spec, snap=snap, period=p, now=now)
        sel, excluded = plan.selection, plan.excluded
        if not sel.items or (not sel.complete and not partial_ok):
            return BuildResult(status=BuildStatus.under_quota, spec=name, period=p.label, report=sel.report, excluded=excluded)
        content = await assemble_content(
            s, spec=name, period=p.label, seed=snap.seed, revision=revision,
            languages=config.spec.languages, items=sel.items,
        )
        locality = await plan_locality(s, spec=config.spec, period=p, seed=snap.seed, limit=snap.locality_entities)
    content = attach_control(
        content, start=p.start.date(), end=p.end.date(), domains=_control_domains(config.spec),
        per_domain=snap.control_entities,
    )
    content = await _with_open(content, config, p, open_roles)
    manifest = _manifest(config, content, p, sel, partial=not sel.complete)
    manifest = manifest.model_copy(update={"carried": _carried(sel)})
    final = snapshot_dir(snap.out_dir, name, p.label)
    archive = final.parent / "superseded" / old.id if old is not None else None
    StagedDir.sweep(final)
    with StagedDir(final, archive_old_to=archive) as staged:
        manifest = write_tree(content, manifest, staged.tmp, built_at=now.isoformat(), clkt_version=clkt_version(),
                              locality=locality)
        async with store.transaction() as s:
            current = await frozen_snapshot(s, name, p.label)
            if current is not None and (old is None or current.id != old.id):
                raise SnapshotExists(current.id)
            if await find_snapshot(s, content.snapshot_id) is not None:
                raise SnapshotError(f"snapshot {content.snapshot_id} already exists in the store")
            await freeze_snapshot(
                s,
                snapshot=NewSnapshot(
                    id=content.snapshot_id, spec=name, period=p.label, content_sha256=content.content_sha256,
                    seed=content.seed, partial=manifest.partial, manifest=manifest.model_dump(mode="json"),
                    export_path=str(final), built_at=now,
                ),
                items=_items(content),
                supersedes=old.id if old is not None else None,
                superseded_export_path=str(archive) if archive is not None else None,
                event_message=f"froze {content.snapshot_id} ({sum(1 for _ in content.items)} questions)",
                event_data={
                    "snapshot_id": content.snapshot_id, "spec": name, "period": p.label, "partial": manifest.partial,
                    "superseded": old.id if old is not None else None, "path": str(final),
                    "counts": {k: v.model_dump() for k, v in manifest.counts.items()},
                    "open": manifest.open.model_dump() if manifest.open is not None else None,
                },
                on_frozen=on_frozen,
                targets=[t.name for t in config.spec.targets],
                placements=_placements(sel, p),
                expire=plan.offer.expired,
            )
            staged.publish()
        staged.commit()
    return BuildResult(
        status=BuildStatus.frozen, spec=name, period=p.label, report=sel.report, excluded=excluded,
        snapshot_id=content.snapshot_id, path=final, partial=manifest.partial,
        superseded=old.id if old is not None else None, counts=dict(manifest.counts),
    )
