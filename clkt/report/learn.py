"""Learn: did injection teach the model anything, in the language it was trained in?

Per job (model x strategy x scorer x train language): the injected model's accuracy on the train-language
test questions against the base model's on the same questions, with the exact McNemar test on the paired
answers (a binomial test on the discordant questions: `gained` = wrong before, right after; `lost` = the
opposite). A job *learned* when its gain is positive and p < `LEARN_ALPHA`. Transfer = A/(A+B) of a job that
did not learn is not interpretable: A+B is then mostly what the base model already guessed right.

The report's accuracies and gain carry 95% intervals from a bootstrap over entities (the leaderboard's draws,
`clkt.report.clustered`); without entities (the control split's counts) Wilson intervals, and a Wald interval
of a paired difference for the gain (`clkt.report.stats`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, computed_field

from clkt.evaluate.summary import LearnSummary
from clkt.report.clustered import EntityDraws
from clkt.report.metric_table import learn_accuracy, learn_gain, learned, ratio
from clkt.report.metrics import ALL_DOMAINS, Outcome
from clkt.report.pooled import percentile_ci
from clkt.report.stats import Z95, mcnemar_exact, wilson_ci

__all__ = [
    "LEARN_ALPHA",
    "LearnIntervals",
    "LearnStat",
    "LearnTest",
    "learn_stat",
    "learn_tests",
    "stat_from_counts",
]

LEARN_ALPHA = 0.05  # a job whose in-language gain is not significant at this level did not learn


class LearnIntervals(BaseModel):
    """95% intervals of Learn's accuracies and gain from a bootstrap over entities (`clkt.report.clustered`)."""

    model_config = ConfigDict(frozen=True)

    base: tuple[float, float] | None
    injected: tuple[float, float] | None
    gain: tuple[float, float] | None


class LearnStat(BaseModel):
    """Base against injected on the same questions."""

    model_config = ConfigDict(frozen=True)

    n: int
    base_correct: int
    injected_correct: int
    gained: int  # wrong before, right after
    lost: int  # right before, wrong after
    p_value: float  # exact two-sided McNemar
    alpha: float = LEARN_ALPHA
    # the intervals over entities (`learn_tests` with draws); None: Wilson and Wald intervals over questions (the
    # control split, whose answers per entity are not kept)
    clustered: LearnIntervals | None = None

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def base_accuracy(self) -> float | None:
        return learn_accuracy(self.base_correct, self.n)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def injected_accuracy(self) -> float | None:
        return learn_accuracy(self.injected_correct, self.n)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def gain(self) -> float | None:
        return learn_gain(base_correct=self.base_correct, injected_correct=self.injected_correct, n=self.n)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def learned(self) -> bool:
        return learned(n=self.n, base_correct=self.base_correct, injected_correct=self.injected_correct,
                       significant=lambda: self.p_value < self.alpha)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def base_ci(self) -> tuple[float, float] | None:
        return self.clustered.base if self.clustered is not None else wilson_ci(self.base_correct, self.n)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def injected_ci(self) -> tuple[float, float] | None:
        return self.clustered.injected if self.clustered is not None else wilson_ci(self.injected_correct, self.n)

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def gain_ci(self) -> tuple[float, float] | None:
        if self.clustered is not None:
            return self.clustered.gain
        if not self.n:
            return None
        n, g, lo = self.n, self.gained, self.lost
        d = (g - lo) / n
        se = math.sqrt(max(0.0, (g + lo) / n - d * d) / n)
        return max(-1.0, d - Z95 * se), min(1.0, d + Z95 * se)

    def to_summary(self) -> LearnSummary:
        """The numbers a job's summary keeps (`clkt.evaluate.summary.LearnSummary`)."""
        return LearnSummary(
            n=self.n, base_accuracy=self.base_accuracy, injected_accuracy=self.injected_accuracy, gain=self.gain,
            gained=self.gained, lost=self.lost, p_value=self.p_value, learned=self.learned,
        )


