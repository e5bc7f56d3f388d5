"""A leaderboard query over the store: the window of periods it names, checked, then pooled (`clkt.report.leaderboard`),
compared (`clkt.report.compare`) and traced back to its predictions (`write_predictions`).

A query that cannot be answered is refused with one `LeaderboardError` (a `UserError`: `clkt` exits 2) naming
what is wrong: a spec with no frozen snapshot, a period label that does not parse for the cadence, a start after
the end, a window with no snapshot in it, an unknown target, strategy or result scorer, a comparison of a target
with itself. The window is every frozen (not superseded) snapshot of the spec whose period starts inside
[start of `--from`, end of `--to`) (default: all of them), and every one holding an entity carried in from a period
inside it; only the entities whose own period is inside count (`clkt.report.own_dates`).
"""

from __future__ import annotations

import asyncio
import csv
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from clkt.config.strategies import strategy_names
from clkt.evaluate.circular import CIRCULAR_SCORERS, circular_name
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM, ScorerName
from clkt.openqa.results import OPEN_SCORER
from clkt.report.compare import compare_targets
from clkt.report.kept_rows import keep_figures, read_kept_rows
from clkt.report.leaderboard import ROWS, Keyed, build_rows, keyed_groups, window_draws
from clkt.report.leaderboard_data import Leaderboard, LeaderboardError, LeaderboardQuery, LeaderRow, WindowInfo
from clkt.report.locality import locality_entities
from clkt.report.open_board import is_open, mcq_locality, split_rows, with_open_track
from clkt.report.open_jury import JURY_SCORER
from clkt.report.own_dates import with_carried_snapshots, with_own_dates
from clkt.report.pooled import Draws
from clkt.report.strategy_compare import check_strategy_pair, with_strategy_comparison
from clkt.report.submitted import SubmittedRuns, annotate, submitted_runs
from clkt.report.verified_ranks import partition
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.period import Period, PeriodError, parse_period
from clkt.targets.embedded import EMBEDDED_MODELS, EMBEDDED_PREFIX
from storage.leaderboard import (
    KnownNames,
    PredictionRow,
    WindowData,
    WindowJob,
    WindowSnapshot,
    iter_predictions,
    known_names,
    spec_names,
    window_data,
    window_snapshots,
)
from storage.snapshots import entity_identities, question_identities

if TYPE_CHECKING:
    from clkt.config.sections import SnapshotSettings
    from clkt.config.spec import SpecSettings
    from storage.engine import Session, Store
    from storage.result_packs import ResultPackRecord

__all__ = [
    "PREDICTION_COLUMNS",
    "RESULT_SCORERS",
    "LeaderboardError",
    "LeaderboardQuery",
    "Pooled",
    "Window",
    "build_board",
    "build_leaderboard",
    "check_query",
    "load_leaderboard",
    "prediction_cells",
    "prediction_rows",
    "resolve_window",
    "stored_scorers",
    "with_comparison",
    "write_predictions",
]

# every result scorer name a job can store (the plain scorers, acc_norm, the CircularEval variants)
RESULT_SCORERS = frozenset({s.value for s in ScorerName} | {OPTION_LOGLIK_NORM} | {circular_name(s) for s in CIRCULAR_SCORERS})
# the scorer a comparison uses for a target when none is named: the first of these it has results of
_PREFERRED = ("generate", "option-loglik", "letter-logprob")
# the predictions CSV: questions and entities by their public ids (`qid`, `entity_id`, as in the snapshot's files,
# exports, `snapshot retract` and the published files); the store's row ids ride along at the end
PREDICTION_COLUMNS = ("snapshot_id", "qid", "lang", "target", "strategy", "job_id", "train_lang", "variant", "scorer",
                      "entity_id", "split", "predicted", "correct", "store_question_id", "store_entity_id")


@dataclass(frozen=True, kw_only=True)
class Window:
    label_from: str
    label_to: str
    snapshots: list[WindowSnapshot]
    data: WindowData
    notes: list[str] = field(default_factory=list)
    submitted: SubmittedRuns = field(default_factory=SubmittedRuns)  # the window's submitted packs (`clkt.report.submitted`)


