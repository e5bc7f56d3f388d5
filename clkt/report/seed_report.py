"""A snapshot's report when its jobs ran with several training seeds (`spec.seeds`): one number per figure, the
leaderboard row's.

A group (target x strategy x scorer) whose jobs ran with several seeds is read by the rule of every view
(`clkt.report.metric_table`), with the leaderboard's own functions over a window of this one snapshot
(`seed_tables`: `clkt.report.leaderboard.build_rows`, `clkt.report.by_domain.domain_cells`):

- Learn and the learned flags: the exact McNemar on every seed's paired answers together (`clkt.report.learn`);
- Table 2 (`table2.csv`, `metrics.json`, report.md, the size figures, the in-context section's parametric figure):
  each domain's and the `all` cell's mean is the mean over seeds of each seed's mean over the pairs (Transfer over
  the pairs whose train language learned by that rule), its interval the sampling one widened by the between-seed
  term (`clkt.report.seeds`), `avg` (each pair's mean over domains) the same way; the std over pairs and the pair
  counts are those of every seed's answers together (the per-domain board's cell: `pooled_cells`). The `all` cell is
  the leaderboard row's figure;
- the pairs (`pairs.csv`, the heatmaps) sum each pair's contingency over the seeds, as the leaderboard's heatmap
  does (n counts every seed's answer); the asymmetry tests sum each seed's discordant counts (the McNemar on paired
  per-seed answers, as Learn's): `clkt.report.metrics.pair_metrics`, `mcnemar_tests`;
- *Training seeds* shows the spread only (`seed_lines`): each seed's value and the between-seed sd, never a second
  version of the pooled figure.

What is one job's (best epoch, cost, control split, locality, base accuracy, parse failures, the open track) stays
per job: the lowest seed's jobs (`primary_seed`), and the note says so. With one seed per job nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from clkt.report._metric_fields import MetricSummary
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.by_domain import DomainCell, domain_cells
from clkt.report.leaderboard import build_rows, group_answers, window_draws
from clkt.report.leaderboard_data import LeaderRow
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import JobKey, Outcome, SummaryCell, summarize
from clkt.report.window import with_public_ids
from storage.engine import Store
from storage.entity_domains import entity_domains
from storage.gpu_jobs import GpuJobRecord, JobResultRow
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot
from storage.result_packs import result_packs, without_questions
from storage.snapshots import SnapshotRecord

__all__ = ["SEED_HEADER", "SeedTables", "pooled_cells", "primary_seed", "seed_lines", "seed_tables", "table2"]

Group = tuple[str, str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class SeedTables:
    """The groups run with several seeds: their leaderboard rows (pooled over the seeds) and per-domain cells."""

    rows: list[LeaderRow]
    cells: list[DomainCell]

    @property
    def groups(self) -> frozenset[Group]:
        return frozenset((r.target, r.strategy, r.scorer) for r in self.rows)

    def of(self, keep: Callable[[str], bool]) -> SeedTables | None:
        """The rows and cells of the scorers `keep` accepts (None: none of them), e.g. the open track's apart."""
        rows = [r for r in self.rows if keep(r.scorer)]
        return SeedTables(rows=rows, cells=[c for c in self.cells if keep(c.scorer)]) if rows else None


def primary_seed(
    jobs: Sequence[GpuJobRecord], rows: Sequence[JobResultRow],
) -> tuple[list[GpuJobRecord], list[JobResultRow], str | None]:
    """The jobs and results of each (target, strategy)'s lowest seed (what is one job's), and the note that says
    what pools the seeds (None: one seed per job, everything kept)."""
    low: dict[tuple[str, str], int] = {}
    for j in jobs:
        key = (j.target_model, j.strategy)
        low[key] = min(low.get(key, j.seed), j.seed)
    if all(j.seed == low[(j.target_model, j.strategy)] for j in jobs):
        return list(jobs), list(rows), None
    seeds = sorted({j.seed for j in jobs})
    note = (f"the jobs ran with training seeds {', '.join(map(str, seeds))}: every figure of a target and strategy "
            "run with several seeds pools them by the rule of every view (the leaderboard row's figure): Learn and "
            "whether a train language learned on every seed's paired answers together; Table 2's cells the mean over "
            "the seeds [95% CI over entities and seeds]; pairs.csv and the heatmaps each pair's A/B/C/D summed over "
            "the seeds; the asymmetry tests the seeds' discordant counts summed. *Training seeds* shows each seed's "
            "value and the between-seed sd. What is one job's (best epoch, cost, control split, locality, base "
            "accuracy, parse failures, the open track) is the lowest seed's job's")
    return ([j for j in jobs if j.seed == low[(j.target_model, j.strategy)]],
            [r for r in rows if r.seed == low[(r.target_model, r.strategy)]], note)


