"""The open track's control split (issue 47 item 4): one figure, in the report's open section and on the board.

A snapshot's control split holds fictional entities no model can know; a job injects their documents with the real
ones, and the open pass asks their short-answer questions with the base and the injected model (split `control`).
Learn on them (the train-language questions, base against injected on the same question: exact McNemar) is the
positive control of injection: a job that learns nothing there learned nothing. The stored answers are the one source
(`storage.open_results`): `control_tallies` pairs each job's answers per scoring layer (`clkt.report.open_right`:
the normaliser's verdicts, or the jury's, undecided never right and ungraded in no pair) and keeps, per entity, the
questions answered both ways and those right before and after; `control_stat` pools tallies over jobs and snapshots
into Learn with its 95% intervals from a bootstrap over the control entities (each snapshot's drawn with the seed and
`draws_name`, summed over the snapshots: the same draws wherever the same answers are pooled). The report shows it per
job group (`control_learn`), the board per row (`control_estimate`, `clkt.report.leaderboard`), each under the one
"too few" rule (`clkt.report.metric_table.open_too_few`). Never pooled with the test split's Learn, nor with the
multiple-choice control (whose jobs keep counts, not entities).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from clkt.evaluate.results import CONTROL_SPLIT
from clkt.evaluate.summary import ControlCounts
from clkt.report.clustered import entity_draws
from clkt.report.leaderboard_data import ControlEstimate, Estimate
from clkt.report.learn import LearnIntervals, LearnStat, LearnTest, stat_from_counts
from clkt.report.metric_table import open_too_few, ratio
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.open_right import Right, normaliser_right
from clkt.report.pooled import one_blas_thread, percentile_ci
from storage.open_results import OpenResultRow

__all__ = ["ControlFigure", "ControlTally", "EntityLearn", "control_estimate", "control_learn", "control_stat",
           "control_tallies", "draws_name"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class EntityLearn(_Model):
    """One control entity's share of a tally: its questions answered both ways, right before, right after."""

    entity: int  # public entity id
    n: int
    base_right: int
    injected_right: int


class ControlTally(ControlCounts):
    """A job's paired train-language control answers under one layer: the MCQ control's counts, and per entity."""

    entities: list[EntityLearn]


class ControlFigure(LearnTest):
    """The report's control cell of a job group (domain `all`): Learn with its intervals over the control entities."""

    entities: int
    too_few: bool


def draws_name(snapshot_id: str) -> str:
    """What seeds the bootstrap draws of a snapshot's control entities (with the seed)."""
    return f"{snapshot_id}/control"


def control_tallies(rows: Iterable[OpenResultRow], *, right: Right = normaliser_right,
                    scorer: str | None = None) -> dict[int, dict[str, ControlTally]]:
    """Job id -> layer (`scorer`, else each answer's own) -> its tally of the control split's train-language
    questions that `right` decided before and after injection ({} without any)."""
    pairs: dict[tuple[int, str, int], dict[str, bool]] = defaultdict(dict)
    entity: dict[tuple[int, int], int] = {}
    for r in rows:
        if r.split != CONTROL_SPLIT or r.lang != r.train_lang or r.variant not in ("base", "injected"):
            continue
        got = right(r)
        if got is not None:
            pairs[(r.job_id, scorer or r.scorer, r.open_qid)][r.variant] = got
            entity[(r.job_id, r.open_qid)] = r.entity_id
    cells: dict[tuple[int, str], dict[int, list[int]]] = defaultdict(dict)  # entity -> [n, base, injected, gained, lost]
    for (job, layer, qid), v in sorted(pairs.items()):
        if len(v) == 2:
            b, i = v["base"], v["injected"]
            t = cells[(job, layer)].setdefault(entity[(job, qid)], [0, 0, 0, 0, 0])
            for k, x in enumerate((True, b, i, i and not b, b and not i)):
                t[k] += x
    out: dict[int, dict[str, ControlTally]] = defaultdict(dict)
    for (job, layer), per in sorted(cells.items()):
        n, bc, ic, g, lo = (sum(t[k] for t in per.values()) for k in range(5))
        out[job][layer] = ControlTally(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo, entities=[
            EntityLearn(entity=e, n=t[0], base_right=t[1], injected_right=t[2]) for e, t in sorted(per.items())])
    return dict(out)


