"""Two injection strategies of one target compared on the same questions (`clkt leaderboard --compare-strategies
A,B`): the paper's second use of the benchmark, methods compared for one model.

The pairing is a target comparison's (`clkt.report.compare`) with the strategy in the target's place: per snapshot
of the window valid for the target (its exclusions removed), per train language both strategies were run in, the
test questions both jobs answered (in the train language and, for a pair, in the test language). On those
questions: Learn (the injected model's train-language accuracy), Overall and Transfer of both strategies side by
side, their difference a - b with a 95% paired bootstrap interval over entities (the window's draws: the same
entities for both strategies), an exact McNemar test on the discordant units and a verdict (the better strategy,
"tie" when the interval holds 0). Beside them, each strategy's Learn as base -> injected on the same
train-language questions (base answered under both), with its gain's interval and McNemar p; whether it learned is its
row's flag (the one rule of `clkt.report.metric_table`: every seed's paired answers, all its questions). Over
training seeds the comparison follows the rows' rule as a target comparison does (`clkt.report.compare`): each
strategy's pair metrics per seed, then the mean over its seeds (between-seed term in the interval), Learn and the
base -> injected lines on every one of its seeds' answers together; McNemar pairs the seeds by rank.

A metric added to the side-by-side table is one more `CompareLine` (`lines`): the table, the JSON and the page
show whatever lines there are.

Refused with one `LeaderboardError` line: an unknown strategy (the known ones listed), the same strategy twice,
`--strategy` or `--compare` beside it, several targets and no `--target` naming one, a target with results of
only one of the two (or of neither), no result scorer both have, no question both answered.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

import numpy as np

from clkt.report.compare import (
    Seeded,
    _Units,
    comparison_lines,
    lowest_seed_jobs,
    of_seeds,
    pair_packs,
    run_keys,
    seeded_counts,
    seeds_note,
    side_seeds,
)
from clkt.report.leaderboard_data import (
    MIN_QUESTIONS,
    Estimate,
    Leaderboard,
    LeaderboardError,
    LeaderboardQuery,
    LeaderRow,
    LearnEstimate,
    StrategyComparison,
)
from clkt.report.learn import stat_from_counts
from clkt.report.metric_table import PAIR_METRICS, ratio
from clkt.report.open_board import is_open
from clkt.report.pooled import Draws, bit, percentile_ci
from storage.leaderboard import WindowData, WindowJob
from storage.result_packs import BASE_ANSWERED, BASE_CORRECT, INJECTED_ANSWERED, INJECTED_CORRECT

__all__ = ["check_strategy_pair", "choose_target", "compare_strategies", "parse_strategy_pair", "with_strategy_comparison"]

_SHIFT = np.int64(40)
_PREFERRED = ("generate", "option-loglik", "letter-logprob")  # as a target comparison picks its scorer
_BASE = 3  # per strategy and unit: n (base and both injected answered), base right, injected right


def parse_strategy_pair(value: str) -> tuple[str, str]:
    """`A,B` as two names; anything else refused with one line."""
    parts = [x.strip() for x in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise LeaderboardError(f"--compare-strategies: expected two strategies as A,B, got {value!r}")
    return parts[0], parts[1]


def check_strategy_pair(q: LeaderboardQuery, known: Collection[str]) -> None:
    """The query's strategy pair against the known strategy names (the registry's and the store's)."""
    if q.compare_strategies is None:
        return
    a, b = q.compare_strategies
    for name in (a, b):
        if name not in known:
            raise LeaderboardError(f"unknown strategy {name!r}; known: {', '.join(sorted(known)) or 'none'}")
    if a == b:
        raise LeaderboardError(f"--compare-strategies needs two different strategies, got {a!r} twice")
    if q.strategy is not None:
        raise LeaderboardError("--strategy with --compare-strategies: choose one (the compared strategies are both shown)")
    if q.compare is not None:
        raise LeaderboardError("--compare-targets with --compare-strategies: choose one")


