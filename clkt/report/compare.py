"""Two targets compared on the same questions: the snapshots of the window valid for both, the entities neither
recognised, the questions both answered, per train language and language pair.

For every metric of `clkt.report.metric_table.PAIR_METRICS` (Overall, Transfer) and Learn (the injected
model's train-language accuracy), over all pairs and into each test language: both targets' values, their
difference a - b with a 95% *paired* bootstrap interval (the same entities drawn for both, stratified by
snapshot, as in `clkt.report.pooled`), and an exact McNemar test on the same units
(`clkt.report.stats.mcnemar_exact`): the question x pair units in a metric's denominator for both targets and
in its numerator for one only (for Overall, the units right in both languages for one target only; for
Transfer, the units both targets got right in the train language, right in the test language for one only);
for Learn, the train-language questions one target alone got right. McNemar treats those units as
independent; the interval, over entities, is the one that does not, and it decides: a difference whose
interval holds 0 is a *tie*. Transfer (a metric that `needs_learned`) compares only the pairs whose train
language both targets learned (`LeaderRow.learned_langs`: the one learned rule of `clkt.report.metric_table`, every
training seed's paired answers together). The comparison's own figures are on the questions both answered, by the
rows' rule over training seeds (`clkt.report.metric_table`, "over seeds"): each side's pair metric is computed per
training seed of that side, then averaged over its seeds, its interval the sampling one of that mean (the same
entity draws for every seed and both sides) widened by the between-seed term (`clkt.report.seeds`); the
difference is the difference of the two means, its interval widened by both sides' terms in quadrature; Learn is
each side's on every one of its seeds' answers together, as its row's. McNemar's discordant units pair the seeds by
rank (a's i-th with b's i-th) and are summed; n counts each seed's answer, as a row's cells do. Identical
predictions give a difference of 0, an interval [0, 0] and McNemar p = 1: a tie.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from clkt.report.leaderboard_data import MIN_QUESTIONS, CompareLine, Comparison, Estimate, LeaderRow
from clkt.report.metric_table import PAIR_METRICS, PairMetric, cell_indicator, ratio
from clkt.report.pooled import Answers, Draws, bit, decode, nanmean, percentile_ci, question_keys
from clkt.report.seeds import seed_term, widen
from clkt.report.stats import mcnemar_exact
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot
from storage.result_packs import INJECTED_ANSWERED, INJECTED_CORRECT, ResultPackRecord

__all__ = ["compare_targets"]

_TRAIN = 3  # n, right for A, right for B
_SHIFT = np.int64(40)


def _verdict(diff: Estimate, a: str, b: str, too_few: bool) -> str:
    if too_few:
        return "too few"
    if diff.value is None:
        return "n/a"
    if diff.ci is None or diff.ci[0] <= 0.0 <= diff.ci[1]:
        return "tie"
    return a if diff.ci[0] > 0 else b


def _num(x: np.ndarray) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


@dataclass(slots=True)
class _Units:
    """Counts per unit (an entity of a snapshot) of the questions both targets answered: per pair, n (units
    answered in both languages by both) and, per sum of cells the metric table reads, target a's then b's; per
    train language n, right for a, right for b. `disc`: McNemar's discordant units per pair and metric (a only,
    b only)."""

    pairs: list[tuple[str, str]]
    trains: list[str]
    sets: list[str]
    keys: list[np.ndarray] = field(default_factory=list)
    cols: list[np.ndarray] = field(default_factory=list)
    disc: np.ndarray = field(default_factory=lambda: np.zeros(0))
    disc_learn: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))
    used: set[str] = field(default_factory=set)
    questions: list[np.ndarray] = field(default_factory=list)

    @property
    def per_pair(self) -> int:
        return 1 + 2 * len(self.sets)

    @property
    def width(self) -> int:
        return self.per_pair * len(self.pairs) + _TRAIN * len(self.trains)

    def add(self, keys: np.ndarray, col: int, masks: Sequence[np.ndarray]) -> None:
        for off, mask in enumerate(masks):
            self.keys.append(keys[mask])
            self.cols.append(np.full(int(mask.sum()), col + off, dtype=np.int64))

    def pair_cols(self, s: np.ndarray) -> np.ndarray:
        return s[..., : self.per_pair * len(self.pairs)].reshape(*s.shape[:-1], len(self.pairs), self.per_pair)

    def cells(self, s: np.ndarray, side: int) -> dict[str, np.ndarray]:
        """Target a's (side 0) or b's (1) sums of cells, per pair."""
        c = self.pair_cols(s)
        return {cs: c[..., 1 + 2 * i + side] for i, cs in enumerate(self.sets)}


def _one_train(
    u: _Units, keys: np.ndarray, fa: np.ndarray, fb: np.ndarray, la: tuple[str, ...], lb: tuple[str, ...], lt: str,
    languages: Sequence[str], pix: dict[tuple[str, str], int],
) -> np.ndarray:
    """Count one train language's common questions of one snapshot; the mask of those answered in some pair."""
    ta, tb = la.index(lt), lb.index(lt)
    ans_at, cor_at = bit(fa, INJECTED_ANSWERED, ta), bit(fa, INJECTED_CORRECT, ta)
    ans_bt, cor_bt = bit(fb, INJECTED_ANSWERED, tb), bit(fb, INJECTED_CORRECT, tb)
    metrics = list(PAIR_METRICS)
    answered = np.zeros(len(keys), dtype=bool)
    for ls in languages:
        p = pix.get((lt, ls))
        if p is None or ls not in la or ls not in lb:
            continue
        sa, sb = la.index(ls), lb.index(ls)
        cor_as, cor_bs = bit(fa, INJECTED_CORRECT, sa), bit(fb, INJECTED_CORRECT, sb)
        valid = ans_at & ans_bt & bit(fa, INJECTED_ANSWERED, sa) & bit(fb, INJECTED_ANSWERED, sb)
        ind = {cs: (valid & cell_indicator(cs, cor_at, cor_as), valid & cell_indicator(cs, cor_bt, cor_bs)) for cs in u.sets}
        u.add(keys, u.per_pair * p, [valid, *[m for cs in u.sets for m in ind[cs]]])
        for k, m in enumerate(metrics):
            (na, nb), (da, db) = ind[m.numerator], ind[m.denominator]
            both = da & db
            u.disc[p, k] += [int((both & na & ~nb).sum()), int((both & ~na & nb).sum())]
        answered |= valid
    lv = ans_at & ans_bt
    u.add(keys, u.per_pair * len(u.pairs) + _TRAIN * u.trains.index(lt), [lv, lv & cor_at, lv & cor_bt])
    u.disc_learn += [int((lv & cor_at & ~cor_bt).sum()), int((lv & ~cor_at & cor_bt).sum())]
    return answered


