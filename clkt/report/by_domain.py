"""The paper's tables over a window (issue 35): Table 2 per target x strategy x scorer x domain, the size view
(Figure 4: targets with `family` and `size_b`) and the directional asymmetry per language pair, pooled over the
window of the leaderboard (`clkt leaderboard --by domain|size|asymmetry`).

Every number comes from the leaderboard's own machinery, never a third implementation: the answers of a group
(`clkt.report.leaderboard.group_answers`), restricted to the entities of a domain, are pooled into the
contingency of every ordered pair (`clkt.report.pooled.pool`); each pair's metric is the metric table's
(`clkt.report.metric_table.PAIR_METRICS`) over the pair's sums; the interval comes from the window's draws of
entities (`clkt.report.pooled.Draws`, the leaderboard's and the snapshot report's).

Each cell carries both readings, labelled:

- **the paper's**: mean ± std (population std, ddof 0) over the ordered language pairs of the pair metrics;
- **clkt's**: the same mean with a 95% interval from the bootstrap over entities (stratified by snapshot).

Which pairs enter Transfer's mean (`TransferPairs`): clkt's rule, `learned` (default), keeps only the pairs
whose train language learned (pooled over the window, all domains: the leaderboard's `learned_langs`), since
otherwise A+B is what the base model guessed; the paper averages over `all` pairs. Over a window of one snapshot
with `learned`, a cell equals that snapshot's Table 2 cell (`clkt.report.metrics.summarize`). A group run with
several training seeds is pooled over them as its leaderboard row is (`clkt.report.seeds`: per seed, then the
mean; the interval over entities and seeds), so its `all` cell is its row's figure. `avg` is Table 2's
last column: per pair, the mean of its per-domain values; then mean ± std over pairs (several seeds: each seed's,
then the mean over seeds, its interval widened by the between-seed term, as the other cells).

A cell counts its distinct test questions as the leaderboard counts a row's (`questions`): under the query's
`min_questions` it is `too_few`, shown with its figures and said to be too few, as a row is (its `all` cell is the
row: the same count, the same flag).

The open track's layers (issue 47: `open-normaliser`, and `open-jury` where the jury graded) are their own groups,
kept apart by the board (`clkt.report.domain_board`: `open_cells`, `open_sizes`, `open_asymmetry`), never pooled
with a multiple-choice scorer's: each is computed here exactly as an MCQ group is.

The asymmetry of a pair {L1, L2}: on the test questions answered by the L1-trained job in L2 and by the
L2-trained job in L1, how many L1->L2 got right and L2->L1 wrong (forward) and the reverse (backward), summed
over the window's snapshots and the training seeds (each seed's two jobs paired, as Learn pools its seeds), with
the exact McNemar p (`clkt.report.stats.mcnemar_exact`): a snapshot's report gives the same test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clkt.report.leaderboard import Group, _layout, learned_trains
from clkt.report.leaderboard_data import MIN_QUESTIONS, Estimate, WindowInfo
from clkt.report.metric_table import PAIR_METRICS, PairMetric
from clkt.report.metrics import ALL_DOMAINS, AVG_DOMAINS
from clkt.report.pooled import (
    Answers,
    Draws,
    Layout,
    Sums,
    bit,
    boot_matrix,
    draw_sums,
    full_sums,
    nanmean,
    percentile_ci,
    pool,
    unit_keys,
)
from clkt.report.seeds import by_seed, over_seeds, total_interval
from clkt.report.stats import mcnemar_exact
from storage.result_packs import INJECTED_ANSWERED, INJECTED_CORRECT

__all__ = [
    "BY_KEYS",
    "AsymmetryRow",
    "DomainBoard",
    "DomainCell",
    "DomainMetric",
    "SizePoint",
    "TransferPairs",
    "asymmetry_rows",
    "domain_cells",
    "size_points",
]

TransferPairs = Literal["learned", "all"]
BY_KEYS = ("domain", "size", "asymmetry")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class DomainMetric(_Frozen):
    """One metric of one cell: the paper's mean ± std over pairs, and clkt's interval over entities."""

    mean: float | None
    std: float | None  # the paper's: population std over the pairs in the mean
    ci: tuple[float, float] | None = None  # clkt's: 95% bootstrap over entities of the mean
    pairs: int = 0  # ordered pairs in the mean
    n: int = 0  # the questions x pairs under the kept pairs' denominators


class DomainCell(_Frozen):
    target: str
    strategy: str
    scorer: str
    domain: str  # a domain, "all" (every domain pooled) or "avg" (the mean over domains per pair)
    entities: int
    metrics: dict[str, DomainMetric] = Field(default_factory=dict)  # per metric of the table ("overall", ...)
    not_interpretable: int = 0  # pairs with data left out of Transfer (train language not learned; `learned` only)
    questions: int = 0  # distinct test questions answered by the injected model (a leaderboard row's count)
    too_few: bool = False  # fewer `questions` than the board's `min_questions` (the leaderboard's rule)


class AsymmetryRow(_Frozen):
    target: str
    strategy: str
    scorer: str
    lang_1: str
    lang_2: str
    forward: int  # right L1->L2 (trained in L1, tested in L2), wrong L2->L1
    backward: int
    p_value: float | None  # exact McNemar; None when no question is discordant
    stronger: str | None  # "L1->L2", "L2->L1" or None (a tie)


class SizePoint(_Frozen):
    """Figure 4 over the window: a target with a size, its pooled Overall and Transfer (the `all` cell)."""

    target: str
    family: str | None
    size_b: float
    strategy: str
    scorer: str
    metrics: dict[str, Estimate] = Field(default_factory=dict)


class DomainBoard(_Frozen):
    spec: str
    window_from: str
    window_to: str
    snapshots: list[WindowInfo]
    languages: list[str]
    transfer_pairs: TransferPairs
    bootstrap: int
    seed: int
    cells: list[DomainCell]  # the multiple-choice scorers'
    sizes: list[SizePoint]
    asymmetry: list[AsymmetryRow]
    notes: list[str] = Field(default_factory=list)
    min_questions: int = MIN_QUESTIONS
    # the open track's layers, apart from the MCQ scorers' and never pooled with them; absent from the JSON when none
    open_cells: list[DomainCell] = Field(default_factory=list, exclude_if=lambda v: not v)
    open_sizes: list[SizePoint] = Field(default_factory=list, exclude_if=lambda v: not v)
    open_asymmetry: list[AsymmetryRow] = Field(default_factory=list, exclude_if=lambda v: not v)


def _restrict(a: Answers, keep: np.ndarray) -> Answers:
    mask = np.isin(a.ents, keep)
    return replace(a, qids=a.qids[mask], ents=a.ents[mask], flags=a.flags[mask])


def _keep(metric: PairMetric, interp: np.ndarray, transfer_pairs: TransferPairs) -> np.ndarray:
    if metric.needs_learned and transfer_pairs == "learned":
        return interp
    return np.ones(len(interp), dtype=bool)


def _mean_std(values: np.ndarray) -> tuple[float | None, float | None]:
    if not len(values):
        return None, None
    return float(values.mean()), float(values.std(ddof=0))


def _metric(m: PairMetric, s: Sums, draws: Sums | None, keep: np.ndarray) -> DomainMetric:
    present = s.cells["ABCD"] > 0 if "ABCD" in s.cells else np.ones(len(keep), dtype=bool)
    per_pair = m.ratio(s.cells)
    used = keep & ~np.isnan(per_pair)
    mean, std = _mean_std(per_pair[used])
    ci = None
    if draws is not None and (keep & present).any():
        ci = percentile_ci(nanmean(np.where(keep & present, m.ratio(draws.cells), np.nan)))
    return DomainMetric(mean=mean, std=std, ci=ci, pairs=int(used.sum()), n=int(s.cells[m.denominator][keep].sum()))


def _avg_parts(m: PairMetric, per: list[tuple[Sums, Sums | None]], keep: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Table 2's avg of one set of answers: per pair the mean of its per-domain values, the pairs in the mean, and
    its draws (the mean over those pairs in each; None without draws)."""
    by_pair = nanmean(np.stack([m.ratio(s.cells) for s, _ in per]), axis=0)  # (P,)
    used = keep & ~np.isnan(by_pair)
    boots = None
    if used.any() and all(d is not None for _, d in per):
        draws = np.stack([m.ratio(d.cells) for _, d in per if d is not None], axis=1)  # (B, domains, P)
        boots = nanmean(np.where(used, nanmean(draws, axis=1), np.nan))
    return by_pair, used, boots