def _period(label: str, name: str, q: LeaderboardQuery) -> Period:
    try:
        return parse_period(label, q.cadence, rolling_days=q.rolling_days)
    except PeriodError as e:
        raise LeaderboardError(f"{name}: {e}") from None


def _unknown(kind: str, name: str, known: Sequence[str]) -> LeaderboardError:
    return LeaderboardError(f"unknown {kind} {name!r}; known: {', '.join(sorted(known)) or 'none'}")


def _bounds(q: LeaderboardQuery) -> tuple[Period | None, Period | None]:
    return (_period(q.period_from, q.names[0], q) if q.period_from else None,
            _period(q.period_to, q.names[1], q) if q.period_to else None)


async def check_query(session: Session, q: LeaderboardQuery) -> tuple[list[WindowSnapshot], list[str]]:
    """The query checked against the store (see the module docstring): the window's snapshots, and notes on the
    snapshots left out."""
    if q.compare is not None and q.compare[0] == q.compare[1]:
        raise LeaderboardError(f"--compare-targets needs two different targets, got {q.compare[0]!r} twice")
    start = _period(q.period_from, q.names[0], q) if q.period_from else None
    end = _period(q.period_to, q.names[1], q) if q.period_to else None
    if start is not None and end is not None and start.start > end.start:
        raise LeaderboardError(f"{q.names[0]} {start.label} is after {q.names[1]} {end.label}")
    specs = await spec_names(session)
    if q.spec not in specs:
        raise LeaderboardError(f"no frozen snapshot of spec {q.spec!r} in the store (specs with snapshots: "
                               f"{', '.join(specs) or 'none'})")
    names = await known_names(session)
    for t in (*q.targets, *(q.compare or ())):
        if t not in names.targets:
            raise _unknown("target", t, list(names.targets))
    strategies = set(strategy_names()) | names.strategies
    if q.strategy is not None and q.strategy not in strategies:
        raise _unknown("strategy", q.strategy, list(strategies))
    check_strategy_pair(q, strategies)
    scorers = RESULT_SCORERS | stored_scorers(names)
    if q.scorer is not None and q.scorer not in scorers:
        raise _unknown("scorer", q.scorer, list(scorers))
    all_snaps = await window_snapshots(session, q.spec)
    notes: list[str] = []
    chosen: list[WindowSnapshot] = []
    for snap in all_snaps:
        try:
            p = parse_period(snap.period, q.cadence, rolling_days=q.rolling_days)
        except PeriodError:
            notes.append(f"snapshot {snap.id}: its period {snap.period!r} is not a {q.cadence} period; left out")
            continue
        if (start is None or p.start >= start.start) and (end is None or p.start < end.end):
            chosen.append(snap)
    chosen = await with_carried_snapshots(session, q, chosen, all_snaps, start, end)  # entities' own dates
    if not chosen:
        held = ", ".join(sorted({x.period for x in all_snaps})) or "none"
        raise LeaderboardError(
            f"no snapshot of spec {q.spec!r} in the window {q.period_from or 'first'} .. {q.period_to or 'last'} "
            f"(its periods: {held})"
        )
    return chosen, notes


def stored_scorers(names: KnownNames) -> set[str]:
    """The scorers the store has results of, with the open track's jury layer (`open-jury`) wherever the normaliser's
    are: its packs are made from them (`clkt.report.open_board`). The scorer menus of the web pages offer these."""
    return set(names.scorers) | ({JURY_SCORER} if OPEN_SCORER in names.scorers else set())


async def resolve_window(store: Store, q: LeaderboardQuery) -> Window:
    """Check the query against the store (`check_query`) and read the window's data."""
    async with store.session() as s:
        chosen, notes = await check_query(s, q)
        targets = set(q.targets) | set(q.compare or ()) if q.targets else None
        strategies = {q.strategy} if q.strategy else None
        jury = q.scorer == JURY_SCORER  # the jury's packs are made from the normaliser's (`clkt.report.open_board`)
        data = await window_data(s, chosen, targets=targets, strategies=strategies, scorer=OPEN_SCORER if jury else q.scorer)
        data = await with_own_dates(s, q, data, *_bounds(q))
        data = await with_open_track(s, data, only=jury)
        submitted = await submitted_runs(s, chosen, targets=targets, strategies=strategies, scorer=q.scorer)
        data = await with_public_ids(s, data, submitted.packs)
    return Window(label_from=chosen[0].period, label_to=chosen[-1].period, snapshots=chosen, data=data,
                  notes=notes + submitted.notes, submitted=submitted)