def _valid_for_both(data: WindowData, target_a: str, target_b: str) -> list[WindowSnapshot]:
    return [s for s in data.snapshots if (s.id, target_a) in data.ready and (s.id, target_b) in data.ready]


def _trains(data: WindowData, *, target_a: str, target_b: str, strategy: str, languages: Sequence[str]) -> list[str]:
    """The train languages target a was injected in under `strategy` on a snapshot valid for both (any seed)."""
    job = lowest_seed_jobs(data)
    both = _valid_for_both(data, target_a, target_b)
    return [lt for lt in languages if any((s.id, target_a, strategy, lt) in job for s in both)]


def _collect(
    data: WindowData, *, target_a: str, target_b: str, strategy: str, scorer_a: str, scorer_b: str,
    languages: Sequence[str], trains: Sequence[str],
) -> tuple[_Units, list[str]]:
    """The units of the snapshots valid for both targets (and their ids), of the jobs in `data` (one run's: one job
    per key), in the train languages `trains` (`_trains`, the same for every run)."""
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    job = lowest_seed_jobs(data)
    pack = {(p.job_id, p.scorer): p for p in data.packs}
    both = _valid_for_both(data, target_a, target_b)
    pairs = [(lt, ls) for lt in trains for ls in languages if ls != lt]
    pix = {p: i for i, p in enumerate(pairs)}
    u = _Units(pairs=pairs, trains=list(trains), sets=PAIR_METRICS.cell_sets())
    u.disc = np.zeros((len(pairs), len(PAIR_METRICS), 2), dtype=np.int64)
    for s in both:
        excluded = data.exclusions.get((s.id, target_a), frozenset()) | data.exclusions.get((s.id, target_b), frozenset())
        for lt in trains:
            ja, jb = job.get((s.id, target_a, strategy, lt)), job.get((s.id, target_b, strategy, lt))
            pa = pack.get((ja.id, scorer_a)) if ja else None
            pb = pack.get((jb.id, scorer_b)) if jb else None
            if pa is None or pb is None or lt not in pa.langs or lt not in pb.langs:
                continue
            pair_packs(u, pa, pb, snapshot=s.id, at=index[s.id], train_lang=lt, excluded=excluded, languages=languages, pix=pix)
    return u, [s.id for s in both]