async def _window(store: Store, snap: SnapshotRecord, done: Sequence[GpuJobRecord], drop: frozenset[int],
                  ) -> tuple[WindowData, dict[int, str]]:
    """A window of this one snapshot over the finished jobs (run on their target's valid entities: nothing is
    excluded here, but the retracted questions `drop`), and the domain of each of its entities."""
    async with store.session() as s:
        packs = [without_questions(p, drop) for p in await result_packs(s, [j.id for j in done])]
        data = await with_public_ids(s, WindowData(
            snapshots=(WindowSnapshot(id=snap.id, spec=snap.spec, period=snap.period, built_at=snap.built_at),),
            ready=frozenset((snap.id, j.target_model) for j in done), exclusions={},
            jobs=tuple(WindowJob(id=j.id, snapshot_id=snap.id, target=j.target_model, strategy=j.strategy,
                                 train_lang=j.train_lang, seed=j.seed) for j in done),
            packs=tuple(packs),
        ))
        domain_of = await entity_domains(s, {int(e) for p in packs for e in np.frombuffer(p.entity_ids, dtype="<i8")})
    return data, domain_of


async def seed_tables(
    store: Store, snap: SnapshotRecord, jobs: Sequence[GpuJobRecord], languages: Sequence[str], *, seed: int,
    drop: frozenset[int] = frozenset(),
) -> SeedTables | None:
    """The rows and per-domain cells of the snapshot's groups run with several seeds, each pooled over its seeds as
    the leaderboard pools them (None: every group ran one seed); `drop`: store question ids left out (retracted)."""
    import asyncio

    done = [j for j in jobs if j.status.value == "done"]
    if len({j.seed for j in done}) < 2:
        return None
    data, domain_of = await _window(store, snap, done, drop)

    def build() -> SeedTables:
        rows = [r for r in build_rows(data, languages, seed=seed, min_questions=0) if r.seeds]
        groups = {(r.target, r.strategy, r.scorer) for r in rows}
        answers = {g: a for g, a in group_answers(data).items() if g in groups}
        draws = window_draws(data, seed=seed, samples=BOOTSTRAP_SAMPLES)
        return SeedTables(rows=rows, cells=domain_cells(answers, languages, domain_of=domain_of, draws=draws))

    return await asyncio.to_thread(build)


def table2(
    outcomes: Sequence[Outcome], every: Sequence[Outcome], languages: Sequence[str], seeded: SeedTables | None, *,
    seed: int, not_learned: set[JobKey], snapshot_id: str, public: Mapping[int, int],
) -> list[SummaryCell]:
    """Table 2: a group of one seed from its answers (`outcomes`: the lowest seed's, `summarize`); a group of
    `seeded` pooled over its seeds (`pooled_cells` on `every` seed's answers)."""
    groups = seeded.groups if seeded is not None else frozenset()
    if not groups:
        return summarize(outcomes, languages, seed=seed, not_learned=not_learned, snapshot_id=snapshot_id, public=public)
    assert seeded is not None
    one = summarize([o for o in outcomes if (o.model, o.strategy, o.scorer) not in groups], languages, seed=seed,
                    not_learned=not_learned, snapshot_id=snapshot_id, public=public)
    counts = summarize([o for o in every if (o.model, o.strategy, o.scorer) in groups], languages, bootstrap=False,
                       not_learned=not_learned, snapshot_id=snapshot_id, public=public)
    return sorted([*one, *pooled_cells(counts, seeded.cells)], key=lambda c: (c.model, c.strategy, c.scorer))


def pooled_cells(counts: Sequence[SummaryCell], cells: Sequence[DomainCell]) -> list[SummaryCell]:
    """Table 2's cells of the groups run with several seeds: the pair counts of `counts` (Table 2 over every seed's
    summed pairs), each metric's mean, std and interval those of the per-domain board's cell (`cells`)."""
    by = {(c.target, c.strategy, c.scorer, c.domain): c for c in cells}
    out: list[SummaryCell] = []
    for c in counts:
        got = by.get((c.model, c.strategy, c.scorer, c.domain))
        if got is None:
            out.append(c)
            continue
        values = {k: MetricSummary(mean=m.mean, std=m.std, ci=m.ci) for k, m in got.metrics.items()}
        out.append(c.model_copy(update={"values": values}))
    return out


def _each(values: dict[int, float | None]) -> str:
    return ", ".join(f"{s}: {'n/a' if v is None else f'{100 * v:.1f}'}" for s, v in sorted(values.items()))


def seed_lines(rows: Sequence[LeaderRow]) -> list[list[str]]:
    """The *Training seeds* table's rows: target, strategy, scorer, seeds, the learned train languages, then per
    metric every seed's value and the between-seed sd (the pooled figure is Table 2's)."""
    out: list[list[str]] = []
    for r in rows:
        per = r.per_seed or {}
        cells: list[str] = []
        for m in PAIR_METRICS:
            sd = r.metric(m.key).seed_std
            cells += [_each(per.get(m.key, {})), "n/a" if sd is None else f"{100 * sd:.1f}"]
        out.append([r.target, r.strategy, r.scorer, " ".join(map(str, r.seeds or [])), ", ".join(r.learned_langs) or "none",
                    *cells])
    return out


SEED_HEADER = ["model", "strategy", "scorer", "seeds", "learned (every seed's answers)",
               *[x for m in PAIR_METRICS for x in (f"{m.label} % per seed", f"{m.label} between-seed sd")]]
