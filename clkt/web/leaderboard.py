"""What the `/leaderboard` page shows (its handlers are in `clkt.web.pages`): the window chosen by two period
selectors and the optional strategy / scorer / compared targets / compared strategies of one target of a plain
GET form, the pooled leaderboard, the paired comparison of two targets (`clkt.report.window`) and of two
strategies of one target (`clkt.report.strategy_compare`), the known-rate curve of every target (`clkt.report.cutoff_curve`),
and the PNGs (`clkt.report.trend`) and predictions CSVs the page links to (the MCQ answers'; the open track's, with
the jury's verdicts: `clkt.report.open_predictions`).

The pooled numbers take a bootstrap; the page and the images it links to ask for the same window one after the
other, so the last `CACHE_SIZE` results are kept, keyed by the query and a fingerprint of what they read (the
store's finished jobs, snapshot validity, exclusions, snapshots; the probe verdicts for the curve): any change
to those reads afresh.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, TypeVar
from urllib.parse import urlencode

from clkt.config import SnapshotSettings, SpecSettings
from clkt.report.cutoff_curve import TargetKnowledge, knowledge_curves, knowledge_windows
from clkt.report.leaderboard_data import Leaderboard, StrategyComparison
from clkt.report.open_predictions import OPEN_CSV_COLUMNS, open_prediction_cells
from clkt.report.strategy_compare import with_strategy_comparison
from clkt.report.trend import known_rate_png, trend_png
from clkt.report.window import (
    PREDICTION_COLUMNS,
    LeaderboardError,
    LeaderboardQuery,
    Pooled,
    build_board,
    check_query,
    prediction_rows,
    resolve_window,
    stored_scorers,
    with_comparison,
)
from storage.engine import Store
from storage.knowledge import known_by_month, probe_fingerprint
from storage.leaderboard import known_names, window_fingerprint, window_snapshots
from storage.targets import list_targets

__all__ = ["FIELDS", "BoardCache", "LeaderboardView", "form_of", "known_rate_image", "leaderboard_view",
           "open_predictions_rows", "predictions_rows", "trend_image"]

T = TypeVar("T")
FIELDS = ("from", "to", "strategy", "scorer", "a", "b", "sa", "sb", "st", "unverified")  # sa, sb: two strategies of target st
MAX_FIELD = 200


@dataclass(frozen=True, kw_only=True)
class LeaderboardView:
    form: dict[str, str]
    periods: list[str]  # the periods held (the selectors' options)
    strategies: list[str]
    scorers: list[str]
    targets: list[str]
    knowledge: list[TargetKnowledge]
    board: Leaderboard | None = None
    error: str | None = None

    @property
    def query(self) -> str:
        """The form as a query string (the images' and the CSV link's)."""
        return urlencode({k: v for k, v in self.form.items() if v and k in ("from", "to", "strategy", "scorer")})


class BoardCache:
    """The last few leaderboards and known-rate curves (see the module docstring)."""

    CACHE_SIZE: ClassVar[int] = 8

    def __init__(self) -> None:
        self._pooled: OrderedDict[tuple[object, ...], Pooled] = OrderedDict()
        self._boards: OrderedDict[tuple[object, ...], Leaderboard] = OrderedDict()
        self._curves: OrderedDict[tuple[object, ...], list[TargetKnowledge]] = OrderedDict()
        self._strategies: OrderedDict[tuple[object, ...], StrategyComparison | None] = OrderedDict()

    async def pooled(self, store: Store, q: LeaderboardQuery) -> Pooled:
        """The window's rows (the query's comparison left out: it is keyed apart)."""
        base = replace(q, compare=None)
        async with store.session() as s:
            key: tuple[object, ...] = (base, await window_fingerprint(s))
        hit = self._pooled.get(key)
        if hit is not None:
            self._pooled.move_to_end(key)
            return hit
        w = await resolve_window(store, base)
        pooled = await asyncio.to_thread(build_board, w, base)
        _keep(self._pooled, key, pooled, self.CACHE_SIZE)
        return pooled

    async def board(self, store: Store, q: LeaderboardQuery) -> Leaderboard:
        pooled = await self.pooled(store, q)
        return pooled.board if q.compare is None else await self.compared(store, pooled, q)

    async def compared(self, store: Store, pooled: Pooled, q: LeaderboardQuery) -> Leaderboard:
        """The window's board with the comparison `q.compare` (of the window `pooled` holds)."""
        async with store.session() as s:
            await check_query(s, q)  # the compared targets: known?
            key: tuple[object, ...] = (q, await window_fingerprint(s))
        hit = self._boards.get(key)
        if hit is not None:
            self._boards.move_to_end(key)
            return hit
        board = await asyncio.to_thread(with_comparison, pooled, q)
        _keep(self._boards, key, board, self.CACHE_SIZE)
        return board

    async def strategies(self, store: Store, pooled: Pooled, board: Leaderboard, q: LeaderboardQuery) -> Leaderboard:
        """`board` with the comparison of the strategies `q.compare_strategies` (of the window `pooled` holds)."""
        async with store.session() as s:
            await check_query(s, q)  # the strategies and the target: known?
            key: tuple[object, ...] = (q, await window_fingerprint(s))
        if key not in self._strategies:
            got = await asyncio.to_thread(with_strategy_comparison, pooled.board, pooled.window.data, pooled.rows, pooled.draws, q)
            _keep(self._strategies, key, got.strategy_comparison, self.CACHE_SIZE)
        else:
            self._strategies.move_to_end(key)
        return board.model_copy(update={"strategy_comparison": self._strategies[key]})

    async def curves(self, store: Store, spec: SpecSettings) -> list[TargetKnowledge]:
        async with store.session() as s:
            key: tuple[object, ...] = (spec.model_dump_json(), await probe_fingerprint(s))
            hit = self._curves.get(key)
            if hit is not None:
                self._curves.move_to_end(key)
                return hit
            rows = await known_by_month(s)
            extra = {t.name: t.cutoff for t in await list_targets(s)}
        curves = knowledge_curves(rows, knowledge_windows(spec, extra))
        _keep(self._curves, key, curves, self.CACHE_SIZE)
        return curves