def choose_target(rows: Sequence[LeaderRow], q: LeaderboardQuery) -> tuple[str, str]:
    """The target and the result scorer of the comparison `q.compare_strategies` (a pair, checked)."""
    assert q.compare_strategies is not None
    a, b = q.compare_strategies
    have = {s: {r.target for r in rows if r.strategy == s} for s in (a, b)}
    if len(q.targets) > 1:
        raise LeaderboardError(f"--compare-strategies compares one target: name one --target (got {', '.join(q.targets)})")
    if q.targets:
        target = q.targets[0]
    else:
        either = sorted(have[a] | have[b])
        if len(either) > 1:
            raise LeaderboardError(f"--compare-strategies: several targets have results of {a} or {b} "
                                   f"({', '.join(either)}); name one with --target")
        if not either:
            raise LeaderboardError(f"no target has results of {a} or {b} in the window")
        target = either[0]
    missing = [s for s in (a, b) if target not in have[s]]
    if missing:
        only = [s for s in (a, b) if s not in missing]
        raise LeaderboardError(f"target {target} has results of {only[0] + ' only' if only else 'neither strategy'}, "
                               f"not of {' nor '.join(missing)}, in the window"
                               + (f" scored {q.scorer}" if q.scorer else ""))
    scorers = [{r.scorer for r in rows if (r.target, r.strategy) == (target, s)} for s in (a, b)]
    # the scorer named, else the multiple-choice ones (an open layer only when named: `clkt.report.open_board`)
    common = sorted(x for x in scorers[0] & scorers[1] if (x == q.scorer if q.scorer is not None else not is_open(x)))
    if not common:
        raise LeaderboardError(f"target {target}: no result scorer{' ' + q.scorer if q.scorer else ''} has results of "
                               f"both {a} and {b}")
    return target, next((p for p in _PREFERRED if p in common), common[0])


class _Base:
    """Per unit, per strategy: the Learn counts of base against injected on the paired train-language questions;
    and McNemar's gained / lost per strategy."""

    def __init__(self) -> None:
        self.keys: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.moved = np.zeros((2, 2), dtype=np.int64)  # per strategy: gained, lost

    def add(self, keys: np.ndarray, fa: np.ndarray, fb: np.ndarray, ta: int, tb: int) -> None:
        lv = (bit(fa, INJECTED_ANSWERED, ta) & bit(fb, INJECTED_ANSWERED, tb) & bit(fa, BASE_ANSWERED, ta)
              & bit(fb, BASE_ANSWERED, tb))
        for side, (f, t) in enumerate(((fa, ta), (fb, tb))):
            base, inj = bit(f, BASE_CORRECT, t), bit(f, INJECTED_CORRECT, t)
            for off, mask in enumerate((lv, lv & base, lv & inj)):
                self.keys.append(keys[mask])
                self.cols.append(np.full(int(mask.sum()), _BASE * side + off, dtype=np.int64))
            self.moved[side] += [int((lv & ~base & inj).sum()), int((lv & base & ~inj).sum())]

    def estimate(self, side: int, point: np.ndarray, boot: np.ndarray | None) -> LearnEstimate:
        n, bc, ic = (int(x) for x in point[_BASE * side : _BASE * side + _BASE])
        g, lo = (int(x) for x in self.moved[side])
        stat = stat_from_counts(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo) if n else None
        inj_ci = gain_ci = None
        if boot is not None and n:
            d = boot[:, _BASE * side : _BASE * side + _BASE]
            inj_ci = percentile_ci(ratio(d[:, 2], d[:, 0]))
            gain_ci = percentile_ci(ratio(d[:, 2] - d[:, 1], d[:, 0]))
        return LearnEstimate(
            n=n, base=stat.base_accuracy if stat else None,
            injected=Estimate(value=stat.injected_accuracy if stat else None, ci=inj_ci, n=n),
            gain=Estimate(value=stat.gain if stat else None, ci=gain_ci, n=n), gained=g, lost=lo,
            p_value=stat.p_value if stat else 1.0, learned=bool(stat is not None and stat.learned),
        )