def _avg_metric(m: PairMetric, per: list[tuple[Sums, Sums | None]], keep: np.ndarray) -> DomainMetric:
    """Table 2's avg: per pair the mean of its per-domain values, then mean ± std over the pairs."""
    by_pair, used, boots = _avg_parts(m, per, keep)
    mean, std = _mean_std(by_pair[used])
    return DomainMetric(mean=mean, std=std, ci=percentile_ci(boots) if boots is not None else None, pairs=int(used.sum()),
                        n=int(sum(int(s.cells[m.denominator][keep].sum()) for s, _ in per)))


def _avg_over_seeds(cell: dict[str, DomainMetric], per_seed: Sequence[list[tuple[Sums, Sums | None]]],
                    interp: np.ndarray, transfer_pairs: TransferPairs) -> dict[str, DomainMetric]:
    """The avg cell of a group run with several training seeds, pooled as `_over_seeds` pools the others: each
    seed's avg over the same pairs, their mean, the sampling interval of that mean widened by the between-seed term
    (`clkt.report.seeds.total_interval`); the std over pairs, the pairs and n stay every seed's answers together."""
    if len(per_seed) < 2:
        return cell
    out = dict(cell)
    for m in PAIR_METRICS:
        parts = [_avg_parts(m, per, _keep(m, interp, transfer_pairs)) for per in per_seed]
        values = [float(by_pair[used].mean()) for by_pair, used, _ in parts if used.any()]
        boots = [b for _, _, b in parts]
        ci = None
        if values and all(b is not None for b in boots):
            sampling = percentile_ci(nanmean(np.stack([b for b in boots if b is not None]), axis=0))
            ci = total_interval(sampling, values) if sampling is not None else None
        out[m.key] = cell[m.key].model_copy(update={"mean": float(np.mean(values)) if values else None, "ci": ci})
    return out


