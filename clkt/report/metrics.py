"""The paper's metrics over per-question results.

For a job trained in L_train and every test language L_test != L_train, each test question falls in one cell
of the contingency (the injected model's correctness in L_train, in L_test):

    A: right in both    B: right in L_train, wrong in L_test    C: wrong, right    D: wrong in both

Overall = A / (A+B+C+D); Transfer = A / (A+B) — undefined (None, never 0) when A+B = 0. A pair whose test
language has no answers is *missing* (reported, not counted). Per model x strategy x scorer x domain: mean ±
std over the ordered pairs (the paper's Table 2), the average over domains, seeded bootstrap 95% confidence
intervals (resampling entities, with the leaderboard's draws: `clkt.report.clustered`), McNemar's exact test
per language pair for directional asymmetry (the one McNemar of `clkt.report.stats`), and the base model's
accuracy per language, flagged where it is above chance (`BASE_FLAG_MEANS`): the entities may not be unseen.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clkt.report._metric_fields import MetricSummary, PerMetricSummary
from clkt.report.basics import BOOTSTRAP_SAMPLES, Contingency
from clkt.report.clustered import EntityDraws, PairDraws, accuracy_interval, entity_draws, pair_draws
from clkt.report.metric_table import OVERALL, PAIR_METRICS, TRANSFER, PairMetric
from clkt.report.stats import mcnemar_exact

__all__ = [
    "ALL_DOMAINS",
    "AVG_DOMAINS",
    "BASE_FLAG_MEANS",
    "BASE_FLAG_P",
    "AsymmetryTest",
    "BaseAccuracy",
    "Contingency",
    "MetricSummary",
    "Outcome",
    "PairMetrics",
    "SummaryCell",
    "base_accuracy",
    "contingency",
    "mcnemar_tests",
    "pair_metrics",
    "parse_failure_rates",
    "summarize",
]

ALL_DOMAINS = "all"  # every domain pooled
AVG_DOMAINS = "avg"  # the average over domains (Table 2's last column)
BASE_FLAG_P = 0.01  # a base accuracy above chance (25%) at this level (exact one-sided binomial) flags the language
BASE_FLAG_MEANS = (
    "flagged: the base model answers above chance (25%, exact one-sided binomial p < 0.01), so it may know some "
    "of these entities, which were meant to be unseen by it"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One scored answer (see `storage.gpu_jobs.JobResultRow`), with the question's domain."""

    model: str
    strategy: str
    scorer: str
    variant: str
    train_lang: str
    lang: str
    qid: int  # the public qid of the snapshot's files (`clkt.snapshots.ids.stable_qid`)
    domain: str
    correct: bool
    predicted: str | None = None
    split: str = "test"
    entity: int | None = None  # the question's entity (store id): the bootstrap resamples entities
    entity_public: int | None = None  # its public id (`clkt.snapshots.ids`): the order the draws are made in
    seed: int = 0  # the job's training seed (Learn pools every seed's paired answers: `clkt.report.learn`)

    @staticmethod
    def public_ids(outcomes: Sequence[Outcome]) -> dict[int, int]:
        """Store entity id -> public id, of the outcomes that know both."""
        return {o.entity: o.entity_public for o in outcomes if o.entity is not None and o.entity_public is not None}

    @property
    def cluster(self) -> int:
        """What the bootstrap resamples: the entity; a question of unknown entity is its own cluster."""
        return self.entity if self.entity is not None else -1 - self.qid


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


def contingency(train_correct: dict[int, bool], test_correct: dict[int, bool]) -> Contingency:
    """Over the questions answered in both languages."""
    a = b = c = d = 0
    for q in sorted(set(train_correct) & set(test_correct)):
        x, y = train_correct[q], test_correct[q]
        if x and y:
            a += 1
        elif x:
            b += 1
        elif y:
            c += 1
        else:
            d += 1
    return Contingency(a=a, b=b, c=c, d=d)


class PairMetrics(_Frozen):
    model: str
    strategy: str
    scorer: str
    domain: str
    train_lang: str
    test_lang: str
    table: Contingency
    missing: bool  # no questions answered in one of the two languages

    def metric(self, key: str) -> float | None:
        """A metric of `PAIR_METRICS` (None when missing or undefined)."""
        return None if self.missing else PAIR_METRICS[key].value(self.table)

    @property
    def overall(self) -> float | None:
        return self.metric(OVERALL.key)

    @property
    def transfer(self) -> float | None:
        return self.metric(TRANSFER.key)


