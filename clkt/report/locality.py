"""Locality: what an injection kept of what the target knew before ("kept %"), per job, scorer and test language.

A snapshot's locality split holds questions about entities a target already knew (the probe's "known"
verdicts); every job of that target answers them with the base and the injected model, never trains on them and
never scores them as transfer. The job keeps their paired counts in its summary (`JobSummary.locality`,
`clkt.evaluate.locality`). Kept % = among the questions the base model answered right, the share the injected
model still answers right: kept / (kept + lost). Its 95% interval comes from a bootstrap over entities (the
questions of an entity are drawn together, `clkt.report.clustered.entity_draws`, seeded by `seed` and the
snapshot's locality draws' name, `draws_name`: the same draws for a job's cell in the report, a result pack's cell
for the same answers (`clkt.packs.metrics`) and a leaderboard row of one such cell, so one figure is one number
wherever it is shown). Under `MIN_KEPT_N` questions right before (or all of them about fewer than `MIN_KEPT_ENTITIES`
entities: a bootstrap over one entity has no spread), the cell reads "too few", never a bare 0 % or
100 %.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from clkt.evaluate.summary import LocalityCounts
from clkt.report._metric_fields import Estimate
from clkt.report.clustered import entity_draws
from clkt.report.metric_table import MIN_KEPT_ENTITIES, MIN_KEPT_N, kept_too_few, ratio
from clkt.report.pooled import one_blas_thread, percentile_ci

__all__ = [
    "KEPT_HEADER", "LOCALITY_INTRO", "MIN_KEPT_ENTITIES", "MIN_KEPT_N", "KeptFigure", "KeptLang", "LocalityJob", "draws_name", "kept_figure",
    "kept_langs", "kept_row", "kept_text", "locality_entities", "locality_lines", "pooled_kept",
]

KEPT_HEADER = ["model", "strategy", "scorer", "train", "test", "questions", "right before", "kept", "lost", "gained",
               "kept % [95% CI]"]

LOCALITY_INTRO = [  # the report's section heading and how to read it
    "## Locality: what each job kept (entities the target knew; never in the scores above)", "",
    "Kept % = among the locality questions the base model answered right, the share the injected model still answers "
    "right (kept / right before); 95% CIs from a bootstrap over entities. Under "
    f"{MIN_KEPT_N} questions right before, or all of them about one entity: *too few*.", "",
]


class LocalityJob(Protocol):
    """What `kept_langs` reads of a job (`clkt.report.data.JobInfo`)."""

    @property
    def job_id(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def train_lang(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def locality(self) -> Mapping[str, Mapping[str, LocalityCounts]] | None: ...


def draws_name(snapshot_id: str) -> str:
    """What seeds the bootstrap draws of a snapshot's locality entities (with the seed)."""
    return f"{snapshot_id}/locality"


class KeptFigure(BaseModel):
    """Kept % of one cell (a job x scorer x test language): its paired counts, the rate, its interval."""

    model_config = ConfigDict(frozen=True)

    n: int  # locality questions answered by both models
    kept: int  # right before, right after
    lost: int  # right before, wrong after
    gained: int  # wrong before, right after
    entities: int  # entities with a question right before
    rate: float | None  # kept / (kept + lost); None: nothing right before
    ci: tuple[float, float] | None  # 95%, bootstrap over entities
    too_few: bool  # fewer than `MIN_KEPT_N` questions right before, or fewer than `MIN_KEPT_ENTITIES` entities

    @property
    def base_right(self) -> int:
        return self.kept + self.lost


class KeptLang(KeptFigure):
    """Kept % of one job x scorer in one test language."""

    job_id: int
    model: str
    strategy: str
    scorer: str
    train_lang: str
    lang: str


def kept_interval(
    c: LocalityCounts, *, name: str, seed: int, samples: int, public: Mapping[int, int] | None = None,
) -> tuple[float, float] | None:
    """The 95% interval of kept % from a bootstrap over the entities with a question right before (`public`: their
    store id -> public id, the order of the draws; without it the ids are taken as public ones, as a pack's are)."""
    ents = [e for e in c.entities if e.base_right > 0]
    if not ents:
        return None
    draws = entity_draws([e.entity for e in ents], snapshot_id=name, seed=seed, samples=samples, public=public)
    pos = {int(e): i for i, e in enumerate(draws.entities.tolist())}
    counts = np.zeros((len(draws.entities), 2), dtype=np.float32)
    for e in ents:
        counts[pos[e.entity]] += (float(e.base_right), float(e.kept))
    with one_blas_thread():
        s = (draws.weights @ counts).astype(np.float64)
    return percentile_ci(ratio(s[:, 1], s[:, 0]))


def kept_figure(
    c: LocalityCounts, *, snapshot_id: str, seed: int, samples: int, min_n: int = MIN_KEPT_N,
    public: Mapping[int, int] | None = None,
) -> KeptFigure:
    """Kept % of one cell's paired counts, with its 95% interval over entities (the snapshot's locality draws)."""
    entities = sum(e.base_right > 0 for e in c.entities)
    return KeptFigure(
        n=c.n, kept=c.kept, lost=c.lost, gained=c.gained, entities=entities,
        rate=c.kept / c.base_right if c.base_right else None,
        ci=kept_interval(c, name=draws_name(snapshot_id), seed=seed, samples=samples, public=public),
        too_few=kept_too_few(base_right=c.base_right, entities=entities, min_n=min_n),
    )


