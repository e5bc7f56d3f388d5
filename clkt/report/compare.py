"""Two targets compared on the same questions: the snapshots of the window valid for both, the entities neither
recognised, the questions both answered, per train language and language pair.

For Overall, Transfer and Learn (the injected model's train-language accuracy), over all pairs and into each
test language: both targets' values, their difference a - b with a 95% *paired* bootstrap interval (the same
entities drawn for both, stratified by snapshot, as in `clkt.report.pooled`), and an exact McNemar test on the
same units (`clkt.report.stats.mcnemar_exact`): for Overall, the question x pair units right in both languages
for one target only; for Transfer, the units both targets got right in the train language, right in the test
language for one only; for Learn, the train-language questions one target alone got right. McNemar treats
those units as independent; the interval, over entities, is the one that does not, and it decides: a
difference whose interval holds 0 is a *tie*. Transfer compares only the pairs whose train language both
targets learned (`LeaderRow.learned_langs`). Identical predictions give a difference of 0, an interval [0, 0]
and McNemar p = 1: a tie.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clkt.report.leaderboard_data import MIN_QUESTIONS, CompareLine, Comparison, Estimate, LeaderRow
from clkt.report.pooled import Draws, bit, decode, nanmean, percentile_ci
from clkt.report.stats import mcnemar_exact
from storage.leaderboard import WindowData
from storage.result_packs import INJECTED_ANSWERED, INJECTED_CORRECT

__all__ = ["compare_targets"]

_PAIR = 5  # n, a of A, a+b of A, a of B, a+b of B
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


def _ratio(num: np.ndarray, den: np.ndarray, keep: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return nanmean(np.where(keep & (den > 0), num / np.maximum(den, 1), np.nan))


def compare_targets(
    data: WindowData, rows: Sequence[LeaderRow], *, target_a: str, target_b: str, strategy: str, scorer_a: str,
    scorer_b: str, languages: Sequence[str], draws: Draws | None, min_questions: int = MIN_QUESTIONS,
) -> Comparison:
    """`draws`: the window's (`clkt.report.leaderboard.window_draws`): the same entities drawn for both targets."""
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    job = {(j.snapshot_id, j.target, j.strategy, j.train_lang): j for j in data.jobs}
    pack = {(p.job_id, p.scorer): p for p in data.packs}
    learned = {(r.target, r.scorer): set(r.learned_langs) for r in rows if r.strategy == strategy}
    both = [s for s in data.snapshots if (s.id, target_a) in data.ready and (s.id, target_b) in data.ready]
    trains = [lt for lt in languages if any((s.id, target_a, strategy, lt) in job for s in both)]
    pairs = [(lt, ls) for lt in trains for ls in languages if ls != lt]
    pix = {p: i for i, p in enumerate(pairs)}
    width = _PAIR * len(pairs) + _TRAIN * len(trains)
    keys_parts: list[np.ndarray] = []
    cols_parts: list[np.ndarray] = []
    disc = np.zeros((len(pairs), 4), dtype=np.int64)  # Overall a-only, b-only; Transfer a-only, b-only
    disc_learn = np.zeros(2, dtype=np.int64)
    used: set[str] = set()
    question_keys: list[np.ndarray] = []  # snapshot index << 40 | question id, of every valid pair
    for s in both:
        excluded = data.exclusions.get((s.id, target_a), frozenset()) | data.exclusions.get((s.id, target_b), frozenset())
        for lt in trains:
            ja, jb = job.get((s.id, target_a, strategy, lt)), job.get((s.id, target_b, strategy, lt))
            pa = pack.get((ja.id, scorer_a)) if ja else None
            pb = pack.get((jb.id, scorer_b)) if jb else None
            if pa is None or pb is None or lt not in pa.langs or lt not in pb.langs:
                continue
            da = decode(pa, snapshot=index[s.id], train_lang=lt, excluded=excluded)
            db = decode(pb, snapshot=index[s.id], train_lang=lt, excluded=excluded)
            _, ia, ib = np.intersect1d(da.qids, db.qids, assume_unique=True, return_indices=True)
            if not len(ia):
                continue
            used.add(s.id)
            fa, fb = da.flags[ia], db.flags[ib]
            keys = (np.int64(index[s.id]) << _SHIFT) | da.ents[ia]
            qids = da.qids[ia]
            ta, tb = da.langs.index(lt), db.langs.index(lt)
            ans_at, cor_at = bit(fa, INJECTED_ANSWERED, ta), bit(fa, INJECTED_CORRECT, ta)
            ans_bt, cor_bt = bit(fb, INJECTED_ANSWERED, tb), bit(fb, INJECTED_CORRECT, tb)
            for ls in languages:
                p = pix.get((lt, ls))
                if p is None or ls not in da.langs or ls not in db.langs:
                    continue
                sa, sb = da.langs.index(ls), db.langs.index(ls)
                cor_as, cor_bs = bit(fa, INJECTED_CORRECT, sa), bit(fb, INJECTED_CORRECT, sb)
                valid = ans_at & ans_bt & bit(fa, INJECTED_ANSWERED, sa) & bit(fb, INJECTED_ANSWERED, sb)
                a_a, a_b = cor_at & cor_as, cor_bt & cor_bs
                base = _PAIR * p
                for off, mask in enumerate((valid, valid & a_a, valid & cor_at, valid & a_b, valid & cor_bt)):
                    keys_parts.append(keys[mask])
                    cols_parts.append(np.full(int(mask.sum()), base + off, dtype=np.int64))
                both_t = valid & cor_at & cor_bt
                disc[p] += [int((valid & a_a & ~a_b).sum()), int((valid & ~a_a & a_b).sum()),
                            int((both_t & cor_as & ~cor_bs).sum()), int((both_t & ~cor_as & cor_bs).sum())]
                question_keys.append((np.int64(index[s.id]) << _SHIFT) | qids[valid])
            t = trains.index(lt)
            lv = ans_at & ans_bt
            base = _PAIR * len(pairs) + _TRAIN * t
            for off, mask in enumerate((lv, lv & cor_at, lv & cor_bt)):
                keys_parts.append(keys[mask])
                cols_parts.append(np.full(int(mask.sum()), base + off, dtype=np.int64))
            disc_learn += [int((lv & cor_at & ~cor_bt).sum()), int((lv & ~cor_at & cor_bt).sum())]
    all_keys = np.unique(np.concatenate(keys_parts)) if keys_parts else np.zeros(0, dtype=np.int64)
    if len(all_keys):
        flat = np.searchsorted(all_keys, np.concatenate(keys_parts)) * width + np.concatenate(cols_parts)
        counts = np.bincount(flat, minlength=len(all_keys) * width).astype(np.float64).reshape(len(all_keys), width)
    else:
        counts = np.zeros((0, width))
    per = draws.sums(all_keys, counts) if draws is not None else {}
    boot_sums = np.sum(list(per.values()), axis=0) if per else None
    point = counts.sum(axis=0)
    questions = len(np.unique(np.concatenate(question_keys))) if question_keys else 0
    too_few = questions < min_questions
    interp = np.asarray([lt in learned.get((target_a, scorer_a), set()) and lt in learned.get((target_b, scorer_b), set())
                         for lt, _ in pairs], dtype=bool)

    def pair_cols(s: np.ndarray) -> np.ndarray:
        return s[..., : _PAIR * len(pairs)].reshape(*s.shape[:-1], len(pairs), _PAIR)

    def metrics(s: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, ...]:
        c = pair_cols(s)
        n = c[..., 0]
        return (_ratio(c[..., 1], n, keep), _ratio(c[..., 3], n, keep),
                _ratio(c[..., 1], c[..., 2], keep & interp), _ratio(c[..., 3], c[..., 4], keep & interp))

    lines: list[CompareLine] = []
    scopes = [("all pairs", np.ones(len(pairs), dtype=bool))] + [
        (f"into {lang}", np.asarray([ls == lang for _, ls in pairs], dtype=bool)) for lang in languages
        if any(ls == lang for _, ls in pairs)
    ]
    c_point = pair_cols(point)
    for scope, keep in scopes:
        got = metrics(point, keep)
        boot = metrics(boot_sums, keep) if boot_sums is not None else None
        for k, name in ((0, "Overall"), (1, "Transfer")):
            va, vb = got[2 * k], got[2 * k + 1]
            a_only, b_only = int(disc[keep, 2 * k].sum()), int(disc[keep, 2 * k + 1].sum())
            n_a = int(c_point[keep, 0].sum()) if k == 0 else int(c_point[keep & interp, 2].sum())
            n_b = int(c_point[keep, 0].sum()) if k == 0 else int(c_point[keep & interp, 4].sum())
            ci_a = percentile_ci(boot[2 * k]) if boot is not None else None
            ci_b = percentile_ci(boot[2 * k + 1]) if boot is not None else None
            d_ci = percentile_ci(boot[2 * k] - boot[2 * k + 1]) if boot is not None else None
            a_v, b_v = _num(va), _num(vb)
            diff = Estimate(value=a_v - b_v if a_v is not None and b_v is not None else None, ci=d_ci,
                            n=int(c_point[keep if k == 0 else keep & interp, 0].sum()))
            lines.append(CompareLine(
                metric=name, scope=scope, a=Estimate(value=a_v, ci=ci_a, n=n_a), b=Estimate(value=b_v, ci=ci_b, n=n_b), diff=diff,
                a_only=a_only, b_only=b_only, p_value=mcnemar_exact(a_only, b_only) if n_a or n_b else None,
                verdict=_verdict(diff, target_a, target_b, too_few),
            ))
        if scope == "all pairs":
            lines.append(_learn_line(point, boot_sums, len(pairs), len(trains), disc_learn, target_a, target_b, too_few))
    notes: list[str] = []
    if not both:
        notes.append(f"no snapshot of the window is valid for both {target_a} and {target_b}")
    elif not used:
        notes.append(f"no question of the window was answered by both {target_a} ({scorer_a}) and {target_b} ({scorer_b}) "
                     f"under {strategy}")
    return Comparison(
        target_a=target_a, target_b=target_b, strategy=strategy, scorer_a=scorer_a, scorer_b=scorer_b,
        snapshots=[s.id for s in both if s.id in used], entities=len(all_keys), questions=questions,
        question_pairs=int(c_point[..., 0].sum()), too_few=too_few, lines=lines, notes=notes,
    )