def _over_seeds(cell: dict[str, DomainMetric], answers: Sequence[Answers], layout: Layout, draws: Draws | None,
                interp: np.ndarray, transfer_pairs: TransferPairs) -> dict[str, DomainMetric]:
    """A cell of a group run with several training seeds: each metric's mean and interval pooled over the seeds as
    the leaderboard's row pools them (`clkt.report.seeds`: per seed over the same pairs, then the mean, the interval
    widened by the between-seed term); the paper's std over pairs, the pairs and n stay those of every seed's
    answers together."""
    seeds = by_seed(answers)
    if len(seeds) < 2:
        return cell
    out = dict(cell)
    for m in PAIR_METRICS:
        keep = _keep(m, interp, transfer_pairs)
        sm = over_seeds(seeds, layout, draws=draws, mask=keep).metrics[m.key]
        out[m.key] = cell[m.key].model_copy(update={"mean": sm.mean, "ci": sm.total_ci})
    return out


def _sums(answers: Sequence[Answers], layout: Layout, draws: Draws | None) -> tuple[Sums, Sums | None, int, int]:
    """The sums of `answers`, their draws, their entities and their distinct test questions (a row's counts)."""
    pooled = pool(answers, layout)
    s = full_sums(layout, pooled.counts.sum(axis=0))
    questions = sum(pooled.questions.values())
    if draws is None or not len(pooled.keys):
        return s, None, len(pooled.keys), questions
    reduced = draws.sums(pooled.keys, boot_matrix(layout, pooled.counts))
    return s, draw_sums(layout, np.sum(list(reduced.values()), axis=0)), len(pooled.keys), questions


def _cells_of(
    group: Group, answers: Sequence[Answers], languages: Sequence[str], *, domain_of: Mapping[int, str],
    draws: Draws | None, transfer_pairs: TransferPairs, min_questions: int,
) -> list[DomainCell]:
    target, strategy, scorer = group
    layout = _layout(answers, languages)
    if draws is not None:  # the row's own entities (`Draws.own`): its `all` cell is its leaderboard row's figure
        draws = draws.own(np.unique(np.concatenate([unit_keys(a) for a in answers])))
    s_all, d_all, n_all, q_all = _sums(answers, layout, draws)
    learned = learned_trains(layout, s_all)
    interp = np.asarray([bool(learned[layout.train_index[lt]]) for lt, _ in layout.pairs], dtype=bool)
    present = s_all.cells["ABCD"] > 0
    dropped = 0 if transfer_pairs == "all" else int((present & ~interp).sum())
    ents = np.unique(np.concatenate([a.ents for a in answers])) if answers else np.zeros(0, dtype=np.int64)
    domains = sorted({domain_of.get(int(e), "unknown") for e in ents.tolist()})
    out: list[DomainCell] = []
    per: list[tuple[Sums, Sums | None]] = []
    seeds = by_seed(answers)
    per_seed: list[list[tuple[Sums, Sums | None]]] = [[] for _ in seeds] if len(seeds) > 1 else []
    for dom in domains:
        keep_ents = np.asarray([e for e in ents.tolist() if domain_of.get(int(e), "unknown") == dom], dtype=np.int64)
        restricted = [_restrict(a, keep_ents) for a in answers]
        s, d, n, questions = _sums(restricted, layout, draws)
        per.append((s, d))
        for each, seed in zip(per_seed, seeds, strict=False):  # several seeds: each one's own sums (its avg)
            each.append(_sums([a for a in restricted if a.seed == seed], layout, draws)[:2])
        dom_present = s.cells["ABCD"] > 0
        metrics = {m.key: _metric(m, s, d, _keep(m, interp, transfer_pairs)) for m in PAIR_METRICS}
        out.append(DomainCell(
            target=target, strategy=strategy, scorer=scorer, domain=dom, entities=n,
            metrics=_over_seeds(metrics, restricted, layout, draws, interp, transfer_pairs),
            not_interpretable=0 if transfer_pairs == "all" else int((dom_present & ~interp).sum()),
            questions=questions, too_few=questions < min_questions,
        ))
    metrics = {m.key: _metric(m, s_all, d_all, _keep(m, interp, transfer_pairs)) for m in PAIR_METRICS}
    out.append(DomainCell(
        target=target, strategy=strategy, scorer=scorer, domain=ALL_DOMAINS, entities=n_all, not_interpretable=dropped,
        metrics=_over_seeds(metrics, answers, layout, draws, interp, transfer_pairs),
        questions=q_all, too_few=q_all < min_questions,
    ))
    if per:
        out.append(DomainCell(
            target=target, strategy=strategy, scorer=scorer, domain=AVG_DOMAINS, entities=n_all, not_interpretable=dropped,
            metrics=_avg_over_seeds({m.key: _avg_metric(m, per, _keep(m, interp, transfer_pairs)) for m in PAIR_METRICS},
                                    per_seed, interp, transfer_pairs),
            questions=q_all, too_few=q_all < min_questions,
        ))
    return out