def _trains(data: WindowData, *, target: str, strategies: tuple[str, str], languages: Sequence[str]) -> list[str]:
    """The train languages both strategies were run in for `target` on one of its valid snapshots (any seed)."""
    sa, sb = strategies
    job = {(s_, st, lt): j for (s_, t, st, lt), j in lowest_seed_jobs(data).items() if t == target}
    valid = [s for s in data.snapshots if (s.id, target) in data.ready]
    return [lt for lt in languages if any((s.id, sa, lt) in job and (s.id, sb, lt) in job for s in valid)]


def _collect(
    data: WindowData, *, target: str, strategies: tuple[str, str], scorer: str, languages: Sequence[str],
    trains: Sequence[str],
) -> tuple[_Units, _Base]:
    """The units of the target's valid snapshots where both strategies answered the same questions, of the jobs in
    `data` (one run's: one job per key), in the train languages `trains` (`_trains`, the same for every run)."""
    sa, sb = strategies
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    job = {(s_, st, lt): j for (s_, t, st, lt), j in lowest_seed_jobs(data).items() if t == target}
    pack = {(p.job_id, p.scorer): p for p in data.packs}
    valid = [s for s in data.snapshots if (s.id, target) in data.ready]
    pairs = [(lt, ls) for lt in trains for ls in languages if ls != lt]
    pix = {p: i for i, p in enumerate(pairs)}
    u = _Units(pairs=pairs, trains=list(trains), sets=PAIR_METRICS.cell_sets())
    u.disc = np.zeros((len(pairs), len(PAIR_METRICS), 2), dtype=np.int64)
    base = _Base()
    for s in valid:
        excluded = data.exclusions.get((s.id, target), frozenset())
        for lt in trains:
            ja, jb = job.get((s.id, sa, lt)), job.get((s.id, sb, lt))
            pa = pack.get((ja.id, scorer)) if ja else None
            pb = pack.get((jb.id, scorer)) if jb else None
            if pa is None or pb is None or lt not in pa.langs or lt not in pb.langs:
                continue
            paired = pair_packs(u, pa, pb, snapshot=s.id, at=index[s.id], train_lang=lt, excluded=excluded,
                                languages=languages, pix=pix)
            if paired is not None:
                keys, ia, ib, da, db = paired
                base.add(keys, da.flags[ia], db.flags[ib], da.langs.index(lt), db.langs.index(lt))
    return u, base


