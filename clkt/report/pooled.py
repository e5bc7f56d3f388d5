"""Pooling answers over a window of snapshots: per-question correctness (`storage.result_packs`) → counts per
entity → sums, the paper's metrics over the sums, and a bootstrap over entities.

Counts per *unit*, an entity of a snapshot, in columns (`Layout`): for every ordered language pair (L_train,
L_test) of a job trained in L_train, the contingency A/B/C/D of `clkt.report.metrics` (the injected model's
correctness in L_train and in L_test, on the test questions answered in both); for every train language, the
Learn counts of `clkt.report.learn` (base against injected on the same train-language questions: n, base
right, injected right, gained, lost). Sums over units are sums of per-question indicators, so pooled numbers
are exactly what one counts by hand from the predictions; the metrics over sums are those of the report
(`clkt.report.metric_table`): Overall = mean over pairs of A/(A+B+C+D), Transfer = mean over the
interpretable pairs of A/(A+B).

The bootstrap (`Draws`) resamples entities, never questions: the questions of one entity (and its language
pairs) are not independent, so they travel together. It is stratified by snapshot (a row's entities of each
snapshot are drawn with replacement among themselves, as many as it has): a snapshot is a fixed sample of its
period, and one set of draws gives the pooled interval and every snapshot's own. A row draws the entities of its own
answers (`Draws.own`), never those of whatever else a query loaded. Draws come from a generator seeded by the seed
and the snapshot's id: the same answers and seed give the same intervals, in any store and beside any other row.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from clkt.report.metric_table import PAIR_METRICS
from clkt.snapshots.bootstrap import draw_counts
from clkt.snapshots.ids import PUBLIC_ID_BITS
from storage.result_packs import BASE_ANSWERED, BASE_CORRECT, INJECTED_ANSWERED, INJECTED_CORRECT, ResultPackRecord

__all__ = [
    "LEARN_FIELDS",
    "PAIR_FIELDS",
    "Answers",
    "Draws",
    "Layout",
    "Pooled",
    "Sums",
    "bit",
    "boot_matrix",
    "decode",
    "draw_sums",
    "full_sums",
    "nanmean",
    "one_blas_thread",
    "percentile_ci",
    "pool",
    "question_keys",
    "question_snapshots",
    "unit_keys",
]

PAIR_FIELDS = ("a", "b", "c", "d")
LEARN_FIELDS = ("n", "base_correct", "injected_correct", "gained", "lost")
_SHIFT = np.int64(40)  # a unit key: snapshot index << 40 | entity id
_MASK = np.int64((1 << 40) - 1)
# a question key: snapshot index << 52 | question id. A pack's question ids are the store's question rows or, for the
# open track's packs, public open qids (`clkt.snapshots.ids.PUBLIC_ID_BITS` = 52 bits: wider than the unit key's 40)
_QSHIFT = np.int64(PUBLIC_ID_BITS)
_MAX_SNAPSHOTS = 1 << (63 - PUBLIC_ID_BITS)  # snapshots a window's question keys can tell apart


@dataclass(frozen=True, slots=True, kw_only=True)
class Answers:
    """One job's test answers of one scorer, the entities excluded for its target removed."""

    snapshot: int  # index of the job's snapshot in the window
    train_lang: str
    langs: tuple[str, ...]  # the pack's language positions
    qids: np.ndarray
    ents: np.ndarray
    flags: np.ndarray  # uint64 per question
    seed: int = 0  # the job's training seed (`spec.seeds`; `clkt.report.seeds` pools over them)


def decode(
    pack: ResultPackRecord, *, snapshot: int, train_lang: str, excluded: frozenset[int] = frozenset(), seed: int = 0,
) -> Answers:
    qids = np.frombuffer(pack.question_ids, dtype="<i8").astype(np.int64)
    ents = np.frombuffer(pack.entity_ids, dtype="<i8").astype(np.int64)
    flags = np.frombuffer(pack.flags, dtype="<u8").astype(np.uint64)
    if excluded:
        ex = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
        # a few exclusions (the usual case): one comparison each beats np.isin's hashing
        keep = ~(ents[:, None] == ex[None, :]).any(axis=1) if len(ex) <= 32 else ~np.isin(ents, ex)
        qids, ents, flags = qids[keep], ents[keep], flags[keep]
    return Answers(snapshot=snapshot, train_lang=train_lang, langs=pack.langs, qids=qids, ents=ents, flags=flags, seed=seed)