def _intervals(per: Mapping[str, Mapping[int, np.ndarray]], *, seed: int, samples: int) -> LearnIntervals:
    """Each snapshot's control entities drawn (`draws_name`), their (n, base, injected) summed over the snapshots."""
    total: np.ndarray | None = None
    for sid, ents in sorted(per.items()):
        draws = entity_draws(sorted(ents), snapshot_id=draws_name(sid), seed=seed, samples=samples)
        if not len(draws.weights):
            continue
        counts = np.stack([ents[int(e)] for e in draws.entities.tolist()]).astype(np.float32)
        with one_blas_thread():
            got = (draws.weights @ counts).astype(np.float64)
        total = got if total is None else total + got
    if total is None:
        return LearnIntervals(base=None, injected=None, gain=None)
    return LearnIntervals(base=percentile_ci(ratio(total[:, 1], total[:, 0])),
                          injected=percentile_ci(ratio(total[:, 2], total[:, 0])),
                          gain=percentile_ci(ratio(total[:, 2] - total[:, 1], total[:, 0])))


def control_stat(tallies: Iterable[tuple[str, ControlTally]], *, seed: int, samples: int) -> tuple[LearnStat, int] | None:
    """Learn over the tallies (snapshot id, tally) pooled, with its intervals over their entities (none without
    draws), and the number of entities; None when no question was answered both ways."""
    per: dict[str, dict[int, np.ndarray]] = defaultdict(dict)
    g = lo = 0
    for sid, t in tallies:
        g, lo = g + t.gained, lo + t.lost
        for e in t.entities:
            per[sid][e.entity] = per[sid].get(e.entity, np.zeros(3)) + np.array([e.n, e.base_right, e.injected_right])
    sums = np.sum([x for ents in per.values() for x in ents.values()], axis=0) if per else np.zeros(3)
    n, bc, ic = (int(x) for x in sums)
    if not n:
        return None
    stat = stat_from_counts(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo)
    return stat.model_copy(update={"clustered": _intervals(per, seed=seed, samples=samples)}), sum(map(len, per.values()))


def control_learn(rows: Sequence[OpenResultRow], *, snapshot_id: str, seed: int, samples: int,
                  right: Right = normaliser_right, scorer: str | None = None) -> list[ControlFigure]:
    """The report's control cells: per job group (model, strategy, layer, train language), its jobs' tallies pooled."""
    who = {r.job_id: (r.target_model, r.strategy, r.train_lang) for r in rows}
    groups: dict[tuple[str, str, str, str], list[ControlTally]] = defaultdict(list)
    for job, layers in control_tallies(rows, right=right, scorer=scorer).items():
        model, strategy, train = who[job]
        for layer, t in layers.items():
            groups[(model, strategy, layer, train)].append(t)
    out: list[ControlFigure] = []
    for (model, strategy, layer, train), ts in sorted(groups.items()):
        got = control_stat(((snapshot_id, t) for t in ts), seed=seed, samples=samples)
        if got is not None:
            stat, entities = got
            out.append(ControlFigure(model=model, strategy=strategy, scorer=layer, train_lang=train, domain=ALL_DOMAINS,
                                     control=True, stat=stat, entities=entities,
                                     too_few=open_too_few(n=stat.n, entities=entities)))
    return out


def control_estimate(jobs: Iterable[tuple[str, Mapping[str, Any]]], *, scorer: str, seed: int,
                     samples: int) -> ControlEstimate | None:
    """A board row's control figure: its jobs' tallies of `scorer` (snapshot id, the job's `control`: layer -> a
    `ControlTally` as JSON; one that does not validate is left out) pooled; None when none has one."""
    tallies: list[tuple[str, ControlTally]] = []
    for sid, raw in jobs:
        if scorer in raw:
            try:
                tallies.append((sid, ControlTally.model_validate(raw[scorer])))
            except ValidationError:
                continue
    got = control_stat(tallies, seed=seed, samples=samples)
    if got is None:
        return None
    st, entities = got
    return ControlEstimate(
        n=st.n, base=st.base_accuracy, injected=Estimate(value=st.injected_accuracy, ci=st.injected_ci, n=st.n),
        gain=Estimate(value=st.gain, ci=st.gain_ci, n=st.n), gained=st.gained, lost=st.lost, p_value=st.p_value,
        learned=st.learned, entities=entities, too_few=open_too_few(n=st.n, entities=entities),
    )