def lowest_seed_jobs(data: WindowData) -> dict[tuple[str, str, str, str], WindowJob]:
    """One job per (snapshot, target, strategy, train language): with several training seeds, the lowest seed's
    (the comparisons call it on one run's data, `of_seeds`, where there is one job per key)."""
    return {(j.snapshot_id, j.target, j.strategy, j.train_lang): j for j in sorted(data.jobs, key=lambda j: -j.seed)}


def pair_packs(
    u: _Units, pa: ResultPackRecord, pb: ResultPackRecord, *, snapshot: str, at: int, train_lang: str, excluded: frozenset[int],
    languages: Sequence[str], pix: dict[tuple[str, str], int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Answers, Answers] | None:
    """Two result packs of one snapshot (`at`: its index in the window) and train language paired on the
    questions both answered, added to `u`; (keys, the rows of each, both decoded), None when they share none."""
    da = decode(pa, snapshot=at, train_lang=train_lang, excluded=excluded)
    db = decode(pb, snapshot=at, train_lang=train_lang, excluded=excluded)
    _, ia, ib = np.intersect1d(da.qids, db.qids, assume_unique=True, return_indices=True)
    if not len(ia):
        return None
    u.used.add(snapshot)
    keys = (np.int64(at) << _SHIFT) | da.ents[ia]
    answered = _one_train(u, keys, da.flags[ia], db.flags[ib], da.langs, db.langs, train_lang, languages, pix)
    u.questions.append(question_keys(at, da.qids[ia][answered]))
    return keys, ia, ib, da, db


@dataclass(slots=True)
class Seeded:
    """One comparison's units per run: a run pairs one training seed of side a with one of side b (the same pairs
    and train languages in each); its sums over the units and the same sums per draw of entities (the same draws
    for every run; None without draws). Side a's seed s is read from the run (s, b's lowest seed), side b's seed
    s from (a's lowest seed, s); McNemar pairs the seeds by rank (a's i-th with b's i-th)."""

    seeds_a: list[int]
    seeds_b: list[int]
    runs: dict[tuple[int, int], tuple[_Units, np.ndarray, np.ndarray | None]]

    @property
    def u(self) -> _Units:
        return next(iter(self.runs.values()))[0]

    def side_keys(self, side: int) -> list[tuple[int, int]]:
        """The run of each training seed of one side (0: a, 1: b)."""
        if side == 0:
            return [(s, self.seeds_b[0]) for s in self.seeds_a]
        return [(self.seeds_a[0], s) for s in self.seeds_b]

    def side(self, side: int) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """(sums, sums per draw) of each training seed of one side (0: a, 1: b)."""
        return [self.runs[k][1:] for k in self.side_keys(side)]

    @property
    def ranked(self) -> list[tuple[_Units, np.ndarray]]:
        return [self.runs[k][:2] for k in zip(self.seeds_a, self.seeds_b, strict=False)]

    @property
    def point(self) -> np.ndarray:
        """The rank-paired runs' sums together (the comparison's question x pair units)."""
        return np.asarray(np.sum([p for _, p in self.ranked], axis=0))


def _seed_mean(values: list[float | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return float(np.mean(ok)) if ok else None


def _seed_term(values: list[float | None]) -> float:
    """The between-seed term of a side's mean over its seeds with a value (`clkt.report.seeds.seed_term`)."""
    return seed_term([v for v in values if v is not None])


def _widen(sampling: tuple[float, float] | None, center: float | None, term: float, bounds: tuple[float, float],
           ) -> tuple[float, float] | None:
    """`sampling` widened by the between-seed `term` (`clkt.report.seeds.widen`); as it is without a seed term."""
    if sampling is None or center is None or term == 0.0:
        return sampling
    return widen(sampling, center, term, bounds=bounds)


def _metric_line(
    sd: Seeded, m: int, metric: PairMetric, scope: str, keep: np.ndarray, interp: np.ndarray, names: tuple[str, str],
    too_few: bool,
) -> CompareLine:
    """One metric of the table over the pairs `keep` (and, if it needs them to have learned, `interp`): each side per
    training seed, then the mean over its seeds (its row's rule); the difference of the two means."""
    u = sd.u
    kept = keep & interp if metric.needs_learned else keep

    def value(x: np.ndarray, side: int) -> np.ndarray:
        return nanmean(np.where(kept, metric.ratio(u.cells(x, side)), np.nan))

    vals = [[_num(value(p, side)) for p, _ in sd.side(side)] for side in (0, 1)]
    va, vb = _seed_mean(vals[0]), _seed_mean(vals[1])
    n_a, n_b = (int(sum(u.cells(p, side)[metric.denominator][kept].sum() for p, _ in sd.side(side))) for side in (0, 1))
    ci_a = ci_b = d_ci = None
    if all(b is not None for side in (0, 1) for _, b in sd.side(side)):
        da, db = (nanmean(np.stack([value(b, side) for _, b in sd.side(side) if b is not None]), axis=0) for side in (0, 1))
        terms = [_seed_term(v) for v in vals]
        ci_a, ci_b = _widen(percentile_ci(da), va, terms[0], (0.0, 1.0)), _widen(percentile_ci(db), vb, terms[1], (0.0, 1.0))
        dv = va - vb if va is not None and vb is not None else None
        d_ci = _widen(percentile_ci(da - db), dv, math.hypot(*terms), (-1.0, 1.0))
    disc = np.sum([x.disc for x, _ in sd.ranked], axis=0)
    a_only, b_only = int(disc[keep, m, 0].sum()), int(disc[keep, m, 1].sum())
    diff = Estimate(value=va - vb if va is not None and vb is not None else None, ci=d_ci,
                    n=int(u.pair_cols(sd.point)[kept, 0].sum()))
    return CompareLine(
        metric=metric.label, scope=scope, a=Estimate(value=va, ci=ci_a, n=n_a), b=Estimate(value=vb, ci=ci_b, n=n_b),
        diff=diff, a_only=a_only, b_only=b_only, p_value=mcnemar_exact(a_only, b_only) if n_a or n_b else None,
        verdict=_verdict(diff, names[0], names[1], too_few),
    )


def _learn_line(sd: Seeded, names: tuple[str, str], too_few: bool) -> CompareLine:
    """Learn: each side's injected train-language accuracy on every one of its seeds' answers together (its row's
    reading)."""
    u = sd.u

    def train(s: np.ndarray) -> np.ndarray:
        return np.asarray(s[..., u.per_pair * len(u.pairs) :].reshape(*s.shape[:-1], len(u.trains), _TRAIN).sum(axis=-2))

    def together(side: int, k: int) -> tuple[np.ndarray, np.ndarray | None]:
        runs = sd.side(side)
        point = train(np.sum([p for p, _ in runs], axis=0))
        boots = [b for _, b in runs]
        draws = train(np.sum(boots, axis=0)) if all(b is not None for b in boots) else None  # type: ignore[arg-type]
        return ratio(point[..., k], point[..., 0]), None if draws is None else ratio(draws[..., k], draws[..., 0])

    (va, da), (vb, db) = together(0, 1), together(1, 2)
    n_a, n_b = (int(train(np.sum([p for p, _ in sd.side(side)], axis=0))[..., 0]) if u.trains else 0 for side in (0, 1))
    ci_a = ci_b = d_ci = None
    if da is not None and db is not None:
        ci_a, ci_b, d_ci = percentile_ci(da), percentile_ci(db), percentile_ci(da - db)
    a_v, b_v = _num(va), _num(vb)
    n = int(train(sd.point)[..., 0]) if u.trains else 0
    diff = Estimate(value=a_v - b_v if a_v is not None and b_v is not None else None, ci=d_ci, n=n)
    f, g = (int(x) for x in np.sum([x.disc_learn for x, _ in sd.ranked], axis=0))
    return CompareLine(
        metric="Learn", scope="train language", a=Estimate(value=a_v, ci=ci_a, n=n_a), b=Estimate(value=b_v, ci=ci_b, n=n_b),
        diff=diff, a_only=f, b_only=g, p_value=mcnemar_exact(f, g) if n else None, verdict=_verdict(diff, *names, too_few),
    )


def side_seeds(data: WindowData, side_a: Callable[[WindowJob], bool], side_b: Callable[[WindowJob], bool],
               ) -> tuple[list[int], list[int]]:
    """Each side's training seeds (sorted; [0] for a side without a job)."""
    return (sorted({j.seed for j in data.jobs if side_a(j)}) or [0], sorted({j.seed for j in data.jobs if side_b(j)}) or [0])


def of_seeds(data: WindowData, side_a: Callable[[WindowJob], bool], seed_a: int, seed_b: int) -> WindowData:
    """`data` with side a's jobs (`side_a`) of training seed `seed_a` and every other job of `seed_b` (and their
    packs): one run of a comparison."""
    jobs = tuple(j for j in data.jobs if j.seed == (seed_a if side_a(j) else seed_b))
    ids = {j.id for j in jobs}
    return dataclasses.replace(data, jobs=jobs, packs=tuple(p for p in data.packs if p.job_id in ids))


def seeded_counts(per_run: list[tuple[list[np.ndarray], list[np.ndarray]]], width: int, draws: Draws | None,
                  ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray | None]]:
    """Each run's units (its keys and columns) counted over the keys of every run: (those keys, each run's sums,
    each run's sums per draw: the same entity draws for every run)."""
    every = [k for keys, _ in per_run for k in keys]
    all_keys = np.unique(np.concatenate(every)) if every else np.zeros(0, dtype=np.int64)
    own = draws.own(all_keys) if draws is not None else None
    points: list[np.ndarray] = []
    boots: list[np.ndarray | None] = []
    for keys, cols in per_run:
        if keys and len(all_keys):
            flat = np.searchsorted(all_keys, np.concatenate(keys)) * width + np.concatenate(cols)
            counts = np.bincount(flat, minlength=len(all_keys) * width).astype(np.float64).reshape(len(all_keys), width)
        else:
            counts = np.zeros((len(all_keys), width))
        points.append(counts.sum(axis=0))
        per = own.sums(all_keys, counts) if own is not None else {}
        boots.append(np.sum(list(per.values()), axis=0) if per else None)
    return all_keys, points, boots


def run_keys(seeds_a: Sequence[int], seeds_b: Sequence[int]) -> list[tuple[int, int]]:
    """The runs a comparison needs: each seed of a with b's lowest, b's others with a's lowest, and the rank pairs."""
    keys = [(s, seeds_b[0]) for s in seeds_a] + [(seeds_a[0], s) for s in seeds_b[1:]]
    keys += [k for k in zip(seeds_a, seeds_b, strict=False) if k not in keys]
    return keys


def comparison_lines(sd: Seeded, interp: np.ndarray, names: tuple[str, str], languages: Sequence[str], too_few: bool,
                     ) -> list[CompareLine]:
    """Every metric of the table over all pairs and into each test language, and Learn: a comparison's lines (of two
    targets, or of two strategies)."""
    u = sd.u
    lines: list[CompareLine] = []
    scopes = [("all pairs", np.ones(len(u.pairs), dtype=bool))] + [
        (f"into {lang}", np.asarray([ls == lang for _, ls in u.pairs], dtype=bool)) for lang in languages
        if any(ls == lang for _, ls in u.pairs)
    ]
    for scope, keep in scopes:
        lines += [_metric_line(sd, k, m, scope, keep, interp, names, too_few) for k, m in enumerate(PAIR_METRICS)]
        if scope == "all pairs":
            lines.append(_learn_line(sd, names, too_few))
    return lines


def compare_targets(
    data: WindowData, rows: Sequence[LeaderRow], *, target_a: str, target_b: str, strategy: str, scorer_a: str,
    scorer_b: str, languages: Sequence[str], draws: Draws | None, min_questions: int = MIN_QUESTIONS,
) -> Comparison:
    """`draws`: the window's (`clkt.report.leaderboard.window_draws`): the draws of the entities both targets answered
    (`Draws.own`), the same for both sides and every run: paired."""
    def is_a(j: WindowJob) -> bool:
        return (j.target, j.strategy) == (target_a, strategy)

    seeds_a, seeds_b = side_seeds(data, is_a, lambda j: (j.target, j.strategy) == (target_b, strategy))
    collect = functools.partial(_collect, target_a=target_a, target_b=target_b, strategy=strategy, scorer_a=scorer_a,
                                scorer_b=scorer_b, languages=languages)
    trains = _trains(data, target_a=target_a, target_b=target_b, strategy=strategy, languages=languages)
    keys = run_keys(seeds_a, seeds_b)
    runs = [collect(of_seeds(data, is_a, sa, sb), trains=trains) for sa, sb in keys]
    units, both = [u for u, _ in runs], runs[0][1]  # the snapshots valid for both do not depend on the run
    all_keys, points, boots = seeded_counts([(u.keys, u.cols) for u in units], units[0].width, draws)
    sd = Seeded(seeds_a=seeds_a, seeds_b=seeds_b,
                runs={k: (u, p, b) for k, u, p, b in zip(keys, units, points, boots, strict=True)})
    u = sd.u
    every_q = [q for x in units for q in x.questions]
    questions = len(np.unique(np.concatenate(every_q))) if every_q else 0
    too_few = questions < min_questions
    learned = {(r.target, r.scorer): set(r.learned_langs) for r in rows if r.strategy == strategy}
    interp = np.asarray([lt in learned.get((target_a, scorer_a), set()) and lt in learned.get((target_b, scorer_b), set())
                         for lt, _ in u.pairs], dtype=bool)
    names = (target_a, target_b)
    lines = comparison_lines(sd, interp, names, languages, too_few)
    used = set().union(*(x.used for x in units))
    notes: list[str] = []
    if not both:
        notes.append(f"no snapshot of the window is valid for both {target_a} and {target_b}")
    elif not used:
        notes.append(f"no question of the window was answered by both {target_a} ({scorer_a}) and {target_b} ({scorer_b}) "
                     f"under {strategy}")
    if len(seeds_a) > 1 or len(seeds_b) > 1:
        notes.append(seeds_note(names, seeds_a, seeds_b))
    return Comparison(
        target_a=target_a, target_b=target_b, strategy=strategy, scorer_a=scorer_a, scorer_b=scorer_b,
        snapshots=[s for s in both if s in used], entities=len(all_keys), questions=questions,
        question_pairs=int(u.pair_cols(sd.point)[..., 0].sum()), too_few=too_few, lines=lines, notes=notes,
    )


def seeds_note(names: tuple[str, str], seeds_a: Sequence[int], seeds_b: Sequence[int]) -> str:
    return (f"training seeds: {names[0]} {', '.join(map(str, seeds_a))}, {names[1]} {', '.join(map(str, seeds_b))}; "
            "each side's figures are the mean over its seeds (its row's rule), McNemar pairs the seeds by rank")