def bit(flags: np.ndarray, field_start: int, position: int) -> np.ndarray:
    """The flag of a language position (a boolean per question)."""
    return ((flags >> np.uint64(field_start + position)) & np.uint64(1)).astype(bool)


def unit_keys(a: Answers) -> np.ndarray:
    return (np.int64(a.snapshot) << _SHIFT) | a.ents


def question_keys(snapshot: int, qids: np.ndarray) -> np.ndarray:
    """One key per (snapshot index, question id): distinct questions of a window (`question_snapshots` reads the
    snapshot back)."""
    if not 0 <= snapshot < _MAX_SNAPSHOTS:
        raise ValueError(f"snapshot index {snapshot}: a window's question keys hold fewer than {_MAX_SNAPSHOTS} snapshots")
    return (np.int64(snapshot) << _QSHIFT) | qids


def question_snapshots(keys: np.ndarray) -> np.ndarray:
    return keys >> _QSHIFT


@dataclass(frozen=True, slots=True)
class Layout:
    """The columns of the per-unit counts: 4 per ordered pair (A, B, C, D), then 5 per train language."""

    languages: tuple[str, ...]
    trains: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...] = field(init=False)
    pair_index: dict[tuple[str, str], int] = field(init=False)
    train_index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        pairs = tuple((lt, ls) for lt in self.trains for ls in self.languages if ls != lt)
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "pair_index", {p: i for i, p in enumerate(pairs)})
        object.__setattr__(self, "train_index", {t: i for i, t in enumerate(self.trains)})

    @property
    def width(self) -> int:
        return 4 * len(self.pairs) + 5 * len(self.trains)

    def pair_col(self, pair: int, fld: int = 0) -> int:
        return 4 * pair + fld

    def learn_col(self, train: int, fld: int = 0) -> int:
        return 4 * len(self.pairs) + 5 * train + fld

    def pair_sums(self, s: np.ndarray) -> np.ndarray:
        """(..., P, 4): A, B, C, D per pair."""
        p = len(self.pairs)
        return s[..., : 4 * p].reshape(*s.shape[:-1], p, 4)

    def learn_sums(self, s: np.ndarray) -> np.ndarray:
        """(..., T, 5): n, base right, injected right, gained, lost per train language."""
        p = len(self.pairs)
        return s[..., 4 * p :].reshape(*s.shape[:-1], len(self.trains), 5)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pooled:
    """Counts per unit (rows: units sorted by snapshot, then entity) in a layout's columns."""

    layout: Layout
    keys: np.ndarray  # (U,) unit keys, ascending
    strata: np.ndarray  # (U,) the unit's snapshot index
    counts: np.ndarray  # (U, width) float64
    questions: dict[int, int]  # snapshot index -> distinct test questions answered by the injected model

    def stratum(self, s: int) -> slice:
        lo, hi = np.searchsorted(self.strata, [s, s + 1])
        return slice(int(lo), int(hi))

    @property
    def snapshots(self) -> list[int]:
        return sorted({int(s) for s in np.unique(self.strata)})


def _merged(answers: Sequence[Answers]) -> list[tuple[str, tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]]:
    """The answers of the jobs with the same train language and language positions, concatenated:
    (train language, langs, unit keys, question keys, flags) (fewer, larger numpy operations)."""
    by: dict[tuple[str, tuple[str, ...]], list[Answers]] = {}
    for a in answers:
        by.setdefault((a.train_lang, a.langs), []).append(a)
    out = []
    for (train, langs), group in sorted(by.items()):
        units = np.concatenate([unit_keys(a) for a in group])
        qkeys = np.concatenate([question_keys(a.snapshot, a.qids) for a in group])
        out.append((train, langs, units, qkeys, np.concatenate([a.flags for a in group])))
    return out


