"""A snapshot's report when its jobs ran with several training seeds (`spec.seeds`).

The report's tables (Table 2, the pairs, the asymmetry tests) are those of each (target, strategy)'s lowest seed
(`primary_seed`); Learn and the learned flags (which pairs Transfer keeps, how a pair reads) pool every seed's paired
answers, the rule of every view (`clkt.report.metric_table`); the section *Training seeds* pools every seed
as the leaderboard does over a window of this one snapshot (`seed_rows`: `clkt.report.leaderboard.build_rows`,
`clkt.report.seeds.seed_row`): per (target, strategy, scorer) each metric's mean over seeds, the between-seed
std, the interval over entities alone and the one over entities and seeds, and every seed's value. With one seed
per job there is no such section and nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from clkt.report.leaderboard import build_rows
from clkt.report.leaderboard_data import Estimate, LeaderRow
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.window import with_public_ids
from storage.engine import Store
from storage.gpu_jobs import GpuJobRecord, JobResultRow
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot
from storage.result_packs import result_packs
from storage.snapshots import SnapshotRecord

__all__ = ["SEED_HEADER", "primary_seed", "seed_lines", "seed_rows"]


def primary_seed(
    jobs: Sequence[GpuJobRecord], rows: Sequence[JobResultRow],
) -> tuple[list[GpuJobRecord], list[JobResultRow], str | None]:
    """The jobs and results of each (target, strategy)'s lowest seed, and the note that says so (None: one seed
    per job, everything kept)."""
    low: dict[tuple[str, str], int] = {}
    for j in jobs:
        key = (j.target_model, j.strategy)
        low[key] = min(low.get(key, j.seed), j.seed)
    if all(j.seed == low[(j.target_model, j.strategy)] for j in jobs):
        return list(jobs), list(rows), None
    seeds = sorted({j.seed for j in jobs})
    note = (f"the jobs ran with training seeds {', '.join(map(str, seeds))}: Table 2 and the pairs are each target and "
            "strategy's lowest seed's; Learn and whether a train language learned pool every seed's paired answers "
            "(the rule of every view); *Training seeds* pools every seed (mean, between-seed sd, intervals)")
    return ([j for j in jobs if j.seed == low[(j.target_model, j.strategy)]],
            [r for r in rows if r.seed == low[(r.target_model, r.strategy)]], note)


async def seed_rows(
    store: Store, snap: SnapshotRecord, jobs: Sequence[GpuJobRecord], languages: Sequence[str], *, seed: int,
) -> list[LeaderRow]:
    """The (target, strategy, scorer) groups of the snapshot's finished jobs that ran with several seeds, each
    pooled over its seeds (the jobs ran on their target's valid entities: nothing is excluded here)."""
    done = [j for j in jobs if j.status.value == "done"]
    if len({j.seed for j in done}) < 2:
        return []
    async with store.session() as s:
        packs = await result_packs(s, [j.id for j in done])
        data = await with_public_ids(s, WindowData(
            snapshots=(WindowSnapshot(id=snap.id, spec=snap.spec, period=snap.period, built_at=snap.built_at),),
            ready=frozenset((snap.id, j.target_model) for j in done), exclusions={},
            jobs=tuple(WindowJob(id=j.id, snapshot_id=snap.id, target=j.target_model, strategy=j.strategy,
                                 train_lang=j.train_lang, seed=j.seed) for j in done),
            packs=tuple(packs),
        ))
    return [r for r in build_rows(data, languages, seed=seed, min_questions=0) if r.seeds]


def _cell(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    ci = f" [{100 * e.ci[0]:.1f}, {100 * e.ci[1]:.1f}]" if e.ci else ""
    sd = f" ± {100 * e.seed_std:.1f}" if e.seed_std is not None else ""
    samp = f" (entities only [{100 * e.sampling_ci[0]:.1f}, {100 * e.sampling_ci[1]:.1f}])" if e.sampling_ci else ""
    return f"{100 * e.value:.1f}{ci}{sd}{samp}"


def seed_lines(rows: Sequence[LeaderRow]) -> list[list[str]]:
    """The *Training seeds* table's rows: target, strategy, scorer, seeds, then per metric its pooled cell and
    every seed's value."""
    out: list[list[str]] = []
    for r in rows:
        per = r.per_seed or {}
        cells = []
        for m in PAIR_METRICS:
            values = per.get(m.key, {})
            each = ", ".join(f"{s}: {'n/a' if v is None else f'{100 * v:.1f}'}" for s, v in sorted(values.items()))
            cells += [_cell(r.metric(m.key)), each]
        learned = ", ".join(r.learned_langs) or "none"
        out.append([r.target, r.strategy, r.scorer, " ".join(map(str, r.seeds or [])), learned,
                    f"{r.learn.p_value:.3g}", *cells])
    return out


SEED_HEADER = ["model", "strategy", "scorer", "seeds", "learned (every seed's answers)", "Learn p",
               *[x for m in PAIR_METRICS for x in (f"{m.label} % mean [CI entities+seeds] ± seed sd", f"{m.label} per seed")]]