class SummaryCell(PerMetricSummary):
    """Mean ± std over the language pairs of one model x strategy x scorer x domain, per metric of
    `PAIR_METRICS` (written `overall_mean, overall_std, transfer_mean, ..., overall_ci, transfer_ci`)."""

    model: str
    strategy: str
    scorer: str
    domain: str
    values: dict[str, MetricSummary] = Field(default_factory=dict)
    pairs: int = 0  # pairs with data
    transfer_undefined: int = 0  # pairs with A + B = 0
    missing: int = 0  # pairs without questions
    not_interpretable: int = 0  # pairs whose job did not learn: left out of the Transfer mean


class AsymmetryTest(_Frozen):
    model: str
    strategy: str
    scorer: str
    lang_1: str
    lang_2: str
    forward: int  # questions right in lang_2 after training in lang_1, but wrong the other way
    backward: int  # the opposite
    p_value: float | None  # exact McNemar (binomial on the discordant pairs); None when there are none
    stronger: str | None  # "lang_1->lang_2", "lang_2->lang_1", or None


class BaseAccuracy(_Frozen):
    model: str
    scorer: str
    lang: str
    n: int
    accuracy: float | None
    p_above_chance: float | None
    flagged: bool
    # 95% interval from a bootstrap over entities (`base_accuracy` with draws); None: none drawn
    ci: tuple[float, float] | None = None


def _index(outcomes: Iterable[Outcome], variant: str = "injected") -> dict[tuple[str, str, str, str, str, str], dict[int, bool]]:
    """(model, strategy, scorer, train_lang, domain, lang) -> qid -> correct, for the test split."""
    idx: dict[tuple[str, str, str, str, str, str], dict[int, bool]] = defaultdict(dict)
    for o in outcomes:
        if o.variant != variant or o.split != "test":
            continue
        for dom in (o.domain, ALL_DOMAINS):
            idx[(o.model, o.strategy, o.scorer, o.train_lang, dom, o.lang)][o.qid] = o.correct
    return idx


def _seeds(outcomes: Sequence[Outcome]) -> list[list[Outcome]]:
    """The outcomes by the training seed of their job, in seed order."""
    by: dict[int, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by[o.seed].append(o)
    return [by[s] for s in sorted(by)]


def pair_metrics(outcomes: Sequence[Outcome], languages: Sequence[str]) -> list[PairMetrics]:
    """Every ordered pair of `languages` for every job group and domain present (missing pairs included); a group
    run with several training seeds sums each pair's contingency over its seeds (the leaderboard's heatmap cell:
    its n counts every seed's answer)."""
    per = [_seed_pairs(x, languages) for x in _seeds(outcomes)]
    if len(per) < 2:
        return per[0] if per else []
    order = {p: i for i, p in enumerate(permutations(languages, 2))}
    summed: dict[tuple[str, str, str, str, str, str], PairMetrics] = {}
    for plist in per:
        for p in plist:
            key = (p.model, p.strategy, p.scorer, p.domain, p.train_lang, p.test_lang)
            if key in summed:
                t, u = summed[key].table, p.table
                table = Contingency(a=t.a + u.a, b=t.b + u.b, c=t.c + u.c, d=t.d + u.d)
                p = p.model_copy(update={"table": table, "missing": table.n == 0})
            summed[key] = p
    return sorted(summed.values(), key=lambda p: (p.model, p.strategy, p.scorer, p.domain, order[(p.train_lang, p.test_lang)]))


def _seed_pairs(outcomes: Sequence[Outcome], languages: Sequence[str]) -> list[PairMetrics]:
    """`pair_metrics` of one training seed's outcomes."""
    idx = _index(outcomes)
    groups = sorted({(k[0], k[1], k[2], k[4]) for k in idx})
    out: list[PairMetrics] = []
    for model, strategy, scorer, domain in groups:
        trained = sorted({k[3] for k in idx if k[:3] == (model, strategy, scorer) and k[4] == domain})
        for lt, ls in permutations(languages, 2):
            if lt not in trained:
                continue
            x = idx.get((model, strategy, scorer, lt, domain, lt), {})
            y = idx.get((model, strategy, scorer, lt, domain, ls), {})
            table = contingency(x, y)
            out.append(
                PairMetrics(
                    model=model, strategy=strategy, scorer=scorer, domain=domain, train_lang=lt, test_lang=ls,
                    table=table, missing=table.n == 0,
                )
            )
    return out


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=0))


JobKey = tuple[str, str, str, str]  # (model, strategy, scorer, train_lang)


def _counts_in(metric: PairMetric, p: PairMetrics, skip: set[JobKey]) -> bool:
    """Whether a pair's value counts in the metric's means: not when the metric needs its job to have learned
    and it did not (`PairMetric.needs_learned`)."""
    return not (metric.needs_learned and (p.model, p.strategy, p.scorer, p.train_lang) in skip)