def pool(answers: Sequence[Answers], layout: Layout) -> Pooled:
    """The per-unit counts of a group's jobs (see the module docstring)."""
    w = layout.width
    keys = np.unique(np.concatenate([unit_keys(a) for a in answers])) if answers else np.zeros(0, dtype=np.int64)
    flat: list[np.ndarray] = []
    answered: list[np.ndarray] = []
    for train, langs, units, qkeys, flags in _merged(answers):
        if train not in langs or train not in layout.train_index:
            continue
        u = np.searchsorted(keys, units).astype(np.int64) * w
        ti = langs.index(train)
        ans_t, cor_t = bit(flags, INJECTED_ANSWERED, ti), bit(flags, INJECTED_CORRECT, ti)
        answered_any = ans_t.copy()
        for si, ls in enumerate(langs):
            pair = layout.pair_index.get((train, ls))
            if pair is None:
                continue
            ans_s = bit(flags, INJECTED_ANSWERED, si)
            answered_any |= ans_s
            valid = ans_t & ans_s
            cor_s = bit(flags, INJECTED_CORRECT, si)
            col = layout.pair_col(pair) + 2 * (~cor_t).astype(np.int64) + (~cor_s).astype(np.int64)
            flat.append((u + col)[valid])
        base = layout.learn_col(layout.train_index[train])
        both = bit(flags, BASE_ANSWERED, ti) & ans_t
        bc = bit(flags, BASE_CORRECT, ti)
        for fld, mask in enumerate((both, both & bc, both & cor_t, both & ~bc & cor_t, both & bc & ~cor_t)):
            flat.append(u[mask] + base + fld)
        answered.append(qkeys[answered_any])
    size = len(keys) * w
    counts = np.bincount(np.concatenate(flat), minlength=size).astype(np.float64) if flat else np.zeros(size)
    distinct = np.unique(np.concatenate(answered)) if answered else np.zeros(0, dtype=np.int64)
    per = np.unique(question_snapshots(distinct), return_counts=True)
    return Pooled(
        layout=layout, keys=keys, strata=(keys >> _SHIFT).astype(np.int64), counts=counts.reshape(len(keys), w),
        questions={int(k): int(n) for k, n in zip(*per, strict=True)},
    )


class Draws:
    """The bootstrap's draws: per snapshot, `samples` resamples with replacement of its `universes` entities, as
    counts (samples x entities), made from the seed and the snapshot's id.

    A row's interval belongs to the row (`clkt.report.metric_table`, "intervals"): its draws are over the entities
    of its own answers in each snapshot (`own`), never over those of whatever else a query loaded, so a filter
    (`--target`, `--strategy`) or a merged submission never moves an unchanged row's interval, and a row's figures
    are a function of its own answers. A comparison draws over its own units (the entities both sides answered),
    the same draws for both sides: paired. Within a row, an entity one of its parts (a domain, a seed, a snapshot
    column) did not answer contributes nothing to that part's sums (the domain estimate of survey sampling).
    Weights are made once per (snapshot, entity set) and shared by every `own` of the same parent."""

    def __init__(
        self, *, universes: Mapping[int, np.ndarray], names: Mapping[int, str], seed: int, samples: int,
        public: Mapping[int, int] | None = None, shared: dict[tuple[int, bytes], np.ndarray] | None = None,
    ) -> None:
        self.universes = dict(universes)  # snapshot index -> its entity ids, ascending
        self.names = dict(names)  # snapshot index -> snapshot id (seeds its draws)
        self.seed = seed
        self.samples = samples
        self.public = dict(public or {})  # store entity id -> public id: the order the draws are made in
        self._weights: dict[int, np.ndarray] = {}
        self._shared = shared if shared is not None else {}  # (snapshot, entity ids' bytes) -> weights
        self._lock = threading.Lock()

    def own(self, keys: np.ndarray) -> Draws:
        """The draws over the entities of the unit keys `keys` alone (ascending), snapshot by snapshot: a row's or a
        comparison's own bootstrap (see the class docstring)."""
        strata = keys >> _SHIFT
        universes = {int(s): np.unique(keys[strata == s] & _MASK) for s in np.unique(strata).tolist()}
        return Draws(universes=universes, names=self.names, seed=self.seed, samples=self.samples, public=self.public,
                     shared=self._shared)

    def weights(self, s: int) -> np.ndarray:
        """(samples, entities) float32 counts of the snapshot's draws, made over its entities in the order of their
        public ids (`clkt.snapshots.ids`, the same in every store; an entity without one after them, by store
        id): the same snapshot and results give the same intervals whatever store ids its entities got."""
        got = self._weights.get(s)
        if got is None:
            universe = self.universes[s]
            key = (s, universe.tobytes())
            with self._lock:
                got = self._shared.get(key)
            if got is not None:
                self._weights[s] = got
                return got
            n = len(universe)
            counts = draw_counts(n, samples=self.samples, seed=self.seed, name=self.names[s])
            unknown = 1 << 62
            keys = [(self.public.get(int(e), unknown), int(e)) for e in universe]
            order = sorted(range(n), key=keys.__getitem__)  # column j of `counts` is the j-th entity in that order
            got = np.empty((self.samples, n), dtype=np.float32)
            got[:, order] = counts
            self._weights[s] = got
            with self._lock:
                self._shared[key] = got
        return got

    def sums(self, keys: np.ndarray, counts: np.ndarray) -> dict[int, np.ndarray]:
        """Per snapshot, the column sums of the draws ((samples, columns) each) of per-unit `counts` whose units are
        `keys` (ascending unit keys). The pooled draw is the sum over snapshots."""
        out: dict[int, np.ndarray] = {}
        if not len(keys):
            return out
        strata = keys >> _SHIFT
        lows = np.searchsorted(strata, np.unique(strata))
        bounds = [*lows.tolist(), len(strata)]
        with one_blas_thread():
            for lo, hi in pairwise(bounds):
                s = int(strata[lo])
                universe = self.universes[s]
                pos = np.searchsorted(universe, keys[lo:hi] & _MASK)
                if not np.array_equal(universe[np.minimum(pos, len(universe) - 1)], keys[lo:hi] & _MASK):
                    raise ValueError(f"snapshot {self.names[s]}: a unit outside its entities")
                full = np.zeros((len(universe), counts.shape[1]), dtype=np.float32)  # the others contribute nothing
                full[pos] = counts[lo:hi]
                # float32 sums of integer counts are exact below 2**24
                out[s] = (self.weights(s) @ full).astype(np.float64)
        return out