def _keep(cache: OrderedDict[tuple[object, ...], T], key: tuple[object, ...], value: T, size: int) -> None:
    if size <= 0:
        return
    cache[key] = value
    while len(cache) > size:
        cache.popitem(last=False)


def form_of(query: Mapping[str, str]) -> dict[str, str]:
    """The form's fields from a query string, stripped; ValueError when one is too long."""
    out: dict[str, str] = {}
    for k in FIELDS:
        v = query.get(k, "").strip()
        if len(v) > MAX_FIELD:
            raise ValueError(f"{k}: too long")
        out[k] = v
    return out


def _query(form: Mapping[str, str], spec: SpecSettings, snapshot: SnapshotSettings, compare: tuple[str, str] | None) -> LeaderboardQuery:
    return LeaderboardQuery(
        spec=spec.name, cadence=snapshot.cadence, rolling_days=snapshot.rolling_days, period_from=form["from"] or None,
        period_to=form["to"] or None, strategy=form["strategy"] or None, scorer=form["scorer"] or None, compare=compare,
        languages=tuple(spec.languages), names=("from", "to"), unverified=form.get("unverified", "") in ("1", "on", "true"),
    )


async def leaderboard_view(
    store: Store, cache: BoardCache, *, spec: SpecSettings, snapshot: SnapshotSettings, form: dict[str, str]
) -> LeaderboardView:
    """The page's data; a query the store cannot answer gives `error` (the page answers 400 then)."""
    async with store.session() as s:
        periods = sorted({w.period for w in await window_snapshots(s, spec.name)})
        names = await known_names(s)
    curves = await cache.curves(store, spec)

    def view(form: dict[str, str], board: Leaderboard | None = None, error: str | None = None) -> LeaderboardView:
        return LeaderboardView(form=form, periods=periods, strategies=sorted(names.strategies), scorers=sorted(stored_scorers(names)),
                               targets=sorted(names.targets), knowledge=curves, board=board, error=error)

    if not periods:
        return view(form)
    a, b = form["a"], form["b"]
    if bool(a) != bool(b):
        return view(form, error="choose two targets to compare (a and b), or neither")
    if bool(form["sa"]) != bool(form["sb"]):
        return view(form, error="choose two strategies to compare (strategy a and b), or neither")
    try:
        pooled = await cache.pooled(store, _query(form, spec, snapshot, None))
        board = pooled.board
        if not a and board.rows:  # by default, compare the two best-ranked targets of the first strategy x scorer
            first = (board.rows[0].strategy, board.rows[0].scorer)
            top = [r.target for r in board.rows if r.rank is not None and (r.strategy, r.scorer) == first]
            if len(top) >= 2:
                a, b = top[0], top[1]
                form = {**form, "a": a, "b": b}
        if a:
            board = await cache.compared(store, pooled, _query(form, spec, snapshot, (a, b)))
        if form["sa"]:
            q = replace(_query(form, spec, snapshot, None), compare_strategies=(form["sa"], form["sb"]),
                        targets=(form["st"],) if form["st"] else ())
            board = await cache.strategies(store, pooled, board, q)
    except LeaderboardError as e:
        return view(form, error=str(e))
    return view(form, board)


async def trend_image(store: Store, cache: BoardCache, *, spec: SpecSettings, snapshot: SnapshotSettings, form: dict[str, str]) -> bytes:
    board = await cache.board(store, _query(form, spec, snapshot, None))
    return await asyncio.to_thread(trend_png, board)


async def known_rate_image(store: Store, cache: BoardCache, *, spec: SpecSettings) -> bytes:
    curves = await cache.curves(store, spec)
    return await asyncio.to_thread(known_rate_png, curves)


async def predictions_rows(
    store: Store, *, spec: SpecSettings, snapshot: SnapshotSettings, form: dict[str, str]
) -> AsyncIterator[list[str]]:
    """The predictions CSV of the form's window, row by row (the header first); a `LeaderboardError` before any."""
    q = _query(form, spec, snapshot, None)
    w = await resolve_window(store, q)
    jobs = [j for j in w.data.jobs if (j.snapshot_id, j.target) in w.data.ready]
    yield list(PREDICTION_COLUMNS)
    async with store.session() as s:
        async for cells in prediction_rows(s, jobs, w.data.exclusions, scorer=q.scorer):
            yield cells


async def open_predictions_rows(
    store: Store, *, spec: SpecSettings, snapshot: SnapshotSettings, form: dict[str, str]
) -> AsyncIterator[list[str]]:
    """The open track's predictions CSV of the form's window (`clkt leaderboard --open-predictions`' rows, the jury's
    columns included), the header first; a `LeaderboardError` before any."""
    rows = await open_prediction_cells(store, _query(form, spec, snapshot, None))
    yield list(OPEN_CSV_COLUMNS)
    for cells in rows:
        yield cells