async def with_public_ids(session: Session, data: WindowData, extra: Sequence[ResultPackRecord] = ()) -> WindowData:
    """`data` with the public ids of its packs' entities (and those of `extra`: submitted packs it will merge) and of
    its jobs' locality entities."""
    ids = sorted({int(e) for p in (*data.packs, *extra) for e in np.frombuffer(p.entity_ids, dtype="<i8")}
                 | locality_entities(mcq_locality(j.locality) for j in data.jobs))
    return replace(data, public_entities=await public_entity_ids(session, ids))


async def public_entity_ids(session: Session, entity_ids: Iterable[int]) -> dict[int, int]:
    """Store entity id -> its public id (`clkt.snapshots.ids.stable_entity_id`), of the rows still there."""
    found = await entity_identities(session, sorted(set(entity_ids)))
    return {eid: stable_entity_id(source, external_id) for eid, (source, external_id) in found.items()}


def _compare_scorer(rows: Sequence[LeaderRow], target: str, strategy: str, chosen: str | None) -> str | None:
    """The scorer named, else a multiple-choice one (an open layer is compared only when named: never with an MCQ)."""
    have = sorted({r.scorer for r in rows if r.target == target and r.strategy == strategy
                   and (chosen is not None or not is_open(r.scorer))})
    if chosen is not None:
        return chosen if chosen in have else None
    return next((p for p in _PREFERRED if p in have), have[0] if have else None)


@dataclass(frozen=True, kw_only=True)
class Pooled:
    """A window's leaderboard without a comparison, and every row computed (a comparison reads the rows of its
    targets even when `--target` leaves them out of the board)."""

    window: Window
    board: Leaderboard
    rows: list[LeaderRow]
    draws: Draws | None  # the window's bootstrap draws (the comparison's too)


def what_it_needs(w: Window, shown: Sequence[LeaderRow], q: LeaderboardQuery) -> list[str]:
    """What an all but empty board lacks, said where its empty parts show (the demo's board: one target, one
    snapshot, one row too few to rank)."""
    notes: list[str] = []
    targets = {r.target for r in shown}
    if len(targets) == 1 and not q.targets:
        notes.append(f"one target ({next(iter(targets))}): ranks and the comparison need two or more; add a "
                     "[[spec.targets]] entry (the embedded ones: "
                     f"{', '.join(EMBEDDED_PREFIX + name for name in EMBEDDED_MODELS)}), "
                     "then compare them with --compare-targets A,B")
    if len(w.snapshots) == 1:
        notes.append(f"one snapshot in the window ({w.snapshots[0].id}): the trend has one point per target and "
                     "the pooled figures are that snapshot's; the window fills as the daemon freezes more "
                     f"(snapshot cadence: {q.cadence})")
    if shown and all(r.too_few for r in shown):
        notes.append(f"every row is on fewer than {q.min_questions} test questions: too few to rank; widen the "
                     "window (--from/--to) as snapshots accrue, or lower --min-questions knowing the intervals are wide")
    return notes