def kept_langs(
    jobs: Sequence[LocalityJob], *, snapshot_id: str, seed: int, samples: int, min_n: int = MIN_KEPT_N,
    public: Mapping[int, int] | None = None,
) -> list[KeptLang]:
    """Kept % of every finished job with locality counts, per scorer and test language."""
    out: list[KeptLang] = []
    for j in jobs:
        if j.status != "done" or not j.locality:
            continue
        for scorer, langs in sorted(j.locality.items()):
            for lang, c in sorted(langs.items()):
                fig = kept_figure(c, snapshot_id=snapshot_id, seed=seed, samples=samples, min_n=min_n, public=public)
                out.append(KeptLang(job_id=j.job_id, model=j.model, strategy=j.strategy, scorer=scorer,
                                    train_lang=j.train_lang, lang=lang, **fig.model_dump()))
    return out


def kept_text(k: KeptFigure) -> str:
    """`97.5 [92, 100]`, or `too few (n = 4)` under the minimum."""
    if k.too_few or k.rate is None:
        return f"too few (n = {k.base_right})"
    ci = "" if k.ci is None else f" [{100 * k.ci[0]:.0f}, {100 * k.ci[1]:.0f}]"
    return f"{100 * k.rate:.1f}{ci}"


def kept_row(k: KeptLang) -> list[str]:
    """A row under `KEPT_HEADER`."""
    return [k.model, k.strategy, k.scorer, k.train_lang, k.lang, str(k.n), str(k.base_right), str(k.kept), str(k.lost),
            str(k.gained), kept_text(k)]


def locality_lines(kept: Sequence[KeptLang], min_n: int = MIN_KEPT_N) -> list[str]:
    """The in-short sentences: per job x scorer, kept % in each test language."""
    groups: dict[tuple[str, str, str, str], list[KeptLang]] = {}
    for k in kept:
        groups.setdefault((k.model, k.strategy, k.scorer, k.train_lang), []).append(k)
    return [
        f"Locality, {model} / {strategy} / {scorer} trained in {lt}: kept % of the questions about entities it knew "
        f"(right before injection) — " + "; ".join(f"{k.lang} {kept_text(k)}" + ("" if k.too_few else f" of {k.base_right}")
                                                    for k in ks)
        + f" (95% CIs from a bootstrap over entities; under {min_n} questions right before, or one entity: too few)."
        for (model, strategy, scorer, lt), ks in sorted(groups.items())
    ]


def pooled_kept(
    jobs: Iterable[tuple[str, Mapping[str, Any]]], *, scorer: str, seed: int, samples: int,
    public: Mapping[int, int] | None = None,
) -> Estimate | None:
    """Kept % of a leaderboard row: the locality counts of its jobs (snapshot id, the stored summary's `locality`)
    for `scorer`, pooled over snapshots, train and test languages; n = questions right before; without a value under
the cells' minimum (`clkt.report.metric_table.kept_too_few`: the board, its CSV and the strategy table read "too
few" where a report cell would). Its 95% interval
    draws each snapshot's locality entities (seeded by the snapshot's id), summed over the snapshots. None when no
    job has locality counts (a count that does not validate is left out)."""
    tally: dict[str, dict[int, list[int]]] = {}  # snapshot -> entity -> [right before, kept]
    for snapshot_id, raw in jobs:
        for c in (raw.get(scorer) or {}).values():
            try:
                counts = LocalityCounts.model_validate(c)
            except ValidationError:
                continue
            per = tally.setdefault(snapshot_id, {})
            for e in counts.entities:
                t = per.setdefault(e.entity, [0, 0])
                t[0] += e.base_right
                t[1] += e.kept
    right = sum(t[0] for per in tally.values() for t in per.values())
    if not tally:
        return None
    if kept_too_few(base_right=right, entities=sum(t[0] > 0 for per in tally.values() for t in per.values())):
        return Estimate(value=None, ci=None, n=right)  # "too few" (the cells' rule), never a bare figure
    kept = sum(t[1] for per in tally.values() for t in per.values())
    sums: np.ndarray | None = None
    for snapshot_id, per in sorted(tally.items()):
        ents = sorted(e for e, t in per.items() if t[0] > 0)
        if not ents or samples <= 0:
            continue
        draws = entity_draws(ents, snapshot_id=draws_name(snapshot_id), seed=seed, samples=samples, public=public)
        tallies = np.asarray([per[e] for e in ents], dtype=np.float32)
        with one_blas_thread():
            got = (draws.weights @ tallies).astype(np.float64)
        sums = got if sums is None else sums + got
    ci = percentile_ci(ratio(sums[:, 1], sums[:, 0])) if sums is not None else None
    return Estimate(value=kept / right if right else None, ci=ci, n=right)


def locality_entities(summaries: Iterable[Mapping[str, Any] | None]) -> set[int]:
    """The entity ids in stored summaries' `locality` counts (scorer -> test language -> counts; unreadable ones
    left out)."""
    out: set[int] = set()
    for raw in summaries:
        for langs in (raw or {}).values():
            for c in (langs or {}).values() if isinstance(langs, Mapping) else ():
                try:
                    out.update(e.entity for e in LocalityCounts.model_validate(c).entities)
                except ValidationError:
                    continue
    return out
