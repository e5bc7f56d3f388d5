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
training seed's paired answers together). The comparison's own figures are on the questions both answered, each
side's lowest training seed's answers (`lowest_seed_jobs`): with one seed they are the rows' figures on those
questions; with several they are that seed's, not the rows' mean over seeds. Identical predictions give a difference of 0, an
interval [0, 0] and McNemar p = 1: a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from clkt.report.leaderboard_data import MIN_QUESTIONS, CompareLine, Comparison, Estimate, LeaderRow
from clkt.report.metric_table import PAIR_METRICS, PairMetric, cell_indicator, ratio
from clkt.report.pooled import Answers, Draws, bit, decode, nanmean, percentile_ci
from clkt.report.stats import mcnemar_exact
from storage.leaderboard import WindowData, WindowJob
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


def _collect(
    data: WindowData, *, target_a: str, target_b: str, strategy: str, scorer_a: str, scorer_b: str,
    languages: Sequence[str],
) -> tuple[_Units, list[str]]:
    """The units of the snapshots valid for both targets (and their ids)."""
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    job = lowest_seed_jobs(data)
    pack = {(p.job_id, p.scorer): p for p in data.packs}
    both = [s for s in data.snapshots if (s.id, target_a) in data.ready and (s.id, target_b) in data.ready]
    trains = [lt for lt in languages if any((s.id, target_a, strategy, lt) in job for s in both)]
    pairs = [(lt, ls) for lt in trains for ls in languages if ls != lt]
    pix = {p: i for i, p in enumerate(pairs)}
    u = _Units(pairs=pairs, trains=trains, sets=PAIR_METRICS.cell_sets())
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
    (a paired comparison is made on the same questions, on one seed of each side)."""
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
    u.questions.append((np.int64(at) << _SHIFT) | da.qids[ia][answered])
    return keys, ia, ib, da, db


def _metric_line(
    u: _Units, m: int, metric: PairMetric, scope: str, keep: np.ndarray, interp: np.ndarray, point: np.ndarray,
    boot: np.ndarray | None, names: tuple[str, str], too_few: bool,
) -> CompareLine:
    """One metric of the table over the pairs `keep` (and, if it needs them to have learned, `interp`)."""
    kept = keep & interp if metric.needs_learned else keep
    values = [metric.ratio(u.cells(point, side)) for side in (0, 1)]
    va, vb = (_num(nanmean(np.where(kept, v, np.nan))) for v in values)
    n_a, n_b = (int(u.cells(point, side)[metric.denominator][kept].sum()) for side in (0, 1))
    ci_a = ci_b = d_ci = None
    if boot is not None:
        da, db = (nanmean(np.where(kept, metric.ratio(u.cells(boot, side)), np.nan)) for side in (0, 1))
        ci_a, ci_b, d_ci = percentile_ci(da), percentile_ci(db), percentile_ci(da - db)
    a_only, b_only = int(u.disc[keep, m, 0].sum()), int(u.disc[keep, m, 1].sum())
    diff = Estimate(value=va - vb if va is not None and vb is not None else None, ci=d_ci,
                    n=int(u.pair_cols(point)[kept, 0].sum()))
    return CompareLine(
        metric=metric.label, scope=scope, a=Estimate(value=va, ci=ci_a, n=n_a), b=Estimate(value=vb, ci=ci_b, n=n_b),
        diff=diff, a_only=a_only, b_only=b_only, p_value=mcnemar_exact(a_only, b_only) if n_a or n_b else None,
        verdict=_verdict(diff, names[0], names[1], too_few),
    )


def _learn_line(u: _Units, point: np.ndarray, draws: np.ndarray | None, names: tuple[str, str], too_few: bool) -> CompareLine:
    def acc(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = s[..., u.per_pair * len(u.pairs) :].reshape(*s.shape[:-1], len(u.trains), _TRAIN).sum(axis=-2)
        return ratio(t[..., 1], t[..., 0]), ratio(t[..., 2], t[..., 0])

    va, vb = acc(point)
    n = int(point[u.per_pair * len(u.pairs) :].reshape(len(u.trains), _TRAIN)[:, 0].sum()) if u.trains else 0
    ci_a = ci_b = d_ci = None
    if draws is not None:
        da, db = acc(draws)
        ci_a, ci_b, d_ci = percentile_ci(da), percentile_ci(db), percentile_ci(da - db)
    a_v, b_v = _num(va), _num(vb)
    diff = Estimate(value=a_v - b_v if a_v is not None and b_v is not None else None, ci=d_ci, n=n)
    f, g = int(u.disc_learn[0]), int(u.disc_learn[1])
    return CompareLine(
        metric="Learn", scope="train language", a=Estimate(value=a_v, ci=ci_a, n=n), b=Estimate(value=b_v, ci=ci_b, n=n),
        diff=diff, a_only=f, b_only=g, p_value=mcnemar_exact(f, g) if n else None, verdict=_verdict(diff, *names, too_few),
    )


def compare_targets(
    data: WindowData, rows: Sequence[LeaderRow], *, target_a: str, target_b: str, strategy: str, scorer_a: str,
    scorer_b: str, languages: Sequence[str], draws: Draws | None, min_questions: int = MIN_QUESTIONS,
) -> Comparison:
    """`draws`: the window's (`clkt.report.leaderboard.window_draws`): the draws of the entities both targets answered
    (`Draws.own`), the same for both sides: paired."""
    u, both = _collect(data, target_a=target_a, target_b=target_b, strategy=strategy, scorer_a=scorer_a,
                       scorer_b=scorer_b, languages=languages)
    all_keys = np.unique(np.concatenate(u.keys)) if u.keys else np.zeros(0, dtype=np.int64)
    if len(all_keys):
        flat = np.searchsorted(all_keys, np.concatenate(u.keys)) * u.width + np.concatenate(u.cols)
        counts = np.bincount(flat, minlength=len(all_keys) * u.width).astype(np.float64).reshape(len(all_keys), u.width)
    else:
        counts = np.zeros((0, u.width))
    per = draws.own(all_keys).sums(all_keys, counts) if draws is not None else {}  # the units of the comparison
    boot = np.sum(list(per.values()), axis=0) if per else None
    point = counts.sum(axis=0)
    questions = len(np.unique(np.concatenate(u.questions))) if u.questions else 0
    too_few = questions < min_questions
    learned = {(r.target, r.scorer): set(r.learned_langs) for r in rows if r.strategy == strategy}
    interp = np.asarray([lt in learned.get((target_a, scorer_a), set()) and lt in learned.get((target_b, scorer_b), set())
                         for lt, _ in u.pairs], dtype=bool)
    names = (target_a, target_b)
    lines: list[CompareLine] = []
    scopes = [("all pairs", np.ones(len(u.pairs), dtype=bool))] + [
        (f"into {lang}", np.asarray([ls == lang for _, ls in u.pairs], dtype=bool)) for lang in languages
        if any(ls == lang for _, ls in u.pairs)
    ]
    for scope, keep in scopes:
        lines += [_metric_line(u, k, m, scope, keep, interp, point, boot, names, too_few) for k, m in enumerate(PAIR_METRICS)]
        if scope == "all pairs":
            lines.append(_learn_line(u, point, boot, names, too_few))
    notes: list[str] = []
    if not both:
        notes.append(f"no snapshot of the window is valid for both {target_a} and {target_b}")
    elif not u.used:
        notes.append(f"no question of the window was answered by both {target_a} ({scorer_a}) and {target_b} ({scorer_b}) "
                     f"under {strategy}")
    return Comparison(
        target_a=target_a, target_b=target_b, strategy=strategy, scorer_a=scorer_a, scorer_b=scorer_b,
        snapshots=[s for s in both if s in u.used], entities=len(all_keys), questions=questions,
        question_pairs=int(u.pair_cols(point)[..., 0].sum()), too_few=too_few, lines=lines, notes=notes,
    )