def build_board(w: Window, q: LeaderboardQuery, keyed: Sequence[Keyed] | None = None) -> Pooled:
    """The pooled rows of the window, the submitted ones beside those run here (CPU work: run it off the event
    loop); `q.compare` is not looked at; `keyed`: the board's `board_groups`, when computed already."""
    data = w.submitted.merged(w.data)  # the submitted packs pool and draw with the jobs run here
    draws = window_draws(data, seed=q.seed, samples=q.samples)
    rows = annotate(build_rows(data, q.languages, min_questions=q.min_questions, draws=draws, keyed=keyed), w.submitted)
    shown = [r for r in rows if not q.targets or w.submitted.names.get(r.target, r.target) in q.targets]
    shown, opened = split_rows(shown)  # the open track's rows apart (`clkt.report.open_board`)
    shown, apart = partition(shown, show_unverified=q.unverified)
    opened, open_apart = partition(opened, show_unverified=q.unverified)  # the open rows by the same rule
    notes = list(w.notes) + apart + [f"open track: {n}" for n in open_apart]
    for t in sorted({t for _, t in w.data.ready} - {r.target for r in (*shown, *opened)}):
        if not q.targets or t in q.targets:
            notes.append(f"target {t}: valid snapshots in the window but no finished results"
                         + (f" of {q.strategy}" if q.strategy else "") + (f" scored {q.scorer}" if q.scorer else ""))
    for t in sorted({j.target for j in w.data.jobs} - {t for _, t in w.data.ready}):
        if not q.targets or t in q.targets:
            notes.append(f"target {t}: finished jobs in the window, but no snapshot of it is valid for {t} yet "
                         "(its snapshot_target rows are not `ready`): not pooled")
    if not w.data.ready:
        notes.append("no snapshot of the window is valid (`ready`) for any target yet")
    notes += what_it_needs(w, shown, q)
    board = Leaderboard(
        spec=q.spec, cadence=q.cadence, window_from=w.label_from, window_to=w.label_to,
        snapshots=[WindowInfo(snapshot_id=s.id, period=s.period) for s in w.snapshots], languages=_languages(data, q),
        rows=shown, open_rows=opened, min_questions=q.min_questions, bootstrap=q.samples, seed=q.seed, notes=notes,
    )
    return Pooled(window=w, board=board, rows=rows, draws=draws)


def with_comparison(p: Pooled, q: LeaderboardQuery) -> Leaderboard:
    """The board with the comparison of `q.compare` (the first strategy both targets have unless one is named;
    each target's scorer: `q.scorer`, else the first of generate, option-loglik, letter-logprob it has)."""
    if q.compare is None:
        return p.board
    a, b = q.compare
    rows = p.rows
    common = sorted({r.strategy for r in rows if r.target == a} & {r.strategy for r in rows if r.target == b})
    strategy = q.strategy or (common[0] if common else None)
    sa = _compare_scorer(rows, a, strategy, q.scorer) if strategy else None
    sb = _compare_scorer(rows, b, strategy, q.scorer) if strategy else None
    if strategy is None or sa is None or sb is None:
        note = (f"no comparison: {a} and {b} have no results of one strategy" + (f" and scorer {q.scorer}" if q.scorer else "")
                + " in the window")
        return p.board.model_copy(update={"notes": [*p.board.notes, note]})
    comparison = compare_targets(
        p.window.data, rows, target_a=a, target_b=b, strategy=strategy, scorer_a=sa, scorer_b=sb,
        languages=p.board.languages, draws=p.draws, min_questions=q.min_questions,
    )
    return p.board.model_copy(update={"comparison": comparison})


def build_leaderboard(w: Window, q: LeaderboardQuery, keyed: Sequence[Keyed] | None = None) -> Leaderboard:
    """The pooled rows of the window and, when asked for, the comparison (CPU work: run it off the event loop)."""
    p = build_board(w, q, keyed)
    return with_strategy_comparison(with_comparison(p, q), w.data, p.rows, p.draws, q)


def _languages(data: WindowData, q: LeaderboardQuery) -> list[str]:
    seen = {lang for p in data.packs for lang in p.langs}
    return [x for x in q.languages if x in seen] + sorted(seen - set(q.languages))


async def load_leaderboard(store: Store, q: LeaderboardQuery, *, recompute: bool = False) -> Leaderboard:
    """The query's leaderboard: the rows an earlier process computed read from the store's figure cache, the others
    computed and kept there (`clkt.report.kept_rows`); `recompute`: every row computed here and written over the
    kept one (`clkt leaderboard --no-cache`)."""
    w = await resolve_window(store, q)
    keyed = await asyncio.to_thread(board_groups, w, q)
    keys = [k for k, _, _ in keyed]
    if recompute:
        for k in keys:
            ROWS.forget(k)
    had = set() if recompute else await read_kept_rows(store, keys)
    board = await asyncio.to_thread(build_leaderboard, w, q, keyed)
    await keep_figures(store, rows=keys, had=had, scored=w.submitted.fresh)
    return board