def stat_from_counts(*, n: int, base_correct: int, injected_correct: int, gained: int, lost: int, alpha: float = LEARN_ALPHA) -> LearnStat:
    """From paired counts (as a job summary's `control` keeps them); inconsistent counts raise ValueError."""
    if not (0 <= gained <= n and 0 <= lost <= n and injected_correct - base_correct == gained - lost and 0 <= base_correct <= n):
        raise ValueError(
            f"inconsistent paired counts: n={n}, base={base_correct}, injected={injected_correct}, gained={gained}, lost={lost}"
        )
    return LearnStat(n=n, base_correct=base_correct, injected_correct=injected_correct, gained=gained, lost=lost,
                     p_value=mcnemar_exact(gained, lost), alpha=alpha)


def learn_stat(pairs: Iterable[tuple[bool, bool]], *, alpha: float = LEARN_ALPHA) -> LearnStat:
    """From (base correct, injected correct) per question."""
    n = bc = ic = gained = lost = 0
    for base, inj in pairs:
        n += 1
        bc += bool(base)
        ic += bool(inj)
        gained += (not base) and bool(inj)
        lost += bool(base) and not inj
    return LearnStat(n=n, base_correct=bc, injected_correct=ic, gained=gained, lost=lost, p_value=mcnemar_exact(gained, lost), alpha=alpha)


class LearnTest(BaseModel):
    """Learn of one job group on one domain (or `all`), for the real or the control questions."""

    model_config = ConfigDict(frozen=True)

    model: str
    strategy: str
    scorer: str
    train_lang: str
    domain: str
    control: bool = False
    stat: LearnStat

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def learned(self) -> bool:
        return self.stat.learned


def _intervals(rows: list[tuple[int, bool, bool]], draws: EntityDraws) -> LearnIntervals:
    """(entity, base right, injected right) per question -> the intervals over the draws of the entities."""
    pos = {e: i for i, e in enumerate(draws.entities.tolist())}
    counts = np.zeros((len(draws.entities), 3), dtype=np.float32)
    for e, b, i in rows:
        counts[pos[e]] += (1.0, float(b), float(i))
    s = (draws.weights @ counts).astype(np.float64)  # (samples, 3): n, base right, injected right
    return LearnIntervals(base=percentile_ci(ratio(s[:, 1], s[:, 0])), injected=percentile_ci(ratio(s[:, 2], s[:, 0])),
                          gain=percentile_ci(ratio(s[:, 2] - s[:, 1], s[:, 0])))


def learn_tests(
    outcomes: Sequence[Outcome], *, alpha: float = LEARN_ALPHA, draws: EntityDraws | None = None,
) -> list[LearnTest]:
    """Per (model, strategy, scorer, train language) x (each domain, `all`), over the train-language test
    questions answered by both the base and the injected model of the same job; with several training seeds
    (`Outcome.seed`), every seed's paired answers together (the one rule of `clkt.report.metric_table`: the exact
    McNemar on the summed gained / lost); `draws` (`clkt.report.clustered.entity_draws`):
    the intervals are over entities (else Wilson and Wald, over questions)."""
    base: dict[tuple[str, str, str, str], dict[tuple[int, int], tuple[str, bool, int]]] = defaultdict(dict)
    inj: dict[tuple[str, str, str, str], dict[tuple[int, int], tuple[str, bool, int]]] = defaultdict(dict)
    for o in outcomes:
        if o.split != "test" or o.lang != o.train_lang:
            continue
        key = (o.model, o.strategy, o.scorer, o.train_lang)
        (base if o.variant == "base" else inj)[key][(o.seed, o.qid)] = (o.domain, o.correct, o.cluster)
    out: list[LearnTest] = []
    for key in sorted(inj):
        b = base.get(key, {})
        common = sorted(set(b) & set(inj[key]))
        if not common:
            continue
        by_domain: dict[str, list[tuple[int, bool, bool]]] = defaultdict(list)
        for q in common:
            row = (inj[key][q][2], b[q][1], inj[key][q][1])
            by_domain[inj[key][q][0]].append(row)
            by_domain[ALL_DOMAINS].append(row)
        model, strategy, scorer, lang = key
        for dom in [*sorted(d for d in by_domain if d != ALL_DOMAINS), ALL_DOMAINS]:
            rows = by_domain[dom]
            stat = learn_stat([(x, y) for _, x, y in rows], alpha=alpha)
            if draws is not None and len(draws.weights):
                stat = stat.model_copy(update={"clustered": _intervals(rows, draws)})
            out.append(LearnTest(model=model, strategy=strategy, scorer=scorer, train_lang=lang, domain=dom, stat=stat))
    return out