_blas_lock = threading.Lock()
_blas_holders = 0
_blas_limiter: Any = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread inside: the bootstrap's products are small, and OpenBLAS's threads fight over a busy
    machine's cores (10x slower). The limit is the process's: the first holder sets it and the last restores it,
    so rows built on several threads (`clkt.report.leaderboard.build_rows`) set it once (threadpoolctl inspects
    the loaded libraries at every change)."""
    global _blas_holders, _blas_limiter
    with _blas_lock:
        if _blas_holders == 0:
            from threadpoolctl import threadpool_limits

            _blas_limiter = threadpool_limits(limits=1, user_api="blas")
        _blas_holders += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_holders -= 1
            if _blas_holders == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Sums:
    """What the metrics read from a group's sums (one sum, (...,) leading axes none; or one per draw, (B,)):
    per sum of contingency cells that a metric of `PAIR_METRICS` reads ("A", "AB", "ABCD", ...), (..., P); and
    Learn's counts per train language, (..., T, 5) (n, base right, injected right, gained, lost)."""

    cells: dict[str, np.ndarray]
    learn: np.ndarray


def full_sums(layout: Layout, s: np.ndarray) -> Sums:
    """From sums in the layout's columns ((..., width))."""
    return Sums(cells=PAIR_METRICS.sums_of(layout.pair_sums(s)), learn=layout.learn_sums(s))


def boot_matrix(layout: Layout, counts: np.ndarray) -> np.ndarray:
    """The per-unit columns a draw needs, (U, kP + 3T): per sum of cells the metric table reads (k of them: A,
    A+B+C+D and A+B for Overall and Transfer), one column per pair; per train language n, base right, injected
    right (fewer columns to multiply than the full counts)."""
    lrn = layout.learn_sums(counts)
    cells = PAIR_METRICS.sums_of(layout.pair_sums(counts))
    return np.concatenate([*cells.values(), lrn[..., 0], lrn[..., 1], lrn[..., 2]], axis=-1)


def draw_sums(layout: Layout, r: np.ndarray) -> Sums:
    """Draws of `boot_matrix` columns ((B, kP + 3T)) as `Sums` (gained and lost 0: no interval needs them)."""
    p, t = len(layout.pairs), len(layout.trains)
    sets = PAIR_METRICS.cell_sets()
    cells = {c: r[:, i * p : (i + 1) * p] for i, c in enumerate(sets)}
    k = len(sets) * p
    ln, lb, li = r[:, k : k + t], r[:, k + t : k + 2 * t], r[:, k + 2 * t : k + 3 * t]
    zt = np.zeros_like(ln)
    return Sums(cells=cells, learn=np.stack([ln, lb, li, zt, zt], axis=-1))


def nanmean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean of the defined values along `axis`; NaN where none is defined (no warning)."""
    ok = ~np.isnan(x)
    n = ok.sum(axis=axis)
    total = np.where(ok, x, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def percentile_ci(draws: np.ndarray) -> tuple[float, float] | None:
    """The 95% percentile interval of the defined draws; None when no draw is defined."""
    ok = draws[~np.isnan(draws)]
    if ok.size == 0:
        return None
    lo, hi = np.percentile(ok, [2.5, 97.5])
    return float(lo), float(hi)