def compare_strategies(
    data: WindowData, rows: Sequence[LeaderRow], *, target: str, strategy_a: str, strategy_b: str, scorer: str,
    languages: Sequence[str], draws: Draws | None, min_questions: int = MIN_QUESTIONS,
) -> StrategyComparison:
    """The comparison (see the module docstring); `draws`: the window's (`clkt.report.leaderboard.window_draws`).
    No question answered under both strategies is refused (`LeaderboardError`)."""
    names = (strategy_a, strategy_b)
    def is_a(j: WindowJob) -> bool:
        return (j.target, j.strategy) == (target, strategy_a)

    seeds_a, seeds_b = side_seeds(data, is_a, lambda j: (j.target, j.strategy) == (target, strategy_b))
    collect = functools.partial(_collect, target=target, strategies=names, scorer=scorer, languages=languages)
    trains = _trains(data, target=target, strategies=names, languages=languages)
    keys = run_keys(seeds_a, seeds_b)
    per = [collect(of_seeds(data, is_a, sa, sb), trains=trains) for sa, sb in keys]
    u = per[0][0]
    every_q = [q for x, _ in per for q in x.questions]
    questions = len(np.unique(np.concatenate(every_q))) if every_q else 0
    if not questions:
        raise LeaderboardError(f"{strategy_a} and {strategy_b} share no question for target {target} ({scorer}) in the "
                               "window: none of the same snapshot, train and test language answered under both")
    width = u.width + 2 * _BASE
    _, points, boots = seeded_counts(
        [(x.keys + b.keys, x.cols + [c + x.width for c in b.cols]) for x, b in per], width, draws)
    sd = Seeded(seeds_a=seeds_a, seeds_b=seeds_b, runs={
        k: (x, p[: u.width], bt[:, : u.width] if bt is not None else None)
        for k, (x, _), p, bt in zip(keys, per, points, boots, strict=True)})
    run = {k: i for i, k in enumerate(keys)}  # a run's index in `per`, `points` and `boots`
    too_few = questions < min_questions
    learned = {r.strategy: set(r.learned_langs) for r in rows if (r.target, r.scorer) == (target, scorer)}
    interp = np.asarray([lt in learned.get(strategy_a, set()) and lt in learned.get(strategy_b, set()) for lt, _ in u.pairs],
                        dtype=bool)
    lines = comparison_lines(sd, interp, names, languages, too_few)
    learn = []
    for side, name in enumerate(names):  # every seed's base -> injected answers together, as the row's Learn
        own = [run[k] for k in sd.side_keys(side)]
        base = _Base()
        base.moved = np.sum([per[i][1].moved for i in own], axis=0)
        bp = np.sum([points[i][u.width :] for i in own], axis=0)
        own_boots = [boots[i] for i in own]
        bb = None if any(b is None for b in own_boots) else np.sum([b[:, u.width :] for b in own_boots if b is not None],
                                                                  axis=0)
        learn.append(_row_learned(base.estimate(side, bp, bb), rows, target, scorer, name))
    left = sorted({lt for (lt, _), ok in zip(u.pairs, interp, strict=True) if not ok})
    notes = [f"Transfer leaves out the pairs trained in {', '.join(left)}: that train language did not learn under both "
             f"{strategy_a} and {strategy_b}"] if left else []
    if len(seeds_a) > 1 or len(seeds_b) > 1:
        notes.append(seeds_note(names, seeds_a, seeds_b))
    used = set().union(*(x.used for x, _ in per))
    return StrategyComparison(
        target=target, strategy_a=strategy_a, strategy_b=strategy_b, scorer=scorer,
        snapshots=[s.id for s in data.snapshots if s.id in used],
        entities=len(np.unique(np.concatenate([k for x, _ in per for k in x.keys]))),
        questions=questions, question_pairs=int(u.pair_cols(sd.point)[..., 0].sum()), too_few=too_few,
        learn=learn, lines=lines, notes=notes, kept=_kept(rows, target, scorer, names),
    )


def _row_learned(est: LearnEstimate, rows: Sequence[LeaderRow], target: str, scorer: str, strategy: str) -> LearnEstimate:
    """`est` (on the paired questions) with its row's learned flag: whether a strategy learned is decided once, by
    the rule of every view (`clkt.report.metric_table`), not again on the questions a comparison keeps."""
    row = next((r for r in rows if (r.target, r.strategy, r.scorer) == (target, strategy, scorer)), None)
    return est if row is None else est.model_copy(update={"learned": row.learn.learned})


def _kept(rows: Sequence[LeaderRow], target: str, scorer: str, names: tuple[str, str]) -> list[Estimate | None]:
    """Each strategy's kept % from its own leaderboard row (a, then b)."""
    by = {r.strategy: r.kept for r in rows if (r.target, r.scorer) == (target, scorer)}
    return [by.get(n) for n in names]


def with_strategy_comparison(
    board: Leaderboard, data: WindowData, rows: Sequence[LeaderRow], draws: Draws | None, q: LeaderboardQuery,
) -> Leaderboard:
    """`board` with the comparison of `q.compare_strategies` (none asked: `board` as it is)."""
    if q.compare_strategies is None:
        return board
    target, scorer = choose_target(rows, q)
    a, b = q.compare_strategies
    c = compare_strategies(data, rows, target=target, strategy_a=a, strategy_b=b, scorer=scorer,
                           languages=board.languages, draws=draws, min_questions=q.min_questions)
    return board.model_copy(update={"strategy_comparison": c})