def default_query(spec: SpecSettings, snapshot: SnapshotSettings) -> LeaderboardQuery:
    """The board shown without options (the page's first view, `clkt leaderboard` alone)."""
    return LeaderboardQuery(spec=spec.name, cadence=snapshot.cadence, rolling_days=snapshot.rolling_days,
                            languages=tuple(spec.languages))


async def keep_rows_of(store: Store, q: LeaderboardQuery, target_name: str) -> bool:
    """Compute and keep (`clkt.report.kept_rows`) the rows of one submitted model's packs on `q`'s board, when its
    pack is taken in: a row's key does not depend on the board's filters, so the whole board reads them back. False
    when `q`'s window cannot be read (the board computes them then); never raises for that."""
    try:
        await load_leaderboard(store, replace(q, targets=(target_name,), compare=None, compare_strategies=None, unverified=True))
    except LeaderboardError:
        return False
    return True


def board_groups(w: Window, q: LeaderboardQuery) -> list[Keyed]:
    """The keyed groups of the board `build_board` builds (the submitted packs merged, the window's draws): their
    keys are read from the figure cache before it is built, and they are built from them (decoded once)."""
    data = w.submitted.merged(w.data)
    draws = window_draws(data, seed=q.seed, samples=q.samples)
    return keyed_groups(data, q.languages, draws=draws, min_questions=q.min_questions)


PublicIds = dict[int, tuple[int, int]]  # store question row -> (public qid, public entity id)


def prediction_cells(r: PredictionRow, public: PublicIds) -> list[str]:
    """A predictions CSV row: `predicted` empty when no letter was read, `correct` 1 or 0; every cell neutralised
    against spreadsheet formulas (crawled text may name a target or strategy)."""
    from clkt.snapshots.audit import neutralise_cell  # the audit CSVs' rule (imported here: it pulls jinja2 in)

    qid, entity = public[r.question_id]
    return [neutralise_cell(x) for x in (
        r.snapshot_id, qid, r.lang, r.target, r.strategy, r.job_id, r.train_lang, r.variant, r.scorer,
        entity, r.split, r.predicted or "", int(r.correct), r.question_id, r.entity_id,
    )]


async def prediction_rows(
    session: Session, jobs: Sequence[WindowJob], exclusions: dict[tuple[str, str], frozenset[int]], *,
    scorer: str | None,
) -> AsyncIterator[list[str]]:
    """The predictions CSV's rows (`PREDICTION_COLUMNS`, the header aside) of `jobs`, by public ids (derived from
    each question's identity, `clkt.snapshots.ids`, looked up for a batch of rows at a time)."""
    buffer: list[PredictionRow] = []
    public: PublicIds = {}

    async def flush() -> list[list[str]]:
        missing = sorted({r.question_id for r in buffer} - set(public))
        for row, (source, external_id, slot) in (await question_identities(session, missing)).items():
            public[row] = (stable_qid(source, external_id, slot), stable_entity_id(source, external_id))
        rows = [prediction_cells(r, public) for r in buffer]
        buffer.clear()
        return rows

    async for r in iter_predictions(session, jobs, exclusions, scorer=scorer):
        buffer.append(r)
        if len(buffer) >= 1000:
            for cells in await flush():
                yield cells
    for cells in await flush():
        yield cells


async def write_predictions(store: Store, q: LeaderboardQuery, path: Path) -> int:
    """The per-question predictions behind the leaderboard's figures as CSV (`PREDICTION_COLUMNS`: the first three
    join with the snapshot's questions and files by the public qid), cells neutralised against formulas; how many rows. Written to a
    temporary file beside `path`, then renamed: a failure leaves no half-written file."""
    w = await resolve_window(store, q)
    jobs = [j for j in w.data.jobs if (j.snapshot_id, j.target) in w.data.ready and (not q.targets or j.target in q.targets)]
    tmp = path.with_name(path.name + ".part")
    n = 0
    try:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(PREDICTION_COLUMNS)
            async with store.session() as s:
                async for cells in prediction_rows(s, jobs, w.data.exclusions, scorer=q.scorer):
                    out.writerow(cells)
                    n += 1
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return n