def _domain_cell(sel: list[PairMetrics], domain: str, skip: set[JobKey], draws: PairDraws | None) -> SummaryCell:
    """One model x strategy x scorer on one domain (or `all`): per metric, mean ± std over its pairs."""
    first = sel[0]
    values: dict[str, MetricSummary] = {}
    for m in PAIR_METRICS:
        kept = [p for p in sel if _counts_in(m, p, skip)]
        mean, std = _mean_std([v for p in kept if (v := p.metric(m.key)) is not None])
        ci = draws.interval(m, domain, [(p.train_lang, p.test_lang) for p in kept if not p.missing]) if draws else None
        values[m.key] = MetricSummary(mean=mean, std=std, ci=ci)
    interp = [p for p in sel if (p.model, p.strategy, p.scorer, p.train_lang) not in skip]
    return SummaryCell(
        model=first.model, strategy=first.strategy, scorer=first.scorer, domain=domain, values=values,
        pairs=sum(not p.missing for p in sel), transfer_undefined=sum(not p.missing and p.transfer is None for p in sel),
        missing=sum(p.missing for p in sel), not_interpretable=sum(not p.missing for p in sel) - sum(not p.missing for p in interp),
    )


def _avg_cell(plist: list[PairMetrics], domains: list[str], skip: set[JobKey], draws: PairDraws | None) -> SummaryCell:
    """The average over domains: per pair, the mean of its per-domain values; then mean ± std over pairs."""
    first = plist[0]
    values: dict[str, MetricSummary] = {}
    for m in PAIR_METRICS:
        per_pair: dict[tuple[str, str], list[float]] = defaultdict(list)
        for p in plist:
            if p.domain != ALL_DOMAINS and (v := p.metric(m.key)) is not None and _counts_in(m, p, skip):
                per_pair[(p.train_lang, p.test_lang)].append(v)
        mean, std = _mean_std([float(np.mean(v)) for v in per_pair.values()])
        ci = draws.interval_avg(m, domains, sorted(per_pair)) if draws else None
        values[m.key] = MetricSummary(mean=mean, std=std, ci=ci)
    return SummaryCell(
        model=first.model, strategy=first.strategy, scorer=first.scorer, domain=AVG_DOMAINS, values=values,
        pairs=len({(p.train_lang, p.test_lang) for p in plist if p.domain != ALL_DOMAINS and not p.missing}),
        not_interpretable=len({(p.train_lang, p.test_lang) for p in plist if p.domain != ALL_DOMAINS and not p.missing
                               and (p.model, p.strategy, p.scorer, p.train_lang) in skip}),
    )


def summarize(
    outcomes: Sequence[Outcome], languages: Sequence[str], *, seed: int = 0, bootstrap: bool = True,
    not_learned: set[JobKey] | None = None, snapshot_id: str = "", samples: int = BOOTSTRAP_SAMPLES,
    public: Mapping[int, int] | None = None,
) -> list[SummaryCell]:
    """Table 2: mean ± std over pairs per model x strategy x scorer x domain, plus `all` and `avg`, for every
    metric of `PAIR_METRICS`, each with a 95% interval from a bootstrap over the entities of the group's own answers
    (`clkt.report.clustered`: the leaderboard's draws of `snapshot_id` for `seed`, as its row draws them).

    Pairs of the jobs in `not_learned` (no significant in-language gain: `clkt.report.learn`) count in
    Overall but not in Transfer (a metric that `needs_learned`), whose A+B is then what the base model
    guessed: `not_interpretable` says how many were left out.
    """
    skip = not_learned or set()
    idx = _index(outcomes)
    tests = [o for o in outcomes if o.split == "test"]
    cluster_of = {o.qid: o.cluster for o in tests}
    public = Outcome.public_ids(tests) if public is None else public
    by_group: dict[tuple[str, str, str], list[PairMetrics]] = defaultdict(list)
    for p in pair_metrics(outcomes, languages):
        by_group[(p.model, p.strategy, p.scorer)].append(p)
    out: list[SummaryCell] = []
    for group, plist in sorted(by_group.items()):
        domains = sorted({p.domain for p in plist} - {ALL_DOMAINS})
        draws = None
        # the group's own entities (`clkt.report.pooled.Draws.own`): its `all` cell is its leaderboard row's interval
        ents = entity_draws([o.cluster for o in tests if (o.model, o.strategy, o.scorer) == group], snapshot_id=snapshot_id,
                            seed=seed, samples=samples if bootstrap else 0, public=public)
        if bootstrap and len(ents.weights):
            answers = {(k[3], k[4], k[5]): v for k, v in idx.items() if k[:3] == group}
            pairs = list(dict.fromkeys((p.train_lang, p.test_lang) for p in plist))
            draws = pair_draws(answers, cluster_of=cluster_of, draws=ents, domains=[*domains, ALL_DOMAINS], pairs=pairs)
        for domain in [*domains, ALL_DOMAINS]:
            out.append(_domain_cell([p for p in plist if p.domain == domain], domain, skip, draws))
        out.append(_avg_cell(plist, domains, skip, draws))
    return out