def _num(x: np.ndarray) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def _learn_line(
    point: np.ndarray, draws: np.ndarray | None, n_pairs: int, n_trains: int, disc: np.ndarray, a: str, b: str,
    too_few: bool,
) -> CompareLine:
    def acc(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = s[..., _PAIR * n_pairs :].reshape(*s.shape[:-1], n_trains, _TRAIN).sum(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.where(t[..., 0] > 0, t[..., 1] / np.maximum(t[..., 0], 1), np.nan),
                    np.where(t[..., 0] > 0, t[..., 2] / np.maximum(t[..., 0], 1), np.nan))

    va, vb = acc(point)
    n = int(point[_PAIR * n_pairs :].reshape(n_trains, _TRAIN)[:, 0].sum()) if n_trains else 0
    ci_a = ci_b = d_ci = None
    if draws is not None:
        da, db = acc(draws)
        ci_a, ci_b, d_ci = percentile_ci(da), percentile_ci(db), percentile_ci(da - db)
    a_v, b_v = _num(va), _num(vb)
    diff = Estimate(value=a_v - b_v if a_v is not None and b_v is not None else None, ci=d_ci, n=n)
    f, g = int(disc[0]), int(disc[1])
    return CompareLine(
        metric="Learn", scope="train language", a=Estimate(value=a_v, ci=ci_a, n=n), b=Estimate(value=b_v, ci=ci_b, n=n),
        diff=diff, a_only=f, b_only=g, p_value=mcnemar_exact(f, g) if n else None, verdict=_verdict(diff, a, b, too_few),
    )