def domain_cells(
    groups: Mapping[Group, Sequence[Answers]], languages: Sequence[str], *, domain_of: Mapping[int, str],
    draws: Draws | None, transfer_pairs: TransferPairs = "learned", min_questions: int = MIN_QUESTIONS,
) -> list[DomainCell]:
    """Table 2 over the window: per group, a cell per domain, then `all` and `avg` (see the module docstring)."""
    out: list[DomainCell] = []
    for group, answers in sorted(groups.items()):
        if answers:
            out += _cells_of(group, answers, languages, domain_of=domain_of, draws=draws, transfer_pairs=transfer_pairs,
                             min_questions=min_questions)
    return out


def _correct_in(answers: Sequence[Answers], train: str, lang: str) -> dict[tuple[int, int, int], bool]:
    """(snapshot, training seed, qid) -> the injected model's correctness in `lang` of the jobs trained in `train`
    (answered only): each seed's two directions are paired on a question, never one seed's against another's."""
    out: dict[tuple[int, int, int], bool] = {}
    for a in answers:
        if a.train_lang != train or lang not in a.langs:
            continue
        pos = a.langs.index(lang)
        answered, correct = bit(a.flags, INJECTED_ANSWERED, pos), bit(a.flags, INJECTED_CORRECT, pos)
        for q, c in zip(a.qids[answered].tolist(), correct[answered].tolist(), strict=True):
            out[(a.snapshot, a.seed, int(q))] = bool(c)
    return out


def asymmetry_rows(groups: Mapping[Group, Sequence[Answers]], languages: Sequence[str]) -> list[AsymmetryRow]:
    """Per group and unordered language pair whose both directions were trained: the pooled directional test."""
    out: list[AsymmetryRow] = []
    for (target, strategy, scorer), answers in sorted(groups.items()):
        trains = {a.train_lang for a in answers}
        langs = [x for x in languages if x in trains] + sorted(trains - set(languages))
        for i, l1 in enumerate(langs):
            for l2 in langs[i + 1 :]:
                fwd, bwd = _correct_in(answers, l1, l2), _correct_in(answers, l2, l1)
                common = set(fwd) & set(bwd)
                if not common:
                    continue
                f = sum(1 for k in common if fwd[k] and not bwd[k])
                b = sum(1 for k in common if bwd[k] and not fwd[k])
                out.append(AsymmetryRow(
                    target=target, strategy=strategy, scorer=scorer, lang_1=l1, lang_2=l2, forward=f, backward=b,
                    p_value=mcnemar_exact(f, b) if f + b else None,
                    stronger=None if f == b else (f"{l1}->{l2}" if f > b else f"{l2}->{l1}"),
                ))
    return out


def size_points(cells: Sequence[DomainCell], sizes: Mapping[str, tuple[str | None, float]]) -> list[SizePoint]:
    """Figure 4 over the window: the `all` cell of every target with a `size_b`, by family then size."""
    out = [
        SizePoint(target=c.target, family=sizes[c.target][0], size_b=sizes[c.target][1], strategy=c.strategy,
                  scorer=c.scorer, metrics={k: Estimate(value=v.mean, ci=v.ci, n=v.n) for k, v in c.metrics.items()})
        for c in cells if c.domain == ALL_DOMAINS and c.target in sizes
    ]
    return sorted(out, key=lambda p: (p.strategy, p.scorer, p.family or "", p.size_b, p.target))