def mcnemar_tests(outcomes: Sequence[Outcome], languages: Sequence[str]) -> list[AsymmetryTest]:
    """Per unordered language pair: is L1->L2 transfer different from L2->L1 on the same questions? A group run
    with several training seeds sums each seed's discordant counts (each seed's two directions paired on a question,
    as Learn pools its seeds), then one exact McNemar."""
    counts: dict[tuple[str, str, str, str, str], tuple[int, int]] = {}
    for x in _seeds(outcomes):
        for key, (f, b) in _discordant(x, languages).items():
            f0, b0 = counts.get(key, (0, 0))
            counts[key] = (f0 + f, b0 + b)
    out: list[AsymmetryTest] = []
    for (model, strategy, scorer, l1, l2), (f, b) in sorted(counts.items(), key=lambda kv: (kv[0][:3], _pair_order(kv[0], languages))):
        stronger = None if f == b else (f"{l1}->{l2}" if f > b else f"{l2}->{l1}")
        out.append(AsymmetryTest(model=model, strategy=strategy, scorer=scorer, lang_1=l1, lang_2=l2, forward=f,
                                 backward=b, p_value=mcnemar_exact(f, b) if f + b else None, stronger=stronger))
    return out


def _pair_order(key: tuple[str, str, str, str, str], languages: Sequence[str]) -> tuple[int, int]:
    return languages.index(key[3]), languages.index(key[4])


def _discordant(outcomes: Sequence[Outcome], languages: Sequence[str]) -> dict[tuple[str, str, str, str, str], tuple[int, int]]:
    """One seed's (L1->L2 only, L2->L1 only) per group and unordered pair trained both ways, over every domain."""
    idx = _index(outcomes)
    out: dict[tuple[str, str, str, str, str], tuple[int, int]] = {}
    for model, strategy, scorer in sorted({(k[0], k[1], k[2]) for k in idx}):
        for i, l1 in enumerate(languages):
            for l2 in languages[i + 1 :]:
                fwd = idx.get((model, strategy, scorer, l1, ALL_DOMAINS, l2))
                bwd = idx.get((model, strategy, scorer, l2, ALL_DOMAINS, l1))
                if not fwd or not bwd:
                    continue
                common = set(fwd) & set(bwd)
                out[(model, strategy, scorer, l1, l2)] = (sum(1 for q in common if fwd[q] and not bwd[q]),
                                                          sum(1 for q in common if bwd[q] and not fwd[q]))
    return out


def base_accuracy(outcomes: Sequence[Outcome], *, draws: EntityDraws | None = None) -> list[BaseAccuracy]:
    """The base model's accuracy per language (its answers are the same in every job of a model); `draws`
    (`clkt.report.clustered.entity_draws`): its interval over entities."""
    from scipy.stats import binomtest

    seen: dict[tuple[str, str, str], dict[int, tuple[bool, int]]] = defaultdict(dict)
    for o in outcomes:
        if o.variant == "base" and o.split == "test":
            seen[(o.model, o.scorer, o.lang)].setdefault(o.qid, (o.correct, o.cluster))
    out: list[BaseAccuracy] = []
    for (model, scorer, lang), answers in sorted(seen.items()):
        n = len(answers)
        k = sum(c for c, _ in answers.values())
        acc = k / n if n else None
        p = float(binomtest(k, n, 0.25, alternative="greater").pvalue) if n else None
        flagged = p is not None and p < BASE_FLAG_P  # BASE_FLAG_MEANS
        ci = accuracy_interval(list(answers.values()), draws) if draws is not None and n else None
        out.append(BaseAccuracy(model=model, scorer=scorer, lang=lang, n=n, accuracy=acc, p_above_chance=p, flagged=flagged, ci=ci))
    return out


def parse_failure_rates(outcomes: Sequence[Outcome]) -> dict[tuple[str, str, str], float]:
    """(model, strategy, variant) -> share of `generate` answers with no parseable letter."""
    tot: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for o in outcomes:
        if o.scorer != "generate":
            continue
        t = tot[(o.model, o.strategy, o.variant)]
        t[0] += o.predicted is None
        t[1] += 1
    return {k: v[0] / v[1] for k, v in sorted(tot.items()) if v[1]}


def fmt(mean: float | None, std: float | None) -> str:
    if mean is None or math.isnan(mean):
        return "n/a"
    return f"{100 * mean:.1f} ± {100 * (std or 0):.1f}"
